//! Batch APIs: OpenAI's Batch API and Anthropic's Message Batches answer
//! requests within 24 hours at half the listed price (`moot eval --batch`).
//!
//! A [`BatchProvider`] wraps a configured HTTP provider. A request the
//! engine marked as needing no live answer ([`ChatRequest::batch`]: an
//! agent's first evaluation, a G-Eval score or its steps, a pairwise
//! judgment) is handed to the provider's collector and waits; every other
//! request (a debate's turns, a moderator, a repair) goes to the live
//! provider as before. The collector gathers the requests of every item
//! running at once and submits them as one batch once none has arrived for
//! a quiet moment ([`BatchSettings::gather`]) or the batch is full, polls it
//! (an interval that doubles up to ten times itself), and hands each
//! waiting call its reply, which the run records like a live one: the text,
//! its usage with [`Usage::batch_input_tokens`] and
//! [`Usage::batch_output_tokens`] set (priced at [`BATCH_PRICE_SHARE`]),
//! and `endpoint` = `batch <id>`.
//!
//! Each request has a deterministic custom id (its item, its turn and a
//! hash of its body: [`custom_id`]), and every submitted batch is recorded
//! in the run folder's `batches.json` ([`store`]), so a run started again
//! with `--resume` finds the batches it submitted before and collects them
//! instead of submitting those requests again. A batch that expires, is
//! cancelled or fails has its requests submitted once more
//! ([`BatchSettings::resubmit`]), then they are asked live; a line that
//! errored, or that a finished batch left out, is asked again live at once:
//! the call fails with a retryable error that says why (a `turn_failed` in
//! the log) and its next attempt goes live. A pool of endpoints sends its
//! batches to its first base URL.

pub mod anthropic;
pub mod api;
mod collector;
pub mod openai;
pub mod store;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

pub use api::BatchApi;
use collector::{Collector, Enqueued};
pub use store::{BatchRecord, RecordState, Store, StoreError};

use super::{ChatRequest, Completion, DeltaSender, Provider, ProviderError};
pub use crate::session::event::BATCH_PRICE_SHARE;

/// The item and the turn a request is for (see [`ChatRequest::batch`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BatchTag {
    pub item: Arc<str>,
    /// The turn within the item's session (participant, phase, round,
    /// dimension, pair): two draws of one score differ here.
    pub turn: String,
}

/// How batches are gathered and watched.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchSettings {
    /// Every HTTP provider batches (`--batch`); otherwise only those
    /// configured with `batch = true`.
    pub all: bool,
    /// The first wait between two looks at a pending batch; it doubles up
    /// to ten times this.
    pub poll: Duration,
    /// A batch is submitted once no request has joined it for this long.
    pub gather: Duration,
    /// At most this many requests in one batch (OpenAI takes 50,000,
    /// Anthropic 100,000).
    pub max_requests: usize,
    /// How many times a request a batch did not run (expired, cancelled,
    /// failed) is submitted again before it is asked live.
    pub resubmit: usize,
}

impl Default for BatchSettings {
    fn default() -> Self {
        Self {
            all: false,
            poll: Duration::from_secs(30),
            gather: Duration::from_secs(2),
            max_requests: 10_000,
            resubmit: 1,
        }
    }
}

/// How a run's batches stand, for its progress lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BatchStatus {
    /// Batches this invocation submitted.
    pub submitted: usize,
    /// The requests in them.
    pub requests: usize,
    /// Batches being watched that are not over.
    pub pending: usize,
    /// Batches seen over (this invocation's and earlier ones it collected).
    pub done: usize,
    /// Earlier invocations' batches this one collects.
    pub resumed: usize,
    /// Requests waiting to be submitted.
    pub queued: usize,
    /// Replies handed to calls.
    pub answered: usize,
    /// Requests submitted again after a batch did not run them.
    pub resubmitted: usize,
    /// Requests sent live after their batch gave no reply.
    pub asked_live: usize,
}

