//! Provider pools against several local OpenAI-compatible servers: calls
//! spread to the least busy endpoint under each one's limit, fail over
//! from an endpoint that errs, refuses connections or cuts its streams
//! (the batch run completes with nothing lost), health checks take an
//! endpoint down and bring it back, affinity keeps a debate on its
//! endpoint, and the log names the endpoint of every turn.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use moot::config::Config;
use moot::config::registry::Registry;
use moot::eval::{EvalConfig, run_eval};
use moot::item::Item;
use moot::panel::Panel;
use moot::provider::{ChatMessage, ChatRequest, Provider};
use moot::session::{Event, EventKind};
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use tokio_util::sync::CancellationToken;

const PANEL: &str = "tests/fixtures/eval/small-panel.toml";
const REPLY: &str = "Short view.\n```json\n{\"clarity\": 4, \"accuracy\": 3, \"overall\": 3, \"confidence\": 0.7, \"justification\": \"As scored.\"}\n```\nNO MORE COMMENTS";

/// A reply that takes `latency` before its first byte.
fn slow_reply(latency: Duration) -> Reply {
    openai::events(&[REPLY], Some((120, 30))).iter().fold(Reply::sse().delay(latency), |r, e| r.event(e))
}

/// A server answering every chat call after `latency`, and health checks at once.
async fn server(latency: Duration) -> TestServer {
    TestServer::with_handler(move |req: &RecordedRequest| {
        if req.method == "GET" { Reply::json(200, &serde_json::json!({"data": []})) } else { slow_reply(latency) }
    })
    .await
    .unwrap()
}

/// A URL nothing listens on.
async fn dead_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/v1")
}

fn registry(urls: &[String], extra: &str) -> Registry {
    let list: Vec<String> = urls.iter().map(|u| format!("\"{u}\"")).collect();
    let text = format!("[providers.pool]\nkind = \"openai\"\nbase_urls = [{}]\n{extra}", list.join(", "));
    Registry::with_config(Config::parse(&text, Path::new("moot.toml")).unwrap(), |_| None)
}

async fn ask(provider: &dyn Provider, text: &str) -> moot::provider::Completion {
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let request = ChatRequest::new(vec![ChatMessage::user(text)]);
    provider.stream(&request, &tx, &CancellationToken::new()).await.expect("a reply")
}

fn chat_calls(s: &TestServer) -> usize {
    s.requests().iter().filter(|r| r.method == "POST").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_spread_to_the_least_busy_endpoint_under_each_ones_limit() {
    let servers = [server(Duration::from_millis(300)).await, server(Duration::from_millis(300)).await];
    let urls: Vec<String> = servers.iter().map(TestServer::base_url).collect();
    let mut r = registry(&urls, "max_concurrency = 2\naffinity = false\n");
    let pool = r.get("pool", "", "test").unwrap();
    let calls = (0..8).map(|i| {
        let pool = pool.clone();
        async move { ask(pool.as_ref(), &format!("question {i}")).await }
    });
    let replies = futures::future::join_all(calls).await;
    for s in &servers {
        assert_eq!(chat_calls(s), 4, "eight calls, four on each endpoint");
        assert_eq!(s.max_concurrent(), 2, "never more than its own limit at once");
    }
    let served: BTreeSet<String> = replies.iter().map(|c| c.endpoint.clone().unwrap()).collect();
    assert_eq!(served, urls.iter().cloned().collect(), "each reply names its endpoint");
}

/// The small panel over `n` items through the pool; the run folder.
async fn eval(registry: &mut Registry, n: usize, concurrency: usize, dir: &Path) -> moot::eval::EvalSummary {
    let panel = Arc::new(Panel::load(Path::new(PANEL)).unwrap());
    let bindings = moot::engine::bindings::bind(registry, &panel, Some("pool"), None).unwrap();
    let items = (0..n)
        .map(|i| {
            Item::new(
                format!("q-{i:03}"),
                format!("Question {i}: why did the fox run? Answer: the storm {}.", "came ".repeat(i % 7 + 1)),
            )
        })
        .collect();
    let mut config = EvalConfig::new(panel, bindings, items, dir.join("run"));
    config.concurrency = concurrency;
    config.retry.base_delay = Duration::from_millis(20);
    run_eval(config, None, CancellationToken::new()).await.expect("the run")
}

/// Every event of every item log of a run folder, by file.
fn logs(run: &Path) -> BTreeMap<String, Vec<Event>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(run).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            let events = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            out.insert(path.file_name().unwrap().to_string_lossy().into_owned(), events);
        }
    }
    out
}

