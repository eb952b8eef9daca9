//! OpenAI-compatible Chat Completions over SSE.
//!
//! Works with the OpenAI API and with servers that copy it (vLLM, llama.cpp's
//! server, Ollama, OpenRouter…). One [`OpenAiProvider::stream`] call is one
//! HTTP request: `POST {base_url}/chat/completions` with `stream: true`; the
//! `data:` events carry JSON chunks whose `choices[0].delta.content` is the
//! streamed text, and `data: [DONE]` ends the stream. A stream that ends
//! without `[DONE]` is an error, never a truncated success.
//!
//! Timeouts ([`Timeouts`]): `connect` for the TCP/TLS connection;
//! `first_token` from sending the request until the first SSE event (comments
//! such as keep-alive pings do not count); `idle` for silence between bytes
//! after that; `total` for the whole attempt.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::http::{self, Flow, MAX_ERROR_BODY_CHARS, MAX_EXCERPT_CHARS, Redactor, Timeouts, excerpt};
use super::llamacpp::{self, Lean};
use super::logprobs::{ChoiceLogprobs, TokenLogprob};
use super::structured::{self, SpeechSplitter, StructuredOutput, speech_schema};
use super::{
    ChatMessage, ChatRequest, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, Usage, estimate_usage,
};

/// Base URL used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Model used when none is configured.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

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
    pub timeouts: Timeouts,
    /// Ask for this many alternatives per token (`logprobs`/`top_logprobs`);
    /// none asks for no log-probabilities.
    pub top_logprobs: Option<u8>,
    /// How a request with a verdict schema asks for structured output.
    pub structured_output: StructuredOutput,
}

