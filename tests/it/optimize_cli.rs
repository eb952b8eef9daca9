//! `moot optimize --headless` as a user runs it: the binary against a local
//! OpenAI-compatible server, progress on stdout, the log in the run folder,
//! the chosen prompt as a new panel beside the input; bad input is refused
//! with a message that names what is wrong.

use std::path::Path;
use std::process::Command;

use moot::testkit::server::{RecordedRequest, Reply, TestServer};

/// A streamed OpenAI-style reply of `text`.
pub(crate) fn reply(text: &str) -> Reply {
    Reply::openai_stream(&[text], Some((20, 10)))
}

fn answer(req: &RecordedRequest) -> Reply {
    let body = req.body_json().unwrap_or_default();
    let system = body["messages"][0]["content"].as_str().unwrap_or("").to_string();
    let all = body["messages"].to_string();
    if system.starts_with("You study where an automatic judge") {
        reply("The judge is too strict with answers in other words.")
    } else if system.starts_with("You revise the instructions") {
        reply(
            "## Task\nCompare the answers.\n\n## Rubric\n1: same.\n0: wrong.\n\n## Guidance\nOther words still match.\n\n## Examples\n",
        )
    } else if all.contains("Other words still match.") {
        reply("Matches. {\"match\": 1}")
    } else {
        reply("Does not match. {\"match\": 0}")
    }
}

fn setup(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let panel = dir.join("judge.toml");
    std::fs::copy(root.join("assets/panels/answer-judge.toml"), &panel).unwrap();
    let data = dir.join("labelled.jsonl");
    std::fs::copy(root.join("assets/items/answer-judge-labelled.jsonl"), &data).unwrap();
    (panel, data)
}

fn moot(server: &TestServer, dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_moot"));
    cmd.current_dir(dir).env("OPENAI_BASE_URL", server.base_url()).env("OPENAI_API_KEY", "sk-test-secret").args([
        "optimize",
        "judge.toml",
        "--data",
        "labelled.jsonl",
        "--provider",
        "openai",
        "--no-cache",
    ]);
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_headless_run_writes_its_log_and_a_new_panel() {
    let server = TestServer::with_handler(answer).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (panel, _) = setup(tmp.path());
    let before = std::fs::read_to_string(&panel).unwrap();
    let out = tokio::task::spawn_blocking({
        let mut cmd = moot(&server, tmp.path());
        cmd.args(["--headless", "--max-iter", "4", "--threshold", "0.7", "--out", "run"]);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("iteration 1: S picked"), "{stdout}");
    assert!(stdout.contains("rewrite proposed"), "{stdout}");
    assert!(stdout.contains("held-out S reached the threshold"), "{stdout}");
    assert_eq!(std::fs::read_to_string(&panel).unwrap(), before, "the input panel is never changed");
    let written: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".optimized-"))
        .collect();
    assert_eq!(written.len(), 1, "one new panel beside the input");
    let p = moot::panel::Panel::load(&written[0]).unwrap();
    assert_eq!(p.judge.guidance, "Other words still match.");
    let log = std::fs::read_to_string(tmp.path().join("run/optimize.jsonl")).unwrap();
    assert!(log.lines().next().unwrap().contains("\"type\":\"optimize_started\""));
    assert!(log.lines().last().unwrap().contains("\"type\":\"optimize_ended\""));
    assert!(!log.contains("sk-test-secret"), "no secret in the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_a_clear_message() {
    let server = TestServer::with_handler(answer).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    setup(tmp.path());
    let run = |extra: &[&str]| {
        let mut cmd = moot(&server, tmp.path());
        cmd.arg("--headless").args(extra);
        let out = cmd.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    // These fail before any request, so the calls may block here.
    let err = (run(&["--objective", "auc"]), run(&["--objective", "kappa"]), run(&["--dimension", "fluency"]));
    assert!(err.0.contains("auc needs binary labels"), "{}", err.0);
    assert!(err.1.contains("unknown objective \"kappa\""), "{}", err.1);
    assert!(err.2.contains("no dimension `fluency`"), "{}", err.2);

    std::fs::write(
        tmp.path().join("labelled.jsonl"),
        "{\"id\":\"a\",\"content\":\"x\",\"human\":{\"match\":3}}\n{\"id\":\"b\",\"content\":\"y\",\"human\":{\"match\":1}}\n",
    )
    .unwrap();
    let mut cmd = moot(&server, tmp.path());
    cmd.arg("--headless");
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("labelled.jsonl: item a: human.match = 3 is outside the panel's scale"), "{stderr}");
}
