//! Resuming `moot optimize` from its log: an uninterrupted run is cut after
//! every event (and in the middle of the next line), each cut is resumed to
//! its end, and the resumed run must end as the uninterrupted one did — the
//! same outcome, the same events in its log — without asking a model again
//! for anything the cut log holds.

use crate::support::optimize as support;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use moot::optimize::log::{OptEvent, OptKind, OptRecorder, read_log};
use moot::optimize::{JudgePrompt, OptCommand, OptOutcome, OptimizeConfig, optimize, optimize_resumed};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use support::*;

/// A judge that answers each request the same way every time: the label
/// when the phrase is in its prompt, turned around otherwise; the rewrite
/// adds the phrase to a prompt without it and takes it out of one with it.
fn steady(examples: &[moot::optimize::Example]) -> Arc<ScriptedProvider> {
    let labels: BTreeMap<String, f64> = examples.iter().map(|e| (e.item.content.clone(), e.label)).collect();
    Arc::new(ScriptedProvider::new(move |req, _| {
        let text = request_text(req);
        if is_feedback(&text) {
            return "The judge marks answers wrong when they use other words than the reference.".into();
        }
        if is_rewrite(&text) {
            let mut p = JudgePrompt::of(&panel());
            if !text.contains(PHRASE) {
                p.guidance = PHRASE.into();
            }
            return ScriptedReply::Text(format!("Here is the revision.\n\n{}", p.render()));
        }
        let label = labels
            .iter()
            .filter(|(content, _)| text.contains(content.as_str()))
            .max_by_key(|(content, _)| content.len())
            .map(|(_, l)| *l);
        let Some(label) = label else { return "I cannot find the item.".into() };
        let score = if text.contains(PHRASE) { label } else { 1.0 - label };
        ScriptedReply::Text(format!("The answer is judged. {{\"match\": {score}}}"))
    }))
}

fn configured(p: Arc<ScriptedProvider>) -> OptimizeConfig {
    let mut c = config(p, 3, false);
    c.design.test = 0.3;
    c.design.few_shot = true;
    c
}

/// Requests by what asked them: judge, feedback, rewrite.
fn counts(p: &ScriptedProvider) -> [usize; 3] {
    let mut n = [0; 3];
    for r in p.requests() {
        let text = request_text(&r);
        n[if is_feedback(&text) {
            1
        } else if is_rewrite(&text) {
            2
        } else {
            0
        }] += 1;
    }
    n
}

/// Judge runs, feedback replies and rewrite replies that `events` hold.
fn answered(events: &[OptEvent]) -> [usize; 3] {
    let mut n = [0; 3];
    for e in events {
        match &e.kind {
            OptKind::Judged { .. } => n[0] += 1,
            OptKind::ConditionScored { rows, .. } => n[0] += rows.len(),
            OptKind::FeedbackWritten { by, .. } if by == "feedback" => n[1] += 1,
            OptKind::RewriteProposed { .. } | OptKind::RewriteFailed { .. } => n[2] += 1,
            _ => {}
        }
    }
    n
}

/// The log's events without their time, sorted (judgements finish in any order).
fn story(events: &[OptEvent]) -> Vec<String> {
    let mut s: Vec<String> = events.iter().map(|e| serde_json::to_string(&e.kind).unwrap()).collect();
    s.sort();
    s
}

/// The events one log has and the other has not (none: the same story).
fn story_diff(a: &[OptEvent], b: &[OptEvent]) -> (Vec<String>, Vec<String>) {
    let (mut a, mut b) = (story(a), story(b));
    let only_a: Vec<String> = a.iter().filter(|x| !b.contains(x)).cloned().collect();
    let only_b: Vec<String> = b.iter().filter(|x| !a.contains(x)).cloned().collect();
    a.retain(|x| !only_a.contains(x));
    b.retain(|x| !only_b.contains(x));
    if a != b {
        return (vec![format!("{} events in common against {}", a.len(), b.len())], only_b);
    }
    (only_a, only_b)
}

fn same_outcome(a: &OptOutcome, b: &OptOutcome, what: &str) {
    assert_eq!(
        (a.status, &a.reason, a.best, &a.prompt, a.test),
        (b.status, &b.reason, b.best, &b.prompt, b.test),
        "{what}"
    );
    assert_eq!(a.iterations, b.iterations, "{what}");
}

