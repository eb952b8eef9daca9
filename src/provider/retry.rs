//! Retries with backoff, shared by every backend.
//!
//! [`call_with_retry`] drives one [`Provider`] call through several attempts:
//! retryable errors wait an exponential backoff with full jitter (or the delay
//! the server asked for, when longer) and try again; every failed attempt is
//! reported to a callback so callers can record it. Text streamed by a failed
//! attempt has already gone to the delta sink: callers should drop what they
//! collected for the turn when the callback says another attempt follows.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{ChatRequest, Completion, DeltaSender, Provider, ProviderError};

/// The longest `Retry-After` delay honoured; longer requests are capped.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// How many attempts to make and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (0 behaves like 1).
    pub max_attempts: u32,
    /// Backoff ceiling before the second attempt; it doubles for each later one.
    pub base_delay: Duration,
    /// Upper bound for the backoff ceiling.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { max_attempts: 4, base_delay: Duration::from_millis(500), max_delay: Duration::from_secs(30) }
    }
}

impl RetryPolicy {
    /// A policy that makes a single attempt.
    pub fn no_retry() -> Self {
        Self { max_attempts: 1, ..Self::default() }
    }

    /// The backoff ceiling after failed attempt `attempt` (1-based):
    /// `min(max_delay, base_delay * 2^(attempt-1))`.
    pub fn backoff_ceiling(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
        self.base_delay.saturating_mul(factor).min(self.max_delay)
    }

    /// The wait after failed attempt `attempt`: a uniformly random duration
    /// up to the backoff ceiling ("full jitter"), raised to the server's
    /// `retry_after` (capped at [`MAX_RETRY_AFTER`]) when it gave one.
    pub fn delay_for(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let ceiling = self.backoff_ceiling(attempt);
        let nanos = u64::try_from(ceiling.as_nanos()).unwrap_or(u64::MAX);
        let jittered = Duration::from_nanos(if nanos == 0 { 0 } else { rand::random_range(0..=nanos) });
        match retry_after {
            Some(asked) => jittered.max(asked.min(MAX_RETRY_AFTER)),
            None => jittered,
        }
    }

    fn attempts(&self) -> u32 {
        self.max_attempts.max(1)
    }
}

/// One failed attempt, as reported to the `on_failure` callback.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptFailure {
    /// 1-based attempt number.
    pub attempt: u32,
    pub error: ProviderError,
    /// Another attempt follows.
    pub will_retry: bool,
    /// How long until the next attempt, when there is one.
    pub retry_in: Option<Duration>,
}

