//! Building a pool from a provider's settings: one backend per base URL,
//! each with its own limiter and health URL.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use super::endpoint::{Endpoint, label};
use super::health::HealthCheck;
use super::{PoolProvider, PoolSettings};
use crate::provider::limiter::{self, LimitSettings};
use crate::provider::{Provider, ProviderError};

/// What a pool is built from.
pub struct PoolSpec<'a> {
    pub name: &'a str,
    /// `openai` or `anthropic`.
    pub kind: &'a str,
    pub urls: &'a [String],
    /// Limits of each endpoint.
    pub limits: LimitSettings,
    pub affinity: bool,
    /// Health checks: how often, and the path under each base URL.
    pub health: Option<(Duration, &'a str)>,
    /// The key the provider's calls send, for the health checks to send too.
    pub api_key: Option<&'a str>,
}

/// The pool of `spec`, with `make` building the backend of one base URL.
pub fn pool(
    spec: &PoolSpec<'_>,
    make: impl Fn(&str) -> Result<Arc<dyn Provider>, ProviderError>,
) -> Result<PoolProvider, ProviderError> {
    let mut endpoints = Vec::with_capacity(spec.urls.len());
    for url in spec.urls {
        let provider = make(url)?;
        // Shared by key, as a provider with one base URL: two pools naming one server share its limit.
        let limiter = limiter::shared(&format!("{}|{}|{url}", spec.kind, spec.name), spec.limits);
        let health_url = match spec.health {
            Some((_, path)) => Some(health_url(url, path)?),
            None => None,
        };
        endpoints.push(Endpoint::new(label(url), provider, limiter, health_url));
    }
    let health = match spec.health {
        Some((every, _)) => {
            Some(HealthCheck::new(auth_headers(spec.kind, spec.api_key)?, every).map_err(ProviderError::Config)?)
        }
        None => None,
    };
    PoolProvider::new(spec.name, endpoints, PoolSettings { affinity: spec.affinity, health })
}

/// `path` under `base_url` (`models` under `http://h/v1` is `http://h/v1/models`;
/// `../health` is `http://h/health`).
pub fn health_url(base_url: &str, path: &str) -> Result<reqwest::Url, ProviderError> {
    crate::provider::http::url_under(base_url, path).map_err(|e| match e {
        crate::provider::http::UrlError::Base(e) => {
            ProviderError::Config(format!("invalid base URL {}: {e}", label(base_url)))
        }
        crate::provider::http::UrlError::Path(e) => ProviderError::Config(format!("invalid health_path {path:?}: {e}")),
    })
}

/// The headers a health check sends: the provider's key as its calls send it.
fn auth_headers(kind: &str, key: Option<&str>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    let bad = || ProviderError::Config("API key contains characters not allowed in a header".into());
    match (kind, key) {
        ("anthropic", key) => {
            headers.insert("anthropic-version", HeaderValue::from_static(crate::provider::anthropic::API_VERSION));
            if let Some(key) = key {
                let mut value = HeaderValue::from_str(key).map_err(|_| bad())?;
                value.set_sensitive(true);
                headers.insert("x-api-key", value);
            }
        }
        (_, Some(key)) => {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| bad())?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        (_, None) => {}
    }
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_urls_sit_under_the_base_url() {
        assert_eq!(health_url("http://h:8000/v1", "models").unwrap().as_str(), "http://h:8000/v1/models");
        assert_eq!(health_url("http://h:8000/v1/", "../health").unwrap().as_str(), "http://h:8000/health");
    }

    #[test]
    fn checks_send_the_key_as_calls_do() {
        let h = auth_headers("openai", Some("sk-1")).unwrap();
        assert_eq!(h[AUTHORIZATION], "Bearer sk-1");
        assert!(h[AUTHORIZATION].is_sensitive());
        let h = auth_headers("anthropic", Some("k")).unwrap();
        assert_eq!(h["x-api-key"], "k");
        assert!(auth_headers("openai", None).unwrap().is_empty());
    }
}
