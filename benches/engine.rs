//! Engine overhead and concurrency.
//!
//! - `debate_1000_turns`: a 1,000-turn MAJ-EVAL debate with an instant
//!   scripted provider, the session log written to disk. Target: < 100 ms.
//! - `initial_phase_6_agents_200ms`: six first evaluations against a provider
//!   that takes 200 ms per call. Target: about one call's time (< 300 ms).
//! - `g_eval_1000_turns`: G-Eval over 500 items of a two-dimension panel
//!   (steps given in the panel, one draw each: 1,000 scoring turns, no log
//!   written), one session after another, with an instant scripted
//!   provider: the engine's own cost per 1,000 turns. Target: < 50 ms.
//! - `chat_eval_simultaneous_round_5_agents_200ms`: a ChatEval session of
//!   five agents with one simultaneous round, against a provider whose
//!   discussion calls take 200 ms (first evaluations are instant): the
//!   round's five calls run at once. Target: < 300 ms.
//! - `pairwise_1000_items_swap_3_votes`: pairwise judging of 1,000 items of
//!   two candidates each, one judge, both orders and three votes per order
//!   (6,000 verdict turns, no log written), one session after another, with
//!   an instant scripted provider. Target: < 100 ms.

use std::sync::Arc;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use moot::engine::{self, Binding, Bindings, EngineConfig, EngineHandle, Recorder};
use moot::panel::Protocol;
use moot::session::SessionWriter;
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use moot::testkit::{evaluation, item, panel, speaker};

fn run_once(rt: &tokio::runtime::Runtime, config: EngineConfig, dir: &std::path::Path, n: usize) {
    let path = dir.join(format!("{n}.jsonl"));
    let writer = if std::env::var_os("BENCH_NO_LOG").is_some() {
        None
    } else {
        Some(SessionWriter::create(&path).expect("log"))
    };
    let (_handle, rx) = EngineHandle::channel();
    let outcome = rt.block_on(engine::run(config, Recorder::new(writer, None), rx));
    assert_eq!(outcome.status, moot::session::event::EndStatus::Completed, "{:?}", outcome.error);
    let _ = std::fs::remove_file(path);
}

fn debate_1000_turns(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal", "Dee"])]);
    p.moderator.max_turns = 1000;
    let p = Arc::new(p);
    // Alternate scores so consensus is re-checked after every turn.
    let provider = Arc::new(ScriptedProvider::new(|req, i| match speaker(req).as_str() {
        "aggregator" => ScriptedReply::Text("Synthesis.".into()),
        _ => ScriptedReply::Text(evaluation(1 + (i % 5) as u32, 3, 3)),
    }));
    let mut n = 0;
    let mut group = c.benchmark_group("engine");
    group.sample_size(20);
    group.bench_function("debate_1000_turns", |b| {
        b.iter(|| {
            n += 1;
            let config = EngineConfig::new(p.clone(), item(), Bindings::uniform(Binding::new(provider.clone(), "")));
            run_once(&rt, config, dir.path(), n);
        })
    });
    group.finish();
}

fn initial_phase_concurrency(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea", "Cal"]), ("Parents", &["Dee", "Eve", "Fay"])]);
    p.moderator.max_turns = 0;
    let p = Arc::new(p);
    let provider = Arc::new(ScriptedProvider::new(|req, _| match speaker(req).as_str() {
        "aggregator" => ScriptedReply::Text("Synthesis.".into()),
        _ => ScriptedReply::Slow(evaluation(4, 4, 4), Duration::from_millis(200)),
    }));
    let mut n = 0;
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.bench_function("initial_phase_6_agents_200ms", |b| {
        b.iter(|| {
            n += 1;
            let config = EngineConfig::new(p.clone(), item(), Bindings::uniform(Binding::new(provider.clone(), "")));
            run_once(&rt, config, dir.path(), n);
        })
    });
    group.finish();
}

