//! Concurrency and rate limits against a slow local server, and session budgets.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use moot::config::Config;
use moot::config::registry::Registry;
use moot::engine::Budget;
use moot::panel::Protocol;
use moot::provider::limiter::{LimitSettings, LimitedProvider, Limiter};
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::provider::retry::{RetryPolicy, call_with_retry};
use moot::provider::{ChatMessage, ChatRequest};
use moot::session::EventKind;
use moot::session::event::EndStatus;
use moot::testkit::server::{Reply, TestServer};
use support::*;
use tokio_util::sync::CancellationToken;

fn slow_reply() -> Reply {
    // The last event comes after a pause, so each request stays open a while.
    Reply::sse()
        .event(&moot::testkit::server::openai::role_chunk())
        .event(&moot::testkit::server::openai::content_chunk("ok"))
        .delay(Duration::from_millis(120))
        .event(&moot::testkit::server::openai::usage_chunk(3, 1))
        .event("[DONE]")
}

#[tokio::test]
async fn six_calls_with_max_concurrency_two_never_overlap_more_than_two() {
    let server = TestServer::with_handler(|_| slow_reply()).await.unwrap();
    let text =
        format!("[providers.slow]\nkind = \"openai\"\nbase_url = \"{}\"\nmax_concurrency = 2\n", server.base_url());
    let config = Config::parse(&text, std::path::Path::new("moot.toml")).unwrap();
    let mut registry = Registry::with_config(config, |_| None);
    assert_eq!(registry.default_name(), "slow");
    let provider = registry.get("slow", "", "test").unwrap();

    let mut tasks = Vec::new();
    for i in 0..6 {
        let p = provider.clone();
        tasks.push(tokio::spawn(async move {
            let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
            let request = ChatRequest::new(vec![ChatMessage::user(format!("call {i}"))]);
            p.stream(&request, &tx, &CancellationToken::new()).await
        }));
    }
    for t in tasks {
        let c = tokio::time::timeout(Duration::from_secs(30), t).await.unwrap().unwrap().expect("call succeeds");
        assert_eq!(c.text, "ok");
    }
    assert_eq!(server.request_count(), 6);
    assert_eq!(server.max_concurrent(), 2, "the server saw more (or fewer) than two at once");
}

#[tokio::test]
async fn a_429_shrinks_concurrency_and_retry_after_is_honoured() {
    let server = TestServer::start().await.unwrap();
    server.push(Reply::text(429, "slow down").header("retry-after-ms", "150"));
    server.set_handler(|_| Reply::openai_stream(&["fine"], Some((2, 1))));
    let inner = OpenAiProvider::new(OpenAiConfig { base_url: server.base_url(), ..OpenAiConfig::default() }).unwrap();
    let limiter = Arc::new(Limiter::new(LimitSettings {
        max_concurrency: 4,
        requests_per_minute: None,
        recovery: Duration::from_secs(3600),
    }));
    let provider = LimitedProvider::new(Arc::new(inner), limiter.clone());
    let (tx, _rx) = tokio::sync::mpsc::unbounded_channel();
    let policy =
        RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(1), max_delay: Duration::from_millis(2) };
    let request = ChatRequest::new(vec![ChatMessage::user("hi")]);
    let result = call_with_retry(&provider, &request, &tx, &CancellationToken::new(), &policy, &mut |_| {}).await;
    assert_eq!(result.unwrap().text, "fine");
    assert_eq!(limiter.current_limit(), 2);
    assert_eq!(limiter.rate_limited_count(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let gap = requests[1].received_at.duration_since(requests[0].received_at);
    assert!(gap >= Duration::from_millis(150), "second request came after {gap:?}");
}

#[tokio::test]
async fn a_token_budget_stops_the_debate_and_still_aggregates() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "aggregator" => "They disagree.".into(),
        "Ann" => evaluation(4, 4, 4).into(),
        _ => evaluation(2, 2, 2).into(),
    });
    let mut cfg = config(panel(Protocol::MajEval, &[("g", &["Ann", "Bea"])]), provider.clone());
    // The two initial turns already exceed this.
    cfg.budget = Budget { max_tokens_total: Some(10), max_cost: None };
    let (events, outcome) = Session::start(cfg, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Stopped);
    let reason = outcome.reason.clone().unwrap_or_default();
    assert!(reason.starts_with("budget:") && reason.contains("--max-tokens-total"), "{reason}");
    let stops: Vec<_> = events
        .iter()
        .filter_map(|e| matches!(&e.kind, EventKind::StopRequested { author } if author == "budget").then_some(()))
        .collect();
    assert_eq!(stops.len(), 1);
    assert!(events.iter().any(|e| matches!(e.kind, EventKind::AggregationCompleted { .. })));
    match &events.last().unwrap().kind {
        EventKind::SessionEnded { reason: Some(r), usage, .. } => {
            assert_eq!(r, &reason);
            assert!(usage.total.total() >= 10);
            assert!(usage.by_group.get("g").is_some_and(|u| u.total() > 0), "{usage:?}");
        }
        other => panic!("unexpected last event {other:?}"),
    }
    // No debate turn started after the stop.
    let debate_turns = turn_agents(&events, moot::session::event::Phase::Debate);
    assert!(debate_turns.len() <= 1, "{debate_turns:?}");
}
