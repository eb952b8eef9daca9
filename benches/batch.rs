//! `moot eval --batch` against a local server speaking OpenAI's Batch API
//! (`moot::testkit::batch_server`), beside the same run live: the wall time,
//! the HTTP requests the server saw, the tokens that went through a batch
//! and their cost at gpt-4o-mini's list and batch prices, and the batch
//! layer's own work per request (its body and custom id).
//!
//! The server answers at once and a batch is over at its first look, so the
//! times are moot's overhead, not a vendor's queue. Prints one table; no
//! criterion samples. Size: MOOT_BENCH_ITEMS (default 200).
//! `cargo bench --bench batch`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use moot::config::registry::Registry;
use moot::eval::{EvalConfig, EvalSummary, run_eval};
use moot::item::Item;
use moot::panel::Panel;
use moot::provider::batch::{BatchApi, BatchSettings, BatchTag, Batcher, custom_id};
use moot::provider::{ChatMessage, ChatRequest};
use moot::testkit::batch_server::{BatchServer, schema_responder};
use tokio_util::sync::CancellationToken;

/// The bench panel: five agents, a round-robin debate of two turns.
const PANEL: &str = include_str!("fixtures/bench-panel.toml");

/// gpt-4o-mini per million tokens: list input, list output (batch: half).
const LIST: (f64, f64) = (0.15, 0.60);

fn main() {
    let items_n: usize = std::env::var("MOOT_BENCH_ITEMS").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let server = runtime.block_on(BatchServer::start(schema_responder)).unwrap();
    server.set_polls(1);
    let base = server.openai_base_url();
    let panel = Arc::new(Panel::from_toml_str(PANEL, "bench.toml").unwrap());
    let items: Vec<Item> = (0..items_n)
        .map(|i| Item {
            id: format!("item-{i:05}"),
            content: format!("Question {i}: why did the fox run?\nAnswer: it was scared of the storm number {i}."),
            context: Some("The fox ran to its den when the storm came.".into()),
            reference: None,
            human: None,
            human_raters: Default::default(),
            candidates: None,
            human_labels: Vec::new(),
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();

    let run = |batch: bool| -> (EvalSummary, Duration, usize) {
        let config = moot::config::Config::parse(
            &format!("[providers.bench]\nkind = \"openai\"\nbase_url = \"{base}\"\nmax_concurrency = 1000\n"),
            std::path::Path::new("bench-moot.toml"),
        )
        .unwrap();
        let mut registry = Registry::with_config(config, |_| None);
        let out = dir.path().join(if batch { "batch" } else { "live" });
        if batch {
            let settings = BatchSettings {
                all: true,
                poll: Duration::from_millis(10),
                gather: Duration::from_millis(50),
                ..BatchSettings::default()
            };
            registry.set_batch(Some(Batcher::new(settings, Some(&out.join("batches.json"))).unwrap()));
        }
        let bindings = moot::engine::bindings::bind(&mut registry, &panel, Some("bench"), None).unwrap();
        let mut config = EvalConfig::new(panel.clone(), bindings, items.clone(), out);
        config.concurrency = items_n;
        let before = server.requests().len();
        let start = Instant::now();
        let summary = runtime.block_on(run_eval(config, None, CancellationToken::new())).unwrap();
        let took = start.elapsed();
        assert_eq!(summary.counts.completed, items_n, "{:?}", summary.failures.first());
        (summary, took, server.requests().len() - before)
    };
    let (live, live_took, live_requests) = run(false);
    let (batched, batch_took, batch_requests) = run(true);
    let live_calls = server.live_calls();

    let cost = |input: f64, output: f64| (input * LIST.0 + output * LIST.1) / 1e6;
    let u = &batched.usage;
    let (bi, bo) = (u.batch_input_tokens.unwrap_or(0) as f64, u.batch_output_tokens.unwrap_or(0) as f64);
    let list = cost(u.input_tokens as f64, u.output_tokens as f64);
    let billed = list - 0.5 * cost(bi, bo);
    println!("{items_n} items, 5 agents (5 first evaluations, 2 debate turns, an aggregator each):");
    println!("  live:  {:.2} s, {live_requests} HTTP requests", live_took.as_secs_f64());
    println!(
        "  batch: {:.2} s, {batch_requests} HTTP requests ({} batch(es), {} live calls over both runs)",
        batch_took.as_secs_f64(),
        server.batches().len(),
        live_calls
    );
    println!(
        "  tokens: in {} out {} (live run: in {} out {}); through a batch: in {} out {}",
        u.input_tokens, u.output_tokens, live.usage.input_tokens, live.usage.output_tokens, bi, bo
    );
    println!(
        "  gpt-4o-mini: {list:.4} at list prices, {billed:.4} with the batch share ({:.0}% saved)",
        100.0 * (1.0 - billed / list)
    );

    // The batch layer's own work for one request: its body and custom id.
    let api = moot::provider::batch::openai::OpenAiBatch::new(moot::provider::openai::OpenAiConfig {
        base_url: base.clone(),
        ..Default::default()
    })
    .unwrap();
    let request = ChatRequest::new(vec![
        ChatMessage::system("You judge answers. ".repeat(60)),
        ChatMessage::user("Question: why did the fox run?\nAnswer: it was scared. ".repeat(20)),
    ]);
    let tag = BatchTag { item: "item-00001".into(), turn: "A1|initial|None|None|None".into() };
    let n = 20_000;
    let start = Instant::now();
    let mut bytes = 0;
    for _ in 0..n {
        let (body, _) = api.body(&request).unwrap();
        bytes += custom_id(&tag, &body).len() + body.len();
    }
    let per = start.elapsed() / n;
    println!(
        "  per request: body and custom id {:.1} µs ({} bytes of body)",
        per.as_secs_f64() * 1e6,
        bytes / n as usize
    );
}
