//! One model call of the builder: fitted to the model's context, streamed
//! into the log, read by a verdict, repaired once when unreadable.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::log::{BuildEventKind, BuildLog, Step};
use crate::engine::trim::{self, Prompt};
use crate::engine::verdict::Verdict;
use crate::provider::retry::{AttemptFailure, RetryPolicy, call_with_retry};
use crate::provider::{ChatMessage, ChatRequest, Provider, ProviderError};

/// Characters of an unreadable reply shown back with the repair request.
const REPAIR_SHOWN: usize = 1500;

/// The end of a reply (where its JSON should be), shortened so that a long
/// unreadable reply does not crowd the repair request out of the context.
fn reply_tail(text: &str) -> String {
    if text.len() <= REPAIR_SHOWN {
        return text.to_string();
    }
    let mut start = text.len() - REPAIR_SHOWN;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("[…]{}", &text[start..])
}

/// The model the builder asks, and how.
#[derive(Clone)]
pub struct Model {
    pub provider: Arc<dyn Provider>,
    /// Empty: the provider's default.
    pub model: String,
    pub temperature: Option<f32>,
    /// Reply budget of each call.
    pub max_tokens: u32,
    pub seed: Option<u64>,
    pub retry: RetryPolicy,
}

impl Model {
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self {
            provider,
            model: model.into(),
            temperature: Some(0.3),
            max_tokens: 1200,
            seed: None,
            retry: RetryPolicy::default(),
        }
    }

    /// The model's name as recorded (the provider's default when none was chosen).
    pub fn name(&self) -> String {
        if self.model.is_empty() { self.provider.info().model } else { self.model.clone() }
    }
}

/// What every step of a build shares.
pub struct Ctx {
    pub task: String,
    pub model: Model,
    pub log: Arc<BuildLog>,
    pub cancel: CancellationToken,
    calls: AtomicU64,
}

impl Ctx {
    pub fn new(task: impl Into<String>, model: Model, log: Arc<BuildLog>) -> Self {
        Self { task: task.into(), model, log, cancel: CancellationToken::new(), calls: AtomicU64::new(0) }
    }

    /// Number calls on from `next` (a review continuing an earlier build's log).
    pub fn starting_calls_at(self, next: u64) -> Self {
        self.calls.store(next, Ordering::Relaxed);
        self
    }

    /// Ask the model for `verdict`; an unreadable reply gets one repair
    /// request. The error says why no answer was taken (a failed call, or a
    /// reply that stayed unreadable).
    pub(crate) async fn ask<V: Verdict>(
        &self,
        step: Step,
        about: &str,
        mut messages: Vec<ChatMessage>,
        verdict: &V,
    ) -> Result<V::Output, String> {
        let mut repair_schema = None;
        for repair in [false, true] {
            let call = self.calls.fetch_add(1, Ordering::Relaxed);
            let about_call = if repair { format!("{about} (repair)") } else { about.to_string() };
            self.log.emit(BuildEventKind::CallStarted { call, step, about: about_call });
            let started = Instant::now();
            let m = &self.model;
            let fitted = match trim::fit(
                m.provider.as_ref(),
                &m.model,
                &Prompt::fixed(messages.clone()),
                m.max_tokens,
                "",
            )
            .await
            {
                Ok(f) => f,
                Err(e) => {
                    let error = e.to_string().trim_start_matches(": ").to_string();
                    self.log.emit(BuildEventKind::CallFailed {
                        call,
                        error: error.clone(),
                        attempt: 1,
                        will_retry: false,
                    });
                    return Err(error);
                }
            };
            let request = ChatRequest {
                model: m.model.clone(),
                messages: fitted.messages,
                max_tokens: fitted.max_tokens,
                temperature: m.temperature,
                top_p: None,
                seed: m.seed,
                response_schema: if repair { repair_schema.take() } else { verdict.shared_schema() },
                top_logprobs: None,
                prose_first: true,
                // A repair asks for the object alone.
                opening: super::prompts::opening(step).filter(|_| !repair).map(str::to_string),
                sections: Vec::new(),
                no_copy: Some(Arc::new(super::prompts::no_copy(&messages))),
                echo: None,
                batch: None,
            };
            let result = self.stream(call, &request).await;
            let completion = match result {
                Ok(c) => c,
                Err(e) => return Err(e.to_string()),
            };
            let read = verdict.read(&completion);
            self.log.emit(BuildEventKind::CallCompleted {
                call,
                text: completion.text.clone(),
                usage: completion.usage,
                latency_ms: started.elapsed().as_millis() as u64,
                parse_error: read.as_ref().err().cloned(),
            });
            match read {
                Ok(v) => return Ok(v),
                Err(e) if !repair => {
                    repair_schema = verdict.repair_schema(&e).map(Arc::new);
                    messages.push(ChatMessage::assistant(reply_tail(&completion.text)));
                    messages.push(verdict.repair(&e));
                }
                Err(e) => return Err(format!("the answer stayed unreadable: {e}")),
            }
        }
        unreachable!("the second pass returns")
    }

    /// Stream one request, its text going to the log as it arrives.
    async fn stream(&self, call: u64, request: &ChatRequest) -> Result<crate::provider::Completion, ProviderError> {
        let (tx, mut rx) = mpsc::unbounded_channel::<String>();
        let log = &self.log;
        let provider = self.model.provider.clone();
        let cancel = &self.cancel;
        let policy = &self.model.retry;
        let run = async move {
            let mut on_failure = |f: &AttemptFailure| {
                log.emit(BuildEventKind::CallFailed {
                    call,
                    error: f.error.to_string(),
                    attempt: f.attempt,
                    will_retry: f.will_retry,
                });
            };
            let r = call_with_retry(provider.as_ref(), request, &tx, cancel, policy, &mut on_failure).await;
            drop(tx);
            r
        };
        let forward = async {
            while let Some(mut text) = rx.recv().await {
                while let Ok(more) = rx.try_recv() {
                    text.push_str(&more);
                }
                log.emit(BuildEventKind::CallDelta { call, text });
            }
        };
        let (result, ()) = tokio::join!(run, forward);
        if matches!(result, Err(ProviderError::Cancelled)) {
            log.emit(BuildEventKind::CallFailed {
                call,
                error: ProviderError::Cancelled.to_string(),
                attempt: 1,
                will_retry: false,
            });
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reply_is_shown_by_its_end_in_a_repair() {
        assert_eq!(reply_tail("short"), "short");
        let long = format!("{}é{}", "a".repeat(2000), "b".repeat(REPAIR_SHOWN - 1));
        let t = reply_tail(&long);
        assert!(t.starts_with("[…]") && t.ends_with('b'));
        assert!(t.len() <= REPAIR_SHOWN + "[…]".len() + 1);
    }
}
