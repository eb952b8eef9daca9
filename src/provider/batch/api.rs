//! What a batch API does, whichever vendor's: take lines, say how a batch
//! stands, give its results, and turn one result into a [`Completion`].

use std::collections::HashMap;

use async_trait::async_trait;

use crate::provider::http::{self, MAX_ERROR_BODY_CHARS, Redactor, excerpt};
use crate::provider::{ChatRequest, Completion, ProviderError};

/// One request as a line of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Deterministic from the item, the turn and the body ([`super::custom_id`]).
    pub custom_id: String,
    /// The model the body names (OpenAI takes one model per batch).
    pub model: String,
    /// The request body as JSON text, as the vendor's line takes it.
    pub body: String,
}

/// The mark of a batch of these lines: `moot-` and 24 hex digits of a
/// SHA-256 of their custom ids, so the same requests give the same mark in
/// every run.
pub fn batch_key(lines: &[Line]) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for l in lines {
        hash.update((l.custom_id.len() as u64).to_le_bytes());
        hash.update(l.custom_id.as_bytes());
    }
    format!("moot-{}", hex::encode(&hash.finalize()[..12]))
}

/// A batch the server accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Submitted {
    pub id: String,
    /// OpenAI: the uploaded input file.
    pub input_file: Option<String>,
}

/// Where a batch stands on the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemoteState {
    /// Validating, in progress, finalizing, being cancelled.
    Pending,
    /// Every request was run (each line succeeded or errored).
    Ended,
    /// The window passed; lines not run are `NotRun`.
    Expired,
    Cancelled,
    /// The server refused the batch as a whole (OpenAI's `failed`), with why.
    Failed(String),
}

impl RemoteState {
    pub fn is_over(&self) -> bool {
        !matches!(self, RemoteState::Pending)
    }
}

/// A batch as the server describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub state: RemoteState,
    /// Where its results are: OpenAI's output and error files, Anthropic's results URL.
    pub results: Vec<String>,
    /// The server's own counts, for people (`12 succeeded, 1 errored`).
    pub counts: Option<String>,
}

/// What a batch's results say of one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineResult {
    /// The reply, as JSON text (a chat completion, or a message).
    Reply(String),
    /// The request was run and refused or failed, with why.
    Error(String),
    /// The request was not run (the batch expired or was cancelled first).
    NotRun(String),
}

/// A vendor's batch API on one endpoint.
#[async_trait]
pub trait BatchApi: Send + Sync {
    /// `openai` or `anthropic`.
    fn kind(&self) -> &'static str;
    /// The base URL batches go to (recorded in `batches.json`).
    fn endpoint(&self) -> &str;
    /// The request as a line's body, and whether it asks for a structured reply.
    fn body(&self, request: &ChatRequest) -> Result<(String, bool), ProviderError>;
    /// Whether a batch may only hold requests for one model (OpenAI's rule).
    fn one_model_per_batch(&self) -> bool;
    /// The most bytes of request lines one batch may hold, with room to
    /// spare under the vendor's limit (OpenAI: an input file of 200 MB;
    /// Anthropic: 256 MB a batch).
    fn max_bytes(&self) -> usize;
    /// Submit these lines as one batch, marked with `key` ([`batch_key`])
    /// where the vendor keeps marks.
    async fn submit(&self, lines: &[Line], key: &str) -> Result<Submitted, ProviderError>;
    /// The batch submitted with mark `key`, if the server has one: a batch
    /// the server accepted but whose answer never reached moot (the run was
    /// killed in that instant, or the answer was lost). `None` where the
    /// vendor keeps no marks (Anthropic).
    async fn find(&self, _key: &str) -> Result<Option<Submitted>, ProviderError> {
        Ok(None)
    }
    /// How batch `id` stands now.
    async fn status(&self, id: &str) -> Result<Remote, ProviderError>;
    /// The results of a batch that is over, by custom id (lines it lost are absent).
    async fn results(&self, remote: &Remote) -> Result<HashMap<String, LineResult>, ProviderError>;
    /// A reply of [`LineResult::Reply`] as a completion (the JSON of a
    /// structured reply turned into speech and verdict, as when streamed).
    fn completion(&self, reply: &str, structured: bool) -> Result<Completion, ProviderError>;
}

/// Send a request and read its whole answer as text; a non-success status
/// is an [`ProviderError::Http`] with the start of its body.
pub(super) async fn send(builder: reqwest::RequestBuilder, redactor: &Redactor) -> Result<String, ProviderError> {
    let response = builder.send().await.map_err(|e| redactor.error(ProviderError::Connect(http::error_chain(&e))))?;
    let status = response.status();
    let retry_after = http::parse_retry_after(response.headers(), std::time::SystemTime::now());
    let text = response.text().await.map_err(|e| redactor.error(ProviderError::Connect(http::error_chain(&e))))?;
    if !status.is_success() {
        let body = excerpt(text.trim(), MAX_ERROR_BODY_CHARS);
        return Err(redactor.error(ProviderError::Http { status: status.as_u16(), body, retry_after }));
    }
    Ok(text)
}

/// Parse a JSON answer, naming what it was.
pub(super) fn parse<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, ProviderError> {
    serde_json::from_str(text).map_err(|e| {
        ProviderError::Protocol(format!("{what} is not what the batch API returns ({e}): {}", excerpt(text, 120)))
    })
}

/// The lines of a JSONL results file, each parsed; a line that is not
/// JSON is an error naming its number.
pub(super) fn jsonl<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<Vec<T>, ProviderError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                ProviderError::Protocol(format!("{what}, line {}: not a result line ({e}): {}", i + 1, excerpt(l, 120)))
            })
        })
        .collect()
}

/// A speech-and-verdict JSON reply as the streaming providers return it.
pub(super) fn split_structured(json: &str) -> String {
    let mut splitter = crate::provider::structured::SpeechSplitter::new();
    let mut text = splitter.push(json);
    text.push_str(&splitter.finish());
    text
}
