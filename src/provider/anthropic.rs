//! Anthropic Messages API over SSE.
//!
//! One [`AnthropicProvider::stream`] call is one HTTP request:
//! `POST {base_url}/v1/messages` with `stream: true`, the API key in
//! `x-api-key` and the API version in `anthropic-version`. System messages
//! go to the top-level `system` field; the others become alternating
//! `user`/`assistant` messages (consecutive messages of one role are joined).
//! `max_tokens` is always sent.
//!
//! The stream is a sequence of named events: `message_start` (input token
//! count), `content_block_start`, `content_block_delta` (`text_delta` carries
//! the text), `content_block_stop`, `message_delta` (stop reason and output
//! token count), `message_stop` (the end), `ping` (ignored) and `error`. An
//! `error` event ends the attempt with [`ProviderError::Server`]; overload,
//! rate-limit and internal errors are retryable, request errors are not. A
//! stream that ends without `message_stop` is an error.
//!
//! Timeouts and error handling are those of the OpenAI-compatible provider
//! (see [`super::http`]); seeds are not sent, as the API accepts none.

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::value::RawValue;

use super::structured::{self, SpeechSplitter, StructuredOutput, speech_schema};
use std::fmt;

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::http::{self, Flow, MAX_ERROR_BODY_CHARS, MAX_EXCERPT_CHARS, Redactor, Timeouts, excerpt};
use super::sse::SseEvent;
use super::{
    ChatRequest, ChatRole, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, Usage, estimate_usage,
};

/// Base URL used when none is configured (`ANTHROPIC_BASE_URL` overrides it).
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Model used when none is configured.
pub const DEFAULT_MODEL: &str = "claude-3-5-haiku-latest";
/// The `anthropic-version` header sent with every request.
pub const API_VERSION: &str = "2023-06-01";

/// The context window of Claude models (200,000 tokens for every current
/// model); a configured `context_length` replaces it.
pub const CONTEXT_WINDOW: u64 = 200_000;

/// Settings of one Anthropic Messages API endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// Configured provider name (shown in headers and session logs).
    pub name: String,
    /// API base, e.g. `https://api.anthropic.com` (a trailing `/v1` is fine).
    pub base_url: String,
    /// Sent as `x-api-key`; none sends no key (for proxies that add it). Never printed.
    pub api_key: Option<String>,
    /// Default model, used when a request names none.
    pub model: String,
    pub timeouts: Timeouts,
    /// `auto` or `tool`: a request with a verdict schema forces a tool call
    /// whose input is the verdict; `off`: no structured output.
    pub structured_output: StructuredOutput,
}

impl Default for AnthropicConfig {
    fn default() -> Self {
        Self {
            name: "anthropic".to_owned(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: DEFAULT_MODEL.to_owned(),
            timeouts: Timeouts::default(),
            structured_output: StructuredOutput::Auto,
        }
    }
}

impl fmt::Debug for AnthropicConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicConfig")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeouts", &self.timeouts)
            .finish()
    }
}

impl AnthropicConfig {
    /// Defaults, with `ANTHROPIC_BASE_URL` and `ANTHROPIC_API_KEY` read through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |name: &str| http::env_setting(lookup(name));
        let mut config = Self::default();
        if let Some(base_url) = non_empty("ANTHROPIC_BASE_URL") {
            config.base_url = base_url;
        }
        config.api_key = non_empty("ANTHROPIC_API_KEY");
        config
    }

    /// The messages endpoint under the base URL.
    pub fn endpoint(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/v1") { format!("{base}/messages") } else { format!("{base}/v1/messages") }
    }
}

/// A [`Provider`] for the Anthropic Messages API.
pub struct AnthropicProvider {
    config: AnthropicConfig,
    endpoint: reqwest::Url,
    client: reqwest::Client,
    redactor: Redactor,
    /// With `auto`: the server refused the forced tool call once; requests go without it.
    no_tool: AtomicBool,
}

