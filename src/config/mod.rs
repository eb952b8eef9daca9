//! The user configuration file: named providers.
//!
//! moot reads `MOOT_CONFIG` when set, else `./moot.toml` when it exists, else
//! `config.toml` in the platform config directory ([`locate_file`], which the
//! screens' settings use too). Only the `[providers.*]`
//! tables and the top-level `default_provider` key belong to this module;
//! other tables and keys (`[ui]`, `[keys]`, `user = "…"`) are read by other
//! parts of the program and ignored here. Mistakes inside a provider table
//! (an unknown field, a wrong type, a bad value) are errors that name the
//! file, the line and the field. See `docs/providers.md` for the reference.

pub mod pool;
pub mod registry;
pub mod repetition;

use crate::provider::structured::StructuredOutput;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::provider::http::Timeouts;
use crate::provider::limiter::LimitSettings;
use crate::provider::pricing::Prices;

/// Name of the config file looked for in the working directory.
pub const LOCAL_FILE: &str = "moot.toml";

/// A configuration problem, with where it is.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: cannot read: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: {field}: {message}")]
    Invalid { path: PathBuf, line: usize, field: String, message: String },
}

/// Backend kind of a configured provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    Openai,
    Anthropic,
    Local,
}

impl ProviderKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Local => "local",
        }
    }

    /// The kind a built-in provider name stands for (`openai`, `anthropic`, `local`).
    pub fn from_builtin_name(name: &str) -> Option<Self> {
        match name {
            "openai" => Some(ProviderKind::Openai),
            "anthropic" => Some(ProviderKind::Anthropic),
            "local" => Some(ProviderKind::Local),
            _ => None,
        }
    }
}

/// One `[providers.<name>]` table.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// `openai`, `anthropic` or `local`; defaults to the table's name when
    /// that is one of those.
    #[serde(default)]
    pub kind: Option<ProviderKind>,
    #[serde(default, deserialize_with = "http_url")]
    pub base_url: Option<String>,
    /// For HTTP providers: several base URLs, one pool (see [`pool`]).
    #[serde(default, deserialize_with = "pool::http_urls")]
    pub base_urls: Option<Vec<String>>,
    /// For a pool: keep calls that share a prefix on one endpoint (default on).
    #[serde(default)]
    pub affinity: Option<bool>,
    /// For a pool: seconds between health checks of its endpoints (0: none; default 5).
    #[serde(default, deserialize_with = "pool::interval")]
    pub health_check_interval: Option<f64>,
    /// For a pool: the path under each base URL a health check asks for (default `models`).
    #[serde(default, deserialize_with = "pool::health_path")]
    pub health_path: Option<String>,
    /// The name of the environment variable holding the key (never the key).
    #[serde(default, deserialize_with = "env_var_name")]
    pub api_key_env: Option<String>,
    /// Default model; for `local`, a model name or a path to a GGUF file.
    #[serde(default)]
    pub model: Option<String>,
    /// For `local`: a path to a GGUF file (wins over `model`).
    #[serde(default)]
    pub model_path: Option<PathBuf>,
    #[serde(default)]
    pub max_concurrency: Option<NonZeroUsize>,
    #[serde(default, deserialize_with = "positive_u32")]
    pub requests_per_minute: Option<u32>,
    /// Seconds.
    #[serde(default, deserialize_with = "positive_secs")]
    pub connect_timeout: Option<f64>,
    #[serde(default, deserialize_with = "positive_secs")]
    pub first_token_timeout: Option<f64>,
    #[serde(default, deserialize_with = "positive_secs")]
    pub idle_timeout: Option<f64>,
    #[serde(default, deserialize_with = "positive_secs")]
    pub total_timeout: Option<f64>,
    /// Price per million input tokens.
    #[serde(default, deserialize_with = "price")]
    pub input_price: Option<f64>,
    /// Price per million output tokens.
    #[serde(default, deserialize_with = "price")]
    pub output_price: Option<f64>,
    /// Ask OpenAI-compatible servers for this many alternatives per token
    /// (1–20), for probability-weighted scores.
    #[serde(default, deserialize_with = "top_logprobs")]
    pub logprobs: Option<u8>,
    /// For HTTP providers: how a verdict's schema is sent (`auto`,
    /// `json_schema`, `json_object`, `tool`, `off`); default `auto`.
    #[serde(default)]
    pub structured_output: Option<StructuredOutput>,
    /// For `local`: CPU threads for generation.
    #[serde(default)]
    pub threads: Option<NonZeroUsize>,
    /// For `local`: CPU threads for reading prompts.
    #[serde(default)]
    pub threads_batch: Option<NonZeroUsize>,
    /// For `local`: how many requests the model serves at once.
    #[serde(default)]
    pub parallel: Option<NonZeroUsize>,
    /// For `local`: context window in tokens.
    #[serde(default, deserialize_with = "positive_u32")]
    pub context_size: Option<u32>,
    /// For `local`: llama.cpp's flash attention (off by default: on CPUs it
    /// generates more slowly; see docs/local-model.md).
    #[serde(default)]
    pub flash_attention: Option<bool>,
    /// For `local`: how prose is kept from repeating (a table of its own).
    #[serde(default)]
    pub repetition: Option<repetition::RepetitionConfig>,
    /// For `local`: the model's layers on a GPU, `"auto"` (the default) or
    /// a number (0: the CPU alone); see docs/local-model.md, *GPU offload*.
    #[serde(default, deserialize_with = "gpu_layers")]
    pub gpu_layers: Option<GpuLayers>,
    /// For HTTP providers: the context window of the served model in tokens
    /// (prompt and reply together); long discussions are shortened to fit.
    #[serde(default, deserialize_with = "positive_u32")]
    pub context_length: Option<u32>,
    /// For HTTP providers: `moot eval` sends the calls no one waits for live
    /// (first evaluations, G-Eval scores, pairwise judgments) through the
    /// provider's batch API, at half price (see docs/eval.md, *Batch APIs*);
    /// `false` keeps them live even with `--batch`.
    #[serde(default)]
    pub batch: Option<bool>,
}

