//! A pool of endpoints: one provider served by several base URLs (replicas
//! of one model behind no router, or several routers).
//!
//! Each call goes to one endpoint, chosen in this order:
//! 1. only endpoints that are up (see [`endpoint`]) and have a free place
//!    under their own limiter (`max_concurrency` and `requests_per_minute`
//!    apply to each endpoint, and 429s halve that endpoint's limit);
//! 2. with affinity on, the endpoints that hold the request's longest
//!    remembered prefix first (see [`affinity`]), so a debate's calls stay
//!    where the server's prefix cache has them — unless every endpoint that
//!    has served calls holds that prefix (what every request shares, the
//!    system prompt), or
//!    the prefix covers less than half of the request ([`MIN_SHARE`]) and
//!    the endpoint is far busier than the least busy one (not fewer calls
//!    in flight than the least busy's plus half its limit);
//! 3. then the fewest calls in flight (least outstanding requests).
//!
//! When every endpoint is busy the call waits for a free place; a call whose
//! prefix covers at least half of it waits for a place on an endpoint that
//! holds it, unless another endpoint is less than half busy. When every
//! endpoint is down, calls try them all the same.
//!
//! **Failover.** A call that fails before any of its reply arrived (the
//! connection refused, an HTTP error status, no first token in time) is
//! sent at once to another endpoint, within the same attempt: nothing was
//! streamed, so nothing is taken back. A call that fails mid-stream (the
//! stream cut, an idle timeout) returns its error, naming the endpoint, to
//! the retry loop ([`crate::provider::retry`]), which records the failed
//! attempt and tries again after its backoff; the endpoint is down by then,
//! so the next attempt goes elsewhere. Either way the endpoint that failed
//! goes down.
//!
//! Every reply names the endpoint that served it ([`Completion::endpoint`]),
//! which the session log records on the turn.

pub mod affinity;
pub mod build;
pub mod endpoint;
pub mod health;

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use serde::Serialize;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limiter::Permit;
use super::{ChatMessage, ChatRequest, Completion, DeltaSender, Provider, ProviderError, ProviderInfo, TimeoutKind};
use affinity::{Match, PrefixTable, Prefixes};
pub use endpoint::{Endpoint, EndpointStatus};
use health::HealthCheck;

/// The most endpoints a pool may have.
pub const MAX_ENDPOINTS: usize = 64;
/// The share of a request its longest remembered prefix must cover for its
/// holders to keep it while far busier than the least busy endpoint (as
/// SGLang's router's cache threshold); a shorter match is worth less than
/// the balance.
pub const MIN_SHARE: f64 = 0.5;
/// How often a call waiting for a free place looks again, besides being woken
/// when a place frees (a pause a server asked for ends on its own).
const WAIT_TICK: Duration = Duration::from_millis(50);

/// How a pool spreads its calls.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Keep calls that share a prefix on the endpoint that holds it.
    pub affinity: bool,
    /// Health checks; none checks nothing (a down endpoint is tried again by a call).
    pub health: Option<HealthCheck>,
}

/// Where the calls of a pool went, for the run summary and `moot providers`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct PoolStatus {
    pub name: String,
    pub affinity: bool,
    pub endpoints: Vec<EndpointStatus>,
    /// Calls served.
    pub calls: u64,
    /// Served calls whose prefix an endpoint already held (all but a
    /// conversation's first).
    pub with_home: u64,
    /// Of those, calls served by an endpoint that held it.
    pub stayed: u64,
    /// Calls sent on to another endpoint after one failed before replying.
    pub failovers: u64,
    /// Times an endpoint went down.
    pub downs: u64,
}

impl PoolStatus {
    /// One line for the run summary.
    pub fn summary_line(&self) -> String {
        let up = self.endpoints.iter().filter(|e| e.state == "up").count();
        let mut line = format!(
            "pool {}: {} calls over {} endpoints ({} up now); {}",
            self.name,
            self.calls,
            self.endpoints.len(),
            up,
            self.endpoints.iter().map(|e| format!("{} {}", e.label, e.served)).collect::<Vec<_>>().join(", ")
        );
        if self.affinity {
            let share = if self.with_home == 0 { 100.0 } else { 100.0 * self.stayed as f64 / self.with_home as f64 };
            line.push_str(&format!(
                "; affinity: {} of {} calls with a known prefix stayed on its endpoint ({share:.1}%)",
                self.stayed, self.with_home
            ));
        }
        if self.failovers > 0 || self.downs > 0 {
            line.push_str(&format!("; {} failovers, {} times an endpoint went down", self.failovers, self.downs));
        }
        line
    }
}

