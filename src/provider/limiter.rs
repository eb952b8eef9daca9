//! Per-provider concurrency and request-rate limits, adaptive to 429s.
//!
//! A [`Limiter`] admits at most `limit` calls at once and at most
//! `requests_per_minute` call starts in any 60 seconds. When the server says
//! to slow down (HTTP 429, an overload error), the allowed concurrency halves
//! (never below one) and new calls wait out the `Retry-After` delay; after a
//! quiet `recovery` period, successes raise the limit again by one at a time
//! (after as many successes as the current limit) up to `max_concurrency`.
//!
//! [`LimitedProvider`] wraps any [`Provider`] with a limiter. Limiters are
//! shared through [`shared`], keyed by provider, so every agent and every
//! session of the process that uses one provider shares one limit.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::retry::MAX_RETRY_AFTER;
use super::{ChatRequest, Completion, DeltaSender, Provider, ProviderError};

const WINDOW: Duration = Duration::from_secs(60);

/// The limits of one provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSettings {
    /// Calls at once, at most (at least 1).
    pub max_concurrency: usize,
    /// Call starts in any 60 seconds, at most; none means no rate limit.
    pub requests_per_minute: Option<u32>,
    /// After a rate-limit answer, how long before the limit may grow again.
    pub recovery: Duration,
}

impl Default for LimitSettings {
    fn default() -> Self {
        Self { max_concurrency: 8, requests_per_minute: None, recovery: Duration::from_secs(10) }
    }
}

#[derive(Debug)]
struct LimitState {
    limit: usize,
    in_flight: usize,
    /// No new call starts before this (a `Retry-After`).
    paused_until: Option<Instant>,
    /// The limit may not grow before this.
    cooldown_until: Option<Instant>,
    successes: usize,
    starts: VecDeque<Instant>,
    rate_limited: u64,
}

/// Admits calls to one provider; see the module documentation.
#[derive(Debug)]
pub struct Limiter {
    settings: LimitSettings,
    state: Mutex<LimitState>,
    changed: Notify,
}

/// A running call's place in the limiter; released on drop.
#[derive(Debug)]
pub struct Permit<'a> {
    limiter: &'a Limiter,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.limiter.lock().in_flight -= 1;
        self.limiter.changed.notify_waiters();
    }
}

impl Limiter {
    pub fn new(settings: LimitSettings) -> Self {
        let settings = LimitSettings { max_concurrency: settings.max_concurrency.max(1), ..settings };
        Self {
            state: Mutex::new(LimitState {
                limit: settings.max_concurrency,
                in_flight: 0,
                paused_until: None,
                cooldown_until: None,
                successes: 0,
                starts: VecDeque::new(),
                rate_limited: 0,
            }),
            settings,
            changed: Notify::new(),
        }
    }

    pub fn settings(&self) -> LimitSettings {
        self.settings
    }

    fn lock(&self) -> MutexGuard<'_, LimitState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Why a call starting now would wait, if it would: the server asked to
    /// slow down, every slot is taken, or the request rate is reached.
    pub fn wait_reason(&self) -> Option<String> {
        let st = self.lock();
        let now = Instant::now();
        if let Some(until) = st.paused_until.filter(|u| *u > now) {
            return Some(format!("rate limited by the server: waiting {:.0} s", (until - now).as_secs_f64().ceil()));
        }
        if st.in_flight >= st.limit {
            return Some(format!("waiting for a free slot ({} of {} calls running)", st.in_flight, st.limit));
        }
        // `starts` is in time order: count the recent ones from where the old ones end.
        let recent = st.starts.len() - st.starts.partition_point(|t| now.duration_since(*t) >= WINDOW);
        match self.settings.requests_per_minute {
            Some(rpm) if recent >= rpm.max(1) as usize => Some(format!("request rate limit reached ({rpm} a minute)")),
            _ => None,
        }
    }

    /// Calls allowed at once right now.
    pub fn current_limit(&self) -> usize {
        self.lock().limit
    }

    /// Calls running now.
    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// Rate-limit answers seen so far.
    pub fn rate_limited_count(&self) -> u64 {
        self.lock().rate_limited
    }