impl BatchStatus {
    /// `batches: 2 submitted, 1 pending, 1 done · 40 replies · 3 asked live`
    pub fn line(&self) -> String {
        let mut s = format!("batches: {} submitted, {} pending, {} done", self.submitted, self.pending, self.done);
        if self.resumed > 0 {
            s.push_str(&format!(" ({} from an earlier run)", self.resumed));
        }
        if self.queued > 0 {
            s.push_str(&format!(" · {} requests gathering", self.queued));
        }
        s.push_str(&format!(" · {} replies", self.answered));
        if self.resubmitted > 0 {
            s.push_str(&format!(" · {} submitted again", self.resubmitted));
        }
        if self.asked_live > 0 {
            s.push_str(&format!(" · {} asked live", self.asked_live));
        }
        s
    }
}

/// What the collectors of one run share.
struct Shared {
    settings: BatchSettings,
    store: Store,
    status: Mutex<BatchStatus>,
    /// Problems people should hear of (a `batches.json` that cannot be written).
    notes: Mutex<Vec<String>>,
}

impl Shared {
    fn status(&self, change: impl FnOnce(&mut BatchStatus)) {
        change(&mut self.status.lock().unwrap_or_else(|e| e.into_inner()));
    }

    fn note(&self, note: String) {
        tracing::warn!("{note}");
        self.notes.lock().unwrap_or_else(|e| e.into_inner()).push(note);
    }
}

/// The batch layer of one run: its settings, its `batches.json` and a
/// collector per provider. Cheap to clone.
#[derive(Clone)]
pub struct Batcher {
    shared: Arc<Shared>,
    collectors: Arc<Mutex<BTreeMap<String, Arc<Collector>>>>,
}

impl std::fmt::Debug for Batcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batcher").field("settings", &self.shared.settings).finish_non_exhaustive()
    }
}

impl Batcher {
    /// A batch layer recording its batches in `file` (read first: a
    /// resumed run finds its earlier batches there), or in memory only.
    pub fn new(settings: BatchSettings, file: Option<&Path>) -> Result<Self, StoreError> {
        let store = match file {
            Some(path) => Store::open(path)?,
            None => Store::in_memory(),
        };
        Ok(Self {
            shared: Arc::new(Shared { settings, store, status: Mutex::default(), notes: Mutex::default() }),
            collectors: Arc::default(),
        })
    }

    pub fn settings(&self) -> &BatchSettings {
        &self.shared.settings
    }

    /// Whether a provider configured with `batch` (none: not said) batches.
    pub fn wants(&self, configured: Option<bool>) -> bool {
        configured.unwrap_or(self.shared.settings.all)
    }

    /// `live` with its batchable calls sent through `api`; the provider's
    /// collector is made once per name and endpoint.
    pub fn wrap(&self, name: &str, live: Arc<dyn Provider>, api: Arc<dyn BatchApi>) -> Arc<dyn Provider> {
        let key = format!("{name}\u{0}{}", api.endpoint());
        let collector = self
            .collectors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert_with(|| Arc::new(Collector::new(name.to_string(), api, self.shared.clone())))
            .clone();
        Arc::new(BatchProvider { live, collector })
    }

    /// The providers whose calls may go through a batch API, by name.
    pub fn providers(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .collectors
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keys()
            .map(|k| k.split('\u{0}').next().unwrap_or_default().to_string())
            .collect();
        names.dedup();
        names
    }

