//! `moot run --resume` from the command line: a live run killed with
//! SIGKILL in a pseudo-terminal and resumed there to its end; a headless
//! resume; a session that ended is refused; a sessions folder that cannot
//! be written stops the run before any model call; a log that cannot be
//! written mid-run pauses the session and loses nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use portable_pty::CommandBuilder;
use serde_json::Value;

/// A storybook-qa verdict, streamed in pieces over about half a second.
fn slow_reply(_: &RecordedRequest) -> Reply {
    let body = "Looking at it. {\"grammar\": 4, \"answer_relevancy\": 3, \"contextual_consistency\": 4, \
                \"educational_appropriateness\": 4, \"overall\": 4, \"confidence\": 0.7, \"justification\": \"Fine.\"}";
    let deltas: Vec<&str> = body.as_bytes().chunks(40).map(|c| std::str::from_utf8(c).unwrap()).collect();
    let mut reply = Reply::sse();
    for (i, data) in openai::events(&deltas, Some((50, 30))).iter().enumerate() {
        if i > 0 {
            reply = reply.delay(Duration::from_millis(60));
        }
        reply = reply.event(data);
    }
    reply
}

use crate::pty::Moot as Pty;

fn moot_pty(server: &TestServer, dir: &Path, sessions: &Path, args: &[&str]) -> Pty {
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args);
    cmd.cwd(dir);
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_SESSIONS_DIR", sessions);
    cmd.env("MOOT_CACHE_DIR", dir.join("cache"));
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    Pty::spawn(cmd)
}

fn the_log(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "jsonl"))
}