impl ProviderConfig {
    /// The timeouts, with defaults for those not set.
    pub fn timeouts(&self) -> Timeouts {
        let d = Timeouts::default();
        let secs = |v: Option<f64>, default: Duration| v.map(Duration::from_secs_f64).unwrap_or(default);
        Timeouts {
            connect: secs(self.connect_timeout, d.connect),
            first_token: secs(self.first_token_timeout, d.first_token),
            idle: secs(self.idle_timeout, d.idle),
            total: secs(self.total_timeout, d.total),
        }
    }

    /// The limits, with defaults for those not set.
    pub fn limits(&self) -> LimitSettings {
        let d = LimitSettings::default();
        LimitSettings {
            max_concurrency: self.max_concurrency.map_or(d.max_concurrency, NonZeroUsize::get),
            requests_per_minute: self.requests_per_minute,
            ..d
        }
    }

    /// The prices, when either is configured.
    pub fn prices(&self) -> Option<Prices> {
        (self.input_price.is_some() || self.output_price.is_some()).then(|| Prices {
            input_per_million: self.input_price.unwrap_or(0.0),
            output_per_million: self.output_price.unwrap_or(0.0),
        })
    }
}

/// The parts of the config file that concern providers.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Config {
    /// Provider used when neither the panel nor the command line names one.
    #[serde(default)]
    pub default_provider: Option<String>,
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The file this came from (none: nothing configured).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

