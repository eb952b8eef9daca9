//! One endpoint of a pool: its backend, its limiter, whether it is up.
//!
//! An endpoint goes **down** when a call on it fails in a way another
//! server might not (the connection is refused or breaks, a 5xx, a stream
//! cut short, a timeout), or when a health check fails. It stays down for
//! at least [`DOWN_BASE`], doubled for each failure since its last success
//! (up to [`DOWN_MAX`]). After that a passing health check brings it back
//! up; without health checks, one call is let through to try it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use tokio::time::Instant;

use crate::provider::Provider;
use crate::provider::limiter::Limiter;

/// The shortest time an endpoint stays down.
pub const DOWN_BASE: Duration = Duration::from_secs(2);
/// The longest.
pub const DOWN_MAX: Duration = Duration::from_secs(60);

#[derive(Debug, Clone)]
struct Down {
    reason: String,
    retry_at: Instant,
    /// A call is trying the endpoint again (no health checks).
    trial: bool,
}

#[derive(Debug, Default)]
struct Health {
    down: Option<Down>,
    /// Failures since the last success.
    strikes: u32,
    /// The last health check: its round trip, or why it failed.
    last_check: Option<Result<Duration, String>>,
}

/// One base URL of a pool.
pub struct Endpoint {
    /// The base URL without credentials, query or fragment: what logs and screens show.
    pub label: String,
    pub provider: Arc<dyn Provider>,
    pub limiter: Arc<Limiter>,
    /// Where a health check asks (`GET`), when checks are on.
    pub health_url: Option<reqwest::Url>,
    health: Mutex<Health>,
    served: AtomicU64,
    failed: AtomicU64,
}

/// An endpoint as `moot providers` and the run summary show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EndpointStatus {
    pub label: String,
    /// `up`, or `down: why`.
    pub state: String,
    pub in_flight: usize,
    pub limit: usize,
    /// Calls it served, and calls that failed on it, in this process.
    pub served: u64,
    pub failed: u64,
    /// The last health check: `answered in 3 ms`, `no answer: why`; none before the first.
    pub last_check: Option<String>,
}

impl Endpoint {
    pub fn new(
        label: String,
        provider: Arc<dyn Provider>,
        limiter: Arc<Limiter>,
        health_url: Option<reqwest::Url>,
    ) -> Self {
        Self {
            label,
            provider,
            limiter,
            health_url,
            health: Mutex::default(),
            served: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        }
    }

    fn health(&self) -> MutexGuard<'_, Health> {
        self.health.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn is_up(&self) -> bool {
        self.health().down.is_none()
    }

    /// Whether a call may be sent now: it is up, or (without health checks)
    /// its time down is over and no other call is trying it.
    pub fn usable(&self, checked: bool, now: Instant) -> bool {
        match &self.health().down {
            None => true,
            Some(d) => !checked && !d.trial && now >= d.retry_at,
        }
    }

    /// When it may be tried again, if it is down.
    pub fn retry_at(&self) -> Option<Instant> {
        self.health().down.as_ref().map(|d| d.retry_at)
    }

    /// A call is about to be sent to it: a down endpoint's one trial.
    pub fn begin_call(&self) {
        if let Some(d) = self.health().down.as_mut() {
            d.trial = true;
        }
    }

    /// A call succeeded: it is up.
    pub fn succeeded(&self) {
        self.served.fetch_add(1, Ordering::Relaxed);
        let mut h = self.health();
        h.down = None;
        h.strikes = 0;
    }

    /// A call failed in a way that counts against the server; returns
    /// whether this took it down (it was up).
    pub fn failed(&self, reason: &str) -> bool {
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.take_down(reason)
    }

    /// A call failed in a way that does not count against the server (a
    /// rate limit, a refused request).
    pub fn refused(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = self.health().down.as_mut() {
            d.trial = false;
        }
    }

    fn take_down(&self, reason: &str) -> bool {
        let mut h = self.health();
        h.strikes = h.strikes.saturating_add(1);
        let factor = 1u32.checked_shl(h.strikes - 1).unwrap_or(u32::MAX);
        let wait = DOWN_BASE.saturating_mul(factor).min(DOWN_MAX);
        let was_up = h.down.is_none();
        h.down = Some(Down { reason: reason.to_string(), retry_at: Instant::now() + wait, trial: false });
        was_up
    }