/// Every turn started completed exactly once, and names an endpoint of `urls`.
fn assert_nothing_lost(logs: &BTreeMap<String, Vec<Event>>, urls: &[String]) -> usize {
    let mut turns = 0;
    for (file, events) in logs {
        let started: BTreeSet<u64> = events
            .iter()
            .filter_map(|e| match e.kind {
                EventKind::TurnStarted { turn, .. } => Some(turn),
                _ => None,
            })
            .collect();
        let mut completed = BTreeSet::new();
        for e in events {
            if let EventKind::TurnCompleted { turn, endpoint, .. } = &e.kind {
                assert!(completed.insert(*turn), "{file}: turn {turn} completed twice");
                let endpoint = endpoint.as_deref().expect("the turn names its endpoint");
                assert!(urls.iter().any(|u| u == endpoint), "{file}: {endpoint}");
            }
        }
        assert_eq!(started, completed, "{file}: a started turn never completed");
        turns += completed.len();
    }
    turns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_completes_over_endpoints_that_err_refuse_or_cut_their_streams() {
    let good = [server(Duration::from_millis(20)).await, server(Duration::from_millis(20)).await];
    let failing = TestServer::with_handler(|_| Reply::json(500, &serde_json::json!({"error": {"message": "boom"}})))
        .await
        .unwrap();
    let cutting = TestServer::with_handler(|_| {
        Reply::sse().event(&openai::role_chunk()).event(&openai::content_chunk("Short vi")).cut()
    })
    .await
    .unwrap();
    let mut urls: Vec<String> = good.iter().map(TestServer::base_url).collect();
    urls.extend([failing.base_url(), cutting.base_url(), dead_url().await]);
    // Health checks off: failed calls alone find the bad endpoints (and try them again later).
    let mut r = registry(&urls, "health_check_interval = 0\n");
    let dir = tempfile::tempdir().unwrap();
    let summary = eval(&mut r, 12, 6, dir.path()).await;
    assert_eq!(summary.counts.completed, 12, "{:?}", summary.failures);
    let logs = logs(&dir.path().join("run"));
    assert_eq!(logs.len(), 12, "one log per item");
    let turns = assert_nothing_lost(&logs, &urls[..2]);
    assert!(turns >= 12 * 6, "{turns}");
    assert!(chat_calls(&failing) >= 1 && chat_calls(&cutting) >= 1, "the bad endpoints were tried");
    let pool = r.get("pool", "", "test").unwrap().pool_status().unwrap();
    assert!(pool.failovers >= 2 && pool.downs >= 3, "{pool:?}");
    // A cut stream reached the log as a failed attempt that was tried again.
    let retried = logs
        .values()
        .flatten()
        .any(|e| matches!(&e.kind, EventKind::TurnFailed { will_retry: true, error, .. } if error.contains(&urls[3])));
    assert!(retried, "a cut stream is a failed attempt naming its endpoint");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_take_an_endpoint_down_and_bring_it_back() {
    let sick = Arc::new(AtomicBool::new(true));
    let flaky = {
        let sick = sick.clone();
        TestServer::with_handler(move |req: &RecordedRequest| {
            if sick.load(Ordering::SeqCst) {
                Reply::json(503, &serde_json::json!({"error": "loading model"}))
            } else if req.method == "GET" {
                Reply::json(200, &serde_json::json!({"data": []}))
            } else {
                slow_reply(Duration::ZERO)
            }
        })
        .await
        .unwrap()
    };
    let good = server(Duration::ZERO).await;
    let urls = [good.base_url(), flaky.base_url()];
    let mut r = registry(&urls, "health_check_interval = 0.1\n");
    let pool = r.get("pool", "", "test").unwrap();
    ask(pool.as_ref(), "start the checks").await;
    let state = |p: &Arc<dyn Provider>| p.pool_status().unwrap().endpoints[1].state.clone();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !state(&pool).starts_with("down") {
        assert!(tokio::time::Instant::now() < deadline, "never marked down");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(state(&pool), "down: health check: HTTP 503");
    for i in 0..4 {
        assert_eq!(ask(pool.as_ref(), &format!("q{i}")).await.endpoint.as_deref(), Some(urls[0].as_str()));
    }
    sick.store(false, Ordering::SeqCst);
    while state(&pool) != "up" {
        assert!(tokio::time::Instant::now() < deadline, "never back up");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let before = chat_calls(&flaky);
    for i in 0..6 {
        ask(pool.as_ref(), &format!("again {i}")).await;
    }
    assert!(chat_calls(&flaky) > before, "calls reach it again once it is up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn affinity_keeps_each_debate_on_one_endpoint_and_logs_no_credentials() {
    let servers = [
        server(Duration::from_millis(5)).await,
        server(Duration::from_millis(5)).await,
        server(Duration::from_millis(5)).await,
    ];
    // Credentials in a base URL never reach the log.
    let urls: Vec<String> = servers.iter().map(|s| s.base_url().replace("http://", "http://moot:hunter2@")).collect();
    let labels: Vec<String> = servers.iter().map(TestServer::base_url).collect();
    // Room on every endpoint: affinity is measured while none is full or fails.
    let mut r = registry(&urls, "max_concurrency = 16\n");
    let dir = tempfile::tempdir().unwrap();
    let summary = eval(&mut r, 12, 4, dir.path()).await;
    assert_eq!(summary.counts.completed, 12);
    let logs = logs(&dir.path().join("run"));
    assert_nothing_lost(&logs, &labels);
    for (file, events) in &logs {
        let mut by_agent: BTreeMap<&str, BTreeMap<&str, usize>> = BTreeMap::new();
        for e in events {
            if let EventKind::TurnCompleted { agent, endpoint: Some(ep), .. } = &e.kind {
                *by_agent.entry(agent).or_default().entry(ep).or_default() += 1;
            }
        }
        for (agent, counts) in by_agent {
            let total: usize = counts.values().sum();
            let top = counts.values().max().copied().unwrap_or(0);
            assert!(top * 10 >= total * 9, "{file}: {agent}'s calls went to {counts:?}");
        }
        let text = serde_json::to_string(events).unwrap();
        assert!(!text.contains("hunter2"), "{file} holds a credential");
    }
    let pool = r.get("pool", "", "test").unwrap().pool_status().unwrap();
    assert!(pool.with_home > 0 && pool.stayed * 10 >= pool.with_home * 9, "{pool:?}");
    let used = servers.iter().filter(|s| chat_calls(s) > 0).count();
    assert_eq!(used, 3, "items spread over every endpoint");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moot_providers_lists_each_endpoint_and_its_state() {
    let live = server(Duration::ZERO).await;
    let dead = dead_url().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("moot.toml");
    std::fs::write(
        &config,
        format!(
            "[providers.gpus]\nkind = \"openai\"\nbase_urls = [\"{}\", \"{dead}\"]\nmax_concurrency = 16\n",
            live.base_url()
        ),
    )
    .unwrap();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
            .arg("providers")
            .env("MOOT_CONFIG", &config)
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}\n{}", String::from_utf8_lossy(&out.stderr));
    // The endpoints' states are listed under the pool's heading (the
    // settings above it list the same URLs, wrapped in their column).
    let (_, pool) = text.split_once("pool gpus (affinity on):").unwrap_or_else(|| panic!("{text}"));
    let line = |url: &str| pool.lines().find(|l| l.trim_start().starts_with(url)).unwrap_or_default().to_string();
    let up = line(&live.base_url());
    assert!(up.contains(" up ") && up.contains("answered in"), "{text}");
    let down = line(&dead);
    assert!(down.contains("down: health check: connection refused"), "{text}");
    // The setting's value wraps in its column, beside its source.
    let words = text.replace("from several base URLs", "").split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(words.contains("2 endpoints; max_concurrency and requests_per_minute apply to each"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moot_eval_over_comma_separated_urls_reports_the_pool() {
    let servers = [server(Duration::from_millis(5)).await, server(Duration::from_millis(5)).await];
    let urls = format!("{},{}", servers[0].base_url(), servers[1].base_url());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run").to_string_lossy().into_owned();
    let args =
        ["eval", PANEL, "--data", "tests/fixtures/eval/items.jsonl", "--provider", "openai", "--no-cache", "--out"]
            .map(String::from)
            .into_iter()
            .chain([out]);
    let output = tokio::task::spawn_blocking({
        let cache = dir.path().join("cache");
        move || crate::support::moot_at(&urls, &cache).args(args).output().unwrap()
    })
    .await
    .unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{err}");
    let line = err.lines().find(|l| l.starts_with("moot eval: pool openai:")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("over 2 endpoints (2 up now)") && line.contains("affinity:"), "{line}");
    for s in &servers {
        assert!(chat_calls(s) > 0, "both endpoints served calls");
        assert!(line.contains(&s.base_url()), "{line}");
    }
}
