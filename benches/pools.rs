//! Provider pools: `moot eval` over local OpenAI-compatible servers that
//! each serve a fixed number of calls at once at a fixed time per token.
//!
//! 1. Throughput: G-Eval's single judge (one dimension: a steps call and a
//!    scoring call per item) over MOOT_BENCH_ITEMS items (default 1,000),
//!    through one endpoint, then through a pool of four. Target: ≥ 3.6×.
//! 2. Failover: the pool of four with one server killed a third of the way
//!    through. Target: every item completes; 0 lost, 0 duplicated.
//! 3. Affinity: a debate panel (two groups, five agents, an aggregator) over
//!    MOOT_BENCH_DEBATES items (default 200) through the pool of four, no
//!    failures. Target: ≥ 90% of each agent's calls (in each debate) on one
//!    endpoint.
//!
//! Each server has MOOT_BENCH_SLOTS places (default 4; a call waits for a
//! free one, as a vLLM server at its `--max-num-seqs`) and takes
//! MOOT_BENCH_TOKEN_MS (default 2) per reply token (30 tokens a reply).
//! Run: `cargo bench --no-default-features --bench pools`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use moot::config::Config;
use moot::config::registry::Registry;
use moot::eval::{EvalConfig, EvalSummary, run_eval};
use moot::item::Item;
use moot::panel::Panel;
use moot::session::{Event, EventKind};
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use tokio_util::sync::CancellationToken;

const REPLY_TOKENS: u64 = 30;

const GEVAL: &str = r#"
name = "Pool bench, G-Eval"
task = "Judge short answers."
[protocol]
kind = "g-eval"
samples = 1
[scale]
min = 1
max = 5
[[dimensions]]
key = "quality"
name = "Quality"
description = "Is the answer right and clear?"
[[groups]]
name = "Judge"
[[groups.agents]]
name = "Evaluator"
"#;

const DEBATE: &str = r#"
name = "Pool bench, debate"
protocol = "maj-eval"
task = "Judge short answers to questions about a story."
[scale]
min = 1
max = 5
[[dimensions]]
key = "clarity"
name = "Clarity"
description = "Is the answer easy to follow?"
[[dimensions]]
key = "accuracy"
name = "Accuracy"
description = "Does the answer agree with the story?"
[moderator]
policy = "round-robin"
max_turns = 4
[[groups]]
name = "Teachers"
[[groups.agents]]
name = "Ana"
perspective = "Children must understand the answer."
[[groups.agents]]
name = "Ben"
perspective = "The answer must follow from the story."
[[groups.agents]]
name = "Eve"
perspective = "Words a child knows."
[[groups]]
name = "Parents"
[[groups.agents]]
name = "Cleo"
perspective = "Would my child enjoy this?"
[[groups.agents]]
name = "Dev"
perspective = "Is it accurate and kind?"
"#;

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A server with `slots` places, each call taking `per_token` × 30.
async fn server(slots: usize, per_token: Duration) -> TestServer {
    let free_at: Arc<Mutex<Vec<Instant>>> = Arc::new(Mutex::new(vec![Instant::now(); slots]));
    TestServer::with_handler(move |req: &RecordedRequest| {
        if req.method == "GET" {
            return Reply::json(200, &serde_json::json!({"data": []}));
        }
        let body = req.body_text();
        let json: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let messages = json["messages"].as_array().cloned().unwrap_or_default();
        let steps = messages.len() == 2 && messages[1]["content"].as_str().is_some_and(|c| c.contains("evaluation steps"));
        let text = if steps {
            "1. Read the answer.\n2. Check it against the question.\n3. Score it.".to_string()
        } else if body.contains("quality") && !body.contains("clarity") {
            "A clear, correct answer.\n{\"quality\": 4}".to_string()
        } else {
            "Short view.\n```json\n{\"clarity\": 4, \"accuracy\": 3, \"overall\": 3, \"confidence\": 0.7, \"justification\": \"As scored.\"}\n```".to_string()
        };
        // The earliest free place serves the call; it is busy until the reply is written.
        let now = Instant::now();
        let wait = {
            let mut free = free_at.lock().unwrap();
            let slot = (0..free.len()).min_by_key(|&i| free[i]).unwrap();
            let done = free[slot].max(now) + per_token * REPLY_TOKENS as u32;
            free[slot] = done;
            done - now
        };
        let prompt = body.len() as u64 / 4;
        openai::events(&[&text], Some((prompt, REPLY_TOKENS))).iter().fold(Reply::sse().delay(wait), |r, e| r.event(e))
    })
    .await
    .unwrap()
}

