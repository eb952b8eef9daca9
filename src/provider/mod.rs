//! LLM backends behind one trait.
//!
//! A [`Provider`] makes **one attempt** at a streaming chat completion: it sends
//! text deltas as they arrive and returns the final [`Completion`] with token
//! usage, or a typed [`ProviderError`]. Retries, backoff and the events that
//! record each attempt live in [`retry`], shared by every backend.

/// The [`Provider`] methods a wrapper passes unchanged to the provider it
/// wraps, written once: `delegate!(inner: info, queue_note, read_ahead,
/// context_window, structured_output, pool_status, check_pool,
/// count_tokens)` inside its `impl Provider`.
macro_rules! delegate {
    (@one $f:ident info) => {
        fn info(&self) -> $crate::provider::ProviderInfo {
            self.$f.info()
        }
    };
    (@one $f:ident queue_note) => {
        fn queue_note(&self) -> Option<String> {
            self.$f.queue_note()
        }
    };
    (@one $f:ident read_ahead) => {
        fn read_ahead(&self, messages: &[$crate::provider::ChatMessage]) {
            self.$f.read_ahead(messages);
        }
    };
    (@one $f:ident context_window) => {
        fn context_window(&self, model: &str) -> Option<u64> {
            self.$f.context_window(model)
        }
    };
    (@one $f:ident structured_output) => {
        fn structured_output(&self) -> Option<String> {
            self.$f.structured_output()
        }
    };
    // The async ones in the form `async_trait` gives the trait's methods
    // (it does not see into a macro, so the macro writes that form itself).
    (@one $f:ident check_pool) => {
        fn check_pool<'life0, 'async_trait>(
            &'life0 self,
        ) -> ::std::pin::Pin<
            Box<dyn ::std::future::Future<Output = Option<$crate::provider::pool::PoolStatus>> + Send + 'async_trait>,
        >
        where
            'life0: 'async_trait,
            Self: 'async_trait,
        {
            self.$f.check_pool()
        }
    };
    (@one $f:ident count_tokens) => {
        fn count_tokens<'life0, 'life1, 'life2, 'async_trait>(
            &'life0 self,
            model: &'life1 str,
            messages: &'life2 [$crate::provider::ChatMessage],
        ) -> ::std::pin::Pin<
            Box<
                dyn ::std::future::Future<Output = Result<u64, $crate::provider::ProviderError>> + Send + 'async_trait,
            >,
        >
        where
            'life0: 'async_trait,
            'life1: 'async_trait,
            'life2: 'async_trait,
            Self: 'async_trait,
        {
            self.$f.count_tokens(model, messages)
        }
    };
    (@one $f:ident pool_status) => {
        fn pool_status(&self) -> Option<$crate::provider::pool::PoolStatus> {
            self.$f.pool_status()
        }
    };
    ($f:ident: $($method:ident),+ $(,)?) => {
        $(delegate!(@one $f $method);)+
    };
}

pub mod anthropic;
pub mod batch;
pub mod binding;
pub mod cache;
pub mod gbnf;
pub mod http;
pub mod limiter;
pub mod llamacpp;
#[cfg(feature = "local")]
pub mod local;
pub mod logprobs;
pub mod openai;
pub mod pool;
pub mod pricing;
pub mod repetition;
pub mod retry;
pub mod sse;
pub mod structured;
pub mod window;

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

pub use crate::session::event::Usage;

/// Who wrote a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: ChatRole::System, content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: ChatRole::User, content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        Self { role: ChatRole::Assistant, content: content.into() }
    }
}

/// The chat with consecutive messages of one role joined, a blank line
/// between them. moot's own requests put what a group shares and the
/// speaker's part in two user messages (the embedded model uses the
/// boundary), but strict chat templates (Gemma's, Mistral's) refuse two user
/// messages in a row; the text, and so a server's prefix cache, is the same.
pub fn alternating<'a>(messages: impl IntoIterator<Item = &'a ChatMessage>) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = Vec::new();
    for m in messages {
        match out.last_mut() {
            Some(last) if last.role == m.role => {
                last.content.push_str("\n\n");
                last.content.push_str(&m.content);
            }
            _ => out.push(m.clone()),
        }
    }
    out
}

