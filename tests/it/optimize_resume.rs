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
use moot::optimize::{JudgePrompt, OptOutcome, OptimizeConfig, optimize, optimize_resumed};
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
            assert_eq!(story(&after), story(&events), "{what}: the resumed log tells the same story");
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
