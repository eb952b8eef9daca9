//! A scripted provider for tests and benchmarks only.
//!
//! It is never chosen by configuration or flags: only code that builds one
//! explicitly (tests, benches) uses it. Replies come from a closure that sees
//! the request, so a test can answer differently per agent, per turn, or
//! depending on what the prompt contains.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::provider::{
    ChatMessage, ChatRequest, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, estimate_usage,
};

/// What a scripted call does.
#[derive(Debug, Clone)]
pub enum ScriptedReply {
    /// Stream this text.
    Text(String),
    /// Stream this text after waiting (cancellable).
    Slow(String, Duration),
    /// Fail this attempt.
    Fail(ProviderError),
}

impl From<&str> for ScriptedReply {
    fn from(s: &str) -> Self {
        ScriptedReply::Text(s.to_string())
    }
}

impl From<String> for ScriptedReply {
    fn from(s: String) -> Self {
        ScriptedReply::Text(s)
    }
}

type Responder = dyn Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync;

/// A provider whose replies are computed by a closure: `(request, call index) -> reply`.
pub struct ScriptedProvider {
    responder: Box<Responder>,
    delay: Duration,
    chunk: usize,
    /// Wait between chunks (a reply that streams over time).
    pace: Duration,
    calls: AtomicUsize,
    /// Keep every request (for [`Self::requests`]); off in benchmarks.
    record: bool,
    requests: Mutex<Vec<ChatRequest>>,
    read_aheads: Mutex<Vec<Vec<ChatMessage>>>,
}

impl ScriptedProvider {
    pub fn new(responder: impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static) -> Self {
        Self {
            responder: Box::new(responder),
            delay: Duration::ZERO,
            chunk: 16,
            pace: Duration::ZERO,
            calls: AtomicUsize::new(0),
            record: true,
            requests: Mutex::new(Vec::new()),
            read_aheads: Mutex::new(Vec::new()),
        }
    }

    /// Wait this long before answering each call (cancellable).
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Wait this long between chunks, so that replies stream over time.
    pub fn with_pace(mut self, pace: Duration) -> Self {
        self.pace = pace;
        self
    }

    /// Stream in chunks of this many bytes (rounded to character boundaries).
    pub fn with_chunk(mut self, bytes: usize) -> Self {
        self.chunk = bytes.max(1);
        self
    }

    /// Keep no requests ([`Self::requests`] stays empty): a benchmark's
    /// thousands of calls then measure the engine, not the copies.
    pub fn without_records(mut self) -> Self {
        self.record = false;
        self
    }

    /// Calls made so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// Every read-ahead hint received, in order.
    pub fn read_aheads(&self) -> Vec<Vec<ChatMessage>> {
        self.read_aheads.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every request received, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[async_trait]
impl Provider for ScriptedProvider {
    fn info(&self) -> ProviderInfo {
        ProviderInfo { name: "scripted".into(), kind: "scripted".into(), model: "scripted".into(), base_url: None }
    }

    fn read_ahead(&self, messages: &[ChatMessage]) {
        self.read_aheads.lock().unwrap_or_else(|e| e.into_inner()).push(messages.to_vec());
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let index = self.calls.fetch_add(1, Ordering::SeqCst);
        if self.record {
            self.requests.lock().unwrap_or_else(|e| e.into_inner()).push(request.clone());
        }
        let reply = (self.responder)(request, index);
        let delay = match &reply {
            ScriptedReply::Slow(_, d) => *d,
            _ => self.delay,
        };
        if !delay.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(delay) => {}
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            }
        }
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let text = match reply {
            ScriptedReply::Fail(e) => return Err(e),
            ScriptedReply::Text(t) | ScriptedReply::Slow(t, _) => t,
        };
        let mut start = 0;
        while start < text.len() {
            let mut end = (start + self.chunk).min(text.len());
            while !text.is_char_boundary(end) {
                end += 1;
            }
            if start > 0 && !self.pace.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(self.pace) => {}
                    _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                }
            }
            let _ = deltas.send(text[start..end].to_string());
            start = end;
        }
        let usage = estimate_usage(request, &text);
        Ok(Completion { text, usage, finish_reason: Some("stop".into()), ..Completion::default() })
    }
}
