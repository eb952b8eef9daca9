//! Providers by name: building each one once, and which one is the default.
//!
//! Provider names: the `[providers.<name>]` tables of the config file (see
//! [`crate::config`]), plus the built-in names `openai`, `anthropic` and
//! `local`, which work without configuration (from environment variables)
//! and can be refined by a table of the same name.
//!
//! The default provider: `default_provider` in the config file; else the
//! only provider the config file defines; else `openai` when
//! `OPENAI_BASE_URL` or `OPENAI_API_KEY` is set; else `anthropic` when
//! `ANTHROPIC_API_KEY` is set; else the embedded `local` model. (Which
//! provider and model each participant of a panel uses is chosen in the
//! engine's `bindings`.)
//!
//! Every built provider is wrapped, innermost first, in a
//! [`WindowedProvider`] when an HTTP provider has a `context_length`, a shared
//! [`LimitedProvider`] (concurrency and rate limits, one per provider for the
//! whole process), a [`BatchProvider`](crate::provider::batch::BatchProvider)
//! when `moot eval` sends its calls through batch APIs, a [`PricedProvider`]
//! when prices are configured, and a [`CachedProvider`] when the response
//! cache is on.

use crate::provider::structured::StructuredOutput;
use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Config, ConfigError, ProviderConfig, ProviderKind};
use crate::provider::Provider;
use crate::provider::anthropic::{self, AnthropicConfig, AnthropicProvider};
use crate::provider::batch::anthropic::AnthropicBatch;
use crate::provider::batch::openai::OpenAiBatch;
use crate::provider::batch::{BatchApi, Batcher};
use crate::provider::cache::{CachedProvider, ResponseCache};
use crate::provider::limiter::{self, LimitedProvider};
use crate::provider::openai::{self, OpenAiConfig, OpenAiProvider};
use crate::provider::pricing::PricedProvider;
use crate::provider::repetition::Repetition;
use crate::provider::window::WindowedProvider;

/// Errors choosing or building a provider.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown provider \"{name}\" ({context}); known: {known}")]
    Unknown { name: String, context: String, known: String },
    #[error("provider \"{name}\": {message}")]
    Build { name: String, message: String },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// Built-in provider kinds.
pub const KINDS: &[&str] = &["openai", "anthropic", "local"];

/// What the embedded model needs from the configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LocalSpec {
    /// A model name (resolved and downloaded by the model manager) or a path to a GGUF file.
    pub model: Option<String>,
    /// CPU threads for generation; none lets the backend choose.
    pub threads: Option<usize>,
    /// CPU threads for reading prompts; none lets the backend choose.
    pub threads_batch: Option<usize>,
    /// Requests served at once; none lets the backend choose.
    pub parallel: Option<usize>,
    /// Context window in tokens; none lets the backend choose.
    pub context_size: Option<u32>,
    /// llama.cpp's flash attention; none lets the backend choose (off).
    pub flash_attention: Option<bool>,
    /// How prose is kept from repeating; keys left out keep their defaults.
    pub repetition: Option<super::repetition::RepetitionConfig>,
    /// Layers on a GPU; none (or auto) lets the backend choose.
    pub gpu_layers: Option<super::GpuLayers>,
}

/// One setting of a provider and where its value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub field: &'static str,
    pub value: String,
    pub from: String,
}

/// A provider as `moot providers` shows it (never with a key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSummary {
    pub name: String,
    pub kind: String,
    /// `config file PATH` or `built in`.
    pub defined_in: String,
    pub settings: Vec<Setting>,
}

type Env = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Builds providers by name, once each, and remembers why the default was chosen.
pub struct Registry {
    config: Config,
    env: Env,
    built: BTreeMap<String, Arc<dyn Provider>>,
    default_name: String,
    /// Why the default provider was chosen.
    pub default_reason: String,
    cache: Option<ResponseCache>,
    progress: Option<crate::model::ProgressSink>,
    batch: Option<Batcher>,
}

