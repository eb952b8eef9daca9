//! `moot optimize`'s loop with scripted judges: it finds the rewrite that
//! makes the judge agree with the people, keeps the best held-out prompt when
//! a later rewrite is worse, never shows held-out examples to the feedback or
//! rewrite models, and follows a person's decisions.

use crate::support::optimize as support;

use std::collections::BTreeMap;
use std::sync::Arc;

use moot::engine::Binding;
use moot::optimize::log::{OptKind, OptRecorder, read_log};
use moot::optimize::view::OptView;
use moot::optimize::{Decision, Example, JudgePrompt, OptCommand, OptStatus, optimize};
use moot::panel::Panel;
use moot::session::event::Role;
use support::*;

#[tokio::test]
async fn the_loop_keeps_the_best_held_out_prompt_not_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let p = provider(&examples());
    let mut c = config(p.clone(), 3, false);
    c.output = Some(dir.path().join("answer-judge.optimized.toml"));
    let log = dir.path().join("run/optimize.jsonl");
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = optimize(c, OptRecorder::new(Some(&log), None).unwrap(), rx).await;

    assert_eq!(outcome.status, OptStatus::Completed, "{outcome:?}");
    let s: Vec<Option<f64>> = outcome.iterations.iter().map(|r| r.holdout).collect();
    assert_eq!(s.len(), 3);
    assert_eq!(s[1], Some(1.0), "the rewrite with the phrase agrees fully: {s:?}");
    assert!(s[0].unwrap() < 0.9 && s[2].unwrap() < 0.9, "{s:?}");
    assert_eq!(outcome.best, Some(2), "the best held-out iteration, not the last");
    assert!(outcome.prompt.as_ref().unwrap().guidance.contains(PHRASE));

    // The written panel loads and carries the chosen judge text.
    let written = outcome.output.expect("panel written");
    let loaded = Panel::load(&written).expect("the optimised panel loads");
    assert!(moot::engine::prompts::task_text(&loaded).contains(PHRASE));
    assert_eq!(loaded.dimensions, panel().dimensions);
    assert!(std::fs::read_to_string(&written).unwrap().starts_with("# Written by `moot optimize`"));

    // The log replays to the same story.
    let events = read_log(&log).unwrap();
    let view = OptView::from_events(&events);
    assert_eq!(view.iterations.len(), 3);
    assert_eq!(view.best(), Some(2));
    assert_eq!(view.ended.as_ref().unwrap().best, Some(2));
    for (seq, e) in events.iter().enumerate() {
        assert_eq!(e.seq, seq as u64);
    }
    let judged = events.iter().filter(|e| matches!(e.kind, OptKind::Judged { .. })).count();
    let held = view.holdout.len();
    assert_eq!(held, 13, "30% of 42, rounded up");
    assert_eq!(judged, view.iterations.iter().map(|i| i.picks.len() + held).sum::<usize>());
}

#[tokio::test]
async fn the_loop_stops_at_the_threshold() {
    let p = provider(&examples());
    let mut c = config(p, 10, false);
    c.threshold = 0.99;
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = optimize(c, OptRecorder::new(None, None).unwrap(), rx).await;
    assert_eq!(outcome.iterations.len(), 2);
    assert!(outcome.reason.contains("threshold"), "{}", outcome.reason);
    assert_eq!(outcome.best, Some(2));
}

#[tokio::test]
async fn held_out_examples_never_reach_the_feedback_or_rewrite_requests() {
    use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
    use moot::testkit::server::{Reply, TestServer, openai};

    let server = TestServer::start().await.expect("bind 127.0.0.1");
    let rewrite = JudgePrompt { guidance: PHRASE.into(), ..JudgePrompt::of(&panel()) }.render();
    server.set_handler(move |req| {
        let body = req.body_json().unwrap_or_default();
        let system = body["messages"][0]["content"].as_str().unwrap_or("").to_string();
        let reply = if is_rewrite(&system) { rewrite.clone() } else { "The judge ignores paraphrases.".into() };
        Reply::sse().event(&openai::content_chunk(&reply)).event(&openai::finish_chunk("stop")).event("[DONE]")
    });
    let remote = OpenAiProvider::new(OpenAiConfig {
        name: "local-test".into(),
        base_url: server.base_url(),
        model: "test-model".into(),
        ..OpenAiConfig::default()
    })
    .unwrap();
    let remote = Arc::new(remote);
    let examples = examples();
    let mut c = config(provider(&examples), 3, false);
    for role in Role::OPTIMIZE {
        c.bindings.roles.insert(role, Binding::new(remote.clone(), "test-model"));
    }
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (_cmd, rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = optimize(c, OptRecorder::new(None, Some(tx)).unwrap(), rx).await;
    assert_eq!(outcome.status, OptStatus::Completed, "{outcome:?}");

    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push(e);
    }
    let view = OptView::from_events(&seen);
    assert!(!view.holdout.is_empty());
    let requests = server.requests();
    assert_eq!(requests.len(), 4, "two feedback and two rewrite calls went to the server");
    let bodies: Vec<String> = requests
        .iter()
        .map(|r| {
            let body = r.body_json().unwrap();
            body["messages"].as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap().to_string()).collect()
        })
        .collect();
    let by_id: BTreeMap<&str, &Example> = examples.iter().map(|e| (e.item.id.as_str(), e)).collect();
    let mut shown_picked = 0;
    for id in &view.holdout {
        let content = &by_id[id.as_str()].item.content;
        assert!(bodies.iter().all(|b| !b.contains(content.as_str())), "held-out {id} reached a request");
    }
    for pick in view.iterations.iter().flat_map(|i| &i.picks) {
        if bodies.iter().any(|b| b.contains(by_id[pick.id.as_str()].item.content.as_str())) {
            shown_picked += 1;
        }
    }
    assert!(shown_picked > 0, "the feedback requests do show picked examples");
    assert!(
        bodies.iter().any(|b| b.contains("The judge's reason: The answer is judged.")),
        "the feedback sees the judge's own words on the picked examples"
    );
}