impl Default for OpenAiConfig {
    fn default() -> Self {
        Self {
            name: "openai".to_owned(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            api_key: None,
            model: DEFAULT_MODEL.to_owned(),
            timeouts: Timeouts::default(),
            top_logprobs: None,
            structured_output: StructuredOutput::Auto,
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
            .field("timeouts", &self.timeouts)
            .field("top_logprobs", &self.top_logprobs)
            .field("structured_output", &self.structured_output)
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
        let non_empty = |name: &str| lookup(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
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
    redactor: Redactor,
    /// The server refused `stream_options` once (older servers that do not
    /// know the field): requests leave it out and usage is estimated when
    /// the stream carries none.
    no_stream_options: AtomicBool,
    /// The structured-output form requests use now: with `auto`, the first
    /// the server has not refused (see [`Form`]).
    form: AtomicU8,
    /// The server's stream carried llama.cpp's `timings`: with `auto`
    /// structured output, requests go in the lean form ([`llamacpp`]).
    llama_cpp: AtomicBool,
    /// The server refused the lean form once: requests go as to any server.
    lean_refused: AtomicBool,
}

/// The structured-output forms an OpenAI-compatible server may be sent, in
/// the order `auto` tries them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// `response_format: {"type": "json_schema", …}`.
    JsonSchema = 0,
    /// `response_format: {"type": "json_object"}`, the schema in the prompt.
    JsonObject = 1,
    /// No structured output: the reply is prose and a JSON object, read leniently.
    Off = 2,
}

impl Form {
    fn from_u8(v: u8) -> Self {
        match v {
            0 => Form::JsonSchema,
            1 => Form::JsonObject,
            _ => Form::Off,
        }
    }
    fn of(setting: StructuredOutput) -> Self {
        match setting {
            StructuredOutput::Auto | StructuredOutput::JsonSchema => Form::JsonSchema,
            StructuredOutput::JsonObject => Form::JsonObject,
            StructuredOutput::Tool | StructuredOutput::Off => Form::Off,
        }
    }
    fn name(self) -> StructuredOutput {
        match self {
            Form::JsonSchema => StructuredOutput::JsonSchema,
            Form::JsonObject => StructuredOutput::JsonObject,
            Form::Off => StructuredOutput::Off,
        }
    }
    /// The next form `auto` tries after a refusal of this one.
    fn fallback(self) -> Option<Self> {
        match self {
            Form::JsonSchema => Some(Form::JsonObject),
            Form::JsonObject => Some(Form::Off),
            Form::Off => None,
        }
    }
}

/// Whether an error answer refuses the structured-output request: a 400,
/// 422 or 500 whose body names the field.
fn refuses_structured_output(error: &ProviderError) -> bool {
    match error {
        ProviderError::Http { status: 400 | 422 | 500, body, .. } => {
            let b = body.to_ascii_lowercase();
            ["response_format", "json_schema", "json_object", "schema", "grammar"].iter().any(|f| b.contains(f))
        }
        _ => false,
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider").field("config", &self.config).finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// Check the configuration and build the HTTP client (reused by every call).
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let endpoint = http::parse_endpoint(&config.endpoint(), &config.base_url)?;
        if let Some(key) = &config.api_key {
            http::check_header_value(&format!("Bearer {key}"))?;
        }
        let redactor = Redactor::new(config.api_key.as_deref());
        let form = AtomicU8::new(Form::of(config.structured_output) as u8);
        let mut provider = Self {
            config,
            endpoint,
            client: reqwest::Client::new(),
            redactor,
            no_stream_options: AtomicBool::new(false),
            form,
            llama_cpp: AtomicBool::new(false),
            lean_refused: AtomicBool::new(false),
        };
        provider.client = http::build_client(&provider.config.timeouts)?;
        Ok(provider)
    }

    /// The configuration this provider was built with.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    fn redact_error(&self, error: ProviderError) -> ProviderError {
        self.redactor.error(error)
    }

    /// The structured-output form requests use now (`off` once `auto` has
    /// fallen back that far, or when set so).
    pub fn structured_form(&self) -> StructuredOutput {
        Form::from_u8(self.form.load(Ordering::Relaxed)).name()
    }

    /// Whether the server has shown itself to be llama.cpp's (its stream
    /// carried `timings`).
    pub fn is_llama_cpp(&self) -> bool {
        self.llama_cpp.load(Ordering::Relaxed)
    }

    /// How `request` goes to a llama.cpp server, when it goes in the lean
    /// form: the server is llama.cpp's, structured output is `auto`, and the
    /// server has not refused the form.
    fn lean(&self, request: &ChatRequest) -> Option<Lean> {
        let on = self.config.structured_output == StructuredOutput::Auto
            && self.llama_cpp.load(Ordering::Relaxed)
            && !self.lean_refused.load(Ordering::Relaxed);
        on.then(|| Lean::of(request)).flatten()
    }

    /// One request. When the server rejects `stream_options` (HTTP 400 or
    /// 422 naming the field), once more without it; when it refuses the
    /// structured-output form and the setting is `auto`, once more with the
    /// next form; when it refuses the lean form, once more as to any
    /// server. Each is remembered for later calls.
    async fn attempt(&self, request: &ChatRequest, deltas: &DeltaSender) -> Result<Completion, ProviderError> {
        loop {
            let with_options = !self.no_stream_options.load(Ordering::Relaxed);
            let form = Form::from_u8(self.form.load(Ordering::Relaxed));
            let lean = self.lean(request);
            let leaned = lean.is_some();
            match self.send(request, deltas, with_options, form, lean).await {
                Err(e) if leaned && llamacpp::refuses(&e) => {
                    tracing::warn!(
                        "{}: the server refused llama.cpp's request fields ({e}); sending OpenAI's from now on",
                        self.config.name
                    );
                    self.lean_refused.store(true, Ordering::Relaxed);
                }
                Err(ProviderError::Http { status: 400 | 422, body, .. })
                    if with_options && body.to_ascii_lowercase().contains("stream_options") =>
                {
                    tracing::warn!(
                        "{}: the server refused stream_options; sending requests without it",
                        self.config.name
                    );
                    self.no_stream_options.store(true, Ordering::Relaxed);
                }
                Err(e)
                    if request.response_schema.is_some()
                        && self.config.structured_output == StructuredOutput::Auto
                        && refuses_structured_output(&e)
                        && let Some(next) = form.fallback() =>
                {
                    tracing::warn!(
                        "{}: the server refused structured output as {} ({e}); using {} from now on",
                        self.config.name,
                        form.name().as_str(),
                        next.name().as_str()
                    );
                    self.form.store(next as u8, Ordering::Relaxed);
                }
                other => return other,
            }
        }
    }

    async fn send(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        with_options: bool,
        form: Form,
        lean: Option<Lean>,
    ) -> Result<Completion, ProviderError> {
        let (body, structured) = self.body(request, form, true, with_options, lean.as_ref())?;
        let mut builder = self
            .client
            .post(self.endpoint.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if self.llama_cpp.load(Ordering::Relaxed) {
            // llama.cpp's server closes the connection after a streamed
            // reply, whatever its Keep-Alive header says: a request sent on
            // it again would fail before it is read (and be retried).
            builder = builder.header(reqwest::header::CONNECTION, "close");
        }
        if let Some(key) = &self.config.api_key {
            builder = builder.bearer_auth(key);
        }
        let mut state = StreamState {
            splitter: structured.then(SpeechSplitter::new),
            opening: lean.as_ref().and_then(|l| l.opening.clone()),
            ..StreamState::default()
        };
        let streamed = http::stream_sse(builder, &self.config.timeouts, "[DONE]", |event| {
            Ok(if state.handle(&event.data, deltas)? { Flow::Done } else { Flow::Continue })
        })
        .await;
        if state.saw_timings && !self.llama_cpp.swap(true, Ordering::Relaxed) {
            tracing::info!("{}: the server is llama.cpp's; requests go in its lean form", self.config.name);
        }
        streamed?;
        state.finish(deltas);
        let usage = match state.usage {
            Some(usage) => usage,
            None => estimate_usage(request, &state.text),
        };
        let logprobs = (!state.logprobs.is_empty()).then_some(state.logprobs);
        Ok(Completion {
            text: state.text,
            usage,
            finish_reason: state.finish_reason,
            logprobs,
            ..Completion::default()
        })
    }

    /// A request as a batch line's body (`stream: false`), in the
    /// structured-output form requests use now, and whether it asks for a
    /// structured reply (whose JSON then goes through a [`SpeechSplitter`]).
    pub(crate) fn batch_body(&self, request: &ChatRequest) -> Result<(String, bool), ProviderError> {
        // A batch goes to OpenAI's API (or a copy of it), never in llama.cpp's lean form.
        self.body(request, Form::from_u8(self.form.load(Ordering::Relaxed)), false, false, None)
    }

    /// The JSON body of a request in structured-output form `form` (or
    /// llama.cpp's lean form), and whether it asks for a structured reply.
    fn body(
        &self,
        request: &ChatRequest,
        form: Form,
        stream: bool,
        with_options: bool,
        lean: Option<&Lean>,
    ) -> Result<(String, bool), ProviderError> {
        let model = if request.model.is_empty() { self.config.model.as_str() } else { request.model.as_str() };
        let mut messages = super::alternating(&request.messages);
        if let Some(lean) = lean {
            messages = lean.messages(messages);
        }
        // The verdict's schema, with the speech as its first field (a lean
        // request has its grammar instead).
        let schema = match form {
            Form::Off => None,
            _ if lean.is_some() => None,
            _ => {
                request.response_schema.as_ref().and_then(|s| speech_schema(s, request.max_tokens, request.prose_first))
            }
        };
        let response_format = match (&schema, form) {
            (Some(s), Form::JsonSchema) => {
                Some(format!("{{\"type\":\"json_schema\",\"json_schema\":{{\"name\":\"verdict\",\"schema\":{s}}}}}"))
            }
            (Some(_), Form::JsonObject) => Some("{\"type\":\"json_object\"}".to_string()),
            _ => None,
        };
        let response_format = response_format
            .map(|f| RawValue::from_string(f).map_err(|e| ProviderError::Config(format!("response_format: {e}"))))
            .transpose()?;
        if let (Some(s), Some(last)) = (&schema, messages.last_mut()) {
            last.content.push_str("\n\n");
            last.content.push_str(&structured::instruction(s, form == Form::JsonObject, request.prose_first));
        }
        let body = RequestBody {
            model,
            messages: &messages,
            stream,
            stream_options: (stream && with_options).then_some(StreamOptions { include_usage: true }),
            max_tokens: request.max_tokens,
            temperature: request.temperature,
            top_p: request.top_p,
            seed: request.seed,
            logprobs: self.config.top_logprobs.or(request.top_logprobs).map(|_| true),
            top_logprobs: self.config.top_logprobs.or(request.top_logprobs),
            response_format,
            llama_cpp: lean.map(|l| l.extras.clone()),
        };
        let json = serde_json::to_string(&body).map_err(|e| ProviderError::Config(format!("request body: {e}")))?;
        Ok((json, schema.is_some()))
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    fn structured_output(&self) -> Option<StructuredOutput> {
        Some(self.structured_form())
    }

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
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_logprobs: Option<u8>,
    /// Kept as written: the schema's property order is the reply's field order.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Box<RawValue>>,
    /// llama.cpp's own fields, for its server (see [`llamacpp`]).
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    llama_cpp: Option<llamacpp::Extras>,
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
    /// llama.cpp's server: how the prompt was read (`cache_n` tokens from its slot's cache).
    timings: Option<Timings>,
}

#[derive(Deserialize)]
struct Timings {
    cache_n: Option<u64>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    delta: Option<Delta>,
    finish_reason: Option<String>,
    logprobs: Option<ChoiceLogprobs>,
}

#[derive(Deserialize)]
struct Delta {
    content: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Default)]
struct StreamState {
    text: String,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    logprobs: Vec<TokenLogprob>,
    /// For a structured reply: turns its JSON into the speech, then the verdict.
    splitter: Option<SpeechSplitter>,
    /// llama.cpp's `timings.cache_n`, when a chunk carried it.
    cache_n: Option<u64>,
    /// A chunk carried `timings`: the server is llama.cpp's.
    saw_timings: bool,
    /// The opening words the server was asked to go on from: the reply's
    /// start. Some versions of llama.cpp's server stream them back, others
    /// only what follows; the text is held back until it shows which.
    opening: Option<String>,
    head: String,
}

impl StreamState {
    /// Pass on streamed text (through the splitter of a structured reply),
    /// after the opening words.
    fn pass_on(&mut self, content: &str, deltas: &DeltaSender) {
        if let Some(opening) = &self.opening {
            self.head.push_str(content);
            if self.head.len() < opening.len() && opening.starts_with(self.head.as_str()) {
                return;
            }
            let head = std::mem::take(&mut self.head);
            let text = if head.starts_with(opening.as_str()) { head } else { format!("{opening}{head}") };
            self.opening = None;
            return self.pass_on(&text, deltas);
        }
        let text = match self.splitter.as_mut() {
            Some(s) => s.push(content),
            None => content.to_owned(),
        };
        if !text.is_empty() {
            self.text.push_str(&text);
            // A closed receiver only means nobody watches the stream.
            let _ = deltas.send(text);
        }
    }

    /// The end of the stream: what the splitter of a structured reply kept
    /// back, or the opening words of a reply that got no further.
    fn finish(&mut self, deltas: &DeltaSender) {
        if let Some(opening) = self.opening.take() {
            self.head.clear();
            self.pass_on(&opening, deltas);
        }
        if let Some(s) = self.splitter.take() {
            let tail = s.finish();
            if !tail.is_empty() {
                self.text.push_str(&tail);
                let _ = deltas.send(tail);
            }
        }
    }

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
            ProviderError::Protocol(format!("chunk is not valid JSON ({e}): {}", excerpt(data, MAX_EXCERPT_CHARS)))
        })?;
        if let Some(error) = chunk.error.filter(|e| !e.is_null()) {
            return Err(server_error(&error));
        }
        if let Some(choice) = chunk.choices.iter().find(|c| c.index == 0) {
            if let Some(content) = choice.delta.as_ref().and_then(|d| d.content.as_deref())
                && !content.is_empty()
            {
                let content = content.to_owned();
                self.pass_on(&content, deltas);
            }
            if let Some(content) = choice.logprobs.as_ref().and_then(|l| l.content.as_ref()) {
                self.logprobs.extend(content.iter().cloned());
            }
            if let Some(reason) = &choice.finish_reason {
                self.finish_reason = Some(reason.clone());
            }
        }
        if let Some(ChunkUsage { prompt_tokens: Some(input), completion_tokens: Some(output), prompt_tokens_details }) =
            chunk.usage
        {
            let cached = prompt_tokens_details.and_then(|d| d.cached_tokens).or(self.cache_n);
            self.usage = Some(Usage {
                input_tokens: input,
                output_tokens: output,
                cached_input_tokens: cached,
                ..Usage::default()
            });
        }
        if let Some(t) = chunk.timings {
            self.saw_timings = true;
            // llama.cpp counts the prompt's tokens taken from its cache apart from those it read.
            self.cache_n = t.cache_n;
            if let Some(u) = self.usage.as_mut().filter(|u| u.cached_input_tokens.is_none()) {
                u.cached_input_tokens = t.cache_n;
            }
        }
        Ok(false)
    }
}