impl Registry {
    /// A registry reading the config file (see [`Config::locate`]) and the
    /// process environment.
    pub fn from_env() -> Result<Self, RegistryError> {
        let env = |k: &str| std::env::var(k).ok();
        let config = Config::load(&env)?;
        Ok(Self::with_config(config, env))
    }

    /// A registry with no config file, reading variables through `env` (tests).
    pub fn with_env(env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Self::with_config(Config::default(), env)
    }

    /// A registry with this configuration, reading variables through `env`.
    pub fn with_config(config: Config, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        let (default_name, default_reason) = default_provider(&config, &env);
        Self {
            config,
            env: Box::new(env),
            built: BTreeMap::new(),
            default_name,
            default_reason,
            cache: None,
            progress: None,
            batch: None,
        }
    }

    /// Serve replies from (and store them in) this response cache; none turns it off.
    /// Applies to providers built afterwards.
    pub fn set_cache(&mut self, cache: Option<ResponseCache>) {
        self.cache = cache;
        self.built.clear();
    }

    /// Send the calls marked for a batch of the providers that batch (every
    /// HTTP provider with `--batch`, else those with `batch = true`) through
    /// their batch APIs; none turns it off. Applies to providers built afterwards.
    pub fn set_batch(&mut self, batch: Option<Batcher>) {
        self.batch = batch;
        self.built.clear();
    }

    /// Send model fetch progress to `sink` (a screen) instead of stderr.
    pub fn set_progress(&mut self, sink: crate::model::ProgressSink) {
        self.progress = Some(sink);
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn default_name(&self) -> &str {
        &self.default_name
    }

    /// Make `name` the default (from `--provider`).
    pub fn set_default(&mut self, name: &str, reason: String) {
        self.default_name = name.to_string();
        self.default_reason = reason;
    }

    /// Every provider name that can be used: configured ones, then the built-in names.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.config.providers.keys().cloned().collect();
        for k in KINDS {
            if !names.iter().any(|n| n == k) {
                names.push((*k).to_string());
            }
        }
        names
    }

    /// The error for a provider `name` that is not known; `context` says
    /// where it was named (`agent Ann`, `[moderator]`).
    pub fn unknown(&self, name: &str, context: &str) -> RegistryError {
        RegistryError::Unknown { name: name.into(), context: context.into(), known: self.names().join(", ") }
    }

    fn env_value(&self, name: &str) -> Option<String> {
        (self.env)(name).map(|v| v.trim().to_owned()).filter(|v| !v.is_empty())
    }

    /// The provider called `name`, built on first use. `model` matters only
    /// for the embedded model, where it names the GGUF to load (a known model
    /// or a path; empty: the configured or bundled default), so each local
    /// model is loaded once.
    pub fn get(&mut self, name: &str, model: &str, context: &str) -> Result<Arc<dyn Provider>, RegistryError> {
        let key = match self.config.kind_of(name) {
            Some(ProviderKind::Local) if !model.is_empty() => format!("{name}\u{0}{model}"),
            _ => name.to_string(),
        };
        if let Some(p) = self.built.get(&key) {
            return Ok(p.clone());
        }
        let provider = self.build(name, model, context)?;
        self.built.insert(key, provider.clone());
        Ok(provider)
    }