#[tokio::test]
async fn a_person_rejects_a_rewrite_rolls_back_and_chooses_an_iteration() {
    let p = provider(&examples());
    let c = config(p, 6, true);
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (cmd, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(optimize(c, OptRecorder::new(None, Some(tx)).unwrap(), rx));
    let mut view = OptView::default();
    let mut step = 0;
    while let Some(e) = events.recv().await {
        view.apply(&e);
        match (&e.kind, step) {
            (OptKind::FeedbackWritten { iteration: 1, by, .. }, 0) if by == "feedback" => {
                cmd.send(OptCommand::EditFeedback("Accept paraphrases.".into())).unwrap();
                step = 1;
            }
            (OptKind::RewriteProposed { iteration: 1, .. }, 1) => {
                cmd.send(OptCommand::Reject).unwrap();
                step = 2;
            }
            (OptKind::FeedbackWritten { iteration: 2, by, .. }, 2) if by == "feedback" => {
                cmd.send(OptCommand::Continue).unwrap();
                step = 3;
            }
            (OptKind::RewriteProposed { iteration: 2, .. }, 3) => {
                cmd.send(OptCommand::Accept).unwrap();
                step = 4;
            }
            (OptKind::FeedbackWritten { iteration: 3, by, .. }, 4) if by == "feedback" => {
                cmd.send(OptCommand::RollBack(1)).unwrap();
                step = 5;
            }
            (OptKind::FeedbackWritten { iteration: 4, by, .. }, 5) if by == "feedback" => {
                cmd.send(OptCommand::Stop { choose: Some(1) }).unwrap();
                step = 6;
            }
            _ => {}
        }
    }
    let outcome = task.await.unwrap();
    assert_eq!(step, 6);
    assert_eq!(outcome.status, OptStatus::Stopped);
    assert_eq!(outcome.best, Some(1), "the person chose iteration 1");
    assert_eq!(view.ended.as_ref().unwrap().chosen_by, "human");
    let it = |n| view.iteration(n).unwrap();
    assert_eq!(it(1).feedback_by.as_deref(), Some("tester"));
    assert_eq!(it(1).feedback.as_deref(), Some("Accept paraphrases."));
    assert_eq!(it(1).decision, Some((Decision::Rejected, "tester".into())));
    assert_eq!(it(2).prompt, it(1).prompt, "a rejected rewrite keeps the prompt");
    assert_eq!(it(2).decision, Some((Decision::Accepted, "tester".into())));
    assert_eq!(Some(&it(3).prompt), it(2).proposed.as_ref(), "an accepted rewrite is the next prompt");
    assert_eq!(it(4).from, Some(1), "rolled back to iteration 1");
    assert_eq!(it(4).prompt, it(1).prompt);
    assert!(view.notes.iter().any(|n| n.contains("rolled back to iteration 1 by tester")));
}

#[test]
fn clustering_is_reproducible_for_a_seed() {
    let texts: Vec<String> = examples().iter().map(|e| moot::optimize::example_text(&e.item)).collect();
    let a = moot::optimize::sample::cluster(&texts, 4, 3).unwrap();
    assert_eq!(a, moot::optimize::sample::cluster(&texts, 4, 3).unwrap());
    assert_eq!(a.iter().collect::<std::collections::BTreeSet<_>>().len(), 4);
    let picks = |seed| moot::optimize::sample::draw(&a, 2, &Default::default(), &Default::default(), seed, 1);
    assert_eq!(picks(5), picks(5));
}

#[test]
fn judge_text_follows_the_task_in_every_judges_prompt() {
    let p = panel();
    let text = moot::engine::prompts::task_text(&p);
    assert!(text.starts_with(p.task.trim()));
    assert!(text.contains("\n\nRubric:\n1: the generated answer says what the reference says."), "{text}");
    assert!(!text.contains("Scoring guidance:"), "an empty part gets no heading");
    let with_guidance = JudgePrompt { guidance: PHRASE.into(), ..JudgePrompt::of(&p) }.apply(&p);
    assert!(moot::engine::prompts::task_text(&with_guidance).ends_with(&format!("Scoring guidance:\n{PHRASE}")));
    // The 0–1 scale asks for fractions.
    assert!(moot::engine::prompts::scale_words(&p).contains("such as 0.75"));
}

#[test]
fn a_misspelt_judge_field_is_named_with_its_line() {
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/panels/answer-judge.toml"),
    )
    .unwrap()
    .replacen("[judge]\n", "[judge]\nrubrik = \"x\"\n", 1);
    let err = Panel::from_toml_str(&text, "judge.toml").unwrap_err().to_string();
    assert!(err.contains("judge.rubrik: unknown field"), "{err}");
    assert!(err.starts_with("judge.toml:"), "{err}");
    let bad_type = text.replacen("rubrik = \"x\"", "examples = 3", 1);
    let err = Panel::from_toml_str(&bad_type, "judge.toml").unwrap_err().to_string();
    assert!(err.contains("judge.examples"), "{err}");
}
