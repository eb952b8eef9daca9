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

use serde::Serialize;
use serde_json::value::RawValue;
use tokio_util::sync::CancellationToken;

use super::http::{self, Flow, Redactor, Timeouts};
use super::llamacpp::{self, Lean};
use super::repetition::Repetition;
use super::structured::{self, SpeechSplitter, StructuredOutput, speech_schema};
use super::{ChatMessage, ChatRequest, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, estimate_usage};

/// Base URL used when `OPENAI_BASE_URL` is not set.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Model used when none is configured.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";

/// Settings of one OpenAI-compatible endpoint.
#[derive(Clone, PartialEq)]
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
    /// What a llama.cpp server is asked to sample prose with, in its lean
    /// form (see [`llamacpp`]).
    pub repetition: Repetition,
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
            repetition: Repetition::llama_server(),
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
            .field("repetition", &self.repetition)
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
        let non_empty = |name: &str| http::env_setting(lookup(name));
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
    /// The server refused log-probabilities once (models that do not give
    /// them): requests leave them out, and scores go unweighted.
    no_logprobs: AtomicBool,
    /// The server has been asked whether it is llama.cpp's (`GET /props`,
    /// once, before the first call).
    probed: tokio::sync::OnceCell<()>,
    /// A llama.cpp server's context window per request (its slots'
    /// `n_ctx` in `/props`); 0 while unknown.
    n_ctx: std::sync::atomic::AtomicU64,
}

/// How long the question whether a server is llama.cpp's may take.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

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
            no_logprobs: AtomicBool::new(false),
            probed: tokio::sync::OnceCell::new(),
            n_ctx: std::sync::atomic::AtomicU64::new(0),
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

    /// Whether the server has shown itself to be llama.cpp's (its `/props`
    /// answered as llama.cpp's does, or its stream carried `timings`).
    pub fn is_llama_cpp(&self) -> bool {
        self.llama_cpp.load(Ordering::Relaxed)
    }

    /// Ask the server whether it is llama.cpp's, so that the first calls
    /// already go in its lean form: llama.cpp's server answers `GET /props`
    /// (beside its `/v1`, no key needed) with its settings, among them
    /// `default_generation_settings`; other servers answer 404 or nothing
    /// like it. Any failure leaves the answer to the first stream's
    /// `timings`. Its slots' context window (`n_ctx`) becomes the
    /// provider's. The key is not sent: llama.cpp serves `/props` to all.
    async fn probe(&self) {
        self.probed
            .get_or_init(|| async {
                let Ok(url) = http::url_under(&self.config.base_url, "../props") else { return };
                let answer = match self.client.get(url).timeout(PROBE_TIMEOUT).send().await {
                    Ok(r) if r.status().is_success() => r.bytes().await.ok(),
                    Ok(_) => None,
                    Err(e) => {
                        tracing::debug!("{}: GET /props: {}", self.config.name, self.redactor.text(e.to_string()));
                        None
                    }
                };
                let props = answer.and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
                let Some(settings) = props.as_ref().and_then(|p| p.get("default_generation_settings")) else {
                    return;
                };
                if !settings.is_object() {
                    return;
                }
                if let Some(n) = settings.get("n_ctx").and_then(serde_json::Value::as_u64) {
                    self.n_ctx.store(n, Ordering::Relaxed);
                }
                if !self.llama_cpp.swap(true, Ordering::Relaxed) {
                    tracing::info!(
                        "{}: the server is llama.cpp's (/props); requests go in its lean form",
                        self.config.name
                    );
                }
            })
            .await;
    }

    /// The alternatives per token to ask for: the configuration's, else the
    /// request's, unless the server has refused log-probabilities.
    fn top_logprobs(&self, request: &ChatRequest) -> Option<u8> {
        if self.no_logprobs.load(Ordering::Relaxed) {
            return None;
        }
        self.config.top_logprobs.or(request.top_logprobs)
    }

    /// How `request` goes to a llama.cpp server, when it goes in the lean
    /// form: the server is llama.cpp's, structured output is `auto`, and the
    /// server has not refused the form.
    fn lean(&self, request: &ChatRequest) -> Option<Lean> {
        let on = self.config.structured_output == StructuredOutput::Auto
            && self.llama_cpp.load(Ordering::Relaxed)
            && !self.lean_refused.load(Ordering::Relaxed);
        on.then(|| Lean::of(request, &self.config.repetition)).flatten()
    }

    /// One request. When the server rejects `stream_options` (HTTP 400 or
    /// 422 naming the field), once more without it; when it refuses the
    /// structured-output form and the setting is `auto`, once more with the
    /// next form; when it refuses the lean form, once more as to any
    /// server; when it refuses log-probabilities, once more without them.
    /// Each is remembered for later calls.
    async fn attempt(&self, request: &ChatRequest, deltas: &DeltaSender) -> Result<Completion, ProviderError> {
        self.probe().await;
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
                    if self.top_logprobs(request).is_some() && body.to_ascii_lowercase().contains("logprobs") =>
                {
                    tracing::warn!(
                        "{}: the server refused log-probabilities; sending requests without them from now on \
                         (scores are not weighted)",
                        self.config.name
                    );
                    self.no_logprobs.store(true, Ordering::Relaxed);
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
            logprobs: self.top_logprobs(request).map(|_| true),
            top_logprobs: self.top_logprobs(request),
            response_format,
            llama_cpp: lean.map(|l| l.extras.clone()),
        };
        let json = serde_json::to_string(&body).map_err(|e| ProviderError::Config(format!("request body: {e}")))?;
        Ok((json, schema.is_some()))
    }
}

#[async_trait::async_trait]
impl Provider for OpenAiProvider {
    fn structured_output(&self) -> Option<String> {
        let lean = self.config.structured_output == StructuredOutput::Auto
            && self.is_llama_cpp()
            && !self.lean_refused.load(Ordering::Relaxed);
        Some(if lean {
            "llama.cpp grammar (lean form)".to_string()
        } else {
            self.structured_form().as_str().to_string()
        })
    }

    /// A llama.cpp server's, once its `/props` has said (a configured
    /// `context_length` goes before it).
    fn context_window(&self, _model: &str) -> Option<u64> {
        Some(self.n_ctx.load(Ordering::Relaxed)).filter(|n| *n > 0)
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

mod stream;

use stream::StreamState;

#[cfg(test)]
mod tests;
