//! OpenAI-compatible Chat Completions over SSE.
//!
//! Works with the OpenAI API and with servers that copy it (vLLM, llama.cpp's
//! server, Ollama, OpenRouter…). One [`OpenAiProvider::stream`] call is one
//! HTTP request: `POST {base_url}/chat/completions` with `stream: true`; the
//! `data:` events carry JSON chunks whose `choices[0].delta.content` is the
//! streamed text, and `data: [DONE]` ends the stream. A stream that ends
//! without `[DONE]` is an error, never a truncated success.
//!
//! Timeouts: `connect_timeout` for the TCP/TLS connection; `first_token_timeout`
//! from sending the request until the first SSE event (comments such as
//! keep-alive pings do not count); `idle_timeout` for silence between bytes
//! after that; `total_timeout` for the whole attempt.

use std::fmt;
use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::sse::SseParser;
use super::{
    ChatMessage, ChatRequest, Completion, DeltaSender, Provider, ProviderError, ProviderInfo,
    TimeoutKind, Usage, estimate_usage,
};

/// Base URL used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Model used when none is configured.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// Longest error body kept in [`ProviderError::Http`], in characters.
const MAX_ERROR_BODY_CHARS: usize = 500;
/// Bytes of an error body read at most.
const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;
/// Longest excerpt of an invalid chunk quoted in a protocol error.
const MAX_EXCERPT_CHARS: usize = 120;

/// Settings of one OpenAI-compatible endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// Configured provider name (shown in headers and session logs).
    pub name: String,
    /// API base, e.g. `http://127.0.0.1:8000/v1`; a trailing slash is fine.
    pub base_url: String,
    /// Bearer token; none sends no `Authorization` header. Never printed.
    pub api_key: Option<String>,
    /// Default model, used when a request names none.
    pub model: String,
    pub connect_timeout: Duration,
    pub first_token_timeout: Duration,
    pub idle_timeout: Duration,
    pub total_timeout: Duration,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            name: "openai".to_owned(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: DEFAULT_MODEL.to_owned(),
            connect_timeout: Duration::from_secs(10),
            first_token_timeout: Duration::from_secs(120),
            idle_timeout: Duration::from_secs(60),
            total_timeout: Duration::from_secs(600),
        }
    }
}

impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("connect_timeout", &self.connect_timeout)
            .field("first_token_timeout", &self.first_token_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("total_timeout", &self.total_timeout)
            .finish()
    }
}

impl OpenAiConfig {
    /// Defaults, with `OPENAI_BASE_URL` and `OPENAI_API_KEY` from the
    /// environment when set and not empty.
    pub fn from_env() -> Self {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Like [`OpenAiConfig::from_env`], reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| {
            lookup(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let mut config = Self::default();
        if let Some(base_url) = non_empty("OPENAI_BASE_URL") {
            config.base_url = base_url;
        }
        config.api_key = non_empty("OPENAI_API_KEY");
        config
    }

    /// The chat completions endpoint under the base URL.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// A [`Provider`] for OpenAI-compatible chat completion APIs.
pub struct OpenAiProvider {
    config: OpenAiConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Check the configuration and build the HTTP client (reused by every call).
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let endpoint = reqwest::Url::parse(&config.endpoint()).map_err(|e| {
            ProviderError::Config(format!("invalid base URL {:?}: {e}", config.base_url))
        })?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(ProviderError::Config(format!(
                "base URL {:?} is not http(s)",
                config.base_url
            )));
        }
        if let Some(key) = &config.api_key
            && reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).is_err()
        {
            return Err(ProviderError::Config(
                "API key contains characters not allowed in a header".into(),
            ));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .user_agent(concat!("moot/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| {
                ProviderError::Config(format!("cannot build HTTP client: {}", error_chain(&e)))
            })?;
        Ok(Self {
            config,
            endpoint,
            client,
        })
    }

    /// The configuration this provider was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// Remove the API key from text that may echo it.
    fn redact(&self, text: String) -> String {
        match &self.config.api_key {
            Some(key) if key.len() >= 4 && text.contains(key.as_str()) => {
                text.replace(key.as_str(), "<redacted>")
            }
            _ => text,
        }
    }

    fn redact_error(&self, error: ProviderError) -> ProviderError {
        match error {
            ProviderError::Http {
                status,
                body,
                retry_after,
            } => ProviderError::Http {
                status,
                body: self.redact(body),
                retry_after,
            },
            ProviderError::Connect(m) => ProviderError::Connect(self.redact(m)),
            ProviderError::Incomplete(m) => ProviderError::Incomplete(self.redact(m)),
            ProviderError::Protocol(m) => ProviderError::Protocol(self.redact(m)),
            ProviderError::Server { message, retryable } => ProviderError::Server {
                message: self.redact(message),
                retryable,
            },
            ProviderError::Config(m) => ProviderError::Config(self.redact(m)),
            other => other,
        }
    }

    async fn attempt(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
    ) -> Result<Completion, ProviderError> {
        let started = Instant::now();
        let total_deadline = started + self.config.total_timeout;
        let first_token_deadline = started + self.config.first_token_timeout;
        let first_token = Deadline::earliest(
            (
                first_token_deadline,
                TimeoutKind::FirstToken,
                self.config.first_token_timeout,
            ),
            (
                total_deadline,
                TimeoutKind::Total,
                self.config.total_timeout,
            ),
        );

        let model = if request.model.is_empty() {
            self.config.model.as_str()
        } else {
            request.model.as_str()
        };
        let body = RequestBody {
            model,
            messages: &request.messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            seed: request.seed,
        };
        let mut builder = self
            .client
            .post(self.endpoint.clone())
            .header(ACCEPT, "text/event-stream")
            .json(&body);
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }

        let response = first_token
            .run(builder.send())
            .await?
            .map_err(|e| self.send_error(&e))?;
        let status = response.status();
        if !status.is_success() {
            let retry_after = parse_retry_after(response.headers(), std::time::SystemTime::now());
            let body = read_error_body(response, first_token).await;
            return Err(ProviderError::Http {
                status: status.as_u16(),
                body,
                retry_after,
            });
        }

        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("application/json"));
        if is_json {
            // The server ignored `stream: true` or answered with an error object.
            let body = read_error_body(response, first_token).await;
            return Err(ProviderError::Protocol(format!(
                "expected an event stream, got JSON: {}",
                excerpt(&body, MAX_EXCERPT_CHARS)
            )));
        }