fn registry(urls: &[String], slots: usize) -> Registry {
    let list: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    let text = format!(
        "[providers.pool]\nkind = \"openai\"\nbase_urls = [{}]\nmax_concurrency = {slots}\nhealth_check_interval = 1\n",
        list.join(", ")
    );
    Registry::with_config(Config::parse(&text, Path::new("bench-moot.toml")).unwrap(), |_| None)
}

fn items(n: usize) -> Vec<Item> {
    (0..n)
        .map(|i| {
            Item::new(
                format!("item-{i:05}"),
                format!("Question {i}: why did the fox run? Answer: {}.", "the storm came ".repeat(1 + i % 5)),
            )
        })
        .collect()
}

struct Run {
    summary: EvalSummary,
    took: Duration,
    logs: BTreeMap<String, Vec<Event>>,
    /// None with one endpoint (one base URL is no pool).
    pool: Option<moot::provider::pool::PoolStatus>,
}

/// `panel` over `n` items through a pool of `urls`; `during` runs beside it.
async fn eval(
    panel: &str,
    urls: &[String],
    slots: usize,
    n: usize,
    concurrency: usize,
    during: impl Future<Output = ()>,
) -> Run {
    let panel = Arc::new(Panel::from_toml_str(panel, "bench.toml").unwrap());
    let mut registry = registry(urls, slots);
    let bindings = moot::engine::bindings::bind(&mut registry, &panel, Some("pool"), None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut config = EvalConfig::new(panel, bindings.clone(), items(n), dir.path().join("run"));
    config.concurrency = concurrency;
    config.retry.base_delay = Duration::from_millis(50);
    let start = Instant::now();
    let (summary, ()) = tokio::join!(run_eval(config, None, CancellationToken::new()), during);
    let took = start.elapsed();
    let pool = bindings.pools().pop();
    Run { summary: summary.unwrap(), took, logs: logs(&dir.path().join("run")), pool }
}

fn logs(run: &Path) -> BTreeMap<String, Vec<Event>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(run).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(path.display().to_string(), text.lines().map(|l| serde_json::from_str(l).unwrap()).collect());
        }
    }
    out
}

/// Turns started and never completed, and turns completed more than once.
fn lost_and_duplicated(logs: &BTreeMap<String, Vec<Event>>) -> (usize, usize) {
    let (mut lost, mut duplicated) = (0, 0);
    for events in logs.values() {
        let mut started = BTreeSet::new();
        let mut completed = BTreeSet::new();
        for e in events {
            match &e.kind {
                EventKind::TurnStarted { turn, .. } => {
                    started.insert(*turn);
                }
                EventKind::TurnCompleted { turn, .. } if !completed.insert(*turn) => duplicated += 1,
                _ => {}
            }
        }
        lost += started.difference(&completed).count();
    }
    (lost, duplicated)
}

/// Per agent of each debate, the share of its calls on its most used endpoint.
fn affinity_shares(logs: &BTreeMap<String, Vec<Event>>) -> Vec<f64> {
    let mut shares = Vec::new();
    for events in logs.values() {
        let mut by_agent: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for e in events {
            if let EventKind::TurnCompleted { agent, endpoint: Some(ep), .. } = &e.kind {
                *by_agent.entry(agent).or_default().entry(ep).or_default() += 1;
            }
        }
        for counts in by_agent.values() {
            let total: usize = counts.values().sum();
            shares.push(*counts.values().max().unwrap() as f64 / total as f64);
        }
    }
    shares
}

