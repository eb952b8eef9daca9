//! Orchestration cost of `moot optimize`: 10 iterations over 100 labelled
//! examples (30 held out, 4 clusters × 2 picked) with an instant scripted
//! provider, so the time measured is moot's own: clustering, drawing,
//! one engine run per judged example (about 380), scoring, the feedback
//! and rewrite requests, and the events. Target: under 200 ms a loop.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use criterion::{Criterion, criterion_group, criterion_main};
use moot::engine::{Binding, Bindings};
use moot::item::Item;
use moot::optimize::log::OptRecorder;
use moot::optimize::{Example, JudgePrompt, Objective, OptimizeConfig, optimize};
use moot::panel::Panel;
use moot::provider::retry::RetryPolicy;
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};

const TOPICS: [&str; 4] = ["river", "planet", "engine", "garden"];
const WORDS: [&str; 8] = ["long", "bright", "quiet", "early", "heavy", "green", "deep", "fast"];

fn examples() -> Vec<Example> {
    (0..100)
        .map(|i| {
            let topic = TOPICS[i % 4];
            let word = WORDS[(i / 4) % 8];
            let label = [0.0, 0.5, 1.0][i % 3];
            Example {
                item: Item {
                    id: format!("ex-{i:03}"),
                    content: format!("The {topic} is {word}, answer number {i}."),
                    context: Some(format!("Question {i}: what is the {topic} like?")),
                    reference: Some(format!("The {topic} is {word}.")),
                    human: None,
                    human_raters: Default::default(),
                    candidates: None,
                    human_labels: Vec::new(),
                },
                label,
            }
        })
        .collect()
}

fn config(panel: Arc<Panel>, provider: Arc<ScriptedProvider>) -> OptimizeConfig {
    OptimizeConfig {
        run_id: "bench".into(),
        panel,
        panel_arg: "answer-judge".into(),
        data: "bench".into(),
        examples: examples(),
        dimension: "match".into(),
        objective: Objective::Agreement,
        threshold: 2.0,
        max_iter: 10,
        holdout: 0.3,
        clusters: 4,
        per_cluster: 2,
        seed: 1,
        bindings: Bindings::uniform(Binding::new(provider, "scripted")),
        retry: RetryPolicy::no_retry(),
        concurrency: 8,
        review: false,
        author: "bench".into(),
        output: None,
        design: Default::default(),
    }
}

fn bench(c: &mut Criterion) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let panel = Arc::new(Panel::load(&root.join("assets/panels/answer-judge.toml")).unwrap());
    let rewritten = JudgePrompt { guidance: "Be fair.".into(), ..JudgePrompt::of(&panel) }.render();
    let calls = Arc::new(AtomicUsize::new(0));
    let counter = calls.clone();
    let provider = Arc::new(ScriptedProvider::new(move |req, _| {
        counter.fetch_add(1, Ordering::Relaxed);
        let system = &req.messages[0].content;
        if system.starts_with("You revise") {
            ScriptedReply::Text(rewritten.clone())
        } else if system.starts_with("You study") {
            "The judge is too strict.".into()
        } else {
            "Judged. {\"match\": 0.5}".into()
        }
    }));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let mut group = c.benchmark_group("optimize");
    group.sample_size(10);
    group.bench_function("10_iterations_100_examples", |b| {
        b.iter(|| {
            rt.block_on(async {
                let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
                let outcome =
                    optimize(config(panel.clone(), provider.clone()), OptRecorder::new(None, None).unwrap(), rx).await;
                assert_eq!(outcome.iterations.len(), 10);
            })
        })
    });
    group.finish();
    eprintln!("provider calls in all: {}", calls.load(Ordering::Relaxed));
}

criterion_group!(benches, bench);
criterion_main!(benches);
