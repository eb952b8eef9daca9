//! A damaged session log is named the same way by every command that reads
//! one: `FILE:LINE: TYPE.FIELD.PATH: expected …, found …`. Each case damages
//! one line of a bundled example log (a wrong-typed field, a missing
//! required field, an unknown event type, a line that is not JSON, a last
//! line cut short) and runs `moot report`, `moot sessions show`,
//! `moot replay` and `moot run --resume` on it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use moot::testkit::judge_reply;
use moot::testkit::server::TestServer;
use portable_pty::CommandBuilder;
use serde_json::{Value, json};

use crate::tui_pty::Moot;

fn example() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/maj-eval-two-groups.jsonl");
    std::fs::read_to_string(path).unwrap()
}

/// The 1-based number of the first line of this type.
fn line_of(text: &str, ty: &str) -> usize {
    text.lines().position(|l| l.contains(&format!("\"type\":\"{ty}\""))).unwrap() + 1
}

/// One way of damaging a log, and what every command must say about it.
struct Case {
    name: &'static str,
    /// The log's text after the damage.
    text: String,
    line: usize,
    /// What follows `FILE:LINE: `.
    message: String,
}

fn damage_line(ty: &str, change: impl Fn(&mut Value)) -> (String, usize) {
    let text = example();
    let n = line_of(&text, ty);
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            if i + 1 != n {
                return l.to_string();
            }
            let mut v: Value = serde_json::from_str(l).unwrap();
            change(&mut v);
            v.to_string()
        })
        .collect();
    (lines.join("\n") + "\n", n)
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let (text, line) = damage_line("turn_completed", |v| v["evaluation"]["scores"]["grammar"] = json!("four"));
    out.push(Case {
        name: "wrong type",
        text,
        line,
        message: "turn_completed.evaluation.scores.grammar: expected a number, found \"four\"".into(),
    });
    let (text, line) = damage_line("speaker_selected", |v| {
        v.as_object_mut().unwrap().remove("agent");
    });
    out.push(Case {
        name: "missing field",
        text,
        line,
        message: "speaker_selected.agent: expected a value, found none (the field is required)".into(),
    });
    let (text, line) = damage_line("consensus_checked", |v| v["type"] = json!("consensus_checkd"));
    out.push(Case {
        name: "unknown type",
        text,
        line,
        message: "type: \"consensus_checkd\" is not an event type this version of moot knows; did you mean \"consensus_checked\"?"
            .into(),
    });
    let mut lines: Vec<String> = example().lines().map(str::to_string).collect();
    lines.insert(4, "{\"seq\": 4, \"t\": 2026-11-22, \"type\": \"phase_started\"}".into());
    out.push(Case {
        name: "not JSON",
        text: lines.join("\n") + "\n",
        line: 5,
        message: "not JSON at column 21: expected `,` or `}`".into(),
    });
    let text = example();
    let count = text.lines().count();
    let last = text.lines().last().unwrap();
    let cut = text.len() - 1 - last.len() / 2;
    out.push(Case {
        name: "torn last line",
        text: text[..cut].to_string(),
        line: count,
        message: format!(
            "ignored an incomplete last line ({} bytes): the log was cut while being written",
            last.len() - last.len() / 2
        ),
    });
    out
}

fn moot(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_moot"));
    c.current_dir(dir).env("NO_COLOR", "1").env("MOOT_SESSIONS_DIR", dir.join("none"));
    c
}

/// Write the case's log as `damaged.jsonl` in a fresh folder.
fn write_case(case: &Case) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.jsonl");
    std::fs::write(&path, &case.text).unwrap();
    (dir, path)
}

fn stderr_line(out: &Output, case: &Case, expected: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.lines().any(|l| l.contains(expected)), "{}: no line of stderr says {expected:?}:\n{err}", case.name);
}

#[test]
fn report_names_the_damaged_line() {
    for case in cases() {
        let (dir, _) = write_case(&case);
        let out = moot(dir.path()).args(["report", "damaged.jsonl"]).output().unwrap();
        assert!(out.status.success(), "{}: {}", case.name, String::from_utf8_lossy(&out.stderr));
        stderr_line(&out, &case, &format!("damaged.jsonl:{}: {}", case.line, case.message));
    }
}

