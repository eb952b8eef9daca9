//! Retries with backoff, shared by every backend.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ChatRequest, Completion, DeltaSender, Provider, ProviderError};

#[derive(Debug, Clone)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 4, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(30) }
    }
}

#[derive(Debug, Clone)]
pub struct AttemptFailure {
    pub attempt: u32,
    pub error: ProviderError,
    pub will_retry: bool,
    pub retry_in: Option<Duration>,
}

pub async fn call_with_retry(
    provider: &dyn Provider,
    request: &ChatRequest,
    deltas: &DeltaSender,
    cancel: &CancellationToken,
    policy: &RetryPolicy,
    on_failure: &mut (dyn FnMut(&AttemptFailure) + Send),
) -> Result<Completion, ProviderError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        match provider.stream(request, deltas, cancel).await {
            Ok(c) => return Ok(c),
            Err(e) => {
                let will_retry = e.is_retryable() && attempt < policy.max_attempts && !cancel.is_cancelled();
                let wait = e.retry_after().unwrap_or(policy.base_delay * 2u32.pow(attempt - 1)).min(policy.max_delay);
                on_failure(&AttemptFailure { attempt, error: e.clone(), will_retry, retry_in: will_retry.then_some(wait) });
                if !will_retry {
                    return Err(e);
                }
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                }
            }
        }
    }
}
