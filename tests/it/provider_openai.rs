//! The OpenAI-compatible provider and the retry policy against a real HTTP
//! server on 127.0.0.1 that streams scripted SSE.

use std::time::{Duration, Instant};

use moot::provider::http::Timeouts;
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::provider::retry::{AttemptFailure, RetryPolicy, call_with_retry};
use moot::provider::{
    ChatMessage, ChatRequest, Completion, Provider, ProviderError, TimeoutKind, Usage, estimate_usage,
};
use moot::testkit::server::{Framing, Reply, TestServer, openai};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

async fn server() -> TestServer {
    TestServer::start().await.expect("bind 127.0.0.1")
}

fn config(server: &TestServer) -> OpenAiConfig {
    OpenAiConfig {
        name: "local-test".into(),
        base_url: server.base_url(),
        api_key: None,
        model: "test-model".into(),
        timeouts: Timeouts {
            connect: Duration::from_secs(2),
            first_token: Duration::from_secs(5),
            idle: Duration::from_secs(5),
            total: Duration::from_secs(8),
        },
        ..OpenAiConfig::default()
    }
}

fn provider(server: &TestServer) -> OpenAiProvider {
    OpenAiProvider::new(config(server)).expect("valid config")
}

fn request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::system("You judge text."), ChatMessage::user("Rate this: hello")])
}

fn fast_policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy { max_attempts, base_delay: Duration::from_millis(10), max_delay: Duration::from_millis(40) }
}

/// One attempt; returns the result and every delta received.
async fn stream_once(
    provider: &OpenAiProvider,
    request: &ChatRequest,
) -> (Result<Completion, ProviderError>, Vec<String>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let result = provider.stream(request, &tx, &CancellationToken::new()).await;
    drop(tx);
    let mut deltas = Vec::new();
    while let Some(d) = rx.recv().await {
        deltas.push(d);
    }
    (result, deltas)
}

/// Attempts through `call_with_retry`; returns the result and the reported failures.
async fn with_retry(
    provider: &OpenAiProvider,
    policy: &RetryPolicy,
) -> (Result<Completion, ProviderError>, Vec<AttemptFailure>) {
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut failures = Vec::new();
    let result = call_with_retry(provider, &request(), &tx, &CancellationToken::new(), policy, &mut |f| {
        failures.push(f.clone())
    })
    .await;
    (result, failures)
}

#[tokio::test]
async fn streams_text_and_reports_usage() {
    let server = server().await;
    server.push(Reply::openai_stream(&["Hello", ", ", "world"], Some((12, 3))));
    let (result, deltas) = stream_once(&provider(&server), &request()).await;
    let completion = result.expect("stream succeeds");
    assert_eq!(completion.text, "Hello, world");
    assert_eq!(deltas, ["Hello", ", ", "world"]);
    assert_eq!(
        completion.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 3,
            estimated: false,
            cost: None,
            cached_input_tokens: None,
            ..Usage::default()
        }
    );
    assert_eq!(completion.finish_reason.as_deref(), Some("stop"));
    assert!(!completion.cached);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
}

#[tokio::test]
async fn trailing_slash_in_base_url_is_tolerated() {
    let server = server().await;
    server.push(Reply::openai_stream(&["ok"], Some((1, 1))));
    let config = OpenAiConfig { base_url: format!("{}/", server.base_url()), ..config(&server) };
    let provider = OpenAiProvider::new(config).expect("valid config");
    let (result, _) = stream_once(&provider, &request()).await;
    assert_eq!(result.expect("stream succeeds").text, "ok");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}

const UNICODE_DELTAS: [&str; 4] = ["Caf", "é — ", "😀 naïve", " 中文"];
const UNICODE_TEXT: &str = "Café — 😀 naïve 中文";

/// Byte offsets inside each multi-byte character of `body`.
fn offsets_inside_multibyte(body: &str) -> Vec<usize> {
    body.char_indices()
        .filter(|(_, c)| c.len_utf8() > 1)
        .flat_map(|(i, c)| (1..c.len_utf8()).map(move |k| i + k))
        .collect()
}