impl Config {
    /// Parse config text; `path` is used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut config: Config = toml::from_str(text).map_err(|e| invalid(text, path, &e))?;
        config.source = Some(path.to_owned());
        for (name, p) in &config.providers {
            if p.kind.is_none() && ProviderKind::from_builtin_name(name).is_none() {
                return Err(ConfigError::Invalid {
                    path: path.to_owned(),
                    line: line_of_table(text, name),
                    field: format!("providers.{name}.kind"),
                    message: "missing; set kind = \"openai\", \"anthropic\" or \"local\"".into(),
                });
            }
        }
        for (name, p) in &config.providers {
            pool::check(text, path, name, p, config.kind_of(name))?;
            if p.batch == Some(true) && config.kind_of(name) == Some(ProviderKind::Local) {
                return Err(ConfigError::Invalid {
                    path: path.to_owned(),
                    line: pool::line_of_key(text, name, "batch"),
                    field: format!("providers.{name}.batch"),
                    message: "the embedded model has no batch API; batches are for OpenAI and Anthropic providers"
                        .into(),
                });
            }
        }
        if let Some(d) = &config.default_provider
            && !config.providers.contains_key(d)
            && ProviderKind::from_builtin_name(d).is_none()
        {
            let line = text.lines().position(|l| l.trim_start().starts_with("default_provider")).map_or(1, |i| i + 1);
            return Err(ConfigError::Invalid {
                path: path.to_owned(),
                line,
                field: "default_provider".into(),
                message: format!("no provider named \"{d}\" (define [providers.{d}] or use openai, anthropic, local)"),
            });
        }
        Ok(config)
    }

    /// Read and parse one file.
    pub fn load_file(path: &Path) -> Result<Self, ConfigError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
        Self::parse(&text, path)
    }

    /// The config file to use: see [`locate_file`].
    pub fn locate(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        locate_file(env)
    }

    /// Load the located config file, or an empty config when there is none.
    pub fn load(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        match Self::locate(env) {
            Some(path) => Self::load_file(&path),
            None => Ok(Self::default()),
        }
    }

    /// The kind of the provider called `name`, configured or built in.
    pub fn kind_of(&self, name: &str) -> Option<ProviderKind> {
        match self.providers.get(name) {
            Some(p) => p.kind.or_else(|| ProviderKind::from_builtin_name(name)),
            None => ProviderKind::from_builtin_name(name),
        }
    }
}

/// The config file moot reads, for providers and for the screens alike:
/// `MOOT_CONFIG` when set (and not blank), else `./moot.toml` when it exists,
/// else the user config file when it exists.
pub fn locate_file(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    if let Some(p) = env("MOOT_CONFIG").filter(|p| !p.trim().is_empty()) {
        return Some(PathBuf::from(p));
    }
    let local = PathBuf::from(LOCAL_FILE);
    if local.is_file() {
        return Some(local);
    }
    user_config_file().filter(|p| p.is_file())
}

/// `config.toml` in the platform config directory.
pub fn user_config_file() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "moot").map(|d| d.config_dir().join("config.toml"))
}

/// A TOML error as `path:line: field: message`.
fn invalid(text: &str, path: &Path, error: &toml::de::Error) -> ConfigError {
    let line = error.span().map_or(1, |span| text[..span.start.min(text.len())].matches('\n').count() + 1);
    let field = field_at(text, line).unwrap_or_else(|| "(syntax)".into());
    ConfigError::Invalid { path: path.to_owned(), line, field, message: error.message().to_owned() }
}

/// The dotted name of the key on `line` (1-based), prefixed by its table.
fn field_at(text: &str, line: usize) -> Option<String> {
    let mut table = String::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if t.starts_with('[') {
            table = t.trim_matches(|c| c == '[' || c == ']').trim().to_owned();
        }
        if i + 1 == line {
            if t.starts_with('[') {
                return Some(table);
            }
            let key = t.split('=').next()?.trim().trim_matches('"');
            if key.is_empty() {
                return None;
            }
            return Some(if table.is_empty() { key.to_owned() } else { format!("{table}.{key}") });
        }
    }
    None
}

pub(crate) fn line_of_table(text: &str, name: &str) -> usize {
    text.lines()
        .position(|l| {
            let t: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            t == format!("[providers.{name}]") || t == format!("[providers.\"{name}\"]")
        })
        .map_or(1, |i| i + 1)
}