    fn build(&self, name: &str, model: &str, context: &str) -> Result<Arc<dyn Provider>, RegistryError> {
        let kind = self.config.kind_of(name).ok_or_else(|| self.unknown(name, context))?;
        let pc = self.config.providers.get(name).cloned().unwrap_or_default();
        let build_error = |message: String| RegistryError::Build { name: name.into(), message };
        let key = self.api_key(name, kind, &pc)?;
        // What both HTTP kinds take from the provider's section the same way.
        macro_rules! set_common {
            ($c:ident) => {
                $c.name = name.to_string();
                if let Some(url) = &pc.base_url {
                    $c.base_url = url.clone();
                }
                $c.api_key = key;
                if let Some(m) = &pc.model {
                    $c.model = m.clone();
                }
                $c.timeouts = pc.timeouts();
            };
        }
        // A pool's batches go to its first base URL.
        let batching = self.batch.as_ref().filter(|b| kind != ProviderKind::Local && b.wants(pc.batch));
        let mut batch_api: Option<Arc<dyn BatchApi>> = None;
        let (inner, base_url): (Arc<dyn Provider>, Option<String>) = match kind {
            ProviderKind::Openai => {
                let mut c = OpenAiConfig::from_lookup(|k| (self.env)(k));
                set_common!(c);
                c.top_logprobs = pc.logprobs;
                c.repetition = pc.repetition.clone().unwrap_or_default().apply(Repetition::llama_server());
                c.structured_output = match pc.structured_output.unwrap_or_default() {
                    StructuredOutput::Tool => {
                        return Err(build_error(
                            "structured_output = \"tool\" is the Anthropic form; an OpenAI-compatible provider takes auto, json_schema, json_object or off".into(),
                        ));
                    }
                    form => form,
                };
                let urls = pc.urls().unwrap_or_else(|| super::pool::split_urls(&c.base_url));
                if batching.is_some() {
                    let first =
                        OpenAiConfig { base_url: urls.first().cloned().unwrap_or(c.base_url.clone()), ..c.clone() };
                    batch_api = Some(Arc::new(OpenAiBatch::new(first).map_err(|e| build_error(e.to_string()))?));
                }
                if urls.len() > 1 {
                    let make = |url: &str| {
                        let c = OpenAiConfig { base_url: url.to_string(), ..c.clone() };
                        OpenAiProvider::new(c).map(|p| Arc::new(p) as Arc<dyn Provider>)
                    };
                    (super::pool::build(name, "openai", &urls, &pc, c.api_key.as_deref(), make)?, None)
                } else {
                    c.base_url = urls.into_iter().next().unwrap_or(c.base_url);
                    let url = c.base_url.clone();
                    (Arc::new(OpenAiProvider::new(c).map_err(|e| build_error(e.to_string()))?), Some(url))
                }
            }
            ProviderKind::Anthropic => {
                if pc.repetition.is_some() {
                    return Err(build_error(
                        "a repetition table is for the embedded model and llama.cpp servers; Anthropic's API takes none".into(),
                    ));
                }
                let mut c = AnthropicConfig::from_lookup(|k| (self.env)(k));
                set_common!(c);
                c.structured_output = match pc.structured_output.unwrap_or_default() {
                    form @ (StructuredOutput::JsonSchema | StructuredOutput::JsonObject) => {
                        return Err(build_error(format!(
                            "structured_output = \"{}\" is an OpenAI-compatible form; an Anthropic provider takes auto, tool or off",
                            form.as_str()
                        )));
                    }
                    form => form,
                };
                let urls = pc.urls().unwrap_or_else(|| super::pool::split_urls(&c.base_url));
                if batching.is_some() {
                    let first =
                        AnthropicConfig { base_url: urls.first().cloned().unwrap_or(c.base_url.clone()), ..c.clone() };
                    batch_api = Some(Arc::new(AnthropicBatch::new(first).map_err(|e| build_error(e.to_string()))?));
                }
                if urls.len() > 1 {
                    let make = |url: &str| {
                        let c = AnthropicConfig { base_url: url.to_string(), ..c.clone() };
                        AnthropicProvider::new(c).map(|p| Arc::new(p) as Arc<dyn Provider>)
                    };
                    (super::pool::build(name, "anthropic", &urls, &pc, c.api_key.as_deref(), make)?, None)
                } else {
                    c.base_url = urls.into_iter().next().unwrap_or(c.base_url);
                    let url = c.base_url.clone();
                    (Arc::new(AnthropicProvider::new(c).map_err(|e| build_error(e.to_string()))?), Some(url))
                }
            }
            ProviderKind::Local => {
                let configured = pc.model_path.as_ref().map(|p| p.display().to_string()).or_else(|| pc.model.clone());
                let spec = LocalSpec {
                    model: Some(model.to_string()).filter(|m| !m.is_empty()).or(configured),
                    threads: pc.threads.map(NonZeroUsize::get),
                    threads_batch: pc.threads_batch.map(NonZeroUsize::get),
                    parallel: pc.parallel.map(NonZeroUsize::get),
                    context_size: pc.context_size,
                    flash_attention: pc.flash_attention,
                    repetition: pc.repetition.clone(),
                    gpu_layers: pc.gpu_layers,
                };
                (build_local(name, &spec, self.progress.as_ref())?, None)
            }
        };
        let mut provider = inner;
        if kind != ProviderKind::Local
            && let Some(n) = pc.context_length
        {
            provider = Arc::new(WindowedProvider::new(provider, u64::from(n)));
        }
        let pooled = provider.pool_status().is_some();
        // The embedded model queues its own work; limit it only when asked to.
        // A pool limits each of its endpoints itself.
        if !pooled && (kind != ProviderKind::Local || pc.max_concurrency.is_some() || pc.requests_per_minute.is_some())
        {
            let key = format!("{}|{name}|{}", kind.as_str(), base_url.unwrap_or_default());
            provider = Arc::new(LimitedProvider::new(provider, limiter::shared(&key, pc.limits())));
        }
        // Above the limits (a call waiting for its batch holds no connection), below the prices.
        if let (Some(batcher), Some(api)) = (batching, batch_api) {
            provider = batcher.wrap(name, provider, api);
        }
        if let Some(prices) = pc.prices() {
            provider = Arc::new(PricedProvider::new(provider, prices));
        }
        if let Some(cache) = &self.cache {
            provider = Arc::new(CachedProvider::new(provider, cache.clone()));
        }
        Ok(provider)
    }