/// Call `provider` until an attempt succeeds, a non-retryable error occurs,
/// the attempts of `policy` are used up, or `cancel` fires.
///
/// `on_failure` is called once for every failed attempt before any wait;
/// cancellation is not reported there (the call returns
/// [`ProviderError::Cancelled`] at once, also while waiting to retry). When
/// attempts run out, the last attempt's error is returned.
pub async fn call_with_retry(
    provider: &dyn Provider,
    request: &ChatRequest,
    deltas: &DeltaSender,
    cancel: &CancellationToken,
    policy: &RetryPolicy,
    on_failure: &mut (dyn FnMut(&AttemptFailure) + Send),
) -> Result<Completion, ProviderError> {
    let max_attempts = policy.attempts();
    let mut attempt = 1;
    loop {
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let error = match provider.stream(request, deltas, cancel).await {
            Ok(completion) => return Ok(completion),
            Err(ProviderError::Cancelled) => return Err(ProviderError::Cancelled),
            Err(error) => error,
        };
        if cancel.is_cancelled() {
            return Err(ProviderError::Cancelled);
        }
        let will_retry = error.is_retryable() && attempt < max_attempts;
        // A stale pooled connection is tried again at once (on a fresh one), the first time.
        let retry_in = will_retry.then(|| {
            if attempt == 1 && error.is_stale_connection() {
                Duration::ZERO
            } else {
                policy.delay_for(attempt, error.retry_after())
            }
        });
        on_failure(&AttemptFailure { attempt, error: error.clone(), will_retry, retry_in });
        let Some(wait) = retry_in else {
            return Err(error);
        };
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
            _ = tokio::time::sleep(wait) => {}
        }
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};

    use async_trait::async_trait;
    use tokio::sync::mpsc;
    use tokio::time::Instant;

    use super::*;
    use crate::provider::{ChatMessage, ProviderInfo, Usage};

    /// Returns the scripted results in order; a missing entry waits for cancellation.
    struct Flaky {
        results: Mutex<VecDeque<Result<Completion, ProviderError>>>,
        calls: AtomicU32,
    }

    impl Flaky {
        fn new(results: Vec<Result<Completion, ProviderError>>) -> Self {
            Self { results: Mutex::new(results.into()), calls: AtomicU32::new(0) }
        }
        fn calls(&self) -> u32 {
            self.calls.load(Ordering::SeqCst)
        }
    }

    #[async_trait]
    impl Provider for Flaky {
        fn info(&self) -> ProviderInfo {
            ProviderInfo { name: "flaky".into(), kind: "scripted".into(), model: "m".into(), base_url: None }
        }
        async fn stream(
            &self,
            _request: &ChatRequest,
            deltas: &DeltaSender,
            cancel: &CancellationToken,
        ) -> Result<Completion, ProviderError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let next = self.results.lock().map_err(|_| ProviderError::Config("poisoned".into()))?.pop_front();
            match next {
                Some(result) => {
                    if let Ok(c) = &result {
                        let _ = deltas.send(c.text.clone());
                    }
                    result
                }
                None => {
                    cancel.cancelled().await;
                    Err(ProviderError::Cancelled)
                }
            }
        }
    }

    fn ok(text: &str) -> Result<Completion, ProviderError> {
        Ok(Completion {
            text: text.into(),
            usage: Usage::default(),
            finish_reason: Some("stop".into()),
            ..Completion::default()
        })
    }

    fn http(status: u16, retry_after: Option<Duration>) -> Result<Completion, ProviderError> {
        Err(ProviderError::Http { status, body: "busy".into(), retry_after })
    }

    fn fast() -> RetryPolicy {
        RetryPolicy { max_attempts: 4, base_delay: Duration::from_millis(2), max_delay: Duration::from_millis(10) }
    }

    fn request() -> ChatRequest {
        ChatRequest::new(vec![ChatMessage::user("hi")])
    }

    async fn run(
        provider: &Flaky,
        policy: &RetryPolicy,
        cancel: &CancellationToken,
    ) -> (Result<Completion, ProviderError>, Vec<AttemptFailure>) {
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut failures = Vec::new();
        let result = call_with_retry(provider, &request(), &tx, cancel, policy, &mut |f: &AttemptFailure| {
            failures.push(f.clone())
        })
        .await;
        (result, failures)
    }

    #[tokio::test]
    async fn a_stale_pooled_connection_is_tried_again_at_once_and_logged() {
        let stale = || {
            Err(ProviderError::Connect(
                "error sending request: client error (SendRequest): connection closed before message completed".into(),
            ))
        };
        let slow =
            RetryPolicy { max_attempts: 4, base_delay: Duration::from_secs(60), max_delay: Duration::from_secs(60) };
        let provider = Flaky::new(vec![stale(), ok("fine")]);
        let (result, failures) = run(&provider, &slow, &CancellationToken::new()).await;
        assert_eq!(result.unwrap().text, "fine");
        assert_eq!(failures.len(), 1, "the failed attempt is still reported");
        assert_eq!(failures[0].retry_in, Some(Duration::ZERO));
        // Only the first time: a second stale connection waits its backoff.
        let provider = Flaky::new(vec![stale(), stale()]);
        let cancel = CancellationToken::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            c.cancel();
        });
        let (_, failures) = run(&provider, &slow, &cancel).await;
        assert_ne!(failures[1].retry_in, Some(Duration::ZERO));
        assert_eq!(provider.calls(), 2);
    }

    #[test]
    fn backoff_ceiling_doubles_and_caps() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff_ceiling(1), Duration::from_millis(500));
        assert_eq!(p.backoff_ceiling(2), Duration::from_secs(1));
        assert_eq!(p.backoff_ceiling(4), Duration::from_secs(4));
        assert_eq!(p.backoff_ceiling(10), Duration::from_secs(30));
        assert_eq!(p.backoff_ceiling(u32::MAX), Duration::from_secs(30));
    }

    #[test]
    fn delay_is_jittered_within_ceiling_and_honours_retry_after() {
        let p = RetryPolicy::default();
        let mut distinct = std::collections::HashSet::new();
        for _ in 0..200 {
            let d = p.delay_for(3, None);
            assert!(d <= Duration::from_secs(2));
            distinct.insert(d);
        }
        assert!(distinct.len() > 10, "delays are not jittered");
        for _ in 0..50 {
            assert!(p.delay_for(1, Some(Duration::from_secs(3))) >= Duration::from_secs(3));
        }
        assert_eq!(p.delay_for(1, Some(Duration::from_secs(3600))), MAX_RETRY_AFTER);
    }

    #[tokio::test]
    async fn succeeds_after_retryable_failures() {
        let provider = Flaky::new(vec![http(503, None), Err(ProviderError::Incomplete("cut".into())), ok("fine")]);
        let (result, failures) = run(&provider, &fast(), &CancellationToken::new()).await;
        assert_eq!(result.map(|c| c.text), Ok("fine".to_string()));
        assert_eq!(provider.calls(), 3);
        assert_eq!(failures.len(), 2);
        assert_eq!((failures[0].attempt, failures[1].attempt), (1, 2));
        assert!(failures.iter().all(|f| f.will_retry && f.retry_in.is_some()));
        assert!(failures[0].retry_in.is_some_and(|d| d <= Duration::from_millis(2)));
    }

    #[tokio::test]
    async fn exhausts_attempts_and_returns_last_error() {
        let provider = Flaky::new(vec![http(500, None), http(502, None), http(503, None), http(504, None), ok("x")]);
        let (result, failures) = run(&provider, &fast(), &CancellationToken::new()).await;
        assert!(matches!(result, Err(ProviderError::Http { status: 504, .. })));
        assert_eq!(provider.calls(), 4);
        assert_eq!(failures.iter().map(|f| f.will_retry).collect::<Vec<_>>(), [true, true, true, false]);
        assert_eq!(failures[3].retry_in, None);
    }

    #[tokio::test]
    async fn non_retryable_error_stops_at_once() {
        let provider = Flaky::new(vec![http(401, None), ok("never")]);
        let (result, failures) = run(&provider, &fast(), &CancellationToken::new()).await;
        assert!(matches!(result, Err(ProviderError::Http { status: 401, .. })));
        assert_eq!(provider.calls(), 1);
        assert_eq!(failures.len(), 1);
        assert!(!failures[0].will_retry);
    }

    #[tokio::test]
    async fn zero_attempts_means_one() {
        let provider = Flaky::new(vec![http(500, None), ok("never")]);
        let policy = RetryPolicy { max_attempts: 0, ..fast() };
        let (result, _) = run(&provider, &policy, &CancellationToken::new()).await;
        assert!(result.is_err());
        assert_eq!(provider.calls(), 1);
    }

    #[tokio::test]
    async fn retry_after_is_waited() {
        let provider = Flaky::new(vec![http(429, Some(Duration::from_millis(150))), ok("late")]);
        let start = Instant::now();
        let (result, failures) = run(&provider, &fast(), &CancellationToken::new()).await;
        assert!(result.is_ok());
        assert!(start.elapsed() >= Duration::from_millis(150));
        assert_eq!(failures[0].retry_in, Some(Duration::from_millis(150)));
    }

    #[tokio::test]
    async fn cancel_during_backoff_returns_cancelled() {
        let provider = Flaky::new(vec![http(429, Some(Duration::from_secs(60))), ok("never")]);
        let cancel = CancellationToken::new();
        let (tx, _rx) = mpsc::unbounded_channel();
        let mut failures = 0;
        let start = Instant::now();
        let result = call_with_retry(&provider, &request(), &tx, &cancel, &fast(), &mut |f: &AttemptFailure| {
            failures += 1;
            assert!(f.will_retry);
            // Cancel while the 60 s wait is about to begin.
            cancel.cancel();
        })
        .await;
        assert_eq!(result, Err(ProviderError::Cancelled));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(provider.calls(), 1);
        assert_eq!(failures, 1);
    }

    #[tokio::test]
    async fn cancel_during_attempt_is_not_reported_or_retried() {
        let provider = Flaky::new(vec![]);
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            canceller.cancel();
        });
        let (result, failures) = run(&provider, &fast(), &cancel).await;
        assert_eq!(result, Err(ProviderError::Cancelled));
        assert!(failures.is_empty());
        assert_eq!(provider.calls(), 1);
    }

    #[tokio::test]
    async fn already_cancelled_makes_no_attempt() {
        let provider = Flaky::new(vec![]);
        let cancel = CancellationToken::new();
        cancel.cancel();
        let (result, failures) = run(&provider, &fast(), &cancel).await;
        assert_eq!(result, Err(ProviderError::Cancelled));
        assert!(failures.is_empty());
        assert_eq!(provider.calls(), 0);
    }
}