    pub fn status(&self) -> BatchStatus {
        *self.shared.status.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The run's batches as `batches.json` records them.
    pub fn records(&self) -> Vec<BatchRecord> {
        self.shared.store.records()
    }

    /// Problems noted since the last call (each once).
    pub fn take_notes(&self) -> Vec<String> {
        std::mem::take(&mut self.shared.notes.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The custom id of a request: the item's id (cleaned, at most 32
/// characters) and 24 hex digits of a SHA-256 of the item, the turn and the
/// body. Both APIs take it (Anthropic's rule is `[A-Za-z0-9_-]{1,64}`); the
/// same request of the same turn gets the same id in every run.
pub fn custom_id(tag: &BatchTag, body: &str) -> String {
    let mut hash = Sha256::new();
    for part in [tag.item.as_bytes(), tag.turn.as_bytes(), body.as_bytes()] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    let digest = hash.finalize();
    let prefix: String = tag
        .item
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' })
        .take(32)
        .collect();
    format!("{prefix}-{}", hex::encode(&digest[..12]))
}

/// A provider whose calls marked for a batch go through a batch API.
pub struct BatchProvider {
    live: Arc<dyn Provider>,
    collector: Arc<Collector>,
}

#[derive(serde::Deserialize)]
struct ModelOf {
    #[serde(default)]
    model: String,
}

impl BatchProvider {
    async fn batched(
        &self,
        request: &ChatRequest,
        tag: &BatchTag,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Option<Result<Completion, ProviderError>> {
        let api = self.collector.api();
        let (body, structured) = api.body(request).ok()?;
        let model = serde_json::from_str::<ModelOf>(&body).map(|m| m.model).unwrap_or_default();
        let id = custom_id(tag, &body);
        let line = api::Line { custom_id: id.clone(), model, body };
        let (batch, result) = match self.collector.enqueue(line) {
            Enqueued::Live => return None,
            Enqueued::Ready(batch, result) => (batch, result),
            Enqueued::Wait(rx) => {
                let delivery = tokio::select! {
                    biased;
                    _ = cancel.cancelled() => return Some(Err(ProviderError::Cancelled)),
                    d = rx => d,
                };
                match delivery {
                    Ok(collector::Delivery::Reply(batch, reply)) => (batch, reply),
                    Ok(collector::Delivery::Failed(why)) => return Some(Err(asked_live(why))),
                    Err(_) => return Some(Err(asked_live("the batch layer stopped".into()))),
                }
            }
        };
        let mut completion = match api.completion(&result, structured) {
            Ok(c) => c,
            Err(e) => {
                self.collector.go_live(&id);
                return Some(Err(asked_live(format!("batch {batch}: {e}"))));
            }
        };
        completion.usage.batch_input_tokens = Some(completion.usage.input_tokens);
        completion.usage.batch_output_tokens = Some(completion.usage.output_tokens);
        completion.endpoint = Some(format!("batch {batch}"));
        if !completion.text.is_empty() {
            // A closed receiver only means nobody watches the stream.
            let _ = deltas.send(completion.text.clone());
        }
        Some(Ok(completion))
    }
}

/// The error of a batched call that is to be asked again live: retryable,
/// saying why (the engine records it as a failed attempt and tries again).
fn asked_live(why: String) -> ProviderError {
    ProviderError::Server { message: format!("{why}; asking again live"), retryable: true }
}

#[async_trait]
impl Provider for BatchProvider {
    delegate!(live: info, queue_note, read_ahead, context_window, structured_output, pool_status, check_pool, count_tokens);

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        if let Some(tag) = &request.batch
            && let Some(result) = self.batched(request, tag, deltas, cancel).await
        {
            return result;
        }
        self.live.stream(request, deltas, cancel).await
    }
}

#[cfg(test)]
mod id_tests {
    use super::*;

    #[test]
    fn custom_ids_are_stable_short_and_safe() {
        let tag = BatchTag { item: "item 7/α".into(), turn: "Ann/initial".into() };
        let a = custom_id(&tag, "{\"model\":\"m\"}");
        assert_eq!(a, custom_id(&tag, "{\"model\":\"m\"}"));
        assert!(a.starts_with("item_7__-"), "{a}");
        assert!(a.len() <= 64 && a.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'), "{a}");
        assert_ne!(a, custom_id(&tag, "{\"model\":\"n\"}"), "another body");
        let other_turn = BatchTag { turn: "Ann/scoring/2".into(), ..tag.clone() };
        assert_ne!(a, custom_id(&other_turn, "{\"model\":\"m\"}"), "another draw of the same request");
        let long = BatchTag { item: "x".repeat(200).into(), turn: String::new() };
        assert_eq!(custom_id(&long, "").len(), 32 + 1 + 24);
    }
}