/// The name of the tool whose input is a verdict.
const VERDICT_TOOL: &str = "verdict";

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// Check the configuration and build the HTTP client (reused by every call).
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let endpoint = http::parse_endpoint(&config.endpoint(), &config.base_url)?;
        if let Some(key) = &config.api_key {
            http::check_header_value(key)?;
        }
        let client = http::build_client(&config.timeouts)?;
        let redactor = Redactor::new(config.api_key.as_deref());
        Ok(Self { config, endpoint, client, redactor, no_tool: AtomicBool::new(false) })
    }

    /// The structured-output form requests use now: `tool` or `off`.
    pub fn structured_form(&self) -> StructuredOutput {
        match self.config.structured_output {
            StructuredOutput::Off => StructuredOutput::Off,
            _ if self.no_tool.load(Ordering::Relaxed) => StructuredOutput::Off,
            _ => StructuredOutput::Tool,
        }
    }

    /// The configuration this provider was built with.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }

    /// One request; with `auto`, once more without the tool when the server
    /// refuses it (a 400 or 422 naming tools), remembered for later calls.
    async fn attempt(&self, request: &ChatRequest, deltas: &DeltaSender) -> Result<Completion, ProviderError> {
        let with_tool = self.structured_form() == StructuredOutput::Tool;
        match self.send(request, deltas, with_tool).await {
            Err(ProviderError::Http { status: 400 | 422, body, .. })
                if with_tool
                    && request.response_schema.is_some()
                    && self.config.structured_output == StructuredOutput::Auto
                    && body.to_ascii_lowercase().contains("tool") =>
            {
                tracing::warn!("{}: the server refused a forced tool call; sending verdicts as text", self.config.name);
                self.no_tool.store(true, Ordering::Relaxed);
                self.send(request, deltas, false).await
            }
            other => other,
        }
    }

    async fn send(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        with_tool: bool,
    ) -> Result<Completion, ProviderError> {
        let (body, structured) = self.body(request, with_tool)?;
        let mut builder = self.client.post(self.endpoint.clone()).header("anthropic-version", API_VERSION).json(&body);
        if let Some(key) = &self.config.api_key {
            builder = builder.header("x-api-key", key);
        }
        let mut state = StreamState { splitter: structured.then(SpeechSplitter::new), ..StreamState::default() };
        http::stream_sse(builder, &self.config.timeouts, "message_stop", |event| state.handle(&event, deltas)).await?;
        state.finish(deltas);
        let usage = match (state.input_tokens, state.output_tokens) {
            // Anthropic counts cached prompt tokens apart; moot's input counts the whole prompt.
            (Some(input), Some(output)) => Usage {
                input_tokens: input + state.cache_read.unwrap_or(0) + state.cache_write.unwrap_or(0),
                output_tokens: output,
                cached_input_tokens: state.cache_read,
                ..Usage::default()
            },
            _ => estimate_usage(request, &state.text),
        };
        Ok(Completion { text: state.text, usage, finish_reason: state.stop_reason, ..Completion::default() })
    }

    /// A request as a batch request's `params` (`stream: false`), with the
    /// verdict tool when requests use it now, and whether it asks for a
    /// structured reply (the tool's input then goes through a [`SpeechSplitter`]).
    pub(crate) fn batch_params(&self, request: &ChatRequest) -> Result<(String, bool), ProviderError> {
        let (mut body, structured) = self.body(request, self.structured_form() == StructuredOutput::Tool)?;
        body.stream = false;
        let json = serde_json::to_string(&body).map_err(|e| ProviderError::Config(format!("request body: {e}")))?;
        Ok((json, structured))
    }

    /// The body of a streaming request, with the verdict tool when
    /// `with_tool`, and whether it asks for a structured reply.
    fn body<'a>(&'a self, request: &'a ChatRequest, with_tool: bool) -> Result<(RequestBody<'a>, bool), ProviderError> {
        let model = if request.model.is_empty() { self.config.model.as_str() } else { request.model.as_str() };
        let mut body = request_body(model, request)?;
        let schema = if with_tool {
            request.response_schema.as_ref().and_then(|s| speech_schema(s, request.max_tokens, request.prose_first))
        } else {
            None
        };
        if let Some(s) = &schema {
            let what = if request.prose_first { "what you say, then your verdict" } else { "your verdict" };
            let tools = format!(
                "[{{\"name\":\"{VERDICT_TOOL}\",\"description\":\"Your reply: {what}.\",\"input_schema\":{s}}}]"
            );
            body.tools = Some(RawValue::from_string(tools).map_err(|e| ProviderError::Config(format!("tools: {e}")))?);
            body.tool_choice = Some(ToolChoice { kind: "tool", name: VERDICT_TOOL });
            if let Some(last) = body.messages.last_mut() {
                last.content.push_str("\n\n");
                last.content.push_str(&structured::instruction(s, false, request.prose_first));
            }
        }
        Ok((body, schema.is_some()))
    }
}