fn main() {
    let n = env_num("MOOT_BENCH_ITEMS", 1000) as usize;
    let debates = env_num("MOOT_BENCH_DEBATES", 200) as usize;
    let slots = env_num("MOOT_BENCH_SLOTS", 4) as usize;
    let per_token = Duration::from_millis(env_num("MOOT_BENCH_TOKEN_MS", 2));
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let call = per_token * REPLY_TOKENS as u32;
        println!("servers: {slots} places each, {} ms a call ({REPLY_TOKENS} tokens × {} ms)", call.as_millis(), per_token.as_millis());
        let concurrency = 8 * slots;

        // 1. One endpoint, then four.
        let one = server(slots, per_token).await;
        let r1 = eval(GEVAL, &[one.base_url()], slots, n, concurrency, async {}).await;
        drop(one);
        let four: Vec<TestServer> = futures::future::join_all((0..4).map(|_| server(slots, per_token))).await;
        let urls: Vec<String> = four.iter().map(TestServer::base_url).collect();
        let r4 = eval(GEVAL, &urls, slots, n, concurrency, async {}).await;
        let rate = |r: &Run| r.summary.counts.completed as f64 / r.took.as_secs_f64();
        println!("throughput, G-Eval over {n} items (concurrency {concurrency}):");
        println!("  1 endpoint:  {:>7.2} s  {:>7.1} items/s  ({} completed)", r1.took.as_secs_f64(), rate(&r1), r1.summary.counts.completed);
        println!("  4 endpoints: {:>7.2} s  {:>7.1} items/s  ({} completed)", r4.took.as_secs_f64(), rate(&r4), r4.summary.counts.completed);
        println!("  speed-up: {:.2}× (target ≥ 3.6×); ideal per run: {:.2} s and {:.2} s", rate(&r4) / rate(&r1),
            (2 * n) as f64 * call.as_secs_f64() / slots as f64, (2 * n) as f64 * call.as_secs_f64() / (4 * slots) as f64);
        println!("  {}", r4.pool.as_ref().unwrap().summary_line());
        drop(four);

        // 2. Four endpoints, one killed a third of the way through.
        let mut four: Vec<TestServer> = futures::future::join_all((0..4).map(|_| server(slots, per_token))).await;
        let urls: Vec<String> = four.iter().map(TestServer::base_url).collect();
        let victim = four.pop().unwrap();
        let kill_after = (2 * n / 3 / 4).max(1);
        let killer = async move {
            while victim.request_count() < kill_after {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            drop(victim);
        };
        let rk = eval(GEVAL, &urls, slots, n, concurrency, killer).await;
        let (lost, duplicated) = lost_and_duplicated(&rk.logs);
        println!("failover, one of 4 endpoints killed after its {kill_after}th request:");
        println!(
            "  {} of {n} items completed, {} logs, {lost} turns lost, {duplicated} duplicated, in {:.2} s",
            rk.summary.counts.completed,
            rk.logs.len(),
            rk.took.as_secs_f64()
        );
        println!("  {}", rk.pool.as_ref().unwrap().summary_line());
        drop(four);

        // 3. Affinity over debates: items enough to keep the pool half full, then more than it holds at once.
        let four: Vec<TestServer> = futures::future::join_all((0..4).map(|_| server(slots * 4, per_token))).await;
        let urls: Vec<String> = four.iter().map(TestServer::base_url).collect();
        for items_at_once in [2 * slots, 4 * slots] {
            let ra = eval(DEBATE, &urls, slots * 4, debates, items_at_once, async {}).await;
            let shares = affinity_shares(&ra.logs);
            let at_90 = shares.iter().filter(|s| **s >= 0.9).count();
            let mean = shares.iter().sum::<f64>() / shares.len().max(1) as f64;
            let (lost, duplicated) = lost_and_duplicated(&ra.logs);
            println!(
                "affinity, debate panel over {debates} items, {items_at_once} at once (five first evaluations each), 4 endpoints of {} places:",
                slots * 4
            );
            println!(
                "  {} completed in {:.2} s, {lost} turns lost, {duplicated} duplicated; agents (in each debate) with ≥ 90% of their calls on one endpoint: {at_90} of {} ({:.1}%); mean share on an agent's endpoint {:.1}%",
                ra.summary.counts.completed,
                ra.took.as_secs_f64(),
                shares.len(),
                100.0 * at_90 as f64 / shares.len().max(1) as f64,
                100.0 * mean
            );
            println!("  {}", ra.pool.as_ref().unwrap().summary_line());
        }
    });
}
