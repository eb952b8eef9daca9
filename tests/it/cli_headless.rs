//! The `moot` binary end to end, headless, against a real local HTTP server
//! streaming SSE.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use moot::session::event::EndStatus;
use moot::session::{EventKind, read_log};
use moot::testkit::judge_reply;
use moot::testkit::server::TestServer;

fn moot() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.env_remove("OPENAI_API_KEY").env_remove("ANTHROPIC_API_KEY").env("NO_COLOR", "1").env("MOOT_USER", "tester");
    c
}

fn logs_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect())
        .unwrap_or_default();
    v.sort();
    v
}

async fn run_to_end(mut cmd: Command) -> Output {
    tokio::task::spawn_blocking(move || cmd.output().expect("run moot")).await.unwrap()
}

fn run_args(server: &TestServer, out: &Path) -> Command {
    let mut c = moot();
    c.env("OPENAI_BASE_URL", server.base_url()).args([
        "run",
        "storybook-qa",
        "--id",
        "qa-03",
        "--headless",
        "--provider",
        "openai",
        "--model",
        "judge-model",
        "--moderator",
        "round-robin",
        "--out",
    ]);
    c.arg(out);
    c
}

#[tokio::test(flavor = "multi_thread")]
async fn a_headless_run_prints_a_transcript_and_writes_the_log() {
    let server = TestServer::with_handler(|r| judge_reply(r, Duration::ZERO)).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = run_to_end(run_args(&server, out.path())).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");

    // The transcript names the phases, the agents, the moderator's choices and the result.
    for needle in [
        "── initial ──",
        "── debate · ",
        "» Teachers: Ms. Okafor picked by policy: ",
        "≈ Teachers after the first evaluations: scores ",
        "synthesis:",
        "RESULT",
        "session completed",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    // MAJ-EVAL's consensus checks only report: they do not claim a consensus the debate then ignores.
    assert!(!stdout.contains("consensus reached"), "{stdout}");
    assert!(stdout.contains("I have read the item carefully"), "streamed text is shown");
    // An agent's words, then its scores on a line; never the JSON it ended with.
    assert!(!stdout.contains("\"grammar\"") && !stdout.contains('{'), "the JSON is not printed:\n{stdout}");
    assert!(stdout.contains("It is mostly fine.\n  ✓ grammar "), "the scores line follows the words:\n{stdout}");
    assert!(stderr.contains("session log: "), "{stderr}");

    let logs = logs_in(out.path());
    assert_eq!(logs.len(), 1);
    let log = read_log(&logs[0]).unwrap();
    assert!(log.problems.is_empty());
    assert_eq!(log.events[0].kind.type_name(), "session_started");
    match &log.events.last().unwrap().kind {
        EventKind::SessionEnded { status, usage, .. } => {
            assert_eq!(*status, EndStatus::Completed);
            assert_eq!(usage.calls as usize, server.request_count());
            assert!(usage.by_role.contains_key("aggregator"));
        }
        other => panic!("last event is {other:?}"),
    }
    // Every request names the model and a token limit, and streams with usage.
    for r in server.requests() {
        let body = r.body_json().unwrap();
        assert_eq!(body["model"], "judge-model");
        assert!(body["max_tokens"].as_u64().unwrap() > 0);
        assert_eq!(body["stream"], true);
        assert!(r.header("authorization").is_none(), "no key, no auth header");
    }

    // `sessions list` and `sessions show` read it back.
    let list = run_to_end({
        let mut c = moot();
        c.env("MOOT_SESSIONS_DIR", out.path()).args(["sessions", "list"]);
        c
    })
    .await;
    let list_out = String::from_utf8_lossy(&list.stdout);
    assert!(list_out.contains("qa-03") && list_out.contains("maj-eval") && list_out.contains("done"), "{list_out}");
    let show = run_to_end({
        let mut c = moot();
        c.args(["sessions", "show"]).arg(&logs[0]);
        c
    })
    .await;
    let show_out = String::from_utf8_lossy(&show.stdout);
    assert!(show.status.success());
    assert!(show_out.contains("RESULT") && show_out.contains("I have read the item carefully"));
}

#[tokio::test(flavor = "multi_thread")]
async fn json_mode_prints_the_events() {
    let server = TestServer::with_handler(|r| judge_reply(r, Duration::ZERO)).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = run_args(&server, out.path());
    cmd.arg("--json");
    let output = run_to_end(cmd).await;
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    let printed = moot::session::parse_log(stdout.as_bytes());
    assert!(printed.problems.is_empty() && printed.partial_tail.is_none());
    let written = read_log(&logs_in(out.path())[0]).unwrap();
    assert_eq!(printed.events, written.events, "stdout carries exactly the logged events");
}

/// Start a headless run against slow streams and wait until its debate has begun.
/// The caller waits for the child ([`signal_and_wait`]).
#[allow(clippy::zombie_processes)]
async fn start_until_debate(server: &TestServer, out: &Path) -> std::process::Child {
    let mut child = run_args(server, out).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the debate never started");
        }
        if let Some(log) = logs_in(out).first()
            && let Ok(l) = read_log(log)
            && l.events
                .iter()
                .any(|e| matches!(&e.kind, EventKind::TurnStarted { phase, .. } if phase.as_str() == "debate"))
        {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Send a signal to a child and wait for it to exit.
async fn signal_and_wait(child: std::process::Child, signal: &str) -> Output {
    let pid = child.id().to_string();
    assert!(Command::new("kill").args([signal, &pid]).status().unwrap().success());
    tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn ctrl_c_stops_cleanly_and_still_aggregates() {
    // Slow streams, so the interrupt lands mid-debate.
    let server = TestServer::with_handler(|r| judge_reply(r, Duration::from_millis(40))).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let child = start_until_debate(&server, out.path()).await;
    let status = signal_and_wait(child, "-INT").await;
    assert_eq!(status.status.code(), Some(3), "stopped sessions exit 3: {}", String::from_utf8_lossy(&status.stderr));
    let log = read_log(&logs_in(out.path())[0]).unwrap();
    let types: Vec<&str> = log.events.iter().map(|e| e.kind.type_name()).collect();
    assert!(types.contains(&"stop_requested"));
    assert!(types.contains(&"aggregation_completed"), "aggregation still ran");
    match &log.events.last().unwrap().kind {
        EventKind::SessionEnded { status, reason, .. } => {
            assert_eq!(*status, EndStatus::Stopped);
            assert_eq!(reason.as_deref(), Some("stopped by tester"));
        }
        other => panic!("last event is {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_terminate_signal_leaves_a_whole_log_to_resume() {
    let server = TestServer::with_handler(|r| judge_reply(r, Duration::from_millis(40))).await.unwrap();
    let out = tempfile::tempdir().unwrap();
    let child = start_until_debate(&server, out.path()).await;
    let status = signal_and_wait(child, "-TERM").await;
    let said = String::from_utf8_lossy(&status.stderr);
    assert_eq!(status.status.code(), Some(129), "{said}");
    assert!(said.contains("is left unfinished: go on with `moot run --resume"), "{said}");
    let log = read_log(&logs_in(out.path())[0]).unwrap();
    assert!(log.partial_tail.is_none() && log.problems.is_empty());
    let types: Vec<&str> = log.events.iter().map(|e| e.kind.type_name()).collect();
    assert!(!types.contains(&"session_ended") && !types.contains(&"stop_requested"), "{types:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_server_fails_with_a_one_line_reason_and_a_complete_log() {
    // Bind and drop a listener to get a port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let out = tempfile::tempdir().unwrap();
    let mut cmd = moot();
    cmd.env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1")).args([
        "run",
        "summary-collab",
        "--headless",
        "--provider",
        "openai",
        "--out",
    ]);
    cmd.arg(out.path());
    let output = run_to_end(cmd).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason = stderr.lines().find(|l| l.starts_with("moot: session failed:")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(reason.contains("first evaluation failed") && reason.contains("Connection refused"), "{reason}");
    let log = read_log(&logs_in(out.path())[0]).unwrap();
    assert!(
        log.events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::TurnFailed { error, .. } if error.contains("connection")))
    );
    assert_eq!(log.events.last().unwrap().kind.type_name(), "session_ended");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_named_precisely() {
    let dir = tempfile::tempdir().unwrap();
    let panel = dir.path().join("broken.toml");
    std::fs::write(&panel, "name = \"x\"\nprotocol = \"maj-eval\"\ntask = \"t\"\n[[dimensions]\nkey = \"a\"\n")
        .unwrap();
    let output = run_to_end({
        let mut c = moot();
        c.args(["run", panel.to_str().unwrap(), "--headless", "--provider", "openai"]);
        c
    })
    .await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken.toml:4:"), "{stderr}");

    let items = dir.path().join("items.jsonl");
    std::fs::write(&items, "{\"id\": \"a\", \"content\": \"fine\"}\n").unwrap();
    let output = run_to_end({
        let mut c = moot();
        c.args([
            "run",
            "storybook-qa",
            "--item",
            items.to_str().unwrap(),
            "--id",
            "zz",
            "--headless",
            "--provider",
            "openai",
        ]);
        c
    })
    .await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("zz") && stderr.contains("items.jsonl"), "{stderr}");

    let output = run_to_end({
        let mut c = moot();
        c.args(["run", "--headless", "--moderator", "loudest"]);
        c
    })
    .await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown policy \"loudest\"") && stderr.contains("round-robin"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_without_any_readable_evaluation_fails_and_says_why() {
    // Every reply is prose without scores: nothing can be read from it.
    let server = TestServer::with_handler(|_| {
        moot::testkit::server::Reply::openai_stream(
            &["The answer reads well and suits young children."],
            Some((90, 12)),
        )
    })
    .await
    .unwrap();
    let out = tempfile::tempdir().unwrap();
    let output = run_to_end(run_args(&server, out.path())).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let reason = stderr.lines().find(|l| l.starts_with("moot: session failed:")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(reason.contains("no agent produced a readable evaluation:"), "{reason}");
    assert!(reason.contains("replies without scores; see turns 1–"), "{reason}");
    let result = stdout.lines().find(|l| l.starts_with("RESULT")).unwrap_or_else(|| panic!("{stdout}"));
    assert!(result.contains("no result: no agent produced a readable evaluation"), "{result}");
    assert!(stdout.contains("session failed"), "{stdout}");

    let log = read_log(&logs_in(out.path())[0]).unwrap();
    let panel = log
        .events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group: None, scores, no_result, left_out, .. } => {
                Some((scores.clone(), no_result.clone(), left_out.clone()))
            }
            _ => None,
        })
        .expect("a panel-wide aggregation");
    assert!(panel.0.is_empty());
    assert!(panel.1.as_deref().is_some_and(|r| r.starts_with("no agent produced a readable evaluation")), "{panel:?}");
    assert_eq!(panel.2.len(), 3, "every group is left out: {panel:?}");
    let groups: Vec<Option<String>> = log
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group: Some(_), no_result, .. } => Some(no_result.clone()),
            _ => None,
        })
        .collect();
    assert!(
        groups.iter().all(|r| r.as_deref().is_some_and(|r| r.contains("produced a readable evaluation"))),
        "{groups:?}"
    );
    match &log.events.last().unwrap().kind {
        EventKind::SessionEnded { status, error, .. } => {
            assert_eq!(*status, EndStatus::Failed);
            assert_eq!(error.as_deref(), panel.1.as_deref());
        }
        other => panic!("last event is {other:?}"),
    }
}