    /// A health check's result: a failure takes an up endpoint down; a pass
    /// brings a down one back once its time down is over. Returns whether
    /// the state changed.
    pub fn checked(&self, result: Result<Duration, String>) -> bool {
        let changed = match &result {
            Ok(_) => {
                let mut h = self.health();
                let back = h.down.as_ref().is_some_and(|d| Instant::now() >= d.retry_at);
                if back {
                    h.down = None;
                }
                back
            }
            Err(e) => self.is_up() && self.take_down(&format!("health check: {e}")),
        };
        self.health().last_check = Some(result);
        changed
    }

    pub fn status(&self) -> EndpointStatus {
        let health = self.health();
        let state = match &health.down {
            None => "up".to_string(),
            Some(d) => format!("down: {}", d.reason),
        };
        let last_check = health.last_check.as_ref().map(|c| match c {
            Ok(took) => format!("answered in {} ms", took.as_millis()),
            Err(e) => format!("no answer: {e}"),
        });
        drop(health);
        EndpointStatus {
            label: self.label.clone(),
            state,
            in_flight: self.limiter.in_flight(),
            limit: self.limiter.current_limit(),
            served: self.served.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            last_check,
        }
    }
}

/// A base URL as logs may show it: no user, password, query or fragment,
/// no trailing slash.
pub fn label(base_url: &str) -> String {
    match reqwest::Url::parse(base_url.trim()) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.set_query(None);
            url.set_fragment(None);
            url.as_str().trim_end_matches('/').to_string()
        }
        // Checked when the configuration was read; never echo what could not be parsed.
        Err(_) => "(invalid URL)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::limiter::LimitSettings;

    fn endpoint() -> Endpoint {
        let provider: Arc<dyn Provider> = Arc::new(crate::testkit::scripted::ScriptedProvider::new(|_, _| "ok".into()));
        Endpoint::new("http://a/v1".into(), provider, Arc::new(Limiter::new(LimitSettings::default())), None)
    }

    #[test]
    fn labels_carry_no_credentials_or_query() {
        assert_eq!(label("http://user:secret@gpu1:8000/v1/?key=sk-1#x"), "http://gpu1:8000/v1");
        assert_eq!(label("https://api.example.com/v1"), "https://api.example.com/v1");
        assert_eq!(label("not a url"), "(invalid URL)");
    }

    #[tokio::test(start_paused = true)]
    async fn down_for_longer_after_each_failure_and_up_after_a_success() {
        let e = endpoint();
        assert!(e.failed("connection refused"));
        assert!(!e.usable(false, Instant::now()));
        tokio::time::advance(DOWN_BASE).await;
        assert!(e.usable(false, Instant::now()), "its time down is over: one call may try it");
        assert!(!e.usable(true, Instant::now()), "with health checks, a check must pass first");
        e.begin_call();
        assert!(!e.usable(false, Instant::now()), "one trial at a time");
        assert!(!e.failed("connection refused"), "it was down already");
        tokio::time::advance(DOWN_BASE).await;
        assert!(!e.usable(false, Instant::now()), "twice as long the second time");
        tokio::time::advance(DOWN_BASE).await;
        assert!(e.usable(false, Instant::now()));
        e.succeeded();
        assert!(e.is_up());
        assert_eq!(e.status().state, "up");
        assert_eq!((e.status().served, e.status().failed), (1, 2));
    }

    #[tokio::test(start_paused = true)]
    async fn health_checks_take_it_down_and_bring_it_back() {
        let e = endpoint();
        assert!(e.checked(Err("connection refused".into())));
        assert_eq!(e.status().state, "down: health check: connection refused");
        assert!(!e.checked(Ok(Duration::from_millis(3))), "not before its time down is over");
        tokio::time::advance(DOWN_BASE).await;
        assert!(e.checked(Ok(Duration::from_millis(3))));
        assert!(e.is_up());
    }
}