#[tokio::test]
async fn chunks_split_at_odd_offsets_and_inside_utf8_characters() {
    let server = server().await;
    let body = openai::stream_body(&UNICODE_DELTAS, Some((20, 9)));
    let mut offsets = offsets_inside_multibyte(&body);
    assert!(offsets.len() >= 10, "the body has multi-byte characters to split");
    // Also inside `data:`, between the two newlines of a frame, and odd places.
    let frame_end = body.find("\n\n").expect("a frame");
    offsets.extend([1, 3, 4, 5, 7, 13, 31, frame_end + 1, body.len() - 3]);
    offsets.sort_unstable();
    offsets.dedup();
    server.push(Reply::sse().write_split(&body, &offsets));

    let (result, deltas) = stream_once(&provider(&server), &request()).await;
    let completion = result.expect("stream succeeds");
    assert_eq!(completion.text, UNICODE_TEXT);
    assert_eq!(deltas.concat(), UNICODE_TEXT);
    assert_eq!(
        completion.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 9,
            estimated: false,
            cost: None,
            cached_input_tokens: None,
            ..Usage::default()
        }
    );
}

#[tokio::test]
async fn random_splits_with_delays_give_the_exact_text() {
    let server = server().await;
    let body = openai::stream_body(&UNICODE_DELTAS, Some((20, 9)));
    let provider = provider(&server);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for round in 0..25 {
        let mut offsets: Vec<usize> = (0..rng.random_range(1..12)).map(|_| rng.random_range(1..body.len())).collect();
        offsets.sort_unstable();
        let mut reply = Reply::sse();
        let mut start = 0;
        for &cut in offsets.iter().filter(|&&c| c > 0) {
            if cut > start {
                reply = reply.write(&body.as_bytes()[start..cut]);
                if rng.random_bool(0.3) {
                    reply = reply.delay(Duration::from_millis(1));
                }
                start = cut;
            }
        }
        server.push(reply.write(&body.as_bytes()[start..]));
        let (result, _) = stream_once(&provider, &request()).await;
        assert_eq!(result.expect("stream succeeds").text, UNICODE_TEXT, "round {round}, splits {offsets:?}");
    }
}

#[tokio::test]
async fn comment_lines_are_ignored() {
    let server = server().await;
    server.push(
        Reply::sse()
            .write(": ping\n\n")
            .event(&openai::role_chunk())
            .write(": ping\n")
            .event(&openai::content_chunk("a"))
            .write(":\n\n: keep-alive\r\n\r\n")
            .event(&openai::content_chunk("b"))
            .event(&openai::finish_chunk("stop"))
            .event(&openai::usage_chunk(3, 2))
            .write(": bye\n\n")
            .event("[DONE]"),
    );
    let (result, deltas) = stream_once(&provider(&server), &request()).await;
    assert_eq!(result.expect("stream succeeds").text, "ab");
    assert_eq!(deltas, ["a", "b"]);
}

#[tokio::test]
async fn missing_usage_is_estimated_and_flagged() {
    let server = server().await;
    server.push(Reply::openai_stream(&["Four", " score"], None));
    let request = request();
    let (result, _) = stream_once(&provider(&server), &request).await;
    let completion = result.expect("stream succeeds");
    assert!(completion.usage.estimated);
    assert_eq!(completion.usage, estimate_usage(&request, "Four score"));
    assert!(completion.usage.input_tokens > 0 && completion.usage.output_tokens > 0);
}

#[tokio::test]
async fn request_body_and_no_auth_without_key() {
    let server = server().await;
    server.push(Reply::openai_stream(&["x"], Some((1, 1))));
    let mut request = request();
    request.max_tokens = 256;
    request.temperature = Some(0.25);
    request.seed = Some(7);
    let (result, _) = stream_once(&provider(&server), &request).await;
    result.expect("stream succeeds");

    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), None);
    assert!(sent.header("content-type").is_some_and(|v| v.starts_with("application/json")));
    assert_eq!(sent.header("accept"), Some("text/event-stream"));
    let body = sent.body_json().expect("JSON body");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(body["max_tokens"], 256);
    assert_eq!(body["temperature"], 0.25);
    assert_eq!(body["seed"], 7);
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "You judge text."},
            {"role": "user", "content": "Rate this: hello"},
        ])
    );
}