/// The shared state of a pool (the health checks hold it weakly).
pub struct PoolInner {
    name: String,
    pub(crate) endpoints: Vec<Endpoint>,
    settings: PoolSettings,
    table: Mutex<PrefixTable>,
    /// A place freed or an endpoint came back.
    released: Notify,
    checks_started: AtomicBool,
    /// Where ties between equally busy endpoints start, turned each call.
    turn: AtomicUsize,
    calls: AtomicU64,
    with_home: AtomicU64,
    stayed: AtomicU64,
    failovers: AtomicU64,
    downs: AtomicU64,
}

impl PoolInner {
    fn table(&self) -> MutexGuard<'_, PrefixTable> {
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Endpoint `index` changed state (a health check): wake waiting calls;
    /// one that went down has lost its cache.
    pub(crate) fn changed(&self, index: usize, went_down: bool) {
        if went_down {
            self.downs.fetch_add(1, Ordering::Relaxed);
            self.table().forget_endpoint(index);
        }
        self.released.notify_waiters();
    }
}

/// A provider whose calls are spread over several endpoints; see the module documentation.
pub struct PoolProvider {
    inner: Arc<PoolInner>,
}

/// How a call's endpoint was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placement {
    /// No endpoint held any of its prefix.
    New,
    /// Sent to an endpoint holding its longest known prefix.
    Stayed,
    /// Holders were down or busy: sent elsewhere.
    Moved,
}

/// A place on an endpoint; wakes waiting calls when released.
struct Slot<'a> {
    permit: Option<Permit<'a>>,
    released: &'a Notify,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        // Free the place first, then wake: a woken call must find it free.
        drop(self.permit.take());
        self.released.notify_waiters();
    }
}

impl PoolProvider {
    /// A pool of `endpoints` (at least one, at most [`MAX_ENDPOINTS`]).
    pub fn new(name: &str, endpoints: Vec<Endpoint>, settings: PoolSettings) -> Result<Self, ProviderError> {
        if endpoints.is_empty() || endpoints.len() > MAX_ENDPOINTS {
            return Err(ProviderError::Config(format!(
                "a pool takes 1 to {MAX_ENDPOINTS} endpoints, not {}",
                endpoints.len()
            )));
        }
        Ok(Self {
            inner: Arc::new(PoolInner {
                name: name.to_string(),
                endpoints,
                settings,
                table: Mutex::default(),
                released: Notify::new(),
                checks_started: AtomicBool::new(false),
                turn: AtomicUsize::new(0),
                calls: AtomicU64::new(0),
                with_home: AtomicU64::new(0),
                stayed: AtomicU64::new(0),
                failovers: AtomicU64::new(0),
                downs: AtomicU64::new(0),
            }),
        })
    }

    pub fn endpoints(&self) -> &[Endpoint] {
        &self.inner.endpoints
    }

    /// Start the health checks, once, from within a runtime.
    fn start_checks(&self) {
        let Some(check) = self.inner.settings.health.clone() else { return };
        if self.inner.checks_started.swap(true, Ordering::AcqRel) {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(health::run(Arc::downgrade(&self.inner), check));
        }
    }

    /// Check every endpoint once now (for `moot providers`): each one's
    /// round trip or why it is not there; none without health checks.
    pub async fn probe_all(&self) -> Vec<Option<Result<Duration, String>>> {
        let Some(check) = &self.inner.settings.health else {
            return vec![None; self.inner.endpoints.len()];
        };
        let probes = self.inner.endpoints.iter().map(|e| check.probe(e));
        let results = futures::future::join_all(probes).await;
        for (e, r) in self.inner.endpoints.iter().zip(&results) {
            if let Some(r) = r {
                e.checked(r.clone());
            }
        }
        results
    }

    /// Take a place on the best endpoint not in `avoid`, waiting while all are busy.
    async fn acquire(
        &self,
        prefixes: &Prefixes,
        avoid: u64,
        cancel: &CancellationToken,
    ) -> Result<(usize, Slot<'_>, Placement), ProviderError> {
        loop {
            let notified = self.inner.released.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(found) = self.try_place(prefixes, avoid) {
                return Ok(found);
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(ProviderError::Cancelled),
                _ = &mut notified => {}
                _ = tokio::time::sleep(WAIT_TICK) => {}
            }
        }
    }