    /// The API key of an HTTP provider: from `api_key_env` when configured
    /// (which must then be set), else from `OPENAI_API_KEY` / `ANTHROPIC_API_KEY`
    /// unless the config gives the provider its own `base_url` (a key is
    /// never sent to a server it was not made for).
    fn api_key(&self, name: &str, kind: ProviderKind, pc: &ProviderConfig) -> Result<Option<String>, RegistryError> {
        if let Some(var) = &pc.api_key_env {
            return match self.env_value(var) {
                Some(key) => Ok(Some(key)),
                None => Err(RegistryError::Build {
                    name: name.into(),
                    message: format!("api_key_env names {var}, which is not set"),
                }),
            };
        }
        if pc.base_url.is_some() || pc.base_urls.is_some() {
            return Ok(None);
        }
        Ok(match kind {
            ProviderKind::Openai => self.env_value("OPENAI_API_KEY"),
            ProviderKind::Anthropic => self.env_value("ANTHROPIC_API_KEY"),
            ProviderKind::Local => None,
        })
    }

    /// A provider's effective settings and their origins, for `moot providers`.
    pub fn summary(&self, name: &str) -> Result<ProviderSummary, RegistryError> {
        let kind = self.config.kind_of(name).ok_or_else(|| self.unknown(name, "moot providers"))?;
        let pc = self.config.providers.get(name);
        let file = self.config.source.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
        let from_file = || format!("config file {file}");
        let mut settings = Vec::new();
        let mut push = |field: &'static str, value: String, from: String| settings.push(Setting { field, value, from });
        let empty = ProviderConfig::default();
        let c = pc.unwrap_or(&empty);
        if kind != ProviderKind::Local {
            let (var_url, default_url, var_key) = match kind {
                ProviderKind::Openai => ("OPENAI_BASE_URL", openai::DEFAULT_BASE_URL, "OPENAI_API_KEY"),
                _ => ("ANTHROPIC_BASE_URL", anthropic::DEFAULT_BASE_URL, "ANTHROPIC_API_KEY"),
            };
            let urls = match (c.urls(), self.env_value(var_url)) {
                (Some(u), _) => {
                    let field = if c.base_urls.is_some() { "base_urls" } else { "base_url" };
                    push(field, u.join(", "), from_file());
                    u
                }
                (None, Some(u)) => {
                    push("base_url", u.clone(), format!("environment {var_url}"));
                    super::pool::split_urls(&u)
                }
                (None, None) => {
                    push("base_url", default_url.into(), "built-in default".into());
                    vec![default_url.to_string()]
                }
            };
            for (field, value, from) in super::pool::settings(c, urls.len(), &from_file) {
                push(field, value, from);
            }
            let own_url = c.base_url.is_some() || c.base_urls.is_some();
            let (var, from) = match (&c.api_key_env, own_url) {
                (Some(v), _) => (Some(v.clone()), from_file()),
                (None, false) => (Some(var_key.to_string()), "built-in default".into()),
                (None, true) => (None, "no api_key_env for this base_url".into()),
            };
            let shown = match &var {
                Some(v) if self.env_value(v).is_some() => format!("${v} (set)"),
                Some(v) => format!("${v} (not set)"),
                None => "none".into(),
            };
            push("api_key", shown, from);
        }
        let default_model = match kind {
            ProviderKind::Openai => openai::DEFAULT_MODEL.to_string(),
            ProviderKind::Anthropic => anthropic::DEFAULT_MODEL.to_string(),
            ProviderKind::Local => format!("{} (this machine's default)", crate::model::default_model()),
        };
        match (&c.model_path, &c.model) {
            (Some(p), _) if kind == ProviderKind::Local => push("model", p.display().to_string(), from_file()),
            (_, Some(m)) => push("model", m.clone(), from_file()),
            _ => push("model", default_model, "built-in default".into()),
        }
        let limits = c.limits();
        let origin = |set: bool| if set { from_file() } else { "built-in default".to_string() };
        let concurrency = if kind == ProviderKind::Local && c.max_concurrency.is_none() {
            "unlimited (the model queues its own work)".to_string()
        } else {
            limits.max_concurrency.to_string()
        };
        push("max_concurrency", concurrency, origin(c.max_concurrency.is_some()));
        push(
            "requests_per_minute",
            limits.requests_per_minute.map_or("unlimited".into(), |r| r.to_string()),
            origin(c.requests_per_minute.is_some()),
        );
        if kind != ProviderKind::Local {
            let t = c.timeouts();
            let set = c.connect_timeout.is_some()
                || c.first_token_timeout.is_some()
                || c.idle_timeout.is_some()
                || c.total_timeout.is_some();
            push(
                "timeouts",
                format!(
                    "connect {}s, first token {}s, idle {}s, total {}s",
                    t.connect.as_secs_f64(),
                    t.first_token.as_secs_f64(),
                    t.idle.as_secs_f64(),
                    t.total.as_secs_f64()
                ),
                origin(set),
            );
        }
        match c.prices() {
            Some(p) => push(
                "prices",
                format!("{} in / {} out per million tokens", p.input_per_million, p.output_per_million),
                from_file(),
            ),
            None => push("prices", "none (costs not computed)".into(), "built-in default".into()),
        }
        if kind == ProviderKind::Local {
            push("threads", c.threads.map_or("auto".into(), |t| t.to_string()), origin(c.threads.is_some()));
            push(
                "threads_batch",
                c.threads_batch.map_or("auto".into(), |t| t.to_string()),
                origin(c.threads_batch.is_some()),
            );
            push("parallel", c.parallel.map_or("auto".into(), |t| t.to_string()), origin(c.parallel.is_some()));
            push(
                "context_size",
                c.context_size.map_or("auto".into(), |t| t.to_string()),
                origin(c.context_size.is_some()),
            );
            push(
                "flash_attention",
                c.flash_attention.map_or("off".into(), |on| if on { "on" } else { "off" }.into()),
                origin(c.flash_attention.is_some()),
            );
            let r = c.repetition.clone().unwrap_or_default();
            push("repetition", r.apply(Repetition::default()).line(), origin(c.repetition.is_some()));
            #[cfg(feature = "local")]
            push("gpu_layers", gpu_line(c), origin(c.gpu_layers.is_some()));
        }
        if kind != ProviderKind::Local {
            let known = if kind == ProviderKind::Anthropic {
                format!("{} (every Claude model)", anthropic::CONTEXT_WINDOW)
            } else {
                "from a llama.cpp server's /props, else unknown (long discussions are not shortened)".to_string()
            };
            push(
                "context_length",
                c.context_length.map_or(known, |t| t.to_string()),
                origin(c.context_length.is_some()),
            );
        }
        if let Some(n) = c.logprobs {
            push("logprobs", format!("top {n}"), from_file());
        }
        if kind != ProviderKind::Local {
            let form = c.structured_output.unwrap_or_default();
            let shown = match (kind, form) {
                (ProviderKind::Anthropic, StructuredOutput::Auto) => "auto (a forced tool call)".to_string(),
                (_, StructuredOutput::Auto) => "auto (json_schema, then json_object, then off)".to_string(),
                (_, f) => f.as_str().to_string(),
            };
            push("structured_output", shown, origin(c.structured_output.is_some()));
        }
        if kind == ProviderKind::Openai {
            let r = c.repetition.clone().unwrap_or_default().apply(Repetition::llama_server());
            push(
                "repetition",
                format!("a llama.cpp server's, in its lean form: {}", r.line()),
                origin(c.repetition.is_some()),
            );
        }
        Ok(ProviderSummary {
            name: name.to_string(),
            kind: kind.as_str().to_string(),
            defined_in: if pc.is_some() { from_file() } else { "built in".into() },
            settings,
        })
    }