/// moot's requests split a user turn in two messages; strict chat templates
/// refuse that, so the wire has one.
#[tokio::test]
async fn consecutive_user_messages_are_sent_as_one() {
    let server = server().await;
    server.push(Reply::openai_stream(&["x"], Some((1, 1))));
    let request = ChatRequest::new(vec![
        ChatMessage::system("You judge text."),
        ChatMessage::user("The item."),
        ChatMessage::user("You are Ann."),
        ChatMessage::assistant("No scores."),
        ChatMessage::user("Scores, please."),
    ]);
    let (result, _) = stream_once(&provider(&server), &request).await;
    result.expect("stream succeeds");
    assert_eq!(
        server.requests()[0].body_json().unwrap()["messages"],
        json!([
            {"role": "system", "content": "You judge text."},
            {"role": "user", "content": "The item.\n\nYou are Ann."},
            {"role": "assistant", "content": "No scores."},
            {"role": "user", "content": "Scores, please."},
        ])
    );
}

#[tokio::test]
async fn bearer_auth_with_key_and_optional_fields_left_out() {
    let server = server().await;
    server.push(Reply::openai_stream(&["x"], Some((1, 1))));
    let config = OpenAiConfig { api_key: Some("sk-test-123".into()), ..config(&server) };
    let provider = OpenAiProvider::new(config).expect("valid config");
    let mut request = request();
    request.model = "other-model".into();
    let (result, _) = stream_once(&provider, &request).await;
    result.expect("stream succeeds");

    let sent = &server.requests()[0];
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test-123"));
    let body = sent.body_json().expect("JSON body");
    assert_eq!(body["model"], "other-model");
    assert_eq!(body["max_tokens"], 1024, "max_tokens is always sent");
    assert!(body.get("temperature").is_none());
    assert!(body.get("seed").is_none());
    assert!(body.get("top_p").is_none(), "top_p is sent only when asked");
}

/// A request's nucleus (MASA's judges sample at temperature 0, top_p 0.1)
/// reaches the server beside the temperature.
#[tokio::test]
async fn top_p_is_sent_in_the_request_body() {
    let server = server().await;
    server.push(Reply::openai_stream(&["x"], Some((1, 1))));
    let mut request = request();
    request.temperature = Some(0.0);
    request.top_p = Some(0.1);
    let (result, _) = stream_once(&provider(&server), &request).await;
    result.expect("stream succeeds");
    let body = server.requests()[0].body_json().expect("JSON body");
    assert_eq!(body["temperature"], 0.0);
    let top_p = body["top_p"].as_f64().expect("top_p in the body");
    assert!((top_p - 0.1).abs() < 1e-6, "{body}");
}