#[async_trait::async_trait]
impl Provider for AnthropicProvider {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            name: self.config.name.clone(),
            kind: "anthropic".to_owned(),
            model: self.config.model.clone(),
            base_url: Some(self.config.base_url.clone()),
        }
    }

    fn structured_output(&self) -> Option<String> {
        Some(self.structured_form().as_str().to_string())
    }

    /// Every Claude model holds [`CONTEXT_WINDOW`] tokens or more.
    fn context_window(&self, _model: &str) -> Option<u64> {
        Some(CONTEXT_WINDOW)
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
            result = self.attempt(request, deltas) => result.map_err(|e| self.redactor.error(e)),
        }
    }
}

/// The JSON body of a streaming Messages request.
#[derive(Debug, Serialize)]
struct RequestBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<WireMessage>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    /// Kept as written: the schema's property order is the tool input's field order.
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<Box<RawValue>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
}

#[derive(Debug, Serialize, PartialEq)]
struct ToolChoice {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
}

#[derive(Debug, Serialize, PartialEq)]
struct WireMessage {
    role: &'static str,
    content: String,
}

/// Split a chat into the `system` field and alternating messages.
fn request_body<'a>(model: &'a str, request: &ChatRequest) -> Result<RequestBody<'a>, ProviderError> {
    let is_system = |m: &&super::ChatMessage| m.role == ChatRole::System;
    let system: Vec<&str> = request.messages.iter().filter(is_system).map(|m| m.content.as_str()).collect();
    let messages: Vec<WireMessage> = super::alternating(request.messages.iter().filter(|m| !is_system(m)))
        .into_iter()
        .map(|m| WireMessage { role: if m.role == ChatRole::User { "user" } else { "assistant" }, content: m.content })
        .collect();
    if messages.first().is_none_or(|m| m.role != "user") {
        return Err(ProviderError::Config("an Anthropic request needs a user message before any other".into()));
    }
    // The API accepts temperatures in 0..=1 only.
    let temperature = request.temperature.map(|t| t.clamp(0.0, 1.0));
    // Recent models refuse a request that sets both: with a temperature the
    // nucleus is left to the API's default (at temperature 0 it changes
    // nothing anyway).
    let top_p = request.top_p.filter(|_| temperature.is_none());
    Ok(RequestBody {
        model,
        max_tokens: request.max_tokens,
        system: (!system.is_empty()).then(|| system.join("\n\n")),
        messages,
        stream: true,
        temperature,
        top_p,
        tools: None,
        tool_choice: None,
    })
}

/// One event's data; unknown fields and event types are ignored.
#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type")]
    kind: Option<String>,
    message: Option<WireStartMessage>,
    delta: Option<WireDelta>,
    usage: Option<WireUsage>,
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireStartMessage {
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    /// A piece of a tool call's input (`input_json_delta`).
    partial_json: Option<String>,
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    /// Prompt tokens read from the prompt cache, and written to it: not in `input_tokens`.
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Default)]
struct StreamState {
    text: String,
    stop_reason: Option<String>,
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read: Option<u64>,
    cache_write: Option<u64>,
    /// For a forced verdict tool call: turns its input JSON into the speech, then the verdict.
    splitter: Option<SpeechSplitter>,
}