        let mut bytes = response.bytes_stream();
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        let mut state = StreamState::default();
        loop {
            let deadline = if state.saw_event {
                Deadline::earliest(
                    (
                        Instant::now() + self.config.idle_timeout,
                        TimeoutKind::Idle,
                        self.config.idle_timeout,
                    ),
                    (
                        total_deadline,
                        TimeoutKind::Total,
                        self.config.total_timeout,
                    ),
                )
            } else {
                first_token
            };
            let chunk = match deadline.run(bytes.next()).await? {
                Some(Ok(chunk)) => chunk,
                Some(Err(e)) => {
                    return Err(ProviderError::Incomplete(format!(
                        "stream broke after {} bytes: {}",
                        parser.bytes_seen(),
                        error_chain(&e)
                    )));
                }
                None => {
                    return Err(ProviderError::Incomplete(format!(
                        "connection closed after {} bytes without [DONE]",
                        parser.bytes_seen()
                    )));
                }
            };
            parser.feed_into(&chunk, &mut events);
            for event in events.drain(..) {
                state.saw_event = true;
                if state.handle(&event.data, deltas)? {
                    let usage = match state.usage {
                        Some(usage) => usage,
                        None => estimate_usage(request, &state.text),
                    };
                    return Ok(Completion {
                        text: state.text,
                        usage,
                        finish_reason: state.finish_reason,
                        cached: false,
                    });
                }
            }
        }
    }

    fn send_error(&self, error: &reqwest::Error) -> ProviderError {
        if error.is_connect() && error.is_timeout() {
            ProviderError::Timeout(TimeoutKind::Connect, self.config.connect_timeout)
        } else {
            ProviderError::Connect(error_chain(error))
        }
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            name: self.config.name.clone(),
            kind: "openai".to_owned(),
            model: self.config.model.clone(),
            base_url: Some(self.config.base_url.clone()),
        }
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => Err(ProviderError::Cancelled),
            result = self.attempt(request, deltas) => result.map_err(|e| self.redact_error(e)),
        }
    }
}

/// The JSON body of a streaming chat completion request.
#[derive(Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    stream: bool,
    stream_options: StreamOptions,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One `data:` chunk of the stream; unknown fields are ignored.
#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<ChunkUsage>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

#[derive(Default)]
struct StreamState {
    text: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    saw_event: bool,
}

