//! The pool settings of a provider table: `base_urls`, `affinity`,
//! `health_check_interval`, `health_path` (see `docs/scale.md`).
//!
//! A provider with several base URLs — `base_urls = [...]` in its table, or
//! `OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` holding several URLs separated
//! by commas — is one pool ([`crate::provider::pool`]); its
//! `max_concurrency` and `requests_per_minute` apply to each endpoint.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::registry::RegistryError;
use super::{ConfigError, ProviderConfig, ProviderKind, line_of_table};
use crate::provider::pool::MAX_ENDPOINTS;
use crate::provider::pool::build::PoolSpec;
use crate::provider::{Provider, ProviderError};

/// Seconds between health checks when the table does not say.
pub const DEFAULT_HEALTH_INTERVAL: f64 = 5.0;
/// What a health check asks for under each base URL when the table does not say.
pub const DEFAULT_HEALTH_PATH: &str = "models";

impl ProviderConfig {
    /// The base URLs of the table: `base_urls`, else `base_url`; none when neither is set.
    pub fn urls(&self) -> Option<Vec<String>> {
        self.base_urls.clone().or_else(|| self.base_url.clone().map(|u| vec![u]))
    }

    /// Seconds between health checks; none when they are off.
    pub fn health_interval(&self) -> Option<Duration> {
        let secs = self.health_check_interval.unwrap_or(DEFAULT_HEALTH_INTERVAL);
        (secs > 0.0).then(|| Duration::from_secs_f64(secs))
    }

    /// Whether a pool keeps calls sharing a prefix on one endpoint.
    pub fn affinity_on(&self) -> bool {
        self.affinity.unwrap_or(true)
    }

    /// The health check's path under each base URL.
    pub fn health_path(&self) -> &str {
        self.health_path.as_deref().unwrap_or(DEFAULT_HEALTH_PATH)
    }
}

/// The pool of provider `name` over `urls`, `make` building each endpoint's backend.
pub(super) fn build(
    name: &str,
    kind: &str,
    urls: &[String],
    pc: &ProviderConfig,
    api_key: Option<&str>,
    make: impl Fn(&str) -> Result<Arc<dyn Provider>, ProviderError>,
) -> Result<Arc<dyn Provider>, RegistryError> {
    let spec = PoolSpec {
        name,
        kind,
        urls,
        limits: pc.limits(),
        affinity: pc.affinity_on(),
        health: pc.health_interval().map(|every| (every, pc.health_path())),
        api_key,
    };
    let pool = crate::provider::pool::build::pool(&spec, make)
        .map_err(|e| RegistryError::Build { name: name.into(), message: e.to_string() })?;
    Ok(Arc::new(pool))
}

/// A pool's rows for `moot providers`: field, value, where it came from
/// (`from_file` names the config file). None for fewer than two URLs.
pub(super) fn settings(
    c: &ProviderConfig,
    urls: usize,
    from_file: &dyn Fn() -> String,
) -> Vec<(&'static str, String, String)> {
    if urls < 2 {
        return Vec::new();
    }
    let set = |v: bool| if v { from_file() } else { "built-in default".to_string() };
    let checks = match c.health_interval() {
        Some(every) => format!("every {} s: GET {}", every.as_secs_f64(), c.health_path()),
        None => "off".into(),
    };
    vec![
        (
            "pool",
            format!("{urls} endpoints; max_concurrency and requests_per_minute apply to each"),
            "several base URLs".into(),
        ),
        ("affinity", if c.affinity_on() { "on" } else { "off" }.into(), set(c.affinity.is_some())),
        ("health_check", checks, set(c.health_check_interval.is_some() || c.health_path.is_some())),
    ]
}

/// Several URLs from an environment variable (`OPENAI_BASE_URL=http://a/v1,http://b/v1`).
pub fn split_urls(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|u| !u.is_empty()).map(str::to_owned).collect()
}

/// What the table's pool settings may not be, with the line to fix.
pub(super) fn check(
    text: &str,
    path: &Path,
    name: &str,
    p: &ProviderConfig,
    kind: Option<ProviderKind>,
) -> Result<(), ConfigError> {
    let invalid = |field: &str, message: String| ConfigError::Invalid {
        path: path.to_owned(),
        line: line_of_key(text, name, field),
        field: format!("providers.{name}.{field}"),
        message,
    };
    if p.base_urls.is_some() && p.base_url.is_some() {
        return Err(invalid("base_urls", "set base_url or base_urls, not both".into()));
    }
    let pooled = p.base_urls.is_some();
    if kind == Some(ProviderKind::Local) {
        for field in ["base_urls", "affinity", "health_check_interval", "health_path"] {
            let set = match field {
                "base_urls" => pooled,
                "affinity" => p.affinity.is_some(),
                "health_check_interval" => p.health_check_interval.is_some(),
                _ => p.health_path.is_some(),
            };
            if set {
                return Err(invalid(field, "the embedded model has no endpoints; this is for HTTP providers".into()));
            }
        }
    }
    Ok(())
}

/// The line of `key` in `[providers.<name>]`, else the table's line.
pub(super) fn line_of_key(text: &str, name: &str, key: &str) -> usize {
    let table = line_of_table(text, name);
    text.lines()
        .enumerate()
        .skip(table)
        .take_while(|(_, l)| !l.trim_start().starts_with('['))
        .find(|(_, l)| l.split('=').next().is_some_and(|k| k.trim().trim_matches('"') == key))
        .map_or(table, |(i, _)| i + 1)
}