impl StreamState {
    fn pass_on(&mut self, text: String, deltas: &DeltaSender) {
        if !text.is_empty() {
            self.text.push_str(&text);
            // A closed receiver only means nobody watches the stream.
            let _ = deltas.send(text);
        }
    }

    /// The end of the stream: what the splitter kept back.
    fn finish(&mut self, deltas: &DeltaSender) {
        if let Some(s) = self.splitter.take() {
            self.pass_on(s.finish(), deltas);
        }
    }

    fn handle(&mut self, event: &SseEvent, deltas: &DeltaSender) -> Result<Flow, ProviderError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(if event.event.as_deref() == Some("message_stop") { Flow::Done } else { Flow::Continue });
        }
        let wire: WireEvent = serde_json::from_str(data).map_err(|e| {
            ProviderError::Protocol(format!("event is not valid JSON ({e}): {}", excerpt(data, MAX_EXCERPT_CHARS)))
        })?;
        let kind = wire.kind.as_deref().or(event.event.as_deref()).unwrap_or_default();
        match kind {
            "message_start" => {
                if let Some(usage) = wire.message.and_then(|m| m.usage) {
                    self.input_tokens = usage.input_tokens.or(self.input_tokens);
                    self.output_tokens = usage.output_tokens.or(self.output_tokens);
                    self.cache_read = usage.cache_read_input_tokens.or(self.cache_read);
                    self.cache_write = usage.cache_creation_input_tokens.or(self.cache_write);
                }
            }
            "content_block_delta" => match wire.delta {
                Some(WireDelta { kind, text: Some(text), .. }) if kind.as_deref().is_none_or(|k| k == "text_delta") => {
                    self.pass_on(text, deltas);
                }
                // The input of the verdict tool call; no other tool was offered.
                Some(WireDelta { kind: Some(k), partial_json: Some(json), .. }) if k == "input_json_delta" => {
                    if let Some(s) = self.splitter.as_mut() {
                        let text = s.push(&json);
                        self.pass_on(text, deltas);
                    }
                }
                _ => {}
            },
            "message_delta" => {
                if let Some(reason) = wire.delta.and_then(|d| d.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = wire.usage {
                    self.output_tokens = usage.output_tokens.or(self.output_tokens);
                    self.input_tokens = usage.input_tokens.or(self.input_tokens);
                }
            }
            "message_stop" => return Ok(Flow::Done),
            "error" => return Err(server_error(wire.error.as_ref().unwrap_or(&serde_json::Value::Null))),
            // ping, content_block_start/stop and future event types.
            _ => {}
        }
        Ok(Flow::Continue)
    }
}