/// One chat completion request, independent of the backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// Model name; empty means the provider's default.
    pub model: String,
    pub messages: Vec<ChatMessage>,
    /// Always sent: some servers otherwise generate until the context is full.
    pub max_tokens: u32,
    pub temperature: Option<f32>,
    /// Nucleus sampling: draw only from the most likely tokens whose
    /// probabilities add up to this share (0 < p ≤ 1). `None`: the
    /// provider's own default, and nothing is sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    pub seed: Option<u64>,
    /// A JSON schema the reply's evaluation must follow, for backends that can
    /// constrain their output (the local model). Others ignore it. Shared:
    /// a run asks every turn of a kind for the same schema.
    #[serde(serialize_with = "shared")]
    pub response_schema: Option<std::sync::Arc<serde_json::Value>>,
    /// Ask for the log-probabilities of the reply's tokens with this many
    /// alternatives each (probability-weighted scores). Providers that cannot
    /// give them return none; OpenAI-compatible servers may also be asked for
    /// them for every request in their configuration.
    pub top_logprobs: Option<u8>,
    /// With a `response_schema`: whether the reply says its words before the
    /// object (the embedded model holds its grammar back until it has), or
    /// gives the object at once (a first evaluation's scores, a repair, a
    /// moderator's pick). Servers with structured output always get the
    /// object with its `speech` field first.
    #[serde(skip_serializing_if = "is_true")]
    pub prose_first: bool,
    /// The reply's first words, with `prose_first` (a debate speech's
    /// "Dana, I"): the embedded model is given them as the start of its
    /// reply and goes on from there, and so is a llama.cpp server (see
    /// [`llamacpp`]); other providers are asked for them in the prompt only.
    /// They are part of the reply's text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opening: Option<String>,
    /// Free text in headed paragraphs: the headings, in order, that begin
    /// them (the synthesis's "Agreement:", "Disagreement:", "Overall:"; the
    /// first is usually the `opening`). The embedded model begins each
    /// paragraph after a finished one with the next heading and ends the
    /// reply with the last heading's paragraph; other providers are asked
    /// for them in the prompt only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<String>,
    /// What the reply's prose may not copy (a debate speech: the earlier
    /// contributions of its discussion; the aggregator's synthesis: nothing
    /// but its own words): the embedded model refuses, as it writes, a word
    /// that would copy a run of them or of the reply so far ([`NoCopy`]); a
    /// llama.cpp server gets DRY instead where there is something to avoid
    /// (see [`llamacpp`]); other providers ignore it.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "shared")]
    pub no_copy: Option<std::sync::Arc<NoCopy>>,
    /// With a `response_schema`: a string member whose value begins with
    /// the value the reply gave an earlier member ([`Echo`]; a moderator's
    /// reason begins with the name it chose). The embedded model is given
    /// those words; other providers are asked for them in the prompt only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub echo: Option<Echo>,
    /// Set by the engine on a request no one waits for live (an agent's
    /// first evaluation, a G-Eval score or its steps, a pairwise judgment):
    /// the item and the turn it is for. A batch layer ([`batch`], `moot eval
    /// --batch`) may send it through a batch API; every other provider
    /// ignores it. Not part of the request's content (nor of a cache key).
    #[serde(skip)]
    pub batch: Option<std::sync::Arc<batch::BatchTag>>,
}

/// Texts a reply may not copy, texts it may quote all the same (the
/// item's), names it may repeat (the members', the dimensions'), and who
/// writes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NoCopy {
    pub avoid: Vec<String>,
    pub quotable: Vec<String>,
    pub names: Vec<String>,
    /// Texts not to copy even where they quote the item (outside quotation
    /// marks): a speech asked for again because it repeated an earlier one
    /// may not repeat that one's unmarked quotations of the item either.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub strict: Vec<String>,
    /// Who writes the reply (a debate speech's speaker), and the member it
    /// answers: where the embedded model begins the speaker's name as the
    /// member it agrees or disagrees with, it writes the answered member's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speaker: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<String>,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// A shared value, written as the value.