fn http_url<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    let url = reqwest::Url::parse(s.trim()).map_err(|e| serde::de::Error::custom(format!("not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(serde::de::Error::custom("must start with http:// or https://"));
    }
    Ok(Some(s.trim().to_owned()))
}

fn env_var_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    let valid = !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit());
    if !valid {
        // Never echo the value: it may be a key pasted in the wrong place.
        return Err(serde::de::Error::custom(
            "must be the name of an environment variable (letters, digits, _), not the key itself",
        ));
    }
    Ok(Some(s))
}

/// `gpu_layers`: automatic, or a number of layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuLayers {
    Auto,
    Count(u32),
}

impl GpuLayers {
    /// The number, `None` for automatic.
    pub fn count(self) -> Option<u32> {
        match self {
            GpuLayers::Auto => None,
            GpuLayers::Count(n) => Some(n),
        }
    }
}

impl Serialize for GpuLayers {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            GpuLayers::Auto => s.serialize_str("auto"),
            GpuLayers::Count(n) => s.serialize_u32(*n),
        }
    }
}

fn gpu_layers<'de, D: Deserializer<'de>>(d: D) -> Result<Option<GpuLayers>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Count(i64),
        Text(String),
    }
    let wanted = "\"auto\" or a number of layers, 0 or more";
    match Raw::deserialize(d)? {
        Raw::Text(t) if t == "auto" => Ok(Some(GpuLayers::Auto)),
        Raw::Count(n) => u32::try_from(n)
            .map(|n| Some(GpuLayers::Count(n)))
            .map_err(|_| serde::de::Error::custom(format!("expected {wanted}, found {n}"))),
        Raw::Text(t) => Err(serde::de::Error::custom(format!("expected {wanted}, found \"{t}\""))),
    }
}

fn positive_u32<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = u32::deserialize(d)?;
    if v == 0 {
        return Err(serde::de::Error::custom("must be at least 1"));
    }
    Ok(Some(v))
}

fn number<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Num {
        I(i64),
        F(f64),
    }
    Ok(match Num::deserialize(d)? {
        Num::I(i) => i as f64,
        Num::F(f) => f,
    })
}

fn positive_secs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = number(d)?;
    if !(v.is_finite() && v > 0.0 && v <= 86_400.0) {
        return Err(serde::de::Error::custom("must be a number of seconds between 0 and 86400"));
    }
    Ok(Some(v))
}

fn price<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = number(d)?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(serde::de::Error::custom("must be a price per million tokens, 0 or more"));
    }
    Ok(Some(v))
}