/// Turn an `error` event into a [`ProviderError::Server`].
fn server_error(error: &serde_json::Value) -> ProviderError {
    let kind = error.get("type").and_then(|v| v.as_str()).unwrap_or("error").to_owned();
    let message = error.get("message").and_then(|v| v.as_str()).map(str::to_owned).unwrap_or_else(|| {
        if error.is_null() {
            "error event without details".to_owned()
        } else {
            excerpt(&error.to_string(), MAX_EXCERPT_CHARS)
        }
    });
    let permanent = ["invalid_request", "authentication", "permission", "not_found", "request_too_large", "billing"];
    let retryable = !permanent.iter().any(|p| kind.contains(p));
    ProviderError::Server { message: excerpt(&format!("{message} ({kind})"), MAX_ERROR_BODY_CHARS), retryable }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ChatMessage;
    use tokio::sync::mpsc;

    fn ev(name: &str, data: &str) -> SseEvent {
        SseEvent { event: Some(name.into()), data: data.into(), id: None }
    }

    #[test]
    fn endpoint_accepts_base_with_or_without_v1() {
        let c = AnthropicConfig { base_url: "http://127.0.0.1:9/".into(), ..AnthropicConfig::default() };
        assert_eq!(c.endpoint(), "http://127.0.0.1:9/v1/messages");
        let c = AnthropicConfig { base_url: "http://proxy/anthropic/v1".into(), ..AnthropicConfig::default() };
        assert_eq!(c.endpoint(), "http://proxy/anthropic/v1/messages");
    }

    #[test]
    fn debug_redacts_key() {
        let config = AnthropicConfig { api_key: Some("sk-ant-secret".into()), ..AnthropicConfig::default() };
        assert!(!format!("{config:?}").contains("sk-ant-secret"));
        let provider = AnthropicProvider::new(config).expect("valid config");
        assert!(!format!("{provider:?}").contains("sk-ant-secret"));
    }

    #[test]
    fn system_goes_to_the_top_and_roles_alternate() {
        let mut request = ChatRequest::new(vec![
            ChatMessage::system("Be fair."),
            ChatMessage::user("one"),
            ChatMessage::user("two"),
            ChatMessage::assistant("reply"),
            ChatMessage::user("three"),
        ]);
        request.temperature = Some(1.4);
        let body = request_body("m", &request).expect("valid");
        assert_eq!(body.system.as_deref(), Some("Be fair."));
        let roles: Vec<_> = body.messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(body.messages[0].content, "one\n\ntwo");
        assert_eq!(body.temperature, Some(1.0));
        assert_eq!(body.max_tokens, 1024);

        let only_system = ChatRequest::new(vec![ChatMessage::system("x")]);
        assert!(matches!(request_body("m", &only_system), Err(ProviderError::Config(_))));
    }

    #[test]
    fn events_build_text_and_usage() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut s = StreamState::default();
        let start = r#"{"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,"output_tokens":1}}}"#;
        assert_eq!(s.handle(&ev("message_start", start), &tx).unwrap(), Flow::Continue);
        assert_eq!(s.handle(&ev("ping", r#"{"type": "ping"}"#), &tx).unwrap(), Flow::Continue);
        let delta = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
        s.handle(&ev("content_block_delta", delta), &tx).unwrap();
        let json_delta =
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}"#;
        s.handle(&ev("content_block_delta", json_delta), &tx).unwrap();
        let md = r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#;
        s.handle(&ev("message_delta", md), &tx).unwrap();
        assert_eq!(s.handle(&ev("message_stop", r#"{"type":"message_stop"}"#), &tx).unwrap(), Flow::Done);
        assert_eq!(s.text, "Hi");
        assert_eq!(rx.try_recv().ok().as_deref(), Some("Hi"));
        assert!(rx.try_recv().is_err());
        assert_eq!((s.input_tokens, s.output_tokens), (Some(12), Some(7)));
        assert_eq!(s.stop_reason.as_deref(), Some("end_turn"));
    }

    #[test]
    fn cache_reads_are_recorded() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut s = StreamState::default();
        let start = r#"{"type":"message_start","message":{"usage":{"input_tokens":20,"output_tokens":1,"cache_read_input_tokens":1800,"cache_creation_input_tokens":0}}}"#;
        s.handle(&ev("message_start", start), &tx).unwrap();
        assert_eq!((s.input_tokens, s.cache_read, s.cache_write), (Some(20), Some(1800), Some(0)));
    }

    #[test]
    fn error_events() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut s = StreamState::default();
        let overloaded = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        match s.handle(&ev("error", overloaded), &tx) {
            Err(e @ ProviderError::Server { retryable: true, .. }) => {
                assert!(e.is_rate_limit());
                assert!(e.to_string().contains("Overloaded (overloaded_error)"), "{e}");
            }
            other => panic!("unexpected {other:?}"),
        }
        let invalid = r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}"#;
        assert!(matches!(s.handle(&ev("error", invalid), &tx), Err(ProviderError::Server { retryable: false, .. })));
        assert!(matches!(s.handle(&ev("x", "{oops"), &tx), Err(ProviderError::Protocol(_))));
    }
}