pub(super) fn http_urls<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let urls = Vec::<String>::deserialize(d)?;
    if urls.is_empty() || urls.len() > MAX_ENDPOINTS {
        return Err(serde::de::Error::custom(format!("must list 1 to {MAX_ENDPOINTS} base URLs")));
    }
    let mut seen = Vec::new();
    for (i, u) in urls.iter().enumerate() {
        let url = reqwest::Url::parse(u.trim())
            .map_err(|e| serde::de::Error::custom(format!("URL {} is not a URL ({e})", i + 1)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(serde::de::Error::custom(format!("URL {} must start with http:// or https://", i + 1)));
        }
        let key = url.as_str().trim_end_matches('/').to_string();
        if seen.contains(&key) {
            return Err(serde::de::Error::custom(format!("URL {} is listed twice", i + 1)));
        }
        seen.push(key);
    }
    Ok(Some(urls.iter().map(|u| u.trim().to_owned()).collect()))
}

pub(super) fn interval<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = super::number(d)?;
    if !(v.is_finite() && (0.0..=3600.0).contains(&v)) {
        return Err(serde::de::Error::custom("must be a number of seconds from 0 (no checks) to 3600"));
    }
    Ok(Some(v))
}

pub(super) fn health_path<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    let s = s.trim().trim_start_matches('/').to_string();
    if s.contains(['?', '#', ' ']) || s.contains("://") {
        return Err(serde::de::Error::custom("must be a path under the base URL, such as \"models\" or \"../health\""));
    }
    Ok(Some(s))
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("moot.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_pool_reads_its_urls_and_settings() {
        let c = parse(
            "[providers.vllm]\nkind = \"openai\"\nbase_urls = [\"http://gpu1:8000/v1\", \"http://gpu2:8000/v1\"]\n\
             affinity = false\nhealth_check_interval = 0\nhealth_path = \"/../health\"\n",
        )
        .unwrap();
        let p = &c.providers["vllm"];
        assert_eq!(p.urls().unwrap(), ["http://gpu1:8000/v1", "http://gpu2:8000/v1"]);
        assert!(!p.affinity_on());
        assert_eq!(p.health_interval(), None);
        assert_eq!(p.health_path(), "../health");
        let d = ProviderConfig::default();
        assert!(d.affinity_on());
        assert_eq!(d.health_interval(), Some(Duration::from_secs(5)));
        assert_eq!(d.health_path(), "models");
        assert_eq!(split_urls(" http://a/v1 ,http://b/v1,"), ["http://a/v1", "http://b/v1"]);
    }

    #[test]
    fn several_urls_build_a_pool_shown_with_its_settings() {
        use super::super::registry::Registry;
        let c =
            parse("[providers.p]\nkind = \"openai\"\nbase_urls = [\"http://a:1/v1\", \"http://b:1/v1\"]\n").unwrap();
        let mut r = Registry::with_config(c, |k| (k == "OPENAI_API_KEY").then(|| "sk-never-sent".to_string()));
        let pool = r.get("p", "", "test").unwrap().pool_status().expect("a pool");
        let labels: Vec<&str> = pool.endpoints.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["http://a:1/v1", "http://b:1/v1"]);
        assert!(pool.affinity);
        let s = r.summary("p").unwrap();
        let field = |f: &str| s.settings.iter().find(|x| x.field == f).map(|x| x.value.clone());
        assert_eq!(field("base_urls").as_deref(), Some("http://a:1/v1, http://b:1/v1"));
        assert!(field("pool").unwrap().starts_with("2 endpoints"));
        assert_eq!(field("health_check").as_deref(), Some("every 5 s: GET models"));
        assert_eq!(field("api_key").as_deref(), Some("none"), "the default key never goes to a pool's own URLs");
        // Commas in OPENAI_BASE_URL make the built-in provider a pool too.
        let mut r = Registry::with_env(|k| (k == "OPENAI_BASE_URL").then(|| "http://a:1/v1,http://b:1/v1".to_string()));
        assert_eq!(r.get("openai", "", "test").unwrap().pool_status().map(|p| p.endpoints.len()), Some(2));
        let mut r = Registry::with_env(|k| (k == "OPENAI_BASE_URL").then(|| "http://a:1/v1".to_string()));
        assert!(r.get("openai", "", "test").unwrap().pool_status().is_none(), "one URL is no pool");
    }

    #[test]
    fn pool_mistakes_name_the_line_and_field() {
        let e = parse("[providers.p]\nkind = \"openai\"\nbase_url = \"http://a/v1\"\nbase_urls = [\"http://b/v1\"]\n")
            .unwrap_err();
        assert!(e.starts_with("moot.toml:4: providers.p.base_urls: set base_url or base_urls"), "{e}");
        let e =
            parse("[providers.p]\nkind = \"openai\"\nbase_urls = [\"http://a/v1\", \"http://a/v1/\"]\n").unwrap_err();
        assert!(e.starts_with("moot.toml:3: providers.p.base_urls:") && e.contains("URL 2 is listed twice"), "{e}");
        let e = parse("[providers.p]\nkind = \"openai\"\nbase_urls = []\n").unwrap_err();
        assert!(e.contains("1 to 64 base URLs"), "{e}");
        let e = parse("[providers.p]\nkind = \"openai\"\nbase_urls = [\"ftp://a\"]\n").unwrap_err();
        assert!(e.contains("URL 1 must start with http"), "{e}");
        let e = parse("[providers.p]\nkind = \"local\"\n\naffinity = true\n").unwrap_err();
        assert!(e.starts_with("moot.toml:4: providers.p.affinity: the embedded model"), "{e}");
        let e = parse("[providers.p]\nkind = \"openai\"\nhealth_check_interval = -1\n").unwrap_err();
        assert!(e.starts_with("moot.toml:3: providers.p.health_check_interval:"), "{e}");
    }
}