#[test]
fn run_and_eval_help_list_every_bundled_panel_with_its_title() {
    let names: Vec<&str> = moot::panel::Panel::bundled_names().collect();
    assert!(names.len() > 20, "{names:?}");
    for command in ["run", "eval"] {
        for flag in ["--help", "-h"] {
            let out = moot().args([command, flag]).output().unwrap();
            assert!(out.status.success());
            let help = String::from_utf8_lossy(&out.stdout);
            let listed = help.split("Bundled panels").nth(1).unwrap_or_else(|| panic!("{command} {flag}:\n{help}"));
            for name in &names {
                let title = moot::panel::Panel::bundled(name).expect("bundled").name;
                let row = listed.lines().find(|l| l.split_whitespace().next() == Some(name));
                let row = row.unwrap_or_else(|| panic!("`{command} {flag}` lists {name}:\n{help}"));
                assert!(row.trim_end().ends_with(&title), "{name}'s title {title:?}: {row}");
            }
        }
    }
}

/// A file that is not there is named once with the system's reason, once:
/// an error that prints its cause is not followed by the cause again.
#[test]
fn a_missing_file_is_named_with_its_reason_once() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nowhere");
    for args in [
        vec!["report".to_string(), missing.display().to_string()],
        vec!["run".to_string(), missing.with_extension("toml").display().to_string()],
        vec![
            "run".to_string(),
            "--headless".to_string(),
            "--item".to_string(),
            missing.with_extension("jsonl").display().to_string(),
        ],
    ] {
        let out = moot().args(&args).current_dir(dir.path()).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("nowhere"), "{args:?}: {err}");
        assert_eq!(err.matches("No such file or directory").count(), 1, "{args:?}: {err}");
    }
}