    /// A place on the best endpoint that has one now; see the module documentation.
    fn try_place(&self, prefixes: &Prefixes, avoid: u64) -> Option<(usize, Slot<'_>, Placement)> {
        let p = &self.inner;
        let now = Instant::now();
        let checked = p.settings.health.is_some();
        let open = |i: &usize| avoid & (1u64 << i) == 0;
        let mut candidates: Vec<usize> =
            (0..p.endpoints.len()).filter(open).filter(|&i| p.endpoints[i].usable(checked, now)).collect();
        if candidates.is_empty() {
            // Every endpoint left is down: try them all the same, the one back soonest first.
            candidates = (0..p.endpoints.len()).filter(open).collect();
            candidates.sort_by_key(|&i| p.endpoints[i].retry_at());
        } else {
            let start = p.turn.fetch_add(1, Ordering::Relaxed);
            let n = p.endpoints.len();
            candidates.sort_by_key(|&i| (p.endpoints[i].limiter.in_flight(), (i + n - start % n) % n));
        }
        // The table stays locked until the choice is recorded, so that calls
        // placed at once (a group's first evaluations) see each other.
        let mut table = (p.settings.affinity && !prefixes.is_empty()).then(|| p.table());
        let found = table.as_ref().map_or(Match::NONE, |t| t.longest(prefixes));
        let Match { holders, last, share, past_first } = found;
        // A prefix that every endpoint in reach that has served calls holds
        // is what every request shares (the system prompt): no endpoint is
        // the better for it. While one endpoint alone has served (a run's
        // first calls), a prefix past the system prompt is a home all the same.
        let reach = candidates.iter().fold(0u64, |m, &i| m | (1u64 << i));
        let served = table.as_ref().map_or(0, |t| t.served()) & reach;
        let common = holders & served == served && (served.count_ones() >= 2 || !past_first);
        let holders = if common { 0 } else { holders };
        // Holders first (the one the prefix went to last before the others);
        // for a short match, only while not far busier than the least busy endpoint.
        let least = candidates.iter().map(|&i| p.endpoints[i].limiter.in_flight()).min().unwrap_or(0);
        let preferred = |i: usize| {
            let e = &p.endpoints[i];
            holders & (1u64 << i) != 0
                && (share >= MIN_SHARE || e.limiter.in_flight() < least + (e.limiter.current_limit() / 2).max(2))
        };
        candidates.sort_by_key(|&i| (!preferred(i), holders == 0 || last != Some(i)));
        // A long match whose holders are all full waits for one of them (a
        // server queues such calls anyway, and its cache has them), unless
        // another endpoint is less than half busy.
        let room = |i: usize| p.endpoints[i].limiter.in_flight() < p.endpoints[i].limiter.current_limit();
        let held = |i: usize| holders & (1u64 << i) != 0;
        if share >= MIN_SHARE
            && holders & reach != 0
            && !candidates.iter().any(|&i| held(i) && room(i))
            && !candidates.iter().any(|&i| {
                let e = &p.endpoints[i];
                !held(i) && e.limiter.in_flight() < e.limiter.current_limit() / 2
            })
        {
            return None;
        }
        for i in candidates {
            if let Some(permit) = p.endpoints[i].limiter.try_acquire() {
                let placement = match holders {
                    0 => Placement::New,
                    h if h & (1u64 << i) != 0 => Placement::Stayed,
                    _ => Placement::Moved,
                };
                if let Some(t) = table.as_mut() {
                    t.record(prefixes, i);
                }
                p.endpoints[i].begin_call();
                return Some((i, Slot { permit: Some(permit), released: &p.released }, placement));
            }
        }
        None
    }

