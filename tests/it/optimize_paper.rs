//! `moot optimize` as the prompt-optimisation paper runs it: Pearson r as
//! S, clusters by the dataset each example comes from (one example per
//! cluster), the few-shot baseline, and a test split judged only after the
//! loop, so the score reported is not the one that chose the prompt; then
//! `--preset paper` on the command line.

use crate::support::optimize as support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use moot::engine::prompts::fence_end;
use moot::optimize::log::{OptKind, OptRecorder};
use moot::optimize::view::OptView;
use moot::optimize::{ClusterBy, Condition, Design, Objective, OptEvent, OptStatus, Split, optimize};
use moot::testkit::server::{RecordedRequest, Reply, TestServer};

use super::optimize_cli::reply;
use support::*;

async fn run(c: moot::optimize::OptimizeConfig) -> (moot::optimize::OptOutcome, Vec<OptEvent>) {
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (_cmd, rx) = tokio::sync::mpsc::unbounded_channel();
    let outcome = optimize(c, OptRecorder::new(None, Some(tx)).unwrap(), rx).await;
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        seen.push(e);
    }
    (outcome, seen)
}

/// Each example's `source` as the bundled data gives it (trivia, science, support).
fn sources() -> Vec<String> {
    examples().iter().map(|e| e.item.id.rsplit_once('-').unwrap().0.to_string()).collect()
}

