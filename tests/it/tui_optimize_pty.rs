//! `moot optimize` in a real pseudo-terminal against a local OpenAI-compatible
//! server: a person goes on past the feedback with `y`, rejects the rewrite
//! with `r`, selects the first iteration and rolls back to it with `k` `b`,
//! and the log records each decision with its author.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use portable_pty::CommandBuilder;
use serde_json::Value;

use crate::pty::Moot;

fn reply(text: &str) -> Reply {
    let mut r = Reply::sse();
    for data in openai::events(&[text], Some((20, 10))) {
        r = r.event(&data);
    }
    r
}

fn answer(req: &RecordedRequest) -> Reply {
    let body = req.body_json().unwrap_or_default();
    let system = body["messages"][0]["content"].as_str().unwrap_or("").to_string();
    if system.starts_with("You study where an automatic judge") {
        reply("The judge is too strict with answers in other words.")
    } else if system.starts_with("You revise the instructions") {
        reply(
            "## Task\nCompare the answers.\n\n## Rubric\n1: same.\n0: wrong.\n\n## Guidance\nOther words still match.\n\n## Examples\n",
        )
    } else {
        reply("The answer matches. {\"match\": 1}")
    }
}

/// Wait (up to 60 s) until the log satisfies `pred`; its events then.
fn wait_log(moot: &Moot, log: &Path, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let ev = events_of(log);
        if pred(&ev) {
            return ev;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the log never showed {what}; screen:\n{}", moot.text());
}

fn has(ev: &[Value], kind: &str, f: impl Fn(&Value) -> bool) -> bool {
    ev.iter().any(|e| e["type"] == kind && f(e))
}

/// The arguments of a small optimisation run in `dir` (the answer judge on
/// eight labelled answers, three iterations) and the log it writes.
fn optimize_args(dir: &Path) -> (Vec<String>, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let panel = dir.join("answer-judge.toml");
    std::fs::copy(root.join("assets/panels/answer-judge.toml"), &panel).unwrap();
    let items: String = std::fs::read_to_string(root.join("assets/items/answer-judge-labelled.jsonl"))
        .unwrap()
        .lines()
        .take(8)
        .map(|l| format!("{l}\n"))
        .collect();
    let data = dir.join("labelled.jsonl");
    std::fs::write(&data, items).unwrap();
    let run = dir.join("run");
    let path = |p: &Path| p.to_string_lossy().into_owned();
    let mut args = vec!["optimize".to_string(), path(&panel), "--data".into(), path(&data)];
    for a in ["--max-iter", "3", "--threshold", "1.01", "--clusters", "2", "--per-cluster", "1", "--no-cache"] {
        args.push(a.into());
    }
    args.extend(["--provider".into(), "openai".into(), "--out".into(), path(&run)]);
    (args, run.join("optimize.jsonl"))
}

fn pty_command(server: &TestServer, dir: &Path, args: &[String]) -> CommandBuilder {
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(args);
    cmd.cwd(dir);
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    cmd
}

fn events_of(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_rewrite_and_rolling_back_with_the_keys() {
    let server = TestServer::with_handler(answer).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (args, log) = optimize_args(tmp.path());
    let mut moot = Moot::spawn(pty_command(&server, tmp.path(), &args));

    wait_log(&moot, &log, "the first feedback", |ev| has(ev, "feedback_written", |e| e["iteration"] == 1));
    moot.wait_for("review the feedback");
    moot.send("y");
    wait_log(&moot, &log, "the first rewrite", |ev| has(ev, "rewrite_proposed", |e| e["iteration"] == 1));
    moot.wait_for("decide on the rewrite");
    moot.send("r");
    let ev = wait_log(&moot, &log, "the rejection", |ev| has(ev, "rewrite_decided", |_| true));
    let d = ev.iter().find(|e| e["type"] == "rewrite_decided").unwrap();
    assert_eq!((d["decision"].as_str(), d["author"].as_str()), (Some("rejected"), Some("pty-tester")));
    moot.wait_for("rejected");

    wait_log(&moot, &log, "the second feedback", |ev| has(ev, "feedback_written", |e| e["iteration"] == 2));
    moot.wait_for("iteration 2: review the feedback");
    moot.send("k");
    moot.send("b");
    let ev = wait_log(&moot, &log, "the third iteration", |ev| has(ev, "iteration_started", |e| e["iteration"] == 3));
    assert!(has(&ev, "rolled_back", |e| e["to"] == 1 && e["author"] == "pty-tester"));
    let third = ev.iter().find(|e| e["type"] == "iteration_started" && e["iteration"] == 3).unwrap();
    assert_eq!(third["from"], 1, "the third iteration starts from the first one's prompt");
    assert!(!has(&ev, "rewrite_proposed", |e| e["iteration"] == 2), "the rollback skipped the second rewrite");

    let ev = wait_log(&moot, &log, "the end", |ev| has(ev, "optimize_ended", |_| true));
    let end = ev.last().unwrap();
    assert_eq!(end["type"], "optimize_ended");
    assert_eq!(end["status"], "completed");
    moot.wait_for("q quit");
    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");
    let written = end["output"].as_str().expect("a panel was written");
    assert!(Path::new(written).starts_with(tmp.path()), "beside the input panel: {written}");
    moot::panel::Panel::load(Path::new(written)).expect("the written panel loads");
}

/// Slow replies, so a run is mid-way when its terminal goes.
fn slow_answer(req: &RecordedRequest) -> Reply {
    answer(req).delay(Duration::from_millis(150))
}

/// A closed terminal (SIGHUP through the pseudo-terminal's process) or a
/// shutdown (SIGTERM to a headless run) is no person's stop: the loop is
/// left without its end and `--resume` finishes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_terminal_or_a_shutdown_leaves_the_run_to_resume() {
    let server = TestServer::with_handler(slow_answer).await.unwrap();
    for (signal, live) in [("-HUP", true), ("-TERM", false)] {
        let tmp = tempfile::tempdir().unwrap();
        let (args, log) = optimize_args(tmp.path());
        let judging = |ev: &[Value]| has(ev, "judged", |_| true);
        let deadline = Instant::now() + Duration::from_secs(60);
        let wait_judging = || {
            while !judging(&events_of(&log)) {
                assert!(Instant::now() < deadline, "{signal}: no example was judged");
                std::thread::sleep(Duration::from_millis(25));
            }
        };
        let kill = |pid: u32| {
            let ok = std::process::Command::new("kill").arg(signal).arg(pid.to_string()).status().unwrap();
            assert!(ok.success());
        };
        if live {
            let mut moot = Moot::spawn(pty_command(&server, tmp.path(), &args));
            wait_judging();
            moot.wait_for("iteration");
            kill(moot.pid());
            let status = moot.wait_exit(Duration::from_secs(15));
            assert_eq!(status.exit_code(), 129, "{status:?}");
        } else {
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
                .args(&args)
                .arg("--headless")
                .current_dir(tmp.path())
                .env("OPENAI_BASE_URL", server.base_url())
                .env("OPENAI_API_KEY", "sk-test")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            wait_judging();
            kill(child.id());
            let out = child.wait_with_output().unwrap();
            let said = String::from_utf8_lossy(&out.stderr);
            assert!(said.contains("is left unfinished: go on with `moot optimize --resume"), "{said}");
            assert_eq!(out.status.code(), Some(129), "{said}");
        }
        let before = events_of(&log);
        assert!(
            before.iter().all(|e| e["type"] != "optimize_ended" && e["type"] != "stop_requested"),
            "{signal}: no end, no stop: {:?}",
            before.last()
        );
        let run = log.parent().unwrap().to_string_lossy().into_owned();
        let end = if live {
            // A run begun on the live screen goes on there: a person stops it with `x`.
            let resume = ["optimize".to_string(), "--resume".into(), run];
            let mut moot = Moot::spawn(pty_command(&server, tmp.path(), &resume));
            moot.wait_for("iteration");
            moot.send("x");
            let ev = wait_log(&moot, &log, "the end", |ev| has(ev, "optimize_ended", |_| true));
            moot.send("q");
            ev.last().unwrap()["status"].as_str().map(str::to_string)
        } else {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
                .args(["optimize", "--resume", &run, "--headless"])
                .current_dir(tmp.path())
                .env("OPENAI_BASE_URL", server.base_url())
                .env("OPENAI_API_KEY", "sk-test")
                .output()
                .unwrap();
            assert!(out.status.success(), "{signal}: {}", String::from_utf8_lossy(&out.stderr));
            events_of(&log).last().unwrap()["status"].as_str().map(str::to_string)
        };
        assert_eq!(end.as_deref(), Some(if live { "stopped" } else { "completed" }), "{signal}");
        let after = events_of(&log);
        assert_eq!(after.last().unwrap()["type"], "optimize_ended");
        assert_eq!(after[..before.len()], before[..], "{signal}: what was recorded stays as it was");
    }
}
