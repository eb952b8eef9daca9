//! HTTP plumbing shared by the streaming backends (OpenAI-compatible, Anthropic).
//!
//! [`stream_sse`] sends one request and feeds the server-sent events of a
//! successful answer to a handler, under four timeouts:
//! `connect` for the TCP/TLS connection; `first_token` from sending the
//! request until the first SSE event (comments such as keep-alive pings do
//! not count); `idle` for silence between bytes after that; `total` for the
//! whole attempt. A non-success status becomes [`ProviderError::Http`] with
//! an excerpt of the body and the `Retry-After` delay; a stream that ends
//! before the handler says it is done is [`ProviderError::Incomplete`].

use std::time::Duration;

use futures::StreamExt;
use reqwest::header::{ACCEPT, HeaderMap, RETRY_AFTER};
use tokio::time::Instant;

use super::sse::{SseEvent, SseParser};
use super::{ProviderError, TimeoutKind};

/// Longest error body kept in [`ProviderError::Http`], in characters.
pub const MAX_ERROR_BODY_CHARS: usize = 500;
/// Bytes of an error body read at most.
const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;
/// Longest excerpt of an invalid chunk quoted in a protocol error.
pub const MAX_EXCERPT_CHARS: usize = 120;

/// The four time limits of one streaming attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    pub first_token: Duration,
    pub idle: Duration,
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            first_token: Duration::from_secs(120),
            idle: Duration::from_secs(60),
            total: Duration::from_secs(600),
        }
    }
}

/// What the event handler wants after one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// The stream reached its terminating event.
    Done,
}

/// Build the HTTP client of one backend (reused by every call).
/// How long an idle connection stays in the pool.
pub const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(4);

pub fn build_client(timeouts: &Timeouts) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(timeouts.connect)
        // Below the keep-alive of common servers (uvicorn, behind vLLM and
        // SGLang, and llama.cpp's server close idle connections after 5 s),
        // so that moot seldom sends a request on a connection being closed.
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .user_agent(concat!("moot/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| ProviderError::Config(format!("cannot build HTTP client: {}", error_chain(&e))))
}

/// Parse an endpoint URL built from a configured base URL; only http(s).
pub fn parse_endpoint(endpoint: &str, base_url: &str) -> Result<reqwest::Url, ProviderError> {
    let url = reqwest::Url::parse(endpoint)
        .map_err(|e| ProviderError::Config(format!("invalid base URL {base_url:?}: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ProviderError::Config(format!("base URL {base_url:?} is not http(s)")));
    }
    Ok(url)
}

/// An environment variable's value as a setting: trimmed; none when unset
/// or blank (an empty `OPENAI_BASE_URL=` sets nothing).
pub fn env_setting(value: Option<String>) -> Option<String> {
    value.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// `path` under `base_url`, which is taken as a folder (`models` under
/// `http://h/v1` is `http://h/v1/models`; `../props` is `http://h/props`).
pub fn url_under(base_url: &str, path: &str) -> Result<reqwest::Url, UrlError> {
    let base = reqwest::Url::parse(&format!("{}/", base_url.trim().trim_end_matches('/')))
        .map_err(|e| UrlError::Base(e.to_string()))?;
    base.join(path).map_err(|e| UrlError::Path(e.to_string()))
}

/// Which part of [`url_under`]'s URL did not parse.
#[derive(Debug)]
pub enum UrlError {
    Base(String),
    Path(String),
}

/// Check that a secret can be sent in a header without echoing it.
pub fn check_header_value(value: &str) -> Result<(), ProviderError> {
    reqwest::header::HeaderValue::from_str(value)
        .map(|_| ())
        .map_err(|_| ProviderError::Config("API key contains characters not allowed in a header".into()))
}

/// Removes a secret from error text that may echo it.
#[derive(Clone, Default)]
pub struct Redactor {
    secret: Option<String>,
}

impl Redactor {
    pub fn new(secret: Option<&str>) -> Self {
        Self { secret: secret.filter(|s| s.len() >= 4).map(str::to_owned) }
    }

    /// `text` with every occurrence of the secret replaced.
    pub fn text(&self, text: String) -> String {
        match &self.secret {
            Some(key) if text.contains(key.as_str()) => text.replace(key.as_str(), "<redacted>"),
            _ => text,
        }
    }

    /// `error` with the secret removed from every message it carries.
    pub fn error(&self, error: ProviderError) -> ProviderError {
        match error {
            ProviderError::Http { status, body, retry_after } => {
                ProviderError::Http { status, body: self.text(body), retry_after }
            }
            ProviderError::Connect(m) => ProviderError::Connect(self.text(m)),
            ProviderError::Incomplete(m) => ProviderError::Incomplete(self.text(m)),
            ProviderError::Protocol(m) => ProviderError::Protocol(self.text(m)),
            ProviderError::Server { message, retryable } => {
                ProviderError::Server { message: self.text(message), retryable }
            }
            ProviderError::Config(m) => ProviderError::Config(self.text(m)),
            other => other,
        }
    }
}

/// Send `builder` (a POST with its body and auth headers set) and hand each
/// SSE event of the answer to `on_event` until it returns [`Flow::Done`].
/// `terminator` names the final event in the error when the stream ends early.
pub async fn stream_sse(
    builder: reqwest::RequestBuilder,
    timeouts: &Timeouts,
    terminator: &str,
    mut on_event: impl FnMut(SseEvent) -> Result<Flow, ProviderError>,
) -> Result<(), ProviderError> {
    let started = Instant::now();
    let total_deadline = started + timeouts.total;
    let first_token = Deadline::earliest(
        (started + timeouts.first_token, TimeoutKind::FirstToken, timeouts.first_token),
        (total_deadline, TimeoutKind::Total, timeouts.total),
    );

    let builder = builder.header(ACCEPT, "text/event-stream");
    let response = first_token.run(builder.send()).await?.map_err(|e| send_error(&e, timeouts))?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = parse_retry_after(response.headers(), std::time::SystemTime::now());
        let body = read_error_body(response, first_token).await;
        return Err(ProviderError::Http { status: status.as_u16(), body, retry_after });
    }
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().starts_with("application/json"));
    if is_json {
        // The server ignored the request to stream, or answered with an error object.
        let body = read_error_body(response, first_token).await;
        return Err(ProviderError::Protocol(format!("expected an event stream, got JSON: {}", excerpt(&body, 120))));
    }

    let mut bytes = response.bytes_stream();
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    let mut saw_event = false;
    loop {
        let deadline = if saw_event {
            Deadline::earliest(
                (Instant::now() + timeouts.idle, TimeoutKind::Idle, timeouts.idle),
                (total_deadline, TimeoutKind::Total, timeouts.total),
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
                    "connection closed after {} bytes without {terminator}",
                    parser.bytes_seen()
                )));
            }
        };
        parser.feed_into(&chunk, &mut events);
        for event in events.drain(..) {
            saw_event = true;
            if on_event(event)? == Flow::Done {
                return Ok(());
            }
        }
    }
}