#[tokio::test]
async fn the_test_split_scores_the_chosen_prompt_apart_from_the_selection() {
    let mut c = config(provider(&examples()), 3, false);
    c.design = Design { test: 0.3, few_shot: true, ..Design::default() };
    let (outcome, events) = run(c).await;
    assert_eq!(outcome.status, OptStatus::Completed, "{outcome:?}");
    let view = OptView::from_events(&events);

    // The test split is apart from training and held-out, and never judged during the loop.
    assert_eq!(view.test.len(), 13, "30% of 42, rounded up");
    let test: BTreeSet<&String> = view.test.iter().collect();
    assert!(view.train.iter().all(|e| !test.contains(&e.id)) && view.holdout.iter().all(|h| !test.contains(h)));
    for e in &events {
        if let OptKind::Judged { id, split, .. } = &e.kind {
            assert!(!test.contains(id) && *split != Split::Test, "{id} judged during the loop");
        }
    }
    // After the loop: the initial, few-shot and chosen prompts on the test split.
    let conditions: Vec<(Condition, Split)> = view.conditions.iter().map(|c| (c.condition, c.split)).collect();
    assert_eq!(
        conditions,
        [(Condition::Initial, Split::Test), (Condition::FewShot, Split::Test), (Condition::Chosen, Split::Test)]
    );
    let chosen = view.conditions.iter().find(|c| c.condition == Condition::Chosen).unwrap();
    assert_eq!(chosen.iteration, outcome.best);
    assert_eq!(chosen.score, Some(1.0), "the phrase makes the judge agree on unseen examples too");
    assert_eq!(outcome.test, chosen.score);
    let ended = view.ended.as_ref().unwrap();
    assert_eq!((ended.test, ended.best_holdout), (chosen.score, Some(1.0)));
    // The few-shot prompt is the initial one with the first iteration's picks and their labels.
    let few_shot = events
        .iter()
        .find_map(|e| match &e.kind {
            OptKind::ConditionScored { condition: Condition::FewShot, prompt, rows, .. } => {
                Some((prompt.clone().unwrap(), rows.len()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(few_shot.1, 13);
    let all = examples();
    for (n, pick) in view.iterations[0].picks.iter().enumerate() {
        let e = all.iter().find(|e| e.item.id == pick.id).unwrap();
        let shot = format!("Example {} (people's `match`: {}):", n + 1, e.label);
        let at = few_shot.0.examples.find(&shot).unwrap_or_else(|| panic!("{shot}\n{}", few_shot.0.examples));
        let text = format!("\nText: {}", e.item.content.trim());
        assert!(few_shot.0.examples[at..].contains(&text), "{}: {}", pick.id, few_shot.0.examples);
    }
}

#[tokio::test]
async fn without_a_test_split_the_few_shot_prompt_is_scored_on_the_held_out_split() {
    let mut c = config(provider(&examples()), 2, false);
    c.design.few_shot = true;
    let (outcome, events) = run(c).await;
    assert_eq!(outcome.test, None);
    let view = OptView::from_events(&events);
    let c: Vec<(Condition, Split)> = view.conditions.iter().map(|c| (c.condition, c.split)).collect();
    assert_eq!(c, [(Condition::FewShot, Split::Holdout)]);
}

#[tokio::test]
async fn pearson_r_is_the_loops_score() {
    let mut c = config(provider(&examples()), 2, false);
    c.objective = Objective::Pearson;
    let (outcome, events) = run(c).await;
    assert!(events.iter().any(|e| matches!(&e.kind, OptKind::Scored { objective, .. } if objective == "pearson")));
    let s: Vec<Option<f64>> = outcome.iterations.iter().map(|r| r.holdout).collect();
    // Without the phrase the judge turns every label around; with it, it agrees.
    assert_eq!(s, [Some(-1.0), Some(1.0)]);
}

#[tokio::test]
async fn clusters_by_source_draw_one_example_from_each_dataset() {
    let mut c = config(provider(&examples()), 2, false);
    c.per_cluster = 1;
    c.clusters = 7; // unused: the field decides
    c.design.cluster_by = Some(ClusterBy { field: "source".into(), values: sources() });
    let (_, events) = run(c).await;
    let view = OptView::from_events(&events);
    assert_eq!(view.cluster_by.as_deref(), Some("source"));
    // Training examples share a cluster exactly when they share a source.
    for a in &view.train {
        for b in &view.train {
            let same = a.id.rsplit_once('-').unwrap().0 == b.id.rsplit_once('-').unwrap().0;
            assert_eq!(a.cluster == b.cluster, same, "{} {}", a.id, b.id);
        }
    }
    for it in &view.iterations {
        let sources: BTreeSet<&str> = it.picks.iter().map(|p| p.id.rsplit_once('-').unwrap().0).collect();
        assert_eq!((it.picks.len(), sources.len()), (3, 3), "one example per source");
    }
}

// --- the command line ---------------------------------------------------------

/// Judges `match`: the people's label once the guidance is in its prompt,
/// the label turned around before.
fn answer(req: &RecordedRequest) -> Reply {
    let body = req.body_json().unwrap_or_default();
    let system = body["messages"][0]["content"].as_str().unwrap_or("").to_string();
    let all = body["messages"].to_string();
    if system.starts_with("You study where an automatic judge") {
        return reply("The judge is too strict with answers in other words.");
    }
    if system.starts_with("You revise the instructions") {
        return reply(&format!(
            "## Task\nCompare the answers.\n\n## Rubric\n1: same.\n0: wrong.\n\n## Guidance\n{PHRASE}\n\n## Examples\n"
        ));
    }
    // The item is the last one named in the request (few-shot examples come first).
    let label = examples()
        .iter()
        .filter_map(|e| all.rfind(&fence_end(&e.item)).map(|at| (at, e.label)))
        .max_by_key(|(at, _)| *at)
        .map_or(0.0, |(_, l)| l);
    let score = if all.contains(PHRASE) { label } else { 1.0 - label };
    reply(&format!("Judged. {{\"match\": {score}}}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_paper_preset_on_the_command_line() {
    let server = TestServer::with_handler(answer).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(root.join("assets/panels/answer-judge.toml"), tmp.path().join("judge.toml")).unwrap();
    std::fs::copy(root.join("assets/items/answer-judge-labelled.jsonl"), tmp.path().join("labelled.jsonl")).unwrap();
    let out = tokio::task::spawn_blocking({
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_moot"));
        cmd.current_dir(tmp.path())
            .env("OPENAI_BASE_URL", server.base_url())
            .env("OPENAI_API_KEY", "sk-test")
            .args(["optimize", "judge.toml", "--data", "labelled.jsonl", "--provider", "openai", "--no-cache"])
            .args(["--headless", "--preset", "paper", "--cluster-by", "source", "--max-iter", "2", "--out", "run"]);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("(paper preset)"), "{stdout}");
    assert!(stdout.contains("in 3 clusters by `source`"), "{stdout}");
    assert!(stdout.contains("3 examples picked"), "one per cluster: {stdout}");
    assert!(stdout.contains("S = pearson"), "graded labels: the paper's Pearson r: {stdout}");
    assert!(stdout.contains("test S of the few-shot prompt"), "{stdout}");
    assert!(stdout.contains("(the score that chose it); test S"), "{stdout}");
    let events = moot::optimize::log::read_log(&tmp.path().join("run/optimize.jsonl")).unwrap();
    let view = OptView::from_events(&events);
    assert_eq!(view.iterations.len(), 2, "an option given wins over the preset");
    assert_eq!(view.test.len(), 13);
    // The judges sample at temperature 0, as the paper's.
    let judged: Vec<f64> = server
        .requests()
        .iter()
        .filter_map(|r| r.body_json().ok())
        .filter(|b| {
            let system = b["messages"][0]["content"].as_str().unwrap_or("");
            !is_feedback(system) && !is_rewrite(system)
        })
        .map(|b| b["temperature"].as_f64().unwrap())
        .collect();
    assert!(!judged.is_empty() && judged.iter().all(|t| *t == 0.0), "{judged:?}");
}