    /// The config file in use, if any.
    pub fn config_source(&self) -> Option<&PathBuf> {
        self.config.source.as_ref()
    }
}

/// The default provider and why; see the module documentation.
fn default_provider(config: &Config, env: &dyn Fn(&str) -> Option<String>) -> (String, String) {
    let file = config.source.as_ref().map(|p| p.display().to_string()).unwrap_or_default();
    if let Some(d) = &config.default_provider {
        return (d.clone(), format!("{d}: default_provider in {file}"));
    }
    if config.providers.len() == 1
        && let Some(name) = config.providers.keys().next()
    {
        return (name.clone(), format!("{name}: the only provider in {file}"));
    }
    let set = |k: &str| crate::provider::http::env_setting(env(k)).is_some();
    if set("OPENAI_BASE_URL") {
        ("openai".into(), "openai: OPENAI_BASE_URL is set".into())
    } else if set("OPENAI_API_KEY") {
        ("openai".into(), "openai: OPENAI_API_KEY is set".into())
    } else if set("ANTHROPIC_API_KEY") {
        ("anthropic".into(), "anthropic: ANTHROPIC_API_KEY is set".into())
    } else {
        (
            "local".into(),
            "local (the embedded model): no provider configured and no OPENAI_BASE_URL, OPENAI_API_KEY or ANTHROPIC_API_KEY set"
                .into(),
        )
    }
}