    /// A place now, when one is free and nothing asks to wait (a pause the
    /// server asked for, the request rate); none otherwise. A pool of
    /// endpoints asks each of its limiters in turn.
    pub fn try_acquire(&self) -> Option<Permit<'_>> {
        let mut st = self.lock();
        let now = Instant::now();
        while st.starts.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
            st.starts.pop_front();
        }
        if st.paused_until.is_some_and(|until| until > now) || st.in_flight >= st.limit {
            return None;
        }
        if let Some(rpm) = self.settings.requests_per_minute {
            if st.starts.len() >= rpm.max(1) as usize {
                return None;
            }
            st.starts.push_back(now);
        }
        st.in_flight += 1;
        Some(Permit { limiter: self })
    }

    /// Wait for a place; [`ProviderError::Cancelled`] when `cancel` fires first.
    pub async fn acquire(&self, cancel: &CancellationToken) -> Result<Permit<'_>, ProviderError> {
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            // Register before looking, so a release between the look and the wait is not missed.
            notified.as_mut().enable();
            let wake_at = {
                let mut st = self.lock();
                let now = Instant::now();
                while st.starts.front().is_some_and(|t| now.duration_since(*t) >= WINDOW) {
                    st.starts.pop_front();
                }
                match st.paused_until {
                    Some(until) if until > now => Some(until),
                    _ if st.in_flight >= st.limit => None,
                    _ => match self.settings.requests_per_minute {
                        Some(rpm) if st.starts.len() >= rpm.max(1) as usize => st.starts.front().map(|t| *t + WINDOW),
                        rate => {
                            st.in_flight += 1;
                            // Starts matter only for a rate limit; without one they are not kept.
                            if rate.is_some() {
                                st.starts.push_back(now);
                            }
                            return Ok(Permit { limiter: self });
                        }
                    },
                }
            };
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                _ = &mut notified => {}
                _ = sleep_until(wake_at) => {}
            }
        }
    }

    /// The server asked to slow down: halve the limit and wait `retry_after`.
    pub fn on_rate_limited(&self, retry_after: Option<Duration>) {
        {
            let mut st = self.lock();
            let now = Instant::now();
            st.rate_limited += 1;
            st.limit = (st.limit / 2).max(1);
            st.successes = 0;
            let wait = retry_after.map(|d| d.min(MAX_RETRY_AFTER)).unwrap_or(Duration::ZERO);
            st.cooldown_until = Some(now + self.settings.recovery.max(wait));
            if !wait.is_zero() {
                st.paused_until = Some(st.paused_until.map_or(now + wait, |p| p.max(now + wait)));
            }
        }
        self.changed.notify_waiters();
    }

    /// A call succeeded: after the cool-down, grow the limit again.
    pub fn on_success(&self) {
        let grew = {
            let mut st = self.lock();
            if st.limit >= self.settings.max_concurrency {
                return;
            }
            if st.cooldown_until.is_some_and(|c| Instant::now() < c) {
                return;
            }
            st.successes += 1;
            if st.successes >= st.limit {
                st.limit += 1;
                st.successes = 0;
                true
            } else {
                false
            }
        };
        if grew {
            self.changed.notify_waiters();
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The limiter for `key` (a provider's kind, name and URL), created with
/// `settings` on first use and shared by every later caller in the process.
pub fn shared(key: &str, settings: LimitSettings) -> Arc<Limiter> {
    static LIMITERS: OnceLock<Mutex<HashMap<String, Arc<Limiter>>>> = OnceLock::new();
    let table = LIMITERS.get_or_init(Default::default);
    let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
    table.entry(key.to_owned()).or_insert_with(|| Arc::new(Limiter::new(settings))).clone()
}

/// A provider whose calls go through a [`Limiter`].
pub struct LimitedProvider {
    inner: Arc<dyn Provider>,
    limiter: Arc<Limiter>,
}

impl LimitedProvider {
    pub fn new(inner: Arc<dyn Provider>, limiter: Arc<Limiter>) -> Self {
        Self { inner, limiter }
    }

    pub fn limiter(&self) -> &Arc<Limiter> {
        &self.limiter
    }
}

#[async_trait]
impl Provider for LimitedProvider {
    delegate!(inner: info, read_ahead, context_window, structured_output, pool_status, check_pool, count_tokens);

    fn queue_note(&self) -> Option<String> {
        self.limiter.wait_reason().or_else(|| self.inner.queue_note())
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        let permit = self.limiter.acquire(cancel).await?;
        let result = self.inner.stream(request, deltas, cancel).await;
        drop(permit);
        match &result {
            Ok(_) => self.limiter.on_success(),
            Err(e) if e.is_rate_limit() => self.limiter.on_rate_limited(e.retry_after()),
            Err(_) => {}
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_limiter_says_why_a_call_would_wait() {
        let l = Limiter::new(LimitSettings { max_concurrency: 1, requests_per_minute: None, recovery: Duration::ZERO });
        assert_eq!(l.wait_reason(), None);
        let permit = l.acquire(&CancellationToken::new()).await.unwrap();
        assert_eq!(l.wait_reason().as_deref(), Some("waiting for a free slot (1 of 1 calls running)"));
        drop(permit);
        assert_eq!(l.wait_reason(), None);
        l.on_rate_limited(Some(Duration::from_secs(5)));
        assert!(l.wait_reason().unwrap().starts_with("rate limited by the server"));
    }

    #[tokio::test]
    async fn limit_shrinks_on_429_and_recovers() {
        let l = Limiter::new(LimitSettings { max_concurrency: 4, requests_per_minute: None, recovery: Duration::ZERO });
        l.on_rate_limited(None);
        assert_eq!(l.current_limit(), 2);
        l.on_rate_limited(None);
        l.on_rate_limited(None);
        assert_eq!(l.current_limit(), 1);
        l.on_success();
        assert_eq!(l.current_limit(), 2);
        l.on_success();
        assert_eq!(l.current_limit(), 2);
        for _ in 0..10 {
            l.on_success();
        }
        assert_eq!(l.current_limit(), 4);
    }

    #[tokio::test]
    async fn no_growth_during_cooldown() {
        let l = Limiter::new(LimitSettings {
            max_concurrency: 4,
            requests_per_minute: None,
            recovery: Duration::from_secs(3600),
        });
        l.on_rate_limited(None);
        for _ in 0..10 {
            l.on_success();
        }
        assert_eq!(l.current_limit(), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn requests_per_minute_spaces_starts() {
        let l = Limiter::new(LimitSettings { max_concurrency: 10, requests_per_minute: Some(2), ..Default::default() });
        let cancel = CancellationToken::new();
        let start = Instant::now();
        drop(l.acquire(&cancel).await.unwrap());
        drop(l.acquire(&cancel).await.unwrap());
        assert!(start.elapsed() < Duration::from_secs(1));
        drop(l.acquire(&cancel).await.unwrap());
        assert!(start.elapsed() >= Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_pauses_new_calls() {
        let l = Limiter::new(LimitSettings::default());
        let cancel = CancellationToken::new();
        let start = Instant::now();
        l.on_rate_limited(Some(Duration::from_secs(5)));
        drop(l.acquire(&cancel).await.unwrap());
        assert!(start.elapsed() >= Duration::from_secs(5));
    }

    #[tokio::test]
    async fn a_full_limiter_waits_for_a_release_and_honours_cancel() {
        let l = Arc::new(Limiter::new(LimitSettings { max_concurrency: 1, ..Default::default() }));
        let cancel = CancellationToken::new();
        let first = l.acquire(&cancel).await.unwrap();
        let l2 = l.clone();
        let waiter = tokio::spawn(async move {
            let c = CancellationToken::new();
            let _p = l2.acquire(&c).await.unwrap();
            l2.in_flight()
        });
        tokio::task::yield_now().await;
        assert_eq!(l.in_flight(), 1);
        drop(first);
        assert_eq!(waiter.await.unwrap(), 1);
        assert_eq!(l.in_flight(), 0);

        let _held = l.acquire(&cancel).await.unwrap();
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        assert!(matches!(l.acquire(&cancelled).await, Err(ProviderError::Cancelled)));
    }

    #[tokio::test]
    async fn try_acquire_takes_a_free_place_or_none() {
        let l = Limiter::new(LimitSettings { max_concurrency: 2, requests_per_minute: None, recovery: Duration::ZERO });
        let a = l.try_acquire().expect("a free place");
        let b = l.try_acquire().expect("a second place");
        assert!(l.try_acquire().is_none(), "both places taken");
        drop(a);
        assert_eq!(l.in_flight(), 1);
        let _c = l.try_acquire().expect("a place freed");
        drop(b);
        l.on_rate_limited(Some(Duration::from_secs(30)));
        assert!(l.try_acquire().is_none(), "paused by the server");
    }

    #[test]
    fn shared_returns_one_limiter_per_key() {
        let a = shared("test|a", LimitSettings::default());
        let b = shared("test|a", LimitSettings { max_concurrency: 1, ..Default::default() });
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &shared("test|b", LimitSettings::default())));
    }
}
