//! Choosing providers: which backend and model each participant of a panel
//! talks to, and why.
//!
//! Resolution order, most specific last (later wins):
//! 1. the default provider: `OPENAI_BASE_URL`/`OPENAI_API_KEY` when set, else
//!    the embedded local model;
//! 2. the panel's top-level `provider`/`model`;
//! 3. a role's section (`[moderator]`, `[aggregator]`, `[final_judge]`) or an
//!    agent's own `provider`/`model`;
//! 4. `--provider` / `--model` on the command line override everything.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Provider;
use super::openai::{OpenAiConfig, OpenAiProvider};
use crate::engine::{Binding, Bindings};
use crate::panel::{ModelSettings, Panel};

/// Errors choosing or building a provider.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("unknown provider \"{name}\" ({context}); known: {known}")]
    Unknown { name: String, context: String, known: String },
    #[error("provider \"{name}\": {message}")]
    Build { name: String, message: String },
}

/// Known provider kinds.
pub const KINDS: &[&str] = &["openai", "local"];

/// Builds providers by name, once each, and remembers why the default was chosen.
pub struct Registry {
    built: BTreeMap<String, Arc<dyn Provider>>,
    default_name: String,
    /// Why the default provider was chosen.
    pub default_reason: String,
    env: Box<dyn Fn(&str) -> Option<String> + Send + Sync>,
}

impl Registry {
    /// A registry reading the process environment.
    pub fn from_env() -> Self {
        Self::with_env(|k| std::env::var(k).ok())
    }

    /// A registry reading variables through `env` (tests).
    pub fn with_env(env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        let set = |k: &str| env(k).is_some_and(|v| !v.trim().is_empty());
        let (default_name, default_reason) = if set("OPENAI_BASE_URL") {
            ("openai", "openai: OPENAI_BASE_URL is set".to_string())
        } else if set("OPENAI_API_KEY") {
            ("openai", "openai: OPENAI_API_KEY is set".to_string())
        } else {
            ("local", "local model: no OPENAI_BASE_URL or OPENAI_API_KEY is set".to_string())
        };
        Self { built: BTreeMap::new(), default_name: default_name.into(), default_reason, env: Box::new(env) }
    }

    pub fn default_name(&self) -> &str {
        &self.default_name
    }

    /// Make `name` the default (from `--provider`).
    pub fn set_default(&mut self, name: &str, reason: String) {
        self.default_name = name.to_string();
        self.default_reason = reason;
    }

    /// The provider called `name`, built on first use.
    pub fn get(&mut self, name: &str, context: &str) -> Result<Arc<dyn Provider>, RegistryError> {
        if let Some(p) = self.built.get(name) {
            return Ok(p.clone());
        }
        let provider: Arc<dyn Provider> = match name {
            "openai" => {
                let config = OpenAiConfig::from_lookup(|k| (self.env)(k));
                Arc::new(
                    OpenAiProvider::new(config)
                        .map_err(|e| RegistryError::Build { name: name.into(), message: e.to_string() })?,
                )
            }
            "local" => build_local(name)?,
            _ => {
                return Err(RegistryError::Unknown {
                    name: name.into(),
                    context: context.into(),
                    known: KINDS.join(", "),
                });
            }
        };
        self.built.insert(name.to_string(), provider.clone());
        Ok(provider)
    }

    /// Bind every participant of `panel`. `cli_provider`/`cli_model` override all.
    pub fn bind(&mut self, panel: &Panel, cli_provider: Option<&str>, cli_model: Option<&str>) -> Result<Bindings, RegistryError> {
        if let Some(p) = cli_provider {
            self.set_default(p, format!("{p}: chosen with --provider"));
        }
        let top = &panel.model;
        let mut binding_for = |settings: &ModelSettings, context: &str| -> Result<Binding, RegistryError> {
            let name = cli_provider
                .or(settings.provider.as_deref())
                .or(top.provider.as_deref())
                .unwrap_or(&self.default_name)
                .to_string();
            let model = cli_model.or(settings.model.as_deref()).or(top.model.as_deref()).unwrap_or("").to_string();
            Ok(Binding::new(self.get(&name, context)?, model))
        };
        let default = binding_for(&ModelSettings::default(), "the panel's default")?;
        let mut agents = BTreeMap::new();
        for (_, a) in panel.agents() {
            agents.insert(a.name.clone(), binding_for(&a.model, &format!("agent {}", a.name))?);
        }
        let moderator = Some(binding_for(&panel.moderator.model, "[moderator]")?);
        let aggregator = Some(binding_for(&panel.aggregator, "[aggregator]")?);
        let final_judge = Some(binding_for(&panel.final_judge, "[final_judge]")?);
        Ok(Bindings { default, agents, moderator, aggregator, final_judge })
    }
}

#[cfg(feature = "local")]
fn build_local(name: &str) -> Result<Arc<dyn Provider>, RegistryError> {
    super::local::LocalProvider::from_default_model()
        .map(|p| Arc::new(p) as Arc<dyn Provider>)
        .map_err(|e| RegistryError::Build { name: name.into(), message: e.to_string() })
}

#[cfg(not(feature = "local"))]
fn build_local(name: &str) -> Result<Arc<dyn Provider>, RegistryError> {
    Err(RegistryError::Build {
        name: name.into(),
        message: "this build of moot has no embedded model (built without the `local` feature); set OPENAI_BASE_URL \
                  to an OpenAI-compatible server, or pass --provider openai"
            .into(),
    })
}
