//! The Anthropic provider against a local HTTP server speaking its SSE format.

use std::time::Duration;

use moot::provider::anthropic::{API_VERSION, AnthropicConfig, AnthropicProvider};
use moot::provider::retry::{AttemptFailure, RetryPolicy, call_with_retry};
use moot::provider::{ChatMessage, ChatRequest, Provider, ProviderError};
use moot::testkit::server::{Framing, Reply, TestServer};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn frame(event: &str, data: serde_json::Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn start(input_tokens: u64) -> String {
    frame(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
               "content": [], "model": "claude-test", "stop_reason": null,
               "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
    )
}

fn text(t: &str) -> String {
    frame(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}),
    )
}

fn ping() -> String {
    frame("ping", json!({"type": "ping"}))
}

fn finish(output_tokens: u64) -> Vec<String> {
    vec![
        frame("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
        frame(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null},
                   "usage": {"output_tokens": output_tokens}}),
        ),
        frame("message_stop", json!({"type": "message_stop"})),
    ]
}

fn error(kind: &str, message: &str) -> String {
    frame("error", json!({"type": "error", "error": {"type": kind, "message": message}}))
}

fn full_stream(parts: &[&str]) -> Reply {
    let mut reply = Reply::sse().write(start(21));
    reply = reply.write(frame(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ));
    for (i, p) in parts.iter().enumerate() {
        if i == 1 {
            reply = reply.write(ping());
        }
        reply = reply.write(text(p));
    }
    finish(9).into_iter().fold(reply, |r, f| r.write(f))
}

fn provider(server: &TestServer, key: Option<&str>) -> AnthropicProvider {
    let config = AnthropicConfig {
        base_url: server.url(),
        api_key: key.map(str::to_owned),
        model: "claude-test".into(),
        ..AnthropicConfig::default()
    };
    AnthropicProvider::new(config).expect("valid config")
}

fn request() -> ChatRequest {
    let mut r = ChatRequest::new(vec![
        ChatMessage::system("You judge answers."),
        ChatMessage::user("Judge this."),
        ChatMessage::assistant("Draft."),
        ChatMessage::user("Again, as JSON."),
    ]);
    r.max_tokens = 321;
    r.temperature = Some(0.2);
    r.seed = Some(9);
    r
}

async fn stream(p: &AnthropicProvider) -> (Result<moot::provider::Completion, ProviderError>, String) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = tokio::time::timeout(Duration::from_secs(20), p.stream(&request(), &tx, &CancellationToken::new()))
        .await
        .expect("no timeout");
    drop(tx);
    let mut streamed = String::new();
    while let Some(d) = rx.recv().await {
        streamed.push_str(&d);
    }
    (result, streamed)
}