#[tokio::test]
async fn rate_limit_with_retry_after_is_honoured_then_succeeds() {
    let server = server().await;
    server.push(
        Reply::json(429, &json!({"error": {"message": "slow down", "type": "rate_limit"}})).header("Retry-After", "1"),
    );
    server.push(Reply::openai_stream(&["after wait"], Some((4, 2))));
    let started = Instant::now();
    let (result, failures) = with_retry(&provider(&server), &fast_policy(4)).await;
    assert_eq!(result.expect("second attempt succeeds").text, "after wait");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(failures.len(), 1);
    let failure = &failures[0];
    assert_eq!(failure.attempt, 1);
    assert!(failure.will_retry);
    assert!(failure.retry_in.is_some_and(|d| d >= Duration::from_secs(1)), "{failure:?}");
    match &failure.error {
        ProviderError::Http { status: 429, body, retry_after } => {
            assert!(body.contains("slow down"));
            assert_eq!(*retry_after, Some(Duration::from_secs(1)));
        }
        other => panic!("unexpected error {other:?}"),
    }
    assert!(failure.error.is_rate_limit());
    assert!(requests[1].received_at.duration_since(requests[0].received_at) >= Duration::from_secs(1));
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn repeated_server_errors_exhaust_the_attempts() {
    let server = server().await;
    for _ in 0..3 {
        server.push(Reply::text(500, "boom"));
    }
    server.push(Reply::openai_stream(&["never reached"], None));
    let (result, failures) = with_retry(&provider(&server), &fast_policy(3)).await;
    match result {
        Err(ProviderError::Http { status: 500, body, retry_after: None }) => assert_eq!(body, "boom"),
        other => panic!("unexpected result {other:?}"),
    }
    assert_eq!(server.request_count(), 3);
    assert_eq!(failures.iter().map(|f| f.attempt).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(failures.iter().map(|f| f.will_retry).collect::<Vec<_>>(), [true, true, false]);
    assert!(failures[..2].iter().all(|f| f.retry_in.is_some_and(|d| d <= Duration::from_millis(40))));
}

#[tokio::test]
async fn client_errors_are_not_retried_and_long_bodies_are_truncated() {
    let server = server().await;
    let long = "x".repeat(3000);
    server.push(Reply::text(400, long.clone()));
    server.push(Reply::openai_stream(&["never reached"], None));
    let (result, failures) = with_retry(&provider(&server), &fast_policy(4)).await;
    match result {
        Err(ProviderError::Http { status: 400, body, .. }) => {
            assert!(body.chars().count() <= 501, "body has {} chars", body.chars().count());
            assert!(body.starts_with("xxxx"));
        }
        other => panic!("unexpected result {other:?}"),
    }
    assert_eq!(server.request_count(), 1);
    assert_eq!(failures.len(), 1);
    assert!(!failures[0].will_retry);
}

#[tokio::test]
async fn stream_cut_midway_is_incomplete() {
    let server = server().await;
    // Chunked body cut without its final chunk.
    server.push(Reply::sse().event(&openai::role_chunk()).event(&openai::content_chunk("partial")).cut());
    // Body that ends cleanly at the HTTP level but without [DONE].
    server.push(
        Reply::sse()
            .framing(Framing::Eof)
            .event(&openai::content_chunk("partial"))
            .event(&openai::finish_chunk("stop")),
    );
    // Fixed-length body cut short, in the middle of an event.
    server.push(
        Reply::sse().framing(Framing::Length).event(&openai::content_chunk("partial")).write("data: {\"ch").cut(),
    );
    let provider = provider(&server);
    for case in 0..3 {
        let (result, deltas) = stream_once(&provider, &request()).await;
        assert!(matches!(result, Err(ProviderError::Incomplete(_))), "case {case}: {result:?}");
        assert_eq!(deltas, ["partial"], "case {case}");
    }
}

#[tokio::test]
async fn cut_stream_is_retried() {
    let server = server().await;
    server.push(Reply::sse().event(&openai::content_chunk("par")).cut());
    server.push(Reply::openai_stream(&["whole ", "reply"], Some((5, 2))));
    let (result, failures) = with_retry(&provider(&server), &fast_policy(3)).await;
    assert_eq!(result.expect("retry succeeds").text, "whole reply");
    assert_eq!(server.request_count(), 2);
    assert_eq!(failures.len(), 1);
    assert!(matches!(failures[0].error, ProviderError::Incomplete(_)));
    assert!(failures[0].will_retry);
}

#[tokio::test]
async fn invalid_json_chunk_is_a_protocol_error() {
    let server = server().await;
    server.push(
        Reply::sse().event(&openai::content_chunk("ok")).event("{\"choices\": [ this is not json").event("[DONE]"),
    );
    let (result, _) = stream_once(&provider(&server), &request()).await;
    match result {
        Err(ProviderError::Protocol(message)) => {
            assert!(message.contains("this is not json"), "{message}")
        }
        other => panic!("unexpected result {other:?}"),
    }
}

#[tokio::test]
async fn error_object_in_stream_is_a_server_error() {
    let server = server().await;
    server.push(
        Reply::sse()
            .event(&openai::content_chunk("ok"))
            .event(&openai::error_chunk("model overloaded", "server_error"))
            .event("[DONE]"),
    );
    let (result, _) = stream_once(&provider(&server), &request()).await;
    match result {
        Err(ProviderError::Server { message, retryable }) => {
            assert!(message.contains("model overloaded"));
            assert!(retryable);
        }
        other => panic!("unexpected result {other:?}"),
    }
}

fn short_timeouts(server: &TestServer, first_token_ms: u64, idle_ms: u64, total_ms: u64) -> OpenAiProvider {
    let base = config(server);
    let timeouts = Timeouts {
        first_token: Duration::from_millis(first_token_ms),
        idle: Duration::from_millis(idle_ms),
        total: Duration::from_millis(total_ms),
        ..base.timeouts
    };
    OpenAiProvider::new(OpenAiConfig { timeouts, ..base }).expect("valid config")
}

#[tokio::test]
async fn server_that_never_answers_hits_first_token_timeout() {
    let server = server().await;
    server.push(Reply::silent());
    let provider = short_timeouts(&server, 200, 5000, 5000);
    let started = Instant::now();
    let (result, _) = stream_once(&provider, &request()).await;
    assert_eq!(result, Err(ProviderError::Timeout(TimeoutKind::FirstToken, Duration::from_millis(200))));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn keepalive_comments_do_not_count_as_first_token() {
    let server = server().await;
    let mut reply = Reply::sse();
    for _ in 0..10 {
        reply = reply.write(": processing\n\n").delay(Duration::from_millis(40));
    }
    server.push(reply.hang());
    let provider = short_timeouts(&server, 250, 5000, 5000);
    let (result, _) = stream_once(&provider, &request()).await;
    assert_eq!(result, Err(ProviderError::Timeout(TimeoutKind::FirstToken, Duration::from_millis(250))));
}

#[tokio::test]
async fn stalled_stream_hits_idle_timeout() {
    let server = server().await;
    server.push(Reply::sse().event(&openai::role_chunk()).event(&openai::content_chunk("so far")).hang());
    let provider = short_timeouts(&server, 5000, 200, 5000);
    let (result, deltas) = stream_once(&provider, &request()).await;
    assert_eq!(result, Err(ProviderError::Timeout(TimeoutKind::Idle, Duration::from_millis(200))));
    assert_eq!(deltas, ["so far"]);
}

#[tokio::test]
async fn slow_endless_stream_hits_total_timeout() {
    let server = server().await;
    let mut reply = Reply::sse();
    for _ in 0..40 {
        reply = reply.event(&openai::content_chunk(".")).delay(Duration::from_millis(25));
    }
    server.push(reply.hang());
    let provider = short_timeouts(&server, 5000, 5000, 300);
    let started = Instant::now();
    let (result, deltas) = stream_once(&provider, &request()).await;
    assert_eq!(result, Err(ProviderError::Timeout(TimeoutKind::Total, Duration::from_millis(300))));
    assert!(!deltas.is_empty());
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn cancellation_mid_stream_returns_promptly() {
    let server = server().await;
    server.push(Reply::sse().event(&openai::role_chunk()).event(&openai::content_chunk("first")).hang());
    let provider = provider(&server);
    let request = request();
    let cancel = CancellationToken::new();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let attempt = provider.stream(&request, &tx, &cancel);
    let canceller = async {
        let first = rx.recv().await;
        cancel.cancel();
        (first, Instant::now())
    };
    let (result, (first, cancelled_at)) = tokio::join!(attempt, canceller);
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert_eq!(first.as_deref(), Some("first"));
    assert!(cancelled_at.elapsed() < Duration::from_millis(500));
}

#[tokio::test]
async fn cancellation_while_waiting_for_headers_and_during_backoff() {
    let server = server().await;
    server.push(Reply::silent());
    let provider = provider(&server);
    let cancel = CancellationToken::new();
    let (tx, _rx) = mpsc::unbounded_channel();
    let request = request();
    let attempt = provider.stream(&request, &tx, &cancel);
    let canceller = async {
        server.wait_for_requests(1).await;
        cancel.cancel();
        Instant::now()
    };
    let (result, cancelled_at) = tokio::join!(attempt, canceller);
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert!(cancelled_at.elapsed() < Duration::from_millis(500));

    // A long Retry-After wait ends as soon as the token fires.
    server.push(Reply::text(503, "busy").header("retry-after", "60"));
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let mut failures = 0;
    let result = call_with_retry(&provider, &request, &tx, &cancel, &fast_policy(4), &mut |f| {
        failures += 1;
        assert_eq!(f.retry_in, Some(Duration::from_secs(60)));
        cancel.cancel();
    })
    .await;
    assert_eq!(result, Err(ProviderError::Cancelled));
    assert_eq!(failures, 1);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn refused_connection_is_a_retryable_connect_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let config = OpenAiConfig { base_url: format!("http://127.0.0.1:{port}/v1"), ..OpenAiConfig::default() };
    let provider = OpenAiProvider::new(config).expect("valid config");
    let (result, _) = stream_once(&provider, &request()).await;
    match result {
        Err(error @ ProviderError::Connect(_)) => assert!(error.is_retryable()),
        other => panic!("unexpected result {other:?}"),
    }
}

#[tokio::test]
async fn api_key_never_appears_in_errors() {
    let server = server().await;
    let key = "sk-secret-abcdef123456";
    server.push(Reply::json(401, &json!({"error": {"message": format!("Incorrect API key provided: {key}")}})));
    server.push(Reply::sse().event(&openai::error_chunk(&format!("bad key {key}"), "authentication_error")));
    let config = OpenAiConfig { api_key: Some(key.into()), ..config(&server) };
    let provider = OpenAiProvider::new(config).expect("valid config");
    for _ in 0..2 {
        let (result, _) = stream_once(&provider, &request()).await;
        let error = result.expect_err("fails");
        assert!(!error.is_retryable(), "{error:?}");
        assert!(!error.to_string().contains(key), "{error}");
        assert!(!format!("{error:?}").contains(key), "{error:?}");
    }
    assert_eq!(server.requests()[0].header("authorization"), Some(format!("Bearer {key}").as_str()));
}

#[tokio::test]
async fn provider_info_describes_the_endpoint() {
    let server = server().await;
    let info = provider(&server).info();
    assert_eq!(info.name, "local-test");
    assert_eq!(info.kind, "openai");
    assert_eq!(info.model, "test-model");
    assert_eq!(info.base_url, Some(server.base_url()));
}

#[tokio::test]
async fn full_accept_backlog_hits_connect_timeout() {
    // A listener that never accepts, with its backlog filled, leaves further
    // connection attempts waiting for the handshake.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.bind("127.0.0.1:0".parse().expect("addr")).expect("bind");
    let listener = socket.listen(1).expect("listen");
    let addr = listener.local_addr().expect("addr");
    let mut held = Vec::new();
    for _ in 0..8 {
        match std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)) {
            Ok(stream) => held.push(stream),
            Err(_) => break,
        }
    }
    let config = OpenAiConfig {
        base_url: format!("http://{addr}/v1"),
        timeouts: Timeouts { connect: Duration::from_millis(200), ..Timeouts::default() },
        ..OpenAiConfig::default()
    };
    let provider = OpenAiProvider::new(config).expect("valid config");
    let started = Instant::now();
    let (result, _) = stream_once(&provider, &request()).await;
    assert_eq!(result, Err(ProviderError::Timeout(TimeoutKind::Connect, Duration::from_millis(200))));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn handler_answers_every_request_after_the_queue() {
    let server = TestServer::with_handler(|request| {
        let body = request.body_json().unwrap_or_default();
        let last = body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str());
        let echo = format!("echo: {}", last.unwrap_or("?"));
        Reply::openai_stream(&[echo.as_str()], Some((1, 1)))
    })
    .await
    .expect("bind");
    server.push(Reply::text(503, "first one fails"));
    let provider = provider(&server);
    let (first, _) = stream_once(&provider, &request()).await;
    assert!(matches!(first, Err(ProviderError::Http { status: 503, .. })));
    for n in 0..3 {
        let request = ChatRequest::new(vec![ChatMessage::user(format!("message {n}"))]);
        let (result, _) = stream_once(&provider, &request).await;
        assert_eq!(result.expect("handler reply").text, format!("echo: message {n}"));
    }
    let requests = tokio::time::timeout(Duration::from_secs(2), server.wait_for_requests(4)).await.expect("4 requests");
    assert_eq!(requests.len(), 4);
}

#[tokio::test]
async fn json_answer_instead_of_a_stream_is_a_protocol_error() {
    let server = server().await;
    server.push(Reply::json(200, &json!({"error": {"message": "streaming unsupported"}})));
    let (result, _) = stream_once(&provider(&server), &request()).await;
    match result {
        Err(ProviderError::Protocol(message)) => {
            assert!(message.contains("streaming unsupported"), "{message}")
        }
        other => panic!("unexpected result {other:?}"),
    }
}

/// A model that gives no log-probabilities (OpenAI's reasoning models refuse
/// the field): asked once more without them, and never again; the scores
/// that wanted them go unweighted rather than failing the run.
#[tokio::test]
async fn a_server_that_refuses_logprobs_is_asked_again_without_them() {
    let server = server().await;
    let refusal = json!({"error": {"message": "Unsupported parameter: 'logprobs' is not supported with this model.",
                                   "type": "invalid_request_error", "param": "logprobs"}});
    server.push_all([
        Reply::json(400, &refusal),
        Reply::openai_stream(&["{\"clarity\": 4}"], None),
        Reply::openai_stream(&["Again"], None),
    ]);
    let provider = provider(&server);
    let mut wanting = request();
    wanting.top_logprobs = Some(10);
    let (result, _) = stream_once(&provider, &wanting).await;
    let completion = result.expect("the second request succeeds");
    assert_eq!(completion.text, "{\"clarity\": 4}");
    assert_eq!(completion.logprobs, None);
    let (result, _) = stream_once(&provider, &wanting).await;
    assert_eq!(result.expect("later calls succeed").text, "Again");
    let bodies: Vec<serde_json::Value> = server.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 3, "one retry, then no more refusals");
    assert_eq!(bodies[0]["logprobs"], json!(true));
    assert_eq!(bodies[0]["top_logprobs"], json!(10));
    for later in &bodies[1..] {
        assert!(later.get("logprobs").is_none() && later.get("top_logprobs").is_none(), "{later}");
    }
    // The same refusal for a request that asked for none is the server's
    // answer, not retried.
    let server = self::server().await;
    server.push(Reply::json(400, &refusal));
    let (result, _) = stream_once(&self::provider(&server), &request()).await;
    assert!(matches!(result, Err(ProviderError::Http { status: 400, .. })), "{result:?}");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_server_that_refuses_stream_options_is_asked_again_without_them() {
    let server = server().await;
    let refusal = json!({"error": {"message": "Unrecognized request argument supplied: stream_options", "type": "invalid_request_error"}});
    server.push_all([
        Reply::json(400, &refusal),
        Reply::openai_stream(&["Fine", " text"], None),
        Reply::openai_stream(&["Again"], None),
    ]);
    let provider = provider(&server);
    let (result, _) = stream_once(&provider, &request()).await;
    let completion = result.expect("the second request succeeds");
    assert_eq!(completion.text, "Fine text");
    assert!(completion.usage.estimated, "no usage in the stream: estimated");
    let (result, _) = stream_once(&provider, &request()).await;
    assert_eq!(result.expect("later calls succeed").text, "Again");
    let bodies: Vec<serde_json::Value> = server.requests().iter().map(|r| r.body_json().unwrap()).collect();
    assert_eq!(bodies.len(), 3, "one retry, then no more refusals");
    assert!(bodies[0].get("stream_options").is_some());
    assert!(bodies[1].get("stream_options").is_none() && bodies[2].get("stream_options").is_none());

    // Other client errors are not retried.
    let server = self::server().await;
    server.push(Reply::json(400, &json!({"error": {"message": "bad model"}})));
    let (result, _) = stream_once(&self::provider(&server), &request()).await;
    assert!(matches!(result, Err(ProviderError::Http { status: 400, .. })), "{result:?}");
    assert_eq!(server.requests().len(), 1);
}
