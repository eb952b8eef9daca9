//! Orchestration overhead of `moot eval`: items of a 5-agent panel against a
//! local OpenAI-compatible server that takes a fixed time per answer.
//!
//! Each item needs four calls one after another (the five first evaluations
//! run at once, two debate turns, the aggregator), so with C items at a time
//! the ideal duration is ceil(items / C) × 4 × latency. The bench prints the
//! measured time over that ideal; the target is ≤ 1.15.
//!
//! Size: MOOT_BENCH_ITEMS (default 1000), MOOT_BENCH_CONCURRENCY (50),
//! MOOT_BENCH_LATENCY_MS (100). `MOOT_BENCH_ITEMS=100 cargo bench --bench eval`
//! runs a smaller version.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use moot::config::registry::Registry;
use moot::eval::{EvalConfig, run_eval};
use moot::item::Item;
use moot::panel::Panel;
use moot::testkit::server::{Reply, TestServer, openai};
use tokio_util::sync::CancellationToken;

const CALLS_IN_A_ROW: u32 = 4;

/// The bench panel: five agents, a round-robin debate of two turns.
const PANEL: &str = include_str!("fixtures/bench-panel.toml");

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let items_n = env_num("MOOT_BENCH_ITEMS", 1000) as usize;
    let concurrency = env_num("MOOT_BENCH_CONCURRENCY", 50) as usize;
    let latency = Duration::from_millis(env_num("MOOT_BENCH_LATENCY_MS", 100));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let reply_text = "Fine.\n```json\n{\"clarity\": 4, \"accuracy\": 3, \"overall\": 4, \"confidence\": 0.8, \"justification\": \"ok\"}\n```";
    let server = runtime
        .block_on(TestServer::with_handler(move |_| {
            openai::events(&[reply_text], Some((300, 40))).iter().fold(Reply::sse().delay(latency), |r, e| r.event(e))
        }))
        .unwrap();
    let base = server.base_url();
    let panel = Arc::new(Panel::from_toml_str(PANEL, "bench.toml").unwrap());
    // The server takes any number of calls at once; say so, as a user of a
    // self-hosted server would in moot.toml (the default is 8 at once).
    let config = moot::config::Config::parse(
        &format!("[providers.bench]\nkind = \"openai\"\nbase_url = \"{base}\"\nmax_concurrency = 1000\n"),
        std::path::Path::new("bench-moot.toml"),
    )
    .unwrap();
    let mut registry = Registry::with_config(config, |_| None);
    let bindings = moot::engine::bindings::bind(&mut registry, &panel, Some("bench"), None).unwrap();
    let items: Vec<Item> = (0..items_n)
        .map(|i| Item {
            id: format!("item-{i:05}"),
            content: format!("Answer number {i}."),
            context: None,
            reference: None,
            human: None,
            human_raters: Default::default(),
            candidates: None,
            human_labels: Vec::new(),
        })
        .collect();
    let waves = items_n.div_ceil(concurrency) as u32;
    let ideal = latency * CALLS_IN_A_ROW * waves;

    let mut group = c.benchmark_group("eval");
    group.sample_size(10).warm_up_time(Duration::from_millis(1)).measurement_time(ideal * 10);
    group.bench_function(format!("{items_n}_items_5_agents_c{concurrency}_{}ms", latency.as_millis()), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                server.forget_requests();
                let dir = tempfile::tempdir().unwrap();
                let mut config =
                    EvalConfig::new(panel.clone(), bindings.clone(), items.clone(), dir.path().join("run"));
                config.concurrency = concurrency;
                let start = Instant::now();
                let summary = runtime.block_on(run_eval(config, None, CancellationToken::new())).unwrap();
                let took = start.elapsed();
                assert_eq!(summary.counts.completed, items_n, "{:?}", summary.failures.first());
                eprintln!(
                    "  {items_n} items in {:.2} s; ideal {:.2} s; ratio {:.3}",
                    took.as_secs_f64(),
                    ideal.as_secs_f64(),
                    took.as_secs_f64() / ideal.as_secs_f64()
                );
                total += took;
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
