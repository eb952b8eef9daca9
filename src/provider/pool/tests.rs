//! The pool's choices with scripted endpoints (HTTP endpoints are tested in
//! `tests/it/provider_pools.rs`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::provider::limiter::{LimitSettings, Limiter};
use crate::testkit::scripted::{ScriptedProvider, ScriptedReply};

fn pool(replies: Vec<ScriptedProvider>, limit: usize, affinity: bool) -> (PoolProvider, Vec<Arc<ScriptedProvider>>) {
    let scripted: Vec<Arc<ScriptedProvider>> = replies.into_iter().map(Arc::new).collect();
    let endpoints = scripted
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let limiter = Arc::new(Limiter::new(LimitSettings { max_concurrency: limit, ..LimitSettings::default() }));
            Endpoint::new(format!("http://e{i}/v1"), p.clone(), limiter, None)
        })
        .collect();
    (PoolProvider::new("p", endpoints, PoolSettings { affinity, health: None }).unwrap(), scripted)
}

fn slow(text: &'static str) -> ScriptedProvider {
    ScriptedProvider::new(move |_, _| ScriptedReply::Slow(text.into(), Duration::from_millis(60)))
}

async fn call(pool: &PoolProvider, messages: Vec<ChatMessage>) -> Result<Completion, ProviderError> {
    let (tx, _rx) = mpsc::unbounded_channel();
    pool.stream(&ChatRequest::new(messages), &tx, &CancellationToken::new()).await
}

fn item(n: usize, turn: usize) -> Vec<ChatMessage> {
    let history: String = (0..turn).map(|t| format!("Turn {t} said something long enough to matter. ")).collect();
    vec![
        ChatMessage::system("You judge answers to questions. ".repeat(20)),
        ChatMessage::user(format!("{}\n{history}", format!("Item {n}: a story about a fox. ").repeat(30))),
        ChatMessage::user(format!("Agent {turn}, your turn.")),
    ]
}

#[tokio::test]
async fn calls_at_once_spread_over_the_least_busy_endpoints() {
    let (pool, scripted) = pool(vec![slow("a"), slow("b"), slow("c"), slow("d")], 8, false);
    let calls = (0..8).map(|n| call(&pool, item(n, 0)));
    let replies = futures::future::join_all(calls).await;
    assert!(replies.iter().all(Result::is_ok));
    let counts: Vec<usize> = scripted.iter().map(|p| p.calls()).collect();
    assert_eq!(counts, [2, 2, 2, 2], "eight calls at once, two on each endpoint");
    let served: Vec<&str> = replies.iter().map(|r| r.as_ref().unwrap().endpoint.as_deref().unwrap()).collect();
    assert!(served.contains(&"http://e3/v1"), "{served:?}");
}

#[tokio::test]
async fn each_endpoint_keeps_its_own_limit() {
    let (pool, scripted) = pool(vec![slow("a"), slow("b")], 1, false);
    let started = Instant::now();
    let replies = futures::future::join_all((0..4).map(|n| call(&pool, item(n, 0)))).await;
    assert!(replies.iter().all(Result::is_ok));
    assert_eq!(scripted.iter().map(|p| p.calls()).collect::<Vec<_>>(), [2, 2]);
    // One at a time on each: two rounds of 60 ms.
    assert!(started.elapsed() >= Duration::from_millis(115), "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_conversation_stays_on_the_endpoint_that_holds_its_prefix() {
    let (pool, _) = pool(vec![slow("a"), slow("b"), slow("c")], 8, true);
    let mut served = Vec::new();
    for turn in 0..5 {
        // Another conversation's calls keep the other endpoints busy at times.
        let (mine, _) = tokio::join!(call(&pool, item(1, turn)), call(&pool, item(100 + turn, 0)));
        served.push(mine.unwrap().endpoint.unwrap());
    }
    assert!(served.iter().all(|e| e == &served[0]), "{served:?}");
    let status = pool.pool_status().unwrap();
    assert_eq!(status.calls, 10);
    assert!(status.stayed >= 4 && status.stayed == status.with_home, "{status:?}");
}

#[tokio::test]
async fn a_refused_connection_fails_over_at_once_and_the_endpoint_goes_down() {
    let dead = ScriptedProvider::new(|_, _| ScriptedReply::Fail(ProviderError::Connect("connection refused".into())));
    let (pool, scripted) = pool(vec![dead, slow("b")], 8, false);
    for n in 0..3 {
        let reply = call(&pool, item(n, 0)).await.expect("served by the live endpoint");
        assert_eq!(reply.endpoint.as_deref(), Some("http://e1/v1"));
    }
    assert_eq!(scripted[0].calls(), 1, "down after its first failure");
    let status = pool.pool_status().unwrap();
    assert_eq!((status.failovers, status.downs), (1, 1));
    assert!(status.endpoints[0].state.starts_with("down: connection error"), "{:?}", status.endpoints[0]);
}

#[tokio::test]
async fn a_stream_cut_midway_returns_its_error_naming_the_endpoint() {
    let cut = ScriptedProvider::new(|_, _| ScriptedReply::Fail(ProviderError::Incomplete("connection closed".into())));
    let (pool, scripted) = pool(vec![cut, slow("b")], 8, false);
    // Both idle: the first endpoint gets the call and cuts it.
    let e = call(&pool, item(0, 0)).await.unwrap_err();
    assert!(e.to_string().contains("(endpoint http://e0/v1)"), "{e}");
    assert!(e.is_retryable());
    // The next attempt goes to the endpoint that is up.
    assert_eq!(call(&pool, item(0, 0)).await.unwrap().endpoint.as_deref(), Some("http://e1/v1"));
    assert_eq!(scripted[0].calls(), 1);
}

#[tokio::test]
async fn a_refused_request_does_not_take_the_endpoint_down() {
    let bad = ScriptedProvider::new(|_, _| {
        ScriptedReply::Fail(ProviderError::Http { status: 400, body: "bad".into(), retry_after: None })
    });
    let (pool, _) = pool(vec![bad], 8, false);
    let e = call(&pool, item(0, 0)).await.unwrap_err();
    assert!(matches!(e, ProviderError::Http { status: 400, .. }));
    assert_eq!(pool.pool_status().unwrap().endpoints[0].state, "up");
}
