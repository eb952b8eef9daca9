//! Judges are blind to an item's id and to the names of the systems it
//! compares: ids in pairwise sets often join the systems' names. Every
//! bundled panel runs through the real binary against a local server that
//! answers in structured output, and no request it sends carries the id.

use std::path::Path;
use std::process::Command;

use moot::panel::Panel;
use moot::testkit::schema_reply;
use moot::testkit::server::TestServer;

const ITEM_ID: &str = "zq7-gpt4-vs-llama-pair";
const CANDIDATES: [&str; 2] = ["zq7-gpt4", "zq7-llama"];

/// One item every protocol can judge: content for the scoring panels, two
/// candidates for the pairwise ones, a context and a reference.
fn write_item(dir: &Path) -> std::path::PathBuf {
    let item = serde_json::json!({
        "id": ITEM_ID,
        "context": "The town council voted on Tuesday to keep the old library open for two more years. \
                    Residents had collected 4,000 signatures.",
        "reference": "The council kept the library open after a petition.",
        "content": "The council kept the library open for two more years after residents signed a petition.",
        "candidates": [
            {"id": CANDIDATES[0], "text": "The library stays open: the council agreed after 4,000 residents signed."},
            {"id": CANDIDATES[1], "text": "A vote was held about a library."},
        ],
    });
    let path = dir.join("item.jsonl");
    std::fs::write(&path, format!("{item}\n")).unwrap();
    path
}

fn moot(server: &TestServer, cache: &Path) -> Command {
    crate::support::moot_at(&server.base_url(), cache)
}

#[tokio::test(flavor = "multi_thread")]
async fn no_request_of_any_bundled_panel_names_the_item_or_its_systems() {
    let server = TestServer::with_handler(schema_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let item = write_item(tmp.path());
    let mut seen = 0;
    for panel in Panel::bundled_names() {
        let out = tmp.path().join(panel);
        let mut c = moot(&server, &tmp.path().join("cache"));
        c.args(["run", panel, "--headless", "--provider", "openai", "--model", "judge", "--seed", "3", "--item"])
            .arg(&item)
            .arg("--out")
            .arg(&out);
        let output = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{panel}:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        // The transcript names the item: the run did judge it.
        assert!(stdout.contains(ITEM_ID), "{panel}:\n{stdout}");
        let requests = server.requests();
        assert!(requests.len() > seen, "{panel} sent requests");
        let bodies: Vec<String> = requests[seen..].iter().map(|r| r.body_text()).collect();
        assert!(bodies.iter().any(|b| b.contains("=== ITEM ")), "{panel}: the judges see the item fenced");
        // Every request fences the item alike, so that their prompts share
        // their prefix (the embedded model reads it once and reuses it).
        let mut marks: Vec<&str> = bodies
            .iter()
            .filter_map(|b| b.split("=== END OF ITEM (fence ").nth(1))
            .map(|m| m.get(..8).unwrap_or(m))
            .collect();
        marks.dedup();
        assert_eq!(marks.len(), 1, "{panel}: {marks:?}");
        for body in &bodies {
            for secret in [ITEM_ID, CANDIDATES[0], CANDIDATES[1], "zq7"] {
                assert!(!body.contains(secret), "{panel}: a request names {secret:?}:\n{body}");
            }
        }
        seen = requests.len();
    }
    // Every kind of participant asked: members, moderators, final judges,
    // meta-evaluators, summarizers, verifiers, aggregators.
    let bodies: Vec<String> = server.requests().iter().map(|r| r.body_text()).collect();
    for who in ["meta-evaluator", "final judge", "summar", "verif", "synthesis", "who speaks next"] {
        assert!(bodies.iter().any(|b| b.to_lowercase().contains(who)), "no request of a {who}");
    }
}