fn events(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn wait_log(dir: &Path, what: &str, timeout: Duration, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let ev = the_log(dir).map(|p| events(&p)).unwrap_or_default();
        if pred(&ev) {
            return ev;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the log never showed {what}");
}

/// Every turn started once and closed once (completed, failed or
/// abandoned), and every agent evaluated first exactly once.
fn check_turns(ev: &[Value]) {
    let mut started = std::collections::BTreeMap::new();
    let mut closed = std::collections::BTreeMap::<u64, u32>::new();
    for e in ev {
        let turn = e["turn"].as_u64();
        match e["type"].as_str() {
            Some("turn_started") => assert!(started.insert(turn.unwrap(), e.clone()).is_none(), "turn twice: {e}"),
            Some("turn_completed" | "turn_abandoned") => *closed.entry(turn.unwrap()).or_default() += 1,
            Some("turn_failed") if e["will_retry"] == false => *closed.entry(turn.unwrap()).or_default() += 1,
            _ => {}
        }
    }
    for t in started.keys() {
        assert_eq!(closed.get(t), Some(&1), "turn {t} closed once");
    }
    let mut first: Vec<&str> = ev
        .iter()
        .filter(|e| e["type"] == "turn_completed")
        .filter_map(|e| {
            let s = &started[&e["turn"].as_u64().unwrap()];
            (s["phase"] == "initial" && s["kind"] == "speak").then(|| s["agent"].as_str().unwrap())
        })
        .collect();
    first.sort();
    let n = first.len();
    first.dedup();
    assert_eq!(first.len(), n, "an agent's first evaluation recorded twice: {first:?}");
    assert_eq!(n, 9, "every agent evaluated first");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_run_killed_mid_debate_resumes_in_its_log_to_the_end() {
    let server = TestServer::with_handler(slow_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let mut first =
        moot_pty(&server, tmp.path(), &sessions, &["run", "--provider", "openai", "--moderator", "round-robin"]);
    // Mid-debate: a debate turn is streaming.
    let debating = |ev: &[Value]| {
        ev.iter().any(|e| e["type"] == "turn_started" && e["phase"] == "debate")
            && ev.last().is_some_and(|e| e["type"] == "turn_delta")
    };
    wait_log(&sessions, "a debate turn streaming", Duration::from_secs(60), debating);
    let pid = first.pid();
    let killed = std::process::Command::new("kill").arg("-KILL").arg(pid.to_string()).status().unwrap();
    assert!(killed.success());
    first.wait_exit(Duration::from_secs(10));
    let path = the_log(&sessions).unwrap();
    let before = events(&path);
    assert!(before.iter().all(|e| e["type"] != "session_ended"), "killed: the log has no end");
    let calls_before = server.request_count();
    let id = path.file_stem().unwrap().to_string_lossy().to_string();

    let mut again = moot_pty(&server, tmp.path(), &sessions, &["run", "--resume", &id[..id.len() - 2]]);
    let result = |ev: &[Value]| ev.iter().any(|e| e["type"] == "aggregation_completed" && e.get("group").is_none());
    wait_log(&sessions, "the panel's result", Duration::from_secs(60), result);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !again.text().contains("DONE") {
        assert!(Instant::now() < deadline, "the screen never showed the end:\n{}", again.text());
        std::thread::sleep(Duration::from_millis(25));
    }
    again.send("q");
    let status = again.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");

    let after = events(&path);
    assert_eq!(&after[..before.len()], &before[..], "the old lines stay as they were");
    for (i, e) in after.iter().enumerate() {
        assert_eq!(e["seq"].as_u64(), Some(i as u64), "seq without gaps");
    }
    let last = after.last().unwrap();
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("session_ended"), Some("completed")));
    assert!(after.iter().any(|e| e["type"] == "turn_abandoned"), "the turn streaming at the kill is marked");
    check_turns(&after);
    // Only what the log did not hold was asked again.
    let asked = server.request_count() - calls_before;
    let redone = after[before.len()..].iter().filter(|e| e["type"] == "turn_started").count();
    assert_eq!(asked, redone, "one request per new turn");
}

fn moot(server: &TestServer, dir: &Path, sessions: &Path) -> std::process::Command {
    let mut c = crate::support::moot_at(&server.base_url(), &dir.join("cache"));
    c.current_dir(dir).env("MOOT_SESSIONS_DIR", sessions);
    c
}

/// A headless run cut after its first evaluations, resumed headless.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_log_resumes_headless_and_an_ended_one_is_refused() {
    let server = TestServer::with_handler(|_| {
        Reply::openai_stream(
            &["Fine. {\"grammar\": 4, \"answer_relevancy\": 3, \"contextual_consistency\": 4, \
               \"educational_appropriateness\": 4, \"overall\": 4, \"confidence\": 0.7, \"justification\": \"Fine.\"}"],
            Some((50, 30)),
        )
    })
    .await
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let out = moot(&server, tmp.path(), &sessions)
        .args(["run", "--headless", "--provider", "openai", "--moderator", "round-robin"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let path = the_log(&sessions).unwrap();
    let whole = std::fs::read_to_string(&path).unwrap();
    let whole_ev = events(&path);
    let result = |ev: &[Value]| {
        ev.iter().rev().find(|e| e["type"] == "aggregation_completed" && e.get("group").is_none()).cloned().unwrap()
    };

    // An ended session is refused, and its log is left alone.
    let refused =
        moot(&server, tmp.path(), &sessions).args(["run", "--headless", "--resume"]).arg(&path).output().unwrap();
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("ended (completed)") && err.contains("nothing to resume"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), whole);

    // Cut in the middle of the first debate turn's line.
    let cut_at = whole_ev.iter().position(|e| e["type"] == "turn_started" && e["phase"] == "debate").unwrap();
    let lines: Vec<&str> = whole.split_inclusive('\n').collect();
    let torn = format!("{}{}", lines[..cut_at].concat(), &lines[cut_at][..10]);
    std::fs::write(&path, torn).unwrap();
    let calls = server.request_count();
    let id = path.file_stem().unwrap().to_string_lossy().to_string();
    let resumed =
        moot(&server, tmp.path(), &sessions).args(["run", "--headless", "--resume", id.as_str()]).output().unwrap();
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("last line"), "the torn line is reported: {stderr}");
    let ev = events(&path);
    assert_eq!(&ev[..cut_at], &whole_ev[..cut_at]);
    assert_eq!(ev.last().unwrap()["status"], "completed");
    assert_eq!(result(&ev)["scores"], result(&whole_ev)["scores"]);
    let debate_calls = whole_ev[cut_at..].iter().filter(|e| e["type"] == "turn_started").count();
    assert_eq!(server.request_count() - calls, debate_calls, "the first evaluations came from the log");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_folder_that_cannot_be_written_stops_the_run_before_any_call() {
    let server = TestServer::with_handler(slow_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("a-file"), "not a folder").unwrap();
    let out = moot(&server, tmp.path(), &tmp.path().join("sessions"))
        .args(["run", "--headless", "--provider", "openai", "--out", "a-file/sessions"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot write session logs in a-file/sessions") && err.contains("os error"), "{err}");
    assert_eq!(server.request_count(), 0, "no model was called");
}

/// The log's disk fills up mid-run: the session waits, paused, keeps its
/// events, and goes on once they can be written; nothing is lost.
#[tokio::test]
async fn a_full_disk_mid_run_pauses_the_session_until_the_log_can_be_written() {
    use crate::support::*;
    use moot::engine::{self, EngineHandle, Recorder};
    use moot::panel::Protocol;
    use moot::session::{SessionWriter, parse_log};

    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("full.jsonl");
    let full = Arc::new(AtomicBool::new(false));
    let writer = SessionWriter::create(&path).unwrap().simulate_full_disk(full.clone());
    let provider = Arc::new(
        moot::testkit::scripted::ScriptedProvider::new(|req, _| match speaker(req).as_str() {
            "aggregator" => "They differ.".into(),
            "Ann" => evaluation(4, 4, 4).into(),
            _ => evaluation(2, 3, 2).into(),
        })
        .with_delay(Duration::from_millis(10)),
    );
    let config = config(panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]), provider.clone());
    let (tx, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let rec = Recorder::new(Some(writer), Some(tx));
    let mut status = rec.status();
    let (_handle, commands) = EngineHandle::channel();
    let task = tokio::spawn(engine::run(config, rec, commands));

    // The disk fills during the debate.
    loop {
        let e = seen.recv().await.unwrap();
        if matches!(&e.kind, moot::session::EventKind::PhaseStarted { phase: moot::session::event::Phase::Debate, .. })
        {
            break;
        }
    }
    full.store(true, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(10), status.wait_for(Option::is_some)).await.unwrap().unwrap();
    let why = status.borrow().clone().unwrap();
    assert!(why.contains("No space left on device") && why.contains("full.jsonl"), "{why}");
    let calls = provider.calls();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(provider.calls() <= calls + 2, "the session waits while the log cannot be written");
    assert!(!task.is_finished());

    full.store(false, Ordering::SeqCst);
    let outcome = tokio::time::timeout(Duration::from_secs(20), task).await.unwrap().unwrap();
    assert!(outcome.error.is_none(), "{:?}", outcome.error);
    assert!(status.borrow().is_none());
    let log = parse_log(&std::fs::read(&path).unwrap());
    assert!(log.problems.is_empty() && log.partial_tail.is_none());
    for (i, e) in log.events.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "no event lost");
    }
    assert!(matches!(log.events.last().unwrap().kind, moot::session::EventKind::SessionEnded { .. }));
    let mut shown = Vec::new();
    while let Ok(e) = seen.try_recv() {
        shown.push(e.seq);
    }
    assert!(shown.windows(2).all(|w| w[1] == w[0] + 1), "the screen saw every event once, in order");
}

/// The terminal closing (SIGHUP) or a shutdown (SIGTERM) is nobody's choice
/// to stop: the session is left unfinished, live or headless, and resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_terminal_or_a_shutdown_leaves_the_session_to_resume() {
    let server = TestServer::with_handler(slow_reply).await.unwrap();
    for (signal, live) in [("-HUP", true), ("-TERM", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let sessions = tmp.path().join("sessions");
        let args = ["run", "--provider", "openai", "--moderator", "round-robin"];
        let streaming = |ev: &[Value]| ev.last().is_some_and(|e| e["type"] == "turn_delta");
        let status = if live {
            let mut first = moot_pty(&server, tmp.path(), &sessions, &args);
            wait_log(&sessions, "a turn streaming", Duration::from_secs(60), streaming);
            let pid = first.pid();
            assert!(std::process::Command::new("kill").arg(signal).arg(pid.to_string()).status().unwrap().success());
            first.wait_exit(Duration::from_secs(15))
        } else {
            let child = moot(&server, tmp.path(), &sessions)
                .args(args)
                .arg("--headless")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            wait_log(&sessions, "a turn streaming", Duration::from_secs(60), streaming);
            let pid = child.id();
            assert!(std::process::Command::new("kill").arg(signal).arg(pid.to_string()).status().unwrap().success());
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(said.contains("is left unfinished: go on with `moot run --resume"), "{said}");
            assert_eq!(out.status.code(), Some(129), "{said}");
            continue_and_check(&server, tmp.path(), &sessions).await;
            continue;
        };
        assert!(!status.success(), "{signal}: {status:?}");
        continue_and_check(&server, tmp.path(), &sessions).await;
    }
}

/// The log has no end and no stop; resumed headless, the session completes.
async fn continue_and_check(server: &TestServer, dir: &Path, sessions: &Path) {
    let path = the_log(sessions).unwrap();
    let before = events(&path);
    assert!(
        before.iter().all(|e| e["type"] != "session_ended" && e["type"] != "stop_requested"),
        "no end, no stop: {:?}",
        before.last()
    );
    let id = path.file_stem().unwrap().to_string_lossy().to_string();
    let out = moot(server, dir, sessions).args(["run", "--resume", &id, "--headless"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let after = events(&path);
    let last = after.last().unwrap();
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("session_ended"), Some("completed")));
    check_turns(&after);
}

/// A session still running in another process is shown as `running`, and
/// resuming it is refused (its log is locked while it is written); once
/// that process is gone it is `unfinished` and resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_still_running_elsewhere_is_not_resumed() {
    let server = TestServer::with_handler(slow_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let sessions = tmp.path().join("sessions");
    let mut first = moot(&server, tmp.path(), &sessions)
        .args(["run", "--provider", "openai", "--moderator", "round-robin", "--headless"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    wait_log(&sessions, "a turn streaming", Duration::from_secs(60), |ev| {
        ev.last().is_some_and(|e| e["type"] == "turn_delta")
    });
    let id = the_log(&sessions).unwrap().file_stem().unwrap().to_string_lossy().to_string();
    let list = |what: &str| {
        let out = moot(&server, tmp.path(), &sessions).args(["sessions", "list"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let row =
            text.lines().find(|l| l.starts_with(&id)).unwrap_or_else(|| panic!("{id} not in:\n{text}")).to_string();
        assert!(row.split_whitespace().any(|w| w == what), "{what}: {row}");
    };
    list("running");
    let out = moot(&server, tmp.path(), &sessions).args(["run", "--resume", &id, "--headless"]).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("still running"), "{said}");
    assert!(first.try_wait().unwrap().is_none(), "the first process runs on");

    first.kill().unwrap();
    first.wait().unwrap();
    list("unfinished");
    continue_and_check(&server, tmp.path(), &sessions).await;
}