#[tokio::test]
async fn streams_text_with_pings_and_sends_the_right_request() {
    let server = TestServer::start().await.unwrap();
    server.push(full_stream(&["Fair ", "and ", "clear."]));
    let p = provider(&server, Some("sk-ant-test-key"));
    let (result, streamed) = stream(&p).await;
    let c = result.expect("success");
    assert_eq!(c.text, "Fair and clear.");
    assert_eq!(streamed, c.text);
    assert_eq!((c.usage.input_tokens, c.usage.output_tokens, c.usage.estimated), (21, 9, false));
    assert_eq!(c.finish_reason.as_deref(), Some("end_turn"));

    let req = &server.requests()[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(req.header("x-api-key"), Some("sk-ant-test-key"));
    assert_eq!(req.header("anthropic-version"), Some(API_VERSION));
    assert_eq!(req.header("authorization"), None);
    let body = req.body_json().unwrap();
    assert_eq!(body["system"], "You judge answers.");
    assert_eq!(body["max_tokens"], 321);
    assert_eq!(body["stream"], true);
    assert_eq!(body["model"], "claude-test");
    assert!(body.get("seed").is_none());
    let roles: Vec<_> = body["messages"].as_array().unwrap().iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
}

/// `top_p` reaches the Messages API when asked without a temperature; with
/// one, only the temperature goes (recent models refuse both at once).
#[tokio::test]
async fn top_p_is_sent_in_the_request_body_unless_a_temperature_is() {
    let server = TestServer::start().await.unwrap();
    server.push(full_stream(&["ok"]));
    server.push(full_stream(&["ok"]));
    let p = provider(&server, None);
    let mut nucleus = request();
    nucleus.temperature = None;
    nucleus.top_p = Some(0.1);
    let mut both = request();
    both.top_p = Some(0.1);
    for r in [&nucleus, &both] {
        let (tx, _rx) = mpsc::unbounded_channel();
        p.stream(r, &tx, &CancellationToken::new()).await.expect("success");
    }
    let bodies: Vec<serde_json::Value> = server.requests().iter().map(|r| r.body_json().unwrap()).collect();
    let top_p = bodies[0]["top_p"].as_f64().expect("top_p in the body");
    assert!((top_p - 0.1).abs() < 1e-6, "{}", bodies[0]);
    assert!(bodies[0].get("temperature").is_none());
    assert!(bodies[1].get("top_p").is_none(), "{}", bodies[1]);
    assert!((bodies[1]["temperature"].as_f64().unwrap() - 0.2).abs() < 1e-6);
}

#[tokio::test]
async fn frames_split_at_every_offset_still_parse() {
    let server = TestServer::start().await.unwrap();
    let body: String = [start(3), text("é😀 ok"), ping()].concat() + &finish(2).concat();
    let offsets: Vec<usize> = (1..body.len()).collect();
    server.push(Reply::sse().write_split(body.as_bytes(), &offsets));
    let (result, _) = stream(&provider(&server, None)).await;
    assert_eq!(result.expect("success").text, "é😀 ok");
    assert_eq!(server.requests()[0].header("x-api-key"), None);
}

#[tokio::test]
async fn an_error_event_mid_stream_fails_the_attempt_and_overload_is_retried() {
    let server = TestServer::start().await.unwrap();
    server.push(Reply::sse().write(start(5)).write(text("Half")).write(error("overloaded_error", "Overloaded")));
    server.push(full_stream(&["Whole"]));
    let p = provider(&server, None);

    let (tx, _rx) = mpsc::unbounded_channel();
    let policy =
        RetryPolicy { max_attempts: 3, base_delay: Duration::from_millis(1), max_delay: Duration::from_millis(5) };
    let mut failures: Vec<AttemptFailure> = Vec::new();
    let result = call_with_retry(&p, &request(), &tx, &CancellationToken::new(), &policy, &mut |f: &AttemptFailure| {
        failures.push(f.clone())
    })
    .await;
    assert_eq!(result.expect("second attempt succeeds").text, "Whole");
    assert_eq!(failures.len(), 1);
    match &failures[0].error {
        ProviderError::Server { message, retryable: true } => {
            assert!(message.contains("overloaded_error"), "{message}")
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(failures[0].error.is_rate_limit());
    assert!(failures[0].will_retry);
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn request_errors_are_not_retried() {
    let server = TestServer::start().await.unwrap();
    server.push(Reply::sse().write(start(5)).write(error("invalid_request_error", "max_tokens too large")));
    let (result, _) = stream(&provider(&server, None)).await;
    match result {
        Err(e @ ProviderError::Server { retryable: false, .. }) => assert!(!e.is_retryable()),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn http_529_overloaded_is_retryable_and_keys_are_redacted() {
    let server = TestServer::start().await.unwrap();
    server.push(
        Reply::json(
            529,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded sk-ant-secret-1"}}),
        )
        .header("retry-after", "2"),
    );
    let (result, _) = stream(&provider(&server, Some("sk-ant-secret-1"))).await;
    match result {
        Err(e @ ProviderError::Http { status: 529, .. }) => {
            assert!(e.is_retryable());
            assert!(e.is_rate_limit());
            assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
            let text = e.to_string();
            assert!(text.contains("overloaded_error") && !text.contains("sk-ant-secret-1"), "{text}");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_stream_without_message_stop_is_incomplete() {
    let server = TestServer::start().await.unwrap();
    // The body ends cleanly (connection closed), but before message_stop.
    server.push(Reply::sse().framing(Framing::Eof).write(start(5)).write(text("cut")));
    let (result, streamed) = stream(&provider(&server, None)).await;
    match result {
        Err(ProviderError::Incomplete(m)) => assert!(m.contains("message_stop"), "{m}"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(streamed, "cut");
}

#[tokio::test]
async fn idle_stream_times_out() {
    let server = TestServer::start().await.unwrap();
    server.push(Reply::sse().write(start(5)).hang());
    let mut config = AnthropicConfig { base_url: server.url(), ..AnthropicConfig::default() };
    config.timeouts.idle = Duration::from_millis(200);
    let p = AnthropicProvider::new(config).unwrap();
    let (result, _) = stream(&p).await;
    assert!(matches!(result, Err(ProviderError::Timeout(moot::provider::TimeoutKind::Idle, _))), "{result:?}");
}