fn shared<T: Serialize, S: serde::Serializer>(v: &Option<std::sync::Arc<T>>, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&v.as_deref(), s)
}

impl ChatRequest {
    pub fn new(messages: Vec<ChatMessage>) -> Self {
        Self {
            model: String::new(),
            messages,
            max_tokens: 1024,
            temperature: None,
            top_p: None,
            seed: None,
            response_schema: None,
            top_logprobs: None,
            prose_first: true,
            opening: None,
            sections: Vec::new(),
            no_copy: None,
            echo: None,
            batch: None,
        }
    }
}

/// Within a reply's JSON object, the string value of member `into` begins
/// with the value the reply gave member `from`, which comes before it (a
/// moderator's `reason` begins with the name it chose as `next`: its
/// reason is then about the member it chose).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Echo {
    pub from: String,
    pub into: String,
}

/// The final result of one successful attempt.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Completion {
    /// The whole reply text (the concatenation of the deltas).
    pub text: String,
    pub usage: Usage,
    /// The server's finish reason, when it gave one (`stop`, `length`, …).
    pub finish_reason: Option<String>,
    /// The reply came from the response cache.
    pub cached: bool,
    /// Per-token log-probabilities, from servers that return them.
    pub logprobs: Option<Vec<logprobs::TokenLogprob>>,
    /// The endpoint of a pool that served the call (see [`pool`]); none for
    /// a provider with one base URL.
    pub endpoint: Option<String>,
}

/// Where a timeout struck.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    Connect,
    FirstToken,
    Total,
    /// No bytes for too long in the middle of a stream.
    Idle,
}

impl fmt::Display for TimeoutKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutKind::Connect => "connect",
            TimeoutKind::FirstToken => "first token",
            TimeoutKind::Total => "total",
            TimeoutKind::Idle => "idle stream",
        })
    }
}

/// Why one attempt failed. Messages never contain keys or auth headers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The server answered with a non-success status.
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String, retry_after: Option<Duration> },
    /// The connection could not be made or broke.
    #[error("connection error: {0}")]
    Connect(String),
    #[error("{0} timeout after {1:?}")]
    Timeout(TimeoutKind, Duration),
    /// The stream ended before its terminating event.
    #[error("stream ended early: {0}")]
    Incomplete(String),
    /// The server sent something that is not valid for the protocol.
    #[error("invalid response: {0}")]
    Protocol(String),
    /// The server reported an error inside the stream.
    #[error("server error: {message}")]
    Server { message: String, retryable: bool },
    /// Configuration problem (missing key, bad URL): never retried.
    #[error("{0}")]
    Config(String),
    #[error("cancelled")]
    Cancelled,
}

impl ProviderError {
    /// Whether another attempt may succeed.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => *status == 429 || *status == 408 || *status >= 500,
            ProviderError::Connect(_) | ProviderError::Timeout(..) | ProviderError::Incomplete(_) => true,
            ProviderError::Protocol(_) => true,
            ProviderError::Server { retryable, .. } => *retryable,
            ProviderError::Config(_) | ProviderError::Cancelled => false,
        }
    }
    /// The server closed a kept-alive connection as the request went out on
    /// it (hyper's "connection closed before message completed"): nothing
    /// reached the server, and a fresh connection can be tried at once.
    pub fn is_stale_connection(&self) -> bool {
        matches!(self, ProviderError::Connect(m) if m.contains("connection closed before message completed"))
    }
    /// The delay the server asked for, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
    /// The server told us to slow down (429, Anthropic's 529, or an
    /// overload or rate-limit error inside the stream).
    pub fn is_rate_limit(&self) -> bool {
        match self {
            ProviderError::Http { status, .. } => *status == 429 || *status == 529,
            ProviderError::Server { message, .. } => {
                let m = message.to_ascii_lowercase();
                m.contains("overloaded") || m.contains("rate_limit")
            }
            _ => false,
        }
    }
}

/// Bytes of a streaming reply between two [`Provider::read_ahead`] hints
/// (a dozen tokens or so).
pub const READ_AHEAD_STEP: usize = 48;

/// Sink for streamed text. Unbounded so a slow consumer never stalls a stream.
pub type DeltaSender = mpsc::UnboundedSender<String>;