#[test]
fn sessions_show_names_the_damaged_line() {
    for case in cases() {
        let (dir, _) = write_case(&case);
        let out = moot(dir.path()).args(["sessions", "show", "damaged.jsonl"]).output().unwrap();
        assert!(out.status.success(), "{}: {}", case.name, String::from_utf8_lossy(&out.stderr));
        stderr_line(&out, &case, &format!("damaged.jsonl:{}: {}", case.line, case.message));
        // The rest of the session is still shown.
        assert!(String::from_utf8_lossy(&out.stdout).contains("RESULT"), "{}", case.name);
    }
}

#[test]
fn sessions_list_names_the_damaged_line() {
    for case in cases().into_iter().filter(|c| c.name != "torn last line") {
        let (dir, _) = write_case(&case);
        let out = moot(dir.path()).args(["sessions", "list", "--dir", "."]).output().unwrap();
        assert!(out.status.success(), "{}: {}", case.name, String::from_utf8_lossy(&out.stderr));
        stderr_line(&out, &case, &format!("damaged.jsonl:{}: {}", case.line, case.message));
        // The session is still listed.
        assert!(String::from_utf8_lossy(&out.stdout).contains("maj-eval"), "{}", case.name);
    }
}

#[test]
fn a_log_whose_start_cannot_be_read_is_named_by_report() {
    let (text, line) = damage_line("session_started", |v| v["protocol"] = json!(42));
    let case = Case { name: "bad start", text, line, message: String::new() };
    let (dir, _) = write_case(&case);
    let out = moot(dir.path()).args(["report", "damaged.jsonl"]).output().unwrap();
    assert!(!out.status.success());
    stderr_line(&out, &case, "damaged.jsonl:1: session_started.protocol: expected a string, found 42 (skipped)");
}

#[test]
fn a_log_with_no_readable_event_is_refused_with_its_first_problem() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("damaged.jsonl"), "garbage\n").unwrap();
    for args in [&["sessions", "show", "damaged.jsonl"][..], &["replay", "damaged.jsonl"]] {
        let out = moot(dir.path()).args(args).output().unwrap();
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("the first problem: damaged.jsonl:1: not JSON at column 1: expected value"),
            "{args:?}: {err}"
        );
    }
}

/// `moot replay` in a terminal: the screen shows the first problem while it
/// plays, and the terminal keeps every problem once the replay is closed.
#[test]
fn replay_names_the_damaged_line() {
    for case in cases() {
        let (dir, _) = write_case(&case);
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
        cmd.args(["replay", "damaged.jsonl", "--speed", "32"]);
        cmd.cwd(dir.path());
        cmd.env("TERM", "xterm-256color");
        cmd.env("MOOT_SESSIONS_DIR", dir.path().join("none"));
        let mut moot = Moot::spawn(cmd);
        let screen = moot.screen();
        screen.wait_for(&format!("damaged.jsonl:{}:", case.line), Duration::from_secs(20));
        moot.send("q");
        let status = moot.wait_exit(Duration::from_secs(20));
        assert!(status.success(), "{}: {}", case.name, screen.text());
        let text: String = screen.text().split_whitespace().collect::<Vec<_>>().join(" ");
        let expected = format!("damaged.jsonl:{}: {}", case.line, case.message);
        assert!(text.contains(&expected), "{}: {expected:?} not in:\n{}", case.name, screen.text());
    }
}

/// `moot run --resume` reads the log with the same reader: it names the
/// damaged line once, as the other commands do, and goes on.
#[tokio::test(flavor = "multi_thread")]
async fn resume_names_the_damaged_line() {
    let server = TestServer::with_handler(|r| judge_reply(r, Duration::ZERO)).await.unwrap();
    for case in cases() {
        // A session to resume has no end: drop the `session_ended` line (the
        // torn case has cut it already).
        let text = match case.text.strip_suffix('\n') {
            Some(whole) => format!("{}\n", whole.rsplit_once('\n').unwrap().0),
            None => case.text.clone(),
        };
        let (dir, _) = write_case(&Case { text, name: case.name, line: case.line, message: case.message.clone() });
        let mut cmd = moot(dir.path());
        cmd.env("OPENAI_BASE_URL", server.base_url()).env("MOOT_CACHE_DIR", dir.path().join("cache")).args([
            "run",
            "--resume",
            "damaged.jsonl",
            "--headless",
            "--provider",
            "openai",
            "--model",
            "judge-model",
        ]);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap()).await.unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let expected = format!("moot: damaged.jsonl:{}: {}", case.line, case.message);
        assert!(
            err.lines().any(|l| l.starts_with(&expected)),
            "{}: no line of stderr starts {expected:?}:\n{err}",
            case.name
        );
        assert!(!err.contains("panicked"), "{}: {err}", case.name);
    }
}