impl StreamState {
    /// Handle one event's data; `Ok(true)` once the stream is done.
    fn handle(&mut self, data: &str, deltas: &DeltaSender) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            ProviderError::Protocol(format!(
                "chunk is not valid JSON ({e}): {}",
                excerpt(data, MAX_EXCERPT_CHARS)
            ))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(server_error(&error));
        }
        if let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) {
            if let Some(content) = choice.delta.as_ref().and_then(|d| d.content.as_deref())
                && !content.is_empty()
            {
                self.text.push_str(content);
                // A closed receiver only means nobody watches the stream.
                let _ = deltas.send(content.to_owned());
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone());
            }
        }
        if let Some(ChunkUsage {
            prompt_tokens: Some(input),
            completion_tokens: Some(output),
        }) = chunk.usage
        {
            self.usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
                estimated: false,
            });
        }
        Ok(false)
    }
}

/// Turn an in-stream `error` value into a [`ProviderError::Server`].
fn server_error(error: &serde_json::Value) -> ProviderError {
    let field = |name: &str| {
        error
            .get(name)
            .and_then(|v| v.as_str().map(str::to_owned).or_else(|| non_null(v)))
    };
    let message = match error {
        serde_json::Value::String(s) => s.clone(),
        _ => field("message").unwrap_or_else(|| excerpt(&error.to_string(), MAX_EXCERPT_CHARS)),
    };
    let kind = [field("type"), field("code")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let permanent = [
        "invalid_request",
        "authentication",
        "permission",
        "not_found",
        "context_length",
        "invalid_api_key",
    ];
    let retryable = !permanent.iter().any(|p| kind.contains(p));
    let message = if kind.is_empty() {
        message
    } else {
        format!("{message} ({kind})")
    };
    ProviderError::Server {
        message: excerpt(&message, MAX_ERROR_BODY_CHARS),
        retryable,
    }
}

fn non_null(v: &serde_json::Value) -> Option<String> {
    (!v.is_null()).then(|| v.to_string())
}

/// A deadline and what to report when it passes.
#[derive(Clone, Copy)]
struct Deadline {
    at: Instant,
    kind: TimeoutKind,
    after: Duration,
}

impl Deadline {
    fn earliest(a: (Instant, TimeoutKind, Duration), b: (Instant, TimeoutKind, Duration)) -> Self {
        let (at, kind, after) = if b.0 < a.0 { b } else { a };
        Self { at, kind, after }
    }

    async fn run<F: Future>(self, future: F) -> Result<F::Output, ProviderError> {
        tokio::time::timeout_at(self.at, future)
            .await
            .map_err(|_| ProviderError::Timeout(self.kind, self.after))
    }
}

/// Read at most a few KiB of an error body, within the given deadline. A body
/// that breaks or stalls still leaves the status to report, so read errors
/// and the deadline just end the reading.
async fn read_error_body(response: reqwest::Response, deadline: Deadline) -> String {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    let _ = deadline
        .run(async {
            while let Some(Ok(chunk)) = stream.next().await {
                body.extend_from_slice(&chunk);
                if body.len() >= MAX_ERROR_BODY_BYTES {
                    break;
                }
            }
        })
        .await;
    excerpt(String::from_utf8_lossy(&body).trim(), MAX_ERROR_BODY_CHARS)
}

/// `Retry-After` (seconds or an HTTP date) or `retry-after-ms`, as a delay from `now`.
fn parse_retry_after(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    if let Some(ms) = headers.get("retry-after-ms").and_then(|v| v.to_str().ok())
        && let Ok(ms) = ms.trim().parse::<f64>()
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let date = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let now = chrono::DateTime::<chrono::Utc>::from(now);
    Some(
        (date.with_timezone(&chrono::Utc) - now)
            .to_std()
            .unwrap_or(Duration::ZERO),
    )
}

/// At most `max` characters of `text`, with an ellipsis when cut.
fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;
    use tokio::sync::mpsc;

    #[test]
    fn debug_redacts_key() {
        let config = OpenAiConfig {
            api_key: Some("sk-very-secret".into()),
            ..OpenAiConfig::default()
        };
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
        assert_eq!(
            config.endpoint(),
            "http://127.0.0.1:8000/v1/chat/completions"
        );
        assert_eq!(config.api_key.as_deref(), Some("sk-x"));

        let config =
            OpenAiConfig::from_lookup(|name| (name == "OPENAI_API_KEY").then(|| "  ".into()));
        assert_eq!(config.base_url, DEFAULT_BASE_URL);
        assert_eq!(config.api_key, None);
    }

    #[test]
    fn defaults() {
        let c = OpenAiConfig::default();
        assert_eq!(c.connect_timeout, Duration::from_secs(10));
        assert_eq!(c.first_token_timeout, Duration::from_secs(120));
        assert_eq!(c.idle_timeout, Duration::from_secs(60));
        assert_eq!(c.total_timeout, Duration::from_secs(600));
    }

    #[test]
    fn bad_base_url_is_config_error() {
        let config = OpenAiConfig {
            base_url: "not a url".into(),
            ..OpenAiConfig::default()
        };
        assert!(matches!(
            OpenAiProvider::new(config),
            Err(ProviderError::Config(_))
        ));
        let config = OpenAiConfig {
            base_url: "ftp://example.com/v1".into(),
            ..OpenAiConfig::default()
        };
        assert!(matches!(
            OpenAiProvider::new(config),
            Err(ProviderError::Config(_))
        ));
        let config = OpenAiConfig {
            api_key: Some("bad\nkey".into()),
            ..OpenAiConfig::default()
        };
        match OpenAiProvider::new(config) {
            Err(ProviderError::Config(m)) => assert!(!m.contains("bad\nkey")),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn retry_after_seconds_date_and_ms() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let mut headers = HeaderMap::new();
        assert_eq!(parse_retry_after(&headers, now), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(
            parse_retry_after(&headers, now),
            Some(Duration::from_secs(3))
        );
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:47 GMT"),
        );
        assert_eq!(
            parse_retry_after(&headers, now),
            Some(Duration::from_secs(10))
        );
        headers.insert(
            RETRY_AFTER,
            HeaderValue::from_static("Sun, 06 Nov 1994 08:49:00 GMT"),
        );
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&headers, now), None);
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(
            parse_retry_after(&headers, now),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn excerpt_cuts_on_char_boundaries() {
        assert_eq!(excerpt("ééé", 2), "éé…");
        assert_eq!(excerpt("ab", 2), "ab");
    }

    #[test]
    fn chunk_handling() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut state = StreamState::default();
        assert!(
            !state
                .handle(
                    r#"{"choices":[{"index":0,"delta":{"role":"assistant"}}],"usage":null}"#,
                    &tx
                )
                .unwrap()
        );
        assert!(
            !state
                .handle(
                    r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
                    &tx
                )
                .unwrap()
        );
        assert!(
            !state
                .handle(
                    r#"{"choices":[{"index":1,"delta":{"content":"other"}}]}"#,
                    &tx
                )
                .unwrap()
        );
        assert!(
            !state
                .handle(
                    r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#,
                    &tx
                )
                .unwrap()
        );
        assert!(
            !state
                .handle(
                    r#"{"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":1}}"#,
                    &tx
                )
                .unwrap()
        );
        assert!(state.handle("[DONE]", &tx).unwrap());
        assert_eq!(state.text, "Hi");
        assert_eq!(rx.try_recv().ok().as_deref(), Some("Hi"));
        assert!(rx.try_recv().is_err());
        assert_eq!(state.finish_reason.as_deref(), Some("length"));
        assert_eq!(
            state.usage,
            Some(Usage {
                input_tokens: 9,
                output_tokens: 1,
                estimated: false
            })
        );
    }

    #[test]
    fn chunk_errors() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut state = StreamState::default();
        match state.handle(r#"{"choices": [oops"#, &tx) {
            Err(ProviderError::Protocol(m)) => assert!(m.contains("oops"), "{m}"),
            other => panic!("unexpected {other:?}"),
        }
        match state.handle(
            r#"{"error":{"message":"overloaded","type":"server_error"}}"#,
            &tx,
        ) {
            Err(ProviderError::Server { message, retryable }) => {
                assert!(message.contains("overloaded"));
                assert!(retryable);
            }
            other => panic!("unexpected {other:?}"),
        }
        match state.handle(
            r#"{"error":{"message":"too long","code":"context_length_exceeded"}}"#,
            &tx,
        ) {
            Err(ProviderError::Server { retryable, .. }) => assert!(!retryable),
            other => panic!("unexpected {other:?}"),
        }
        match state.handle(r#"{"error":"plain"}"#, &tx) {
            Err(ProviderError::Server { message, .. }) => assert_eq!(message, "plain"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn redacts_key_from_errors() {
        let config = OpenAiConfig {
            api_key: Some("sk-abcdef".into()),
            ..OpenAiConfig::default()
        };
        let provider = OpenAiProvider::new(config).expect("valid config");
        let error = ProviderError::Http {
            status: 401,
            body: "bad key sk-abcdef".into(),
            retry_after: None,
        };
        assert_eq!(
            provider.redact_error(error).to_string(),
            "HTTP 401: bad key <redacted>"
        );
    }
}