fn g_eval_1000_turns(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut p = panel(Protocol::GEval, &[("Judge", &["Ann"])]);
    for d in &mut p.dimensions {
        d.steps = Some("1. Read the item.\n2. Score it.".into());
    }
    let p = Arc::new(p);
    let provider = Arc::new(ScriptedProvider::new(|req, _| {
        let last = &req.messages.last().map(|m| m.content.as_str()).unwrap_or("");
        let key = if last.contains("Quality to judge — Grammar") { "grammar" } else { "relevance" };
        ScriptedReply::Text(format!("Clear and correct.\n{{\"{key}\": 4}}"))
    }));
    let items: Vec<_> = (0..500)
        .map(|i| {
            let mut it = item();
            it.id = format!("item-{i}");
            it
        })
        .collect();
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.bench_function("g_eval_1000_turns", |b| {
        b.iter(|| {
            for it in &items {
                let config =
                    EngineConfig::new(p.clone(), it.clone(), Bindings::uniform(Binding::new(provider.clone(), "")));
                let (_handle, rx) = EngineHandle::channel();
                let outcome = rt.block_on(engine::run(config, Recorder::new(None, None), rx));
                assert_eq!(outcome.status, moot::session::event::EndStatus::Completed, "{:?}", outcome.error);
            }
        })
    });
    group.finish();
}

fn simultaneous_round(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut p = panel(Protocol::ChatEval, &[("Readers", &["Ann", "Bea", "Cal", "Dee", "Eve"])]);
    p.protocol.settings.insert("strategy".into(), moot::panel::SettingValue::Text("simultaneous".into()));
    p.protocol.settings.insert("turns".into(), moot::panel::SettingValue::Integer(1));
    let p = Arc::new(p);
    let provider = Arc::new(ScriptedProvider::new(|req, _| {
        let round = req.messages.last().is_some_and(|m| m.content.contains("Discussion round"));
        if round {
            ScriptedReply::Slow(evaluation(4, 4, 4), Duration::from_millis(200))
        } else {
            ScriptedReply::Text(evaluation(4, 4, 4))
        }
    }));
    let mut n = 0;
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.bench_function("chat_eval_simultaneous_round_5_agents_200ms", |b| {
        b.iter(|| {
            n += 1;
            let config = EngineConfig::new(p.clone(), item(), Bindings::uniform(Binding::new(provider.clone(), "")));
            run_once(&rt, config, dir.path(), n);
        })
    });
    group.finish();
}

fn pairwise_1000_items(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut p = panel(Protocol::Pairwise, &[("Judges", &["Ann"])]);
    p.protocol.settings.insert("votes".into(), moot::panel::SettingValue::Integer(3));
    let p = Arc::new(p);
    let provider = Arc::new(
        ScriptedProvider::new(|_, i| {
            let label = ["A", "B", "tie"][i % 3];
            ScriptedReply::Text(format!(
                "A keeps the facts.\n{{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"Facts.\"}}"
            ))
        })
        .without_records(),
    );
    let items: Vec<_> = (0..1000)
        .map(|i| {
            let mut it = item();
            it.id = format!("pair-{i}");
            it.content = String::new();
            it.candidates = Some(vec![
                moot::item::Candidate { id: "sys-a".into(), text: "The council voted to close the branch.".into() },
                moot::item::Candidate { id: "sys-b".into(), text: "A library is closing.".into() },
            ]);
            it
        })
        .collect();
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.bench_function("pairwise_1000_items_swap_3_votes", |b| {
        b.iter(|| {
            for it in &items {
                let config =
                    EngineConfig::new(p.clone(), it.clone(), Bindings::uniform(Binding::new(provider.clone(), "")));
                let (_handle, rx) = EngineHandle::channel();
                let outcome = rt.block_on(engine::run(config, Recorder::new(None, None), rx));
                assert_eq!(outcome.status, moot::session::event::EndStatus::Completed, "{:?}", outcome.error);
            }
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    debate_1000_turns,
    initial_phase_concurrency,
    g_eval_1000_turns,
    simultaneous_round,
    pairwise_1000_items
);
criterion_main!(benches);
