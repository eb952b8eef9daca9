//! Health checks: a `GET` of each endpoint's health URL (by default
//! `{base_url}/models`, which OpenAI-compatible servers — vLLM, SGLang,
//! llama.cpp's server — and Anthropic's API answer) every few seconds.
//!
//! An answer below 500 means the server is there (a 401 or 404 too: it
//! answered); a refused or broken connection, a timeout or a 5xx means it is
//! not. The checks run in a task of their own while the pool is in use and
//! end with it.

use std::sync::Weak;
use std::time::Duration;

use reqwest::header::HeaderMap;
use tokio::time::Instant;

use super::PoolInner;
use super::endpoint::Endpoint;
use crate::provider::http::error_chain;

/// The longest a health check waits for its answer.
pub const CHECK_TIMEOUT: Duration = Duration::from_secs(3);

/// How a pool checks its endpoints.
#[derive(Clone)]
pub struct HealthCheck {
    pub client: reqwest::Client,
    /// Sent with every check (the provider's key, as its calls send it). Never logged.
    pub headers: HeaderMap,
    pub every: Duration,
}

impl std::fmt::Debug for HealthCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HealthCheck").field("every", &self.every).finish_non_exhaustive()
    }
}

impl HealthCheck {
    /// A client for checks, with `headers` sent each time.
    pub fn new(headers: HeaderMap, every: Duration) -> Result<Self, String> {
        let client = reqwest::Client::builder()
            .connect_timeout(CHECK_TIMEOUT)
            .timeout(CHECK_TIMEOUT)
            .user_agent(concat!("moot/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the health check's HTTP client: {}", error_chain(&e)))?;
        Ok(Self { client, headers, every })
    }

    /// Check one endpoint once: the round trip, or why it is not there.
    pub async fn probe(&self, endpoint: &Endpoint) -> Option<Result<Duration, String>> {
        let url = endpoint.health_url.clone()?;
        let started = Instant::now();
        let result = self.client.get(url).headers(self.headers.clone()).send().await;
        Some(match result {
            Ok(r) if r.status().as_u16() < 500 => Ok(started.elapsed()),
            Ok(r) => Err(format!("HTTP {}", r.status().as_u16())),
            Err(e) if e.is_timeout() => Err(format!("no answer in {} s", CHECK_TIMEOUT.as_secs())),
            Err(e) => Err(short_error(&e)),
        })
    }
}

/// A connection error in a few words ("connection refused"), not reqwest's whole chain.
fn short_error(e: &reqwest::Error) -> String {
    let chain = error_chain(e);
    let lower = chain.to_ascii_lowercase();
    for known in ["connection refused", "connection reset", "no route to host", "dns error", "tls"] {
        if lower.contains(known) {
            return known.to_string();
        }
    }
    chain
}

/// Check every endpoint of the pool every `every`, until the pool is dropped.
pub async fn run(pool: Weak<PoolInner>, check: HealthCheck) {
    loop {
        tokio::time::sleep(check.every).await;
        let Some(pool) = pool.upgrade() else { return };
        let probes = pool.endpoints.iter().map(|e| check.probe(e));
        let results = futures::future::join_all(probes).await;
        for (i, result) in results.into_iter().enumerate() {
            if let Some(result) = result {
                let went_down = result.is_err() && pool.endpoints[i].is_up();
                if pool.endpoints[i].checked(result) {
                    pool.changed(i, went_down);
                }
            }
        }
    }
}