/// Build the embedded model's provider from what the configuration says.
#[cfg(feature = "local")]
pub fn build_local(
    name: &str,
    spec: &LocalSpec,
    progress: Option<&crate::model::ProgressSink>,
) -> Result<Arc<dyn Provider>, RegistryError> {
    let build_error = |message: String| RegistryError::Build { name: name.into(), message };
    let model = crate::model::resolve_model(spec.model.as_deref().unwrap_or(""));
    let model_path = crate::model::ensure_reporting(&model, progress).map_err(|e| build_error(e.to_string()))?;
    let mut config = crate::provider::local::LocalConfig::new(model_path);
    config.name = model.name();
    config.threads = spec.threads;
    config.threads_batch = spec.threads_batch;
    config.parallel = spec.parallel;
    config.context_size = spec.context_size;
    config.flash_attention = spec.flash_attention.unwrap_or(false);
    if let Some(r) = &spec.repetition {
        config.repetition = r.apply(config.repetition);
    }
    config.gpu_layers = spec.gpu_layers.and_then(super::GpuLayers::count);
    crate::provider::local::LocalProvider::new(config)
        .map(|p| Arc::new(p) as Arc<dyn Provider>)
        .map_err(|e| build_error(e.to_string()))
}

/// `gpu_layers` and what it means on this machine now: where a model the
/// size of the one configured (or of the default, when none or not yet
/// fetched) would run.
#[cfg(feature = "local")]
fn gpu_line(c: &ProviderConfig) -> String {
    use crate::provider::local::gpu;
    let setting = c.gpu_layers.and_then(super::GpuLayers::count);
    let shown = setting.map_or("auto".to_string(), |n| n.to_string());
    let model = match (&c.model_path, &c.model) {
        (Some(p), _) => crate::model::resolve_model(&p.display().to_string()),
        (None, m) => crate::model::resolve_model(m.as_deref().unwrap_or("")),
    };
    let bytes = model.size_hint().unwrap_or(0);
    let offload = gpu::plan(setting, bytes, &gpu::gpus());
    match offload.gpu {
        Some(g) if offload.layers == gpu::ALL_LAYERS => format!("{shown}: every layer on {g}"),
        Some(g) => format!("{shown}: {} layers on {g}", offload.layers),
        None => format!("{shown}: the CPU ({})", offload.why),
    }
}