/// Static facts about a configured backend, for headers and session logs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProviderInfo {
    /// Configured name (`openai`, `local`, a name from moot.toml…).
    pub name: String,
    /// Backend kind: `openai`, `anthropic`, `local`, `scripted`.
    pub kind: String,
    /// Default model.
    pub model: String,
    /// Base URL, for HTTP backends.
    pub base_url: Option<String>,
}

/// A chat backend. One call is one attempt; see [`retry::call_with_retry`].
#[async_trait]
pub trait Provider: Send + Sync {
    fn info(&self) -> ProviderInfo;

    /// Why a call made now would wait before it starts (a busy local model),
    /// if it would. Shown to people as a `waiting` event.
    fn queue_note(&self) -> Option<String> {
        None
    }

    /// A hint that a request whose messages begin with `messages` (the last
    /// of them perhaps longer by then) will come soon: while a speech
    /// streams, the group's next request will carry it in its shared part.
    /// A backend that keeps prompt state (the embedded model) may read it
    /// with cores that are otherwise idle; others ignore it.
    fn read_ahead(&self, _messages: &[ChatMessage]) {}

    /// The context window of `model` (empty: the default model) in tokens,
    /// when known: a request's prompt and its reply (`max_tokens`) together
    /// must fit in it. The engine shortens a long discussion to fit (see
    /// `docs/panels.md`); `None` (an HTTP server with no `context_length`
    /// configured) means no shortening.
    fn context_window(&self, _model: &str) -> Option<u64> {
        None
    }

    /// The form a request with a verdict schema is sent in now
    /// (`json_schema`, `tool`, `llama.cpp grammar (lean form)`, …), for
    /// backends that have such forms (HTTP servers); `None` for the others
    /// (the embedded model always follows the schema).
    fn structured_output(&self) -> Option<String> {
        None
    }

    /// Where the endpoints of a pool stand (see [`pool`]); none for a
    /// provider with one base URL. Wrappers pass it through.
    fn pool_status(&self) -> Option<pool::PoolStatus> {
        None
    }

    /// A pool's endpoints each checked now (one health check each), then
    /// where they stand; none for a provider with one base URL.
    async fn check_pool(&self) -> Option<pool::PoolStatus> {
        None
    }

    /// How many tokens the prompt of `messages` takes on `model`: exact for
    /// the embedded model (its chat template and tokenizer), a conservative
    /// estimate ([`conservative_prompt_tokens`]) elsewhere.
    async fn count_tokens(&self, _model: &str, messages: &[ChatMessage]) -> Result<u64, ProviderError> {
        Ok(conservative_prompt_tokens(messages))
    }

    /// Stream one completion. Deltas go to `deltas` as they arrive; the
    /// returned [`Completion::text`] is their concatenation. Must return
    /// [`ProviderError::Cancelled`] promptly once `cancel` fires.
    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError>;
}

/// Rough token estimate for text when a server reports no usage (≈4 bytes a token).
pub fn estimate_tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// Tokens a chat template adds around each message (role markers,
/// separators), counted by [`conservative_prompt_tokens`].
pub const MESSAGE_OVERHEAD_TOKENS: u64 = 8;

/// A conservative count of a prompt's tokens for servers whose tokenizer moot
/// does not have: one token per 3 bytes of text (English averages about 4
/// bytes a token with common tokenizers; text in other scripts 2–3), plus
/// [`MESSAGE_OVERHEAD_TOKENS`] per message. It errs on the high side, so a
/// request it says fits does fit.
pub fn conservative_prompt_tokens(messages: &[ChatMessage]) -> u64 {
    messages.iter().map(|m| (m.content.len() as u64).div_ceil(3) + MESSAGE_OVERHEAD_TOKENS).sum()
}

/// Estimated usage for a request and its reply, marked as an estimate.
pub fn estimate_usage(request: &ChatRequest, reply: &str) -> Usage {
    let input: u64 = request.messages.iter().map(|m| estimate_tokens(&m.content) + 4).sum();
    Usage { input_tokens: input, output_tokens: estimate_tokens(reply), estimated: true, ..Usage::default() }
}