async fn uninterrupted(dir: &Path) -> (OptOutcome, Vec<OptEvent>, [usize; 3]) {
    let p = steady(&examples());
    let log = dir.join("whole/optimize.jsonl");
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = optimize(configured(p.clone()), OptRecorder::new(Some(&log), None).unwrap(), rx).await;
    (outcome, read_log(&log).unwrap(), counts(&p))
}

/// Resume the log at `path` with a fresh provider; its outcome, final log and requests.
async fn resume(path: &Path) -> (OptOutcome, Vec<OptEvent>, [usize; 3]) {
    let p = steady(&examples());
    let old = read_log(path).unwrap();
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let rec = OptRecorder::resume(path, old, None).unwrap();
    let outcome = optimize_resumed(configured(p.clone()), rec, rx).await;
    (outcome, read_log(path).unwrap(), counts(&p))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cut_of_a_log_resumes_to_the_uninterrupted_result_asking_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, events, asked) = uninterrupted(dir.path()).await;
    assert_eq!(whole.best, Some(2), "{whole:?}");
    assert!(whole.test.is_some(), "the test split was scored: {whole:?}");
    assert!(asked[1] == 2 && asked[2] == 2, "{asked:?}");
    let text = std::fs::read_to_string(dir.path().join("whole/optimize.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), events.len());
    // Judge requests per judged example (one engine run each).
    let per_run = asked[0] / answered(&events)[0];
    assert_eq!(asked[0], per_run * answered(&events)[0]);

    for keep in 1..lines.len() {
        for torn in [false, true] {
            let what = format!("cut after {keep} events{}", if torn { ", the next one torn" } else { "" });
            let path = dir.path().join(format!("cut-{keep}-{torn}/optimize.jsonl"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut cut: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
            if torn {
                cut.push_str(&lines[keep][..lines[keep].len() / 2]);
            }
            std::fs::write(&path, &cut).unwrap();

            let (outcome, after, resumed) = resume(&path).await;
            same_outcome(&whole, &outcome, &what);
            assert_eq!(story_diff(&after, &events), (vec![], vec![]), "{what}: the resumed log tells the same story");
            for (n, e) in after.iter().enumerate() {
                assert_eq!(e.seq, n as u64, "{what}: seq without a gap");
            }
            assert_eq!(&after[0], &events[0], "{what}: the first line stays");
            // Nothing the cut log holds is asked again; the rest is asked once.
            let held = answered(&events[..keep]);
            let whole_answered = answered(&events);
            let expected =
                [per_run * (whole_answered[0] - held[0]), whole_answered[1] - held[1], whole_answered[2] - held[2]];
            assert_eq!(resumed, expected, "{what}: requests (judge, feedback, rewrite)");
        }
    }
}

/// What the person does at each review point of the run reviewed on the
/// screen: pins an example and rewrites the first feedback, accepts the first
/// rewrite, goes on at the second feedback and rejects its rewrite, rolls
/// back to iteration 2 at the third feedback.
fn actions(kind: &OptKind, pin: &str) -> Vec<OptCommand> {
    match kind {
        OptKind::FeedbackWritten { iteration: 1, by, .. } if by == "feedback" => {
            vec![OptCommand::Pin(pin.into()), OptCommand::EditFeedback("Paraphrases are right.".into())]
        }
        OptKind::RewriteProposed { iteration: 1, .. } => vec![OptCommand::Accept],
        OptKind::FeedbackWritten { iteration: 2, by, .. } if by == "feedback" => vec![OptCommand::Continue],
        OptKind::RewriteProposed { iteration: 2, .. } => vec![OptCommand::Reject],
        OptKind::FeedbackWritten { iteration: 3, by, .. } if by == "feedback" => vec![OptCommand::RollBack(2)],
        _ => Vec::new(),
    }
}

/// Whether `kind` records `cmd` (so the log holds it and it is not given again).
fn records(kind: &OptKind, cmd: &OptCommand) -> bool {
    match (kind, cmd) {
        (OptKind::ExamplePinned { id, .. }, OptCommand::Pin(p)) => id == p,
        (OptKind::FeedbackWritten { by, .. }, OptCommand::EditFeedback(_)) => by == "human",
        (OptKind::RewriteDecided { .. }, OptCommand::Accept | OptCommand::Reject) => true,
        (OptKind::RolledBack { .. }, OptCommand::RollBack(_)) => true,
        _ => false,
    }
}

/// The person at the screen: answers every review point the run reaches that
/// the log `old` did not answer, with what it did not record yet.
fn person(
    old: Vec<OptEvent>,
    pin: String,
    mut events: tokio::sync::mpsc::UnboundedReceiver<OptEvent>,
    commands: tokio::sync::mpsc::UnboundedSender<OptCommand>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(e) = events.recv().await {
            let at = old.iter().position(|o| o.seq == e.seq && o.kind == e.kind);
            let after = at.map_or(&[][..], |i| &old[i + 1..]);
            // The log went on past this point (with more than a pin): it was answered.
            let answered = after.iter().any(|o| !matches!(o.kind, OptKind::ExamplePinned { .. }));
            if at.is_some() && answered {
                continue;
            }
            for cmd in actions(&e.kind, &pin) {
                if !after.iter().any(|o| records(&o.kind, &cmd)) {
                    let _ = commands.send(cmd);
                }
            }
        }
    })
}

async fn reviewed(log: &Path, old: Option<Vec<OptEvent>>) -> (OptOutcome, [usize; 3]) {
    let p = steady(&examples());
    let c = config(p.clone(), 4, true);
    let pin = opening_train(&c);
    let (tx, events) = tokio::sync::mpsc::unbounded_channel();
    let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = match old {
        None => {
            let who = person(Vec::new(), pin, events, commands);
            let o = optimize(c, OptRecorder::new(Some(log), Some(tx)).unwrap(), rx).await;
            who.abort();
            o
        }
        Some(old) => {
            let rec = OptRecorder::resume(log, old.clone(), Some(tx)).unwrap();
            let who = person(old, pin, events, commands);
            let o = optimize_resumed(c, rec, rx).await;
            who.abort();
            o
        }
    };
    (outcome, counts(&p))
}

/// A training example of the run (the one the person pins).
fn opening_train(c: &OptimizeConfig) -> String {
    match moot::optimize::opening(c).unwrap() {
        OptKind::OptimizeStarted { train, .. } => train.last().unwrap().id.clone(),
        _ => unreachable!(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewed_run_resumes_with_the_person_s_decisions_from_its_log() {
    let dir = tempfile::tempdir().unwrap();
    let whole_log = dir.path().join("whole/optimize.jsonl");
    let (whole, _) = reviewed(&whole_log, None).await;
    let events = read_log(&whole_log).unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| serde_json::to_value(&e.kind).unwrap()["type"].as_str().unwrap().to_string().leak() as &str)
        .collect();
    for t in ["example_pinned", "rolled_back", "rewrite_decided"] {
        assert!(kinds.contains(&t), "{t} in {kinds:?}");
    }
    assert!(events.iter().any(|e| matches!(&e.kind, OptKind::FeedbackWritten { by, .. } if by == "human")));
    assert_eq!(whole.iterations.len(), 4, "{whole:?}");
    let text = std::fs::read_to_string(&whole_log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let whole_answered = answered(&events);
    for keep in 1..lines.len() {
        // Torn lines are read the same way at every cut (the test above); here every fourth.
        for torn in [false, true].into_iter().filter(|&t| !t || keep % 4 == 0) {
            let what = format!("reviewed, cut after {keep} events{}", if torn { ", the next one torn" } else { "" });
            let path = dir.path().join(format!("cut-{keep}-{torn}/optimize.jsonl"));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let mut cut: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
            if torn {
                cut.push_str(&lines[keep][..lines[keep].len() / 2]);
            }
            std::fs::write(&path, &cut).unwrap();
            let old = read_log(&path).unwrap();
            let (outcome, asked) = tokio::time::timeout(std::time::Duration::from_secs(20), reviewed(&path, Some(old)))
                .await
                .unwrap_or_else(|_| panic!("{what}: the resumed run waits for nobody"));
            same_outcome(&whole, &outcome, &what);
            let after = read_log(&path).unwrap();
            assert_eq!(story_diff(&after, &events), (vec![], vec![]), "{what}: the resumed log tells the same story");
            let held = answered(&events[..keep]);
            assert_eq!(asked[1..], [whole_answered[1] - held[1], whole_answered[2] - held[2]], "{what}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_the_log_holds_ends_the_resumed_run_as_it_ended_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("whole/optimize.jsonl");
    let p = steady(&examples());
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel::<OptEvent>();
    let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
    // A person stops, choosing iteration 1, as the second iteration's judging begins.
    let who = tokio::spawn(async move {
        while let Some(e) = events.recv().await {
            if matches!(e.kind, OptKind::ExamplesPicked { iteration: 2, .. }) {
                let _ = commands.send(OptCommand::Stop { choose: Some(1) });
            }
        }
    });
    let whole = optimize(configured(p), OptRecorder::new(Some(&log), Some(tx)).unwrap(), rx).await;
    who.abort();
    assert_eq!(whole.status, moot::optimize::OptStatus::Stopped, "{whole:?}");
    assert_eq!(whole.best, Some(1));
    let events = read_log(&log).unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let stop = events.iter().position(|e| matches!(e.kind, OptKind::StopRequested { .. })).unwrap();
    for keep in stop + 1..lines.len() {
        let what = format!("stopped, cut after {keep} events");
        let path = dir.path().join(format!("cut-{keep}/optimize.jsonl"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, lines[..keep].iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
        let (outcome, after, asked) = resume(&path).await;
        same_outcome(&whole, &outcome, &what);
        assert_eq!(story_diff(&after, &events), (vec![], vec![]), "{what}");
        // Only the test split's conditions the cut log did not score are judged.
        let held = answered(&events[..keep]);
        let all = answered(&events);
        assert_eq!(asked[1..], [0, 0], "{what}: no feedback or rewrite after the stop");
        assert!(asked[0] <= all[0] - held[0], "{what}: {asked:?}");
    }
}

mod cli {
    use std::path::Path;
    use std::process::Command;

    use moot::testkit::server::{RecordedRequest, Reply, TestServer};

    use super::story_diff;
    use moot::optimize::log::read_log;

    fn system(req: &RecordedRequest) -> String {
        let body = req.body_json().unwrap_or_default();
        body["messages"][0]["content"].as_str().unwrap_or("").to_string()
    }

    fn answer(req: &RecordedRequest) -> Reply {
        let system = system(req);
        let all = req.body_json().unwrap_or_default()["messages"].to_string();
        let text = if system.starts_with("You study where an automatic judge") {
            "The judge is too strict with answers in other words.".to_string()
        } else if system.starts_with("You revise the instructions") {
            "## Task\nCompare the answers.\n\n## Rubric\n1: same.\n0: wrong.\n\n## Guidance\nOther words still match.\n\n## Examples\n"
                .to_string()
        } else if all.contains("Other words still match.") {
            "Matches. {\"match\": 1}".to_string()
        } else {
            "Does not match. {\"match\": 0}".to_string()
        };
        Reply::openai_stream(&[&text], Some((20, 10)))
    }

    /// Requests by what asked them: judge, feedback, rewrite.
    fn kinds(requests: &[RecordedRequest]) -> [usize; 3] {
        let mut n = [0; 3];
        for r in requests {
            let s = system(r);
            n[if s.starts_with("You study where") {
                1
            } else if s.starts_with("You revise") {
                2
            } else {
                0
            }] += 1;
        }
        n
    }

    fn moot(server: &TestServer, dir: &Path, args: &[&str]) -> std::process::Output {
        Command::new(env!("CARGO_BIN_EXE_moot"))
            .current_dir(dir)
            .env("OPENAI_BASE_URL", server.base_url())
            .env("OPENAI_API_KEY", "sk-test-secret")
            .arg("optimize")
            .args(args)
            .output()
            .unwrap()
    }

    fn panels(dir: &Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().contains(".optimized-"))
            .collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_interrupted_headless_run_resumes_through_the_binary_and_asks_only_what_its_log_lacks() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        std::fs::copy(root.join("assets/panels/answer-judge.toml"), dir.join("judge.toml")).unwrap();
        std::fs::copy(root.join("assets/items/answer-judge-labelled.jsonl"), dir.join("labelled.jsonl")).unwrap();
        let args = [
            "judge.toml",
            "--data",
            "labelled.jsonl",
            "--provider",
            "openai",
            "--no-cache",
            "--headless",
            "--max-iter",
            "3",
            "--threshold",
            "1.01",
            "--seed",
            "5",
            "--concurrency",
            "1",
            "--out",
            "run",
        ];
        let server = TestServer::with_handler(answer).await.unwrap();
        let out = tokio::task::spawn_blocking({
            let (server, dir) = (server.base_url(), dir.clone());
            move || {
                Command::new(env!("CARGO_BIN_EXE_moot"))
                    .current_dir(&dir)
                    .env("OPENAI_BASE_URL", server)
                    .env("OPENAI_API_KEY", "sk-test-secret")
                    .arg("optimize")
                    .args(args)
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let whole_asked = kinds(&server.requests());
        let log = dir.join("run/optimize.jsonl");
        let whole = read_log(&log).unwrap();
        let text = std::fs::read_to_string(&log).unwrap();

        // The process died in the second iteration, as its first rewrite was
        // decided and a judgement of the next was half written.
        let lines: Vec<&str> = text.lines().collect();
        let keep = lines.iter().position(|l| l.contains("\"type\":\"rewrite_decided\"")).unwrap() + 4;
        let cut: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect::<String>() + &lines[keep][..20];
        std::fs::write(&log, cut).unwrap();
        for p in panels(&dir) {
            std::fs::remove_file(p).unwrap();
        }
        let held = read_log(&log).unwrap();
        let held_judged = held.iter().filter(|e| matches!(e.kind, moot::optimize::OptKind::Judged { .. })).count();

        let again = TestServer::with_handler(answer).await.unwrap();
        let out = tokio::task::spawn_blocking({
            let (server, dir) = (again.base_url(), dir.clone());
            move || {
                Command::new(env!("CARGO_BIN_EXE_moot"))
                    .current_dir(&dir)
                    .env("OPENAI_BASE_URL", server)
                    .env("OPENAI_API_KEY", "sk-test-secret")
                    .args(["optimize", "--resume", "run", "--headless"])
                    .output()
                    .unwrap()
            }
        })
        .await
        .unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
        assert!(stderr.contains("ignored an incomplete last line"), "{stderr}");
        assert!(stderr.contains(&format!("from {keep} events")), "{stderr}");
        assert!(stdout.contains("ended completed"), "{stdout}");
        let resumed = read_log(&log).unwrap();
        assert_eq!(
            story_diff(&resumed, &whole),
            (vec![], vec![]),
            "the resumed log tells the uninterrupted run's story"
        );
        let asked = kinds(&again.requests());
        let judge_per_run =
            whole_asked[0] / whole.iter().filter(|e| matches!(e.kind, moot::optimize::OptKind::Judged { .. })).count();
        assert_eq!(asked, [whole_asked[0] - held_judged * judge_per_run, whole_asked[1] - 1, whole_asked[2] - 1]);
        assert_eq!(panels(&dir).len(), 1, "the chosen prompt's panel is written once");

        // A finished run is not resumed; a resumption takes no options that change the run.
        let out = moot(&again, &dir, &["--resume", "run", "--headless"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1));
        assert!(stderr.contains("the run ended (completed") && stderr.contains("nothing to resume"), "{stderr}");
        let out = moot(&again, &dir, &["--resume", "run", "--headless", "--seed", "3"]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("give no --seed"));
        let out = moot(&again, &dir, &["--resume", "run", "--headless", "--max-iter", "5"]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"), "{:?}", out);
        let out = moot(&again, &dir, &["--resume", "elsewhere", "--headless"]);
        assert!(String::from_utf8_lossy(&out.stderr).contains("elsewhere: no optimisation log"));
        assert_eq!(again.requests().len(), asked.iter().sum::<usize>(), "refusals ask nothing");
    }
}
