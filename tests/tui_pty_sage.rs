//! The binary in a real pseudo-terminal running the bundled SAGEval panel
//! against a local OpenAI-compatible server: the run pauses after the
//! meta-evaluator's review, `d` rejects the selected change, and the log
//! records the decision with its author and a result with the evaluator's
//! value back.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use moot::provider::testing::{RecordedRequest, Reply, TestServer};
use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use serde_json::Value;

const EVALUATOR: &str = "Mostly fine.\n{\"accuracy\": {\"reason\": \"Fits the prompt.\", \"score\": 4}, \
     \"semantic_diversity\": {\"reason\": \"Varied.\", \"score\": 4}, \"coherence\": {\"reason\": \"Ordered.\", \"score\": 4}, \
     \"relevancy\": {\"reason\": \"On topic.\", \"score\": 5}, \"audience_understandability\": {\"reason\": \"Plain.\", \"score\": 5}, \
     \"audience_engagement\": {\"reason\": \"Dry.\", \"score\": 3}, \"fairness\": {\"reason\": \"Neutral.\", \"score\": 4}, \
     \"tone\": {\"reason\": \"Warm.\", \"label\": \"friendly\"}}";

const REVIEW: &str = "Question 6 is cut off.\n{\"review\": {\"accuracy\": {\"verdict\": \"rectify\", \"score\": 2, \
     \"reason\": \"Question 6 is cut off.\"}}, \"definitions\": [], \"new_aspects\": []}";

fn reply(req: &RecordedRequest) -> Reply {
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

    fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).unwrap();
        self.writer.flush().unwrap();
    }

    fn text(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    fn wait_for(&self, what: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.text().contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("\"{what}\" never appeared on the screen:\n{}", self.text());
    }

    fn wait_exit(&mut self, timeout: Duration) -> portable_pty::ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "moot did not exit; screen:\n{}", self.text());
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

fn log_events(dir: &Path) -> Vec<Value> {
    let path: Option<PathBuf> = std::fs::read_dir(dir)
        .ok()
        .and_then(|d| d.flatten().map(|e| e.path()).find(|p| p.extension().is_some_and(|x| x == "jsonl")));
    let Some(path) = path else { return Vec::new() };
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| serde_json::from_str(l).ok()).collect()
}

fn wait_log(dir: &Path, what: &str, moot: &Moot, pred: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let ev = log_events(dir);
        if pred(&ev) {
            return ev;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the log never showed {what}; screen:\n{}", moot.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_sage_change_with_the_keys_puts_the_evaluators_value_back() {
    let server = TestServer::with_handler(reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sessions");
    let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_moot"));
    cmd.args(["run", "survey-sage", "--id", "survey-02", "--provider", "openai", "--out"]);
    cmd.arg(&out);
    cmd.cwd(tmp.path());
    cmd.env("OPENAI_BASE_URL", server.base_url());
    cmd.env("OPENAI_API_KEY", "sk-test");
    cmd.env("MOOT_USER", "pty-tester");
    cmd.env("TERM", "xterm-256color");
    cmd.env_remove("NO_COLOR");
    let mut moot = Moot::spawn(cmd);

    let paused = |ev: &[Value]| ev.iter().any(|e| e["type"] == "paused" && e["author"] == "sage-eval (review)");
    wait_log(&out, "the pause after the review", &moot, paused);
    moot.wait_for("SAGE changes", Duration::from_secs(10));
    moot.wait_for("4 → 2", Duration::from_secs(10));
    moot.send("d");
    let decided = |ev: &[Value]| ev.iter().any(|e| e["type"] == "revision_decided");
    let ev = wait_log(&out, "the decision", &moot, decided);
    let d = ev.iter().find(|e| e["type"] == "revision_decided").unwrap();
    assert_eq!((d["dimension"].as_str(), d["accepted"].as_bool()), (Some("accuracy"), Some(false)));
    assert_eq!(d["value"].as_f64(), Some(4.0), "the evaluator's value stands");
    assert_eq!(d["author"], "pty-tester");
    moot.wait_for("rejected·pty-tester", Duration::from_secs(10));

    moot.send(" ");
    let result = |ev: &[Value]| ev.iter().any(|e| e["type"] == "aggregation_completed" && e.get("group").is_none());
    let ev = wait_log(&out, "the result", &moot, result);
    let agg = ev.iter().rev().find(|e| e["type"] == "aggregation_completed" && e.get("group").is_none()).unwrap();
    assert_eq!(agg["scores"]["accuracy"].as_f64(), Some(4.0));
    assert_eq!(agg["original"]["accuracy"].as_f64(), Some(2.0), "the rectified value stays in the record");
    moot.send("q");
    let status = moot.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "exit status {status:?}");
    let last = log_events(&out).pop().unwrap();
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("session_ended"), Some("completed")));
}
