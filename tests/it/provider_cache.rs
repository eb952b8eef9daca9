//! The response cache: a second identical run makes no HTTP request and gives the same evaluations.

use crate::support;

use std::sync::Arc;

use moot::engine::{Binding, Bindings, EngineConfig};
use moot::panel::Protocol;
use moot::provider::cache::{CachedProvider, ResponseCache};
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::session::{Event, EventKind};
use moot::testkit::server::{Reply, TestServer};
use support::*;

fn evaluations(events: &[Event]) -> Vec<(String, Option<moot::session::event::Evaluation>, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnCompleted { agent, evaluation, text, .. } => {
                Some((agent.clone(), evaluation.clone(), text.clone()))
            }
            _ => None,
        })
        .collect()
}

fn cached_flags(events: &[Event]) -> Vec<bool> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnCompleted { cached, .. } => Some(*cached),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_second_identical_run_makes_no_requests() {
    let server = TestServer::with_handler(|req| {
        // Answer according to who speaks, read from the prompts.
        let body = req.body_json().unwrap_or_default();
        let system = body["messages"][0]["content"].as_str().unwrap_or_default().to_string();
        let user = body["messages"][1]["content"].as_str().unwrap_or_default().to_string();
        let text = if system.starts_with("You write the synthesis") {
            "They mostly agree.".to_string()
        } else if moot::engine::prompts::agent_named_in(&user) == Some("Ann") {
            evaluation(4, 5, 4)
        } else {
            evaluation(3, 2, 3)
        };
        let chunks: Vec<&str> = text.as_str().split_inclusive(' ').collect();
        Reply::openai_stream(&chunks, Some((40, 12)))
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let http =
        Arc::new(OpenAiProvider::new(OpenAiConfig { base_url: server.base_url(), ..OpenAiConfig::default() }).unwrap());

    let run = |seed: u64| {
        let provider = Arc::new(CachedProvider::new(http.clone(), ResponseCache::new(dir.path())));
        let panel = panel(Protocol::MajEval, &[("g", &["Ann", "Bea"])]);
        let mut cfg = EngineConfig::new(Arc::new(panel), item(), Bindings::uniform(Binding::new(provider, "")));
        cfg.seed = seed;
        Session::start(cfg, None).finish()
    };

    let (first, outcome1) = run(5).await;
    let after_first = server.request_count();
    assert!(after_first > 2, "the first run made {after_first} requests");
    assert!(cached_flags(&first).iter().all(|c| !c));

    let (second, outcome2) = run(5).await;
    assert_eq!(server.request_count(), after_first, "the second run reached the server");
    let flags = cached_flags(&second);
    assert!(!flags.is_empty() && flags.iter().all(|c| *c), "{flags:?}");
    // Phase 1 runs concurrently, so its two completions may land in either order;
    // everything after it is sequential and must match turn for turn.
    let (mut a, mut b) = (evaluations(&first), evaluations(&second));
    assert!(a.len() > 2 && a.len() == b.len(), "{} vs {} turns", a.len(), b.len());
    a[..2].sort_by(|x, y| x.0.cmp(&y.0));
    b[..2].sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(a, b);
    assert_eq!(outcome1.result, outcome2.result);
    assert_eq!(outcome1.usage.total, outcome2.usage.total);
    // The replay still streams: deltas precede each cached completion.
    assert!(second.iter().any(|e| matches!(e.kind, EventKind::TurnDelta { .. })));

    // Another seed is another request.
    let _ = run(6).await;
    assert!(server.request_count() > after_first);
}
