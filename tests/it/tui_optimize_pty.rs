//! `moot optimize` in a real pseudo-terminal against a local OpenAI-compatible
//! server: a person goes on past the feedback with `y`, rejects the rewrite
//! with `r`, selects the first iteration and rolls back to it with `k` `b`,
//! and the log records each decision with its author.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::Value;

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

struct Moot {
    child: Box<dyn portable_pty::Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    parser: Arc<Mutex<vt100::Parser>>,
}

impl Moot {
    fn spawn(cmd: CommandBuilder) -> Self {
        let pair =
            native_pty_system().openpty(PtySize { rows: 24, cols: 80, pixel_width: 0, pixel_height: 0 }).unwrap();
        let child = pair.slave.spawn_command(cmd).unwrap();
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().unwrap();
        let writer = pair.master.take_writer().unwrap();
        let parser = Arc::new(Mutex::new(vt100::Parser::new(24, 80, 0)));
        let p2 = parser.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                p2.lock().unwrap().process(&buf[..n]);
            }
        });
        Self { child, writer, parser }
    }

    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    fn wait_for(&self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.text().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("\"{what}\" never appeared on the screen:\n{}", self.text());
    }

    fn wait_log(&self, log: &Path, what: &str, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            let ev: Vec<Value> = std::fs::read_to_string(log)
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            if pred(&ev) {
                return ev;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("the log never showed {what}; screen:\n{}", self.text());
    }
}

fn has(ev: &[Value], kind: &str, f: impl Fn(&Value) -> bool) -> bool {
    ev.iter().any(|e| e["type"] == kind && f(e))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_rewrite_and_rolling_back_with_the_keys() {
    let server = TestServer::with_handler(answer).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let panel = tmp.path().join("answer-judge.toml");
    std::fs::copy(root.join("assets/panels/answer-judge.toml"), &panel).unwrap();
    let items: String = std::fs::read_to_string(root.join("assets/items/answer-judge-labelled.jsonl"))
        .unwrap()
        .lines()
        .take(8)
        .map(|l| format!("{l}\n"))
        .collect();
    let data = tmp.path().join("labelled.jsonl");
    std::fs::write(&data, items).unwrap();
    let run = tmp.path().join("run");
    let log = run.join("optimize.jsonl");

    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.arg("optimize");
    cmd.arg(&panel);
    cmd.arg("--data");
    cmd.arg(&data);
    cmd.args(["--max-iter", "3", "--threshold", "1.01", "--clusters", "2", "--per-cluster", "1", "--no-cache"]);
    cmd.args(["--provider", "openai", "--out"]);
    cmd.arg(&run);
    cmd.cwd(tmp.path());
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    let mut moot = Moot::spawn(cmd);

    moot.wait_log(&log, "the first feedback", |ev| has(ev, "feedback_written", |e| e["iteration"] == 1));
    moot.wait_for("review the feedback");
    moot.send("y");
    moot.wait_log(&log, "the first rewrite", |ev| has(ev, "rewrite_proposed", |e| e["iteration"] == 1));
    moot.wait_for("decide on the rewrite");
    moot.send("r");
    let ev = moot.wait_log(&log, "the rejection", |ev| has(ev, "rewrite_decided", |_| true));
    let d = ev.iter().find(|e| e["type"] == "rewrite_decided").unwrap();
    assert_eq!((d["decision"].as_str(), d["author"].as_str()), (Some("rejected"), Some("pty-tester")));
    moot.wait_for("rejected");

    moot.wait_log(&log, "the second feedback", |ev| has(ev, "feedback_written", |e| e["iteration"] == 2));
    moot.wait_for("iteration 2: review the feedback");
    moot.send("k");
    moot.send("b");
    let ev = moot.wait_log(&log, "the third iteration", |ev| has(ev, "iteration_started", |e| e["iteration"] == 3));
    assert!(has(&ev, "rolled_back", |e| e["to"] == 1 && e["author"] == "pty-tester"));
    let third = ev.iter().find(|e| e["type"] == "iteration_started" && e["iteration"] == 3).unwrap();
    assert_eq!(third["from"], 1, "the third iteration starts from the first one's prompt");
    assert!(!has(&ev, "rewrite_proposed", |e| e["iteration"] == 2), "the rollback skipped the second rewrite");

    let ev = moot.wait_log(&log, "the end", |ev| has(ev, "optimize_ended", |_| true));
    let end = ev.last().unwrap();
    assert_eq!(end["type"], "optimize_ended");
    assert_eq!(end["status"], "completed");
    moot.wait_for("q quit");
    moot.send("q");
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(s) = moot.child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "moot did not exit:\n{}", moot.text());
        std::thread::sleep(Duration::from_millis(25));
    };
    assert!(status.success(), "exit status {status:?}");
    let written = end["output"].as_str().expect("a panel was written");
    assert!(Path::new(written).starts_with(tmp.path()), "beside the input panel: {written}");
    moot::panel::Panel::load(Path::new(written)).expect("the written panel loads");
}
