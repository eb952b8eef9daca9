//! The OpenAI-compatible provider: configuration, secrets, stream reading.

use super::*;
use crate::provider::Usage;
use std::time::Duration;
use tokio::sync::mpsc;

#[test]
fn debug_redacts_key() {
    let config = OpenAiConfig { api_key: Some("sk-very-secret".into()), ..OpenAiConfig::default() };
    let shown = format!("{config:?}");
    assert!(!shown.contains("sk-very-secret"), "{shown}");
    assert!(shown.contains("<redacted>"));
    let provider = OpenAiProvider::new(config).expect("valid config");
    assert!(!format!("{provider:?}").contains("sk-very-secret"));
}

#[test]
fn from_lookup_reads_base_url_and_key() {
    let config = OpenAiConfig::from_lookup(|name| match name {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:8000/v1/".into()),
        "OPENAI_API_KEY" => Some("sk-x".into()),
        _ => None,
    });
    assert_eq!(config.endpoint(), "http://127.0.0.1:8000/v1/chat/completions");
    assert_eq!(config.api_key.as_deref(), Some("sk-x"));

    let config = OpenAiConfig::from_lookup(|name| (name == "OPENAI_API_KEY").then(|| "  ".into()));
    assert_eq!(config.base_url, DEFAULT_BASE_URL);
    assert_eq!(config.api_key, None);
}

#[test]
fn defaults() {
    let c = OpenAiConfig::default();
    assert_eq!(c.timeouts.connect, Duration::from_secs(10));
    assert_eq!(c.timeouts.first_token, Duration::from_secs(120));
    assert_eq!(c.timeouts.idle, Duration::from_secs(60));
    assert_eq!(c.timeouts.total, Duration::from_secs(600));
}

#[test]
fn bad_base_url_is_config_error() {
    let config = OpenAiConfig { base_url: "not a url".into(), ..OpenAiConfig::default() };
    assert!(matches!(OpenAiProvider::new(config), Err(ProviderError::Config(_))));
    let config = OpenAiConfig { base_url: "ftp://example.com/v1".into(), ..OpenAiConfig::default() };
    assert!(matches!(OpenAiProvider::new(config), Err(ProviderError::Config(_))));
    let config = OpenAiConfig { api_key: Some("bad\nkey".into()), ..OpenAiConfig::default() };
    match OpenAiProvider::new(config) {
        Err(ProviderError::Config(m)) => assert!(!m.contains("bad\nkey")),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn chunk_handling() {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut state = StreamState::default();
    assert!(!state.handle(r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}],"usage":null}"#, &tx).unwrap());
    assert!(!state.handle(r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#, &tx).unwrap());
    assert!(!state.handle(r#"{"choices":[{"index":1,"delta":{"content":"other"}}]}"#, &tx).unwrap());
    assert!(!state.handle(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#, &tx).unwrap());
    assert!(!state.handle(r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1}}"#, &tx).unwrap());
    assert!(state.handle("[DONE]", &tx).unwrap());
    assert_eq!(state.text, "Hi");
    assert_eq!(rx.try_recv().ok().as_deref(), Some("Hi"));
    assert!(rx.try_recv().is_err());
    assert_eq!(state.finish_reason.as_deref(), Some("length"));
    assert_eq!(state.usage, Some(Usage { input_tokens: 9, output_tokens: 1, ..Usage::default() }));
}

#[test]
fn cached_prompt_tokens_are_read_from_usage_or_llama_cpp_timings() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut state = StreamState::default();
    let vllm = r#"{"choices":[],"usage":{"prompt_tokens":900,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":768}}}"#;
    state.handle(vllm, &tx).unwrap();
    assert_eq!(state.usage.unwrap().cached_input_tokens, Some(768));
    let mut state = StreamState::default();
    let llama = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":500,"completion_tokens":4},"timings":{"cache_n":480,"prompt_n":20}}"#;
    state.handle(llama, &tx).unwrap();
    assert_eq!(state.usage.unwrap().cached_input_tokens, Some(480));
    let mut state = StreamState::default();
    state.handle(r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}"#, &tx).unwrap();
    assert_eq!(state.usage.unwrap().cached_input_tokens, None, "not reported: not guessed");
}

#[test]
fn chunk_errors() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut state = StreamState::default();
    match state.handle(r#"{"choices": [oops"#, &tx) {
        Err(ProviderError::Protocol(m)) => assert!(m.contains("oops"), "{m}"),
        other => panic!("unexpected {other:?}"),
    }
    match state.handle(r#"{"error":{"message":"overloaded","type":"server_error"}}"#, &tx) {
        Err(ProviderError::Server { message, retryable }) => {
            assert!(message.contains("overloaded"));
            assert!(retryable);
        }
        other => panic!("unexpected {other:?}"),
    }
    match state.handle(r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#, &tx) {
        Err(ProviderError::Server { retryable, .. }) => assert!(!retryable),
        other => panic!("unexpected {other:?}"),
    }
    match state.handle(r#"{"error":"plain"}"#, &tx) {
        Err(ProviderError::Server { message, .. }) => assert_eq!(message, "plain"),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn comment_lines_are_ignored_and_missing_usage_is_estimated() {
    use crate::testkit::server::{Reply, TestServer, openai};
    let server = TestServer::start().await.expect("server");
    server.push(
        Reply::sse()
            .write(": ping\n\n")
            .event(&openai::content_chunk("Hello"))
            .write(": keep-alive\n\n")
            .event(&openai::finish_chunk("stop"))
            .event("[DONE]"),
    );
    let provider =
        OpenAiProvider::new(OpenAiConfig { base_url: server.base_url(), ..OpenAiConfig::default() }).expect("valid");
    let (tx, _rx) = mpsc::unbounded_channel();
    let request = ChatRequest::new(vec![ChatMessage::user("hi")]);
    let c = provider.stream(&request, &tx, &CancellationToken::new()).await.expect("success");
    assert_eq!(c.text, "Hello");
    assert!(c.usage.estimated);
    assert!(c.usage.input_tokens > 0 && c.usage.output_tokens > 0);
    assert_eq!(c.logprobs, None);
    assert!(server.requests()[0].body_json().expect("json").get("logprobs").is_none());
}

#[test]
fn logprobs_are_collected() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let mut state = StreamState::default();
    let chunk = r#"{"choices":[{"index":0,"delta":{"content":"4"},"logprobs":{"content":[
        {"token":"4","logprob":-0.1,"top_logprobs":[{"token":"4","logprob":-0.1},{"token":"5","logprob":-2.5}]}]}}]}"#;
    state.handle(chunk, &tx).expect("valid");
    assert_eq!(state.logprobs.len(), 1);
    assert_eq!(state.logprobs[0].top[1], crate::provider::logprobs::TopLogprob { token: "5".into(), logprob: -2.5 });
}

#[test]
fn redacts_key_from_errors() {
    let config = OpenAiConfig { api_key: Some("sk-abcdef".into()), ..OpenAiConfig::default() };
    let provider = OpenAiProvider::new(config).expect("valid config");
    let error = ProviderError::Http { status: 401, body: "bad key sk-abcdef".into(), retry_after: None };
    assert_eq!(provider.redact_error(error).to_string(), "HTTP 401: bad key <redacted>");
}