fn send_error(error: &reqwest::Error, timeouts: &Timeouts) -> ProviderError {
    if error.is_connect() && error.is_timeout() {
        ProviderError::Timeout(TimeoutKind::Connect, timeouts.connect)
    } else {
        ProviderError::Connect(error_chain(error))
    }
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
        tokio::time::timeout_at(self.at, future).await.map_err(|_| ProviderError::Timeout(self.kind, self.after))
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
pub fn parse_retry_after(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
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
    Some((date.with_timezone(&chrono::Utc) - now).to_std().unwrap_or(Duration::ZERO))
}

/// At most `max` characters of `text`, with an ellipsis when cut.
pub fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An error and its sources, joined with `: `.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
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

    #[test]
    fn retry_after_seconds_date_and_ms() {
        let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        let mut headers = HeaderMap::new();
        assert_eq!(parse_retry_after(&headers, now), None);
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_secs(3)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("Sun, 06 Nov 1994 08:49:47 GMT"));
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_secs(10)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("Sun, 06 Nov 1994 08:49:00 GMT"));
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::ZERO));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("soon"));
        assert_eq!(parse_retry_after(&headers, now), None);
        headers.insert("retry-after-ms", HeaderValue::from_static("250"));
        assert_eq!(parse_retry_after(&headers, now), Some(Duration::from_millis(250)));
    }

    #[test]
    fn excerpt_cuts_on_char_boundaries() {
        assert_eq!(excerpt("ééé", 2), "éé…");
        assert_eq!(excerpt("ab", 2), "ab");
    }

    #[test]
    fn redactor_removes_the_secret() {
        let r = Redactor::new(Some("sk-abcdef"));
        let error = ProviderError::Http { status: 401, body: "bad key sk-abcdef".into(), retry_after: None };
        assert_eq!(r.error(error).to_string(), "HTTP 401: bad key <redacted>");
        // Too short to redact safely: left alone rather than mangling text.
        assert_eq!(Redactor::new(Some("ab")).text("abc".into()), "abc");
    }
}