/// Turn an in-stream `error` value into a [`ProviderError::Server`].
fn server_error(error: &serde_json::Value) -> ProviderError {
    let field = |name: &str| error.get(name).and_then(|v| v.as_str().map(str::to_owned).or_else(|| non_null(v)));
    let message = match error {
        serde_json::Value::String(s) => s.clone(),
        _ => field("message").unwrap_or_else(|| excerpt(&error.to_string(), MAX_EXCERPT_CHARS)),
    };
    let kind = [field("type"), field("code")].into_iter().flatten().collect::<Vec<_>>().join(" ").to_lowercase();
    let permanent =
        ["invalid_request", "authentication", "permission", "not_found", "context_length", "invalid_api_key"];
    let retryable = !permanent.iter().any(|p| kind.contains(p));
    let message = if kind.is_empty() { message } else { format!("{message} ({kind})") };
    ProviderError::Server { message: excerpt(&message, MAX_ERROR_BODY_CHARS), retryable }
}

fn non_null(v: &serde_json::Value) -> Option<String> {
    (!v.is_null()).then(|| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(
            !state.handle(r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#, &tx).unwrap()
        );
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
        let provider = OpenAiProvider::new(OpenAiConfig { base_url: server.base_url(), ..OpenAiConfig::default() })
            .expect("valid");
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
        assert_eq!(
            state.logprobs[0].top[1],
            crate::provider::logprobs::TopLogprob { token: "5".into(), logprob: -2.5 }
        );
    }

    #[test]
    fn redacts_key_from_errors() {
        let config = OpenAiConfig { api_key: Some("sk-abcdef".into()), ..OpenAiConfig::default() };
        let provider = OpenAiProvider::new(config).expect("valid config");
        let error = ProviderError::Http { status: 401, body: "bad key sk-abcdef".into(), retry_after: None };
        assert_eq!(provider.redact_error(error).to_string(), "HTTP 401: bad key <redacted>");
    }
}