    fn count(&self, placement: Placement) {
        let p = &self.inner;
        p.calls.fetch_add(1, Ordering::Relaxed);
        if placement != Placement::New {
            p.with_home.fetch_add(1, Ordering::Relaxed);
        }
        if placement == Placement::Stayed {
            p.stayed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An endpoint failed in a way that counts against it: down, its cache forgotten.
    fn endpoint_failed(&self, index: usize, error: &ProviderError) {
        let p = &self.inner;
        if p.endpoints[index].failed(&short(error)) {
            p.changed(index, true);
        }
    }
}

/// Whether an error came before any of the reply (nothing was streamed).
fn before_reply(error: &ProviderError) -> bool {
    matches!(
        error,
        ProviderError::Connect(_)
            | ProviderError::Http { .. }
            | ProviderError::Timeout(TimeoutKind::Connect | TimeoutKind::FirstToken, _)
    )
}

/// An error in a few words, for an endpoint's state.
fn short(error: &ProviderError) -> String {
    let text = match error {
        ProviderError::Http { status, .. } => format!("HTTP {status}"),
        other => other.to_string(),
    };
    super::http::excerpt(&text, 80)
}

/// `error` with the endpoint it happened on named.
fn on_endpoint(error: ProviderError, label: &str) -> ProviderError {
    let at = |m: String| format!("{m} (endpoint {label})");
    match error {
        ProviderError::Http { status, body, retry_after } => {
            ProviderError::Http { status, body: at(body), retry_after }
        }
        ProviderError::Connect(m) => ProviderError::Connect(at(m)),
        ProviderError::Incomplete(m) => ProviderError::Incomplete(at(m)),
        ProviderError::Protocol(m) => ProviderError::Protocol(at(m)),
        ProviderError::Server { message, retryable } => ProviderError::Server { message: at(message), retryable },
        other => other,
    }
}

#[async_trait]
impl Provider for PoolProvider {
    fn info(&self) -> ProviderInfo {
        let mut info = self.inner.endpoints[0].provider.info();
        let labels: Vec<&str> = self.inner.endpoints.iter().map(|e| e.label.as_str()).collect();
        info.base_url = Some(labels.join(", "));
        info
    }

    fn queue_note(&self) -> Option<String> {
        let p = &self.inner;
        let checked = p.settings.health.is_some();
        let now = Instant::now();
        let usable: Vec<&Endpoint> = p.endpoints.iter().filter(|e| e.usable(checked, now)).collect();
        if usable.is_empty() {
            return Some(format!("every endpoint of {} is down", p.name));
        }
        if usable.iter().all(|e| e.limiter.wait_reason().is_some()) {
            let running: usize = usable.iter().map(|e| e.limiter.in_flight()).sum();
            return Some(format!("waiting for a free slot on {} endpoints ({running} calls running)", usable.len()));
        }
        None
    }

    fn context_window(&self, model: &str) -> Option<u64> {
        self.inner.endpoints[0].provider.context_window(model)
    }

    fn structured_output(&self) -> Option<String> {
        self.inner.endpoints[0].provider.structured_output()
    }

    fn pool_status(&self) -> Option<PoolStatus> {
        let p = &self.inner;
        Some(PoolStatus {
            name: p.name.clone(),
            affinity: p.settings.affinity,
            endpoints: p.endpoints.iter().map(Endpoint::status).collect(),
            calls: p.calls.load(Ordering::Relaxed),
            with_home: p.with_home.load(Ordering::Relaxed),
            stayed: p.stayed.load(Ordering::Relaxed),
            failovers: p.failovers.load(Ordering::Relaxed),
            downs: p.downs.load(Ordering::Relaxed),
        })
    }

    async fn check_pool(&self) -> Option<PoolStatus> {
        self.probe_all().await;
        self.pool_status()
    }

    async fn count_tokens(&self, model: &str, messages: &[ChatMessage]) -> Result<u64, ProviderError> {
        self.inner.endpoints[0].provider.count_tokens(model, messages).await
    }

    async fn stream(
        &self,
        request: &ChatRequest,
        deltas: &DeltaSender,
        cancel: &CancellationToken,
    ) -> Result<Completion, ProviderError> {
        self.start_checks();
        let prefixes = if self.inner.settings.affinity { Prefixes::of(&request.messages) } else { Prefixes::default() };
        let all = if self.inner.endpoints.len() >= 64 { u64::MAX } else { (1u64 << self.inner.endpoints.len()) - 1 };
        let mut avoid = 0u64;
        loop {
            let (i, slot, placement) = self.acquire(&prefixes, avoid, cancel).await?;
            let endpoint = &self.inner.endpoints[i];
            let result = endpoint.provider.stream(request, deltas, cancel).await;
            drop(slot);
            let error = match result {
                Ok(mut completion) => {
                    endpoint.succeeded();
                    endpoint.limiter.on_success();
                    self.count(placement);
                    completion.endpoint = Some(endpoint.label.clone());
                    return Ok(completion);
                }
                Err(ProviderError::Cancelled) => {
                    endpoint.refused();
                    return Err(ProviderError::Cancelled);
                }
                Err(e) => e,
            };
            if error.is_rate_limit() {
                endpoint.limiter.on_rate_limited(error.retry_after());
                endpoint.refused();
            } else if error.is_stale_connection() {
                // A kept-alive connection the server was closing: nothing wrong with the server.
                endpoint.refused();
            } else if error.is_retryable() {
                self.endpoint_failed(i, &error);
            } else {
                endpoint.refused();
            }
            avoid |= 1u64 << i;
            if error.is_retryable() && before_reply(&error) && avoid & all != all && !cancel.is_cancelled() {
                self.inner.failovers.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    "pool {}: {} failed ({}); trying another endpoint",
                    self.inner.name,
                    endpoint.label,
                    short(&error)
                );
                continue;
            }
            return Err(on_endpoint(error, &endpoint.label));
        }
    }
}

#[cfg(test)]
mod tests;