fn top_logprobs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    let v = u8::deserialize(d)?;
    if !(1..=20).contains(&v) {
        return Err(serde::de::Error::custom("must be between 1 and 20"));
    }
    Ok(Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_output_takes_its_names_only() {
        let c: ProviderConfig = toml::from_str("structured_output = \"json_object\"").unwrap();
        assert_eq!(c.structured_output, Some(StructuredOutput::JsonObject));
        let e = toml::from_str::<ProviderConfig>("structured_output = \"json\"").unwrap_err().to_string();
        assert!(e.contains("json_schema"), "{e}");
    }

    const EXAMPLE: &str = r#"
user = "ada"
default_provider = "fast"

[ui]
theme = "dark"

[keys]
quit = "q"

[providers.fast]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"
api_key_env = "FAST_KEY"
model = "qwen"
max_concurrency = 2
requests_per_minute = 60
first_token_timeout = 30
idle_timeout = 2.5
input_price = 0.5
output_price = 1.5
logprobs = 5

[providers.anthropic]
api_key_env = "MY_ANTHROPIC_KEY"

[providers.tiny]
kind = "local"
model = "qwen2.5-0.5b"
threads = 4
threads_batch = 8
parallel = 3
context_size = 4096
"#;

    fn path() -> PathBuf {
        PathBuf::from("moot.toml")
    }

    #[test]
    fn parses_providers_and_ignores_other_tables() {
        let c = Config::parse(EXAMPLE, &path()).expect("valid");
        assert_eq!(c.default_provider.as_deref(), Some("fast"));
        let fast = &c.providers["fast"];
        assert_eq!(fast.kind, Some(ProviderKind::Openai));
        assert_eq!(fast.limits().max_concurrency, 2);
        assert_eq!(fast.limits().requests_per_minute, Some(60));
        assert_eq!(fast.timeouts().first_token, Duration::from_secs(30));
        assert_eq!(fast.timeouts().idle, Duration::from_millis(2500));
        assert_eq!(fast.timeouts().total, Timeouts::default().total);
        assert_eq!(fast.prices(), Some(Prices { input_per_million: 0.5, output_per_million: 1.5 }));
        assert_eq!(fast.logprobs, Some(5));
        assert_eq!(c.kind_of("anthropic"), Some(ProviderKind::Anthropic));
        assert_eq!(c.providers["anthropic"].prices(), None);
        assert_eq!(c.providers["tiny"].threads.map(NonZeroUsize::get), Some(4));
        assert_eq!(c.providers["tiny"].threads_batch.map(NonZeroUsize::get), Some(8));
        assert_eq!(c.providers["tiny"].parallel.map(NonZeroUsize::get), Some(3));
        assert_eq!(c.kind_of("openai"), Some(ProviderKind::Openai));
        assert_eq!(c.kind_of("nope"), None);
    }

    fn error(text: &str) -> String {
        Config::parse(text, &path()).expect_err("invalid").to_string()
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = error("[providers.x]\nkind = \"openai\"\nmax_concurency = 2\n");
        assert!(e.starts_with("moot.toml:3: providers.x.max_concurency:"), "{e}");
        assert!(e.contains("unknown field"), "{e}");

        let e = error("[providers.x]\nkind = \"openai\"\n\nmax_concurrency = 0\n");
        assert!(e.starts_with("moot.toml:4: providers.x.max_concurrency:"), "{e}");

        let e = error("[providers.x]\nkind = \"gemini\"\n");
        assert!(e.starts_with("moot.toml:2: providers.x.kind:"), "{e}");

        let e = error("[providers.x]\nkind = \"openai\"\napi_key_env = \"sk-abc123secret\"\n");
        assert!(e.starts_with("moot.toml:3: providers.x.api_key_env:"), "{e}");
        assert!(!e.contains("sk-abc123secret"), "{e}");

        let e = error("[providers.x]\nkind = \"openai\"\ninput_price = -1\n");
        assert!(e.starts_with("moot.toml:3: providers.x.input_price:"), "{e}");

        let e = error("[providers.x]\nkind = \"openai\"\nbase_url = \"ftp://h\"\n");
        assert!(e.starts_with("moot.toml:3: providers.x.base_url:"), "{e}");

        let e = error("\n[providers.mine]\nmodel = \"m\"\n");
        assert!(e.starts_with("moot.toml:2: providers.mine.kind: missing"), "{e}");

        let e = error("default_provider = \"ghost\"\n");
        assert!(e.starts_with("moot.toml:1: default_provider:"), "{e}");

        let e = error("[providers.x\n");
        assert!(e.starts_with("moot.toml:1:"), "{e}");
    }

    #[test]
    fn empty_file_is_empty_config() {
        let c = Config::parse("", &path()).expect("valid");
        assert!(c.providers.is_empty());
        assert_eq!(c.default_provider, None);
    }

    #[test]
    fn batch_is_for_http_providers() {
        let c = Config::parse("[providers.openai]\nbatch = true\n", &path()).expect("valid");
        assert_eq!(c.providers["openai"].batch, Some(true));
        let e = error("[providers.local]\nthreads = 2\nbatch = true\n");
        assert!(e.starts_with("moot.toml:3: providers.local.batch:") && e.contains("no batch API"), "{e}");
    }

    #[test]
    fn moot_config_env_wins() {
        let env = |k: &str| (k == "MOOT_CONFIG").then(|| "/some/where.toml".to_string());
        assert_eq!(Config::locate(&env), Some(PathBuf::from("/some/where.toml")));
    }
}