/// Build the embedded model's provider: unavailable in builds without the `local` feature.
#[cfg(not(feature = "local"))]
pub fn build_local(
    name: &str,
    _spec: &LocalSpec,
    _progress: Option<&crate::model::ProgressSink>,
) -> Result<Arc<dyn Provider>, RegistryError> {
    Err(RegistryError::Build {
        name: name.into(),
        message: "this build of moot has no embedded model (built without the `local` feature); set OPENAI_BASE_URL \
                  to an OpenAI-compatible server or ANTHROPIC_API_KEY, or configure a provider in moot.toml"
            .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> + Send + Sync {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn default_follows_env_then_local() {
        let r = Registry::with_env(env(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1"), ("ANTHROPIC_API_KEY", "k")]));
        assert_eq!(r.default_name(), "openai");
        let r = Registry::with_env(env(&[("ANTHROPIC_API_KEY", "k")]));
        assert_eq!(r.default_name(), "anthropic");
        assert!(r.default_reason.contains("ANTHROPIC_API_KEY"));
        let r = Registry::with_env(env(&[("OPENAI_API_KEY", " ")]));
        assert_eq!(r.default_name(), "local");
    }

    #[test]
    fn default_from_config() {
        let text = "[providers.a]\nkind = \"openai\"\n[providers.b]\nkind = \"anthropic\"\n";
        let c = Config::parse(text, Path::new("moot.toml")).unwrap();
        let r = Registry::with_config(c.clone(), env(&[("ANTHROPIC_API_KEY", "k")]));
        assert_eq!(r.default_name(), "anthropic");
        let c1 = Config::parse("[providers.a]\nkind = \"openai\"\n", Path::new("moot.toml")).unwrap();
        let r = Registry::with_config(c1, env(&[]));
        assert_eq!(r.default_name(), "a");
        assert!(r.default_reason.contains("only provider in moot.toml"), "{}", r.default_reason);
        let c2 = Config { default_provider: Some("b".into()), ..c };
        assert_eq!(Registry::with_config(c2, env(&[])).default_name(), "b");
    }

    #[test]
    fn keys_come_from_the_named_variable_and_never_travel_to_other_urls() {
        let text = "[providers.p]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
                    [providers.q]\nkind = \"openai\"\napi_key_env = \"Q_KEY\"\n";
        let c = Config::parse(text, Path::new("moot.toml")).unwrap();
        let r = Registry::with_config(c, env(&[("OPENAI_API_KEY", "sk-openai")]));
        let empty = ProviderConfig::default();
        let p = &r.config.providers["p"];
        assert_eq!(r.api_key("p", ProviderKind::Openai, p).unwrap(), None);
        assert_eq!(r.api_key("openai", ProviderKind::Openai, &empty).unwrap().as_deref(), Some("sk-openai"));
        let q = &r.config.providers["q"];
        let e = r.api_key("q", ProviderKind::Openai, q).unwrap_err().to_string();
        assert!(e.contains("Q_KEY") && e.contains("not set"), "{e}");
        let s = r.summary("openai").unwrap();
        let key = s.settings.iter().find(|s| s.field == "api_key").unwrap();
        assert_eq!(key.value, "$OPENAI_API_KEY (set)");
        assert!(!format!("{s:?}").contains("sk-openai"));
    }

    #[test]
    fn a_configured_context_length_is_shown_and_reported_by_the_provider() {
        let text =
            "[providers.vllm]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\ncontext_length = 32768\n";
        let c = Config::parse(text, Path::new("moot.toml")).unwrap();
        let mut r = Registry::with_config(c, env(&[]));
        let setting = |r: &Registry, name: &str| {
            r.summary(name).unwrap().settings.into_iter().find(|s| s.field == "context_length").unwrap().value
        };
        assert_eq!(setting(&r, "vllm"), "32768");
        assert!(setting(&r, "openai").contains("/props, else unknown"), "{}", setting(&r, "openai"));
        assert!(setting(&r, "anthropic").starts_with("200000"));
        assert_eq!(r.get("vllm", "", "agent Ann").unwrap().context_window("m"), Some(32_768));
        assert_eq!(r.get("openai", "", "agent Ann").unwrap().context_window("m"), None);
    }

    #[test]
    fn flash_attention_is_off_unless_the_config_turns_it_on() {
        let text = "[providers.fast]\nkind = \"local\"\nflash_attention = true\n";
        let c = Config::parse(text, Path::new("moot.toml")).unwrap();
        let r = Registry::with_config(c, env(&[]));
        let setting = |name: &str| {
            let s = r.summary(name).unwrap().settings.into_iter().find(|s| s.field == "flash_attention").unwrap();
            (s.value, s.from)
        };
        let (value, origin) = setting("fast");
        assert_eq!(value, "on");
        assert!(origin.contains("moot.toml"), "{origin}");
        assert_eq!(setting("local"), ("off".to_string(), "built-in default".to_string()));
        let bad = Config::parse("[providers.x]\nkind = \"local\"\nflash_attention = \"yes\"\n", Path::new("moot.toml"));
        assert!(bad.err().unwrap().to_string().contains("flash_attention"));
    }

    #[test]
    fn a_repetition_table_is_what_a_llama_cpp_server_is_sent_and_anthropic_takes_none() {
        let text = "[providers.srv]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:1/v1\"\n\
                    [providers.srv.repetition]\ndry_allowed_length = 3\n\
                    [providers.claude]\nkind = \"anthropic\"\n[providers.claude.repetition]\nrepeat_penalty = 1.2\n";
        let c = Config::parse(text, Path::new("moot.toml")).unwrap();
        let mut r = Registry::with_config(c, env(&[("ANTHROPIC_API_KEY", "k")]));
        let line = |r: &Registry, name: &str| {
            let s = r.summary(name).unwrap().settings.into_iter().find(|s| s.field == "repetition").unwrap();
            (s.value, s.from)
        };
        let (value, from) = line(&r, "srv");
        assert!(value.starts_with("a llama.cpp server's, in its lean form: penalties 1.1"), "{value}");
        assert!(value.contains("DRY 0.8 × 1.75^(run − 3)") && from.contains("moot.toml"), "{value} {from}");
        let (value, from) = line(&r, "openai");
        assert!(value.contains("DRY 0.8 × 1.75^(run − 2) over the last 2048 tokens"), "{value}");
        assert_eq!(from, "built-in default");
        assert!(r.get("srv", "", "agent Ann").is_ok());
        let e = r.get("claude", "", "agent Ann").err().unwrap().to_string();
        assert!(e.contains("claude") && e.contains("repetition"), "{e}");
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let mut r = Registry::with_env(env(&[]));
        let e = r.get("nope", "", "agent Ann").err().unwrap().to_string();
        assert!(e.contains("nope") && e.contains("agent Ann") && e.contains("anthropic"), "{e}");
    }

    #[cfg(feature = "local")]
    #[test]
    fn the_model_names_the_local_gguf() {
        let mut r = Registry::with_env(env(&[]));
        let e = r.get("local", "/no/such/model.gguf", "agent Ann").err().unwrap().to_string();
        assert!(e.contains("/no/such/model.gguf"), "{e}");
        let e = r.get("local", "not-a-model", "agent Ann").err().unwrap().to_string();
        assert!(e.contains("not-a-model") && e.contains("qwen2.5-coder-0.5b"), "{e}");
    }
}
