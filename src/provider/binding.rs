//! Who talks to which provider and model: one binding per participant (an
//! agent, a role), with the panel's default for the rest.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Provider;
use crate::session::event::{ModelRef, Role};

/// A provider and the model to ask of it.
#[derive(Clone)]
pub struct Binding {
    pub provider: Arc<dyn Provider>,
    /// Model name; empty means the provider's default.
    pub model: String,
    /// A nucleus (`top_p`) this participant's requests ask for, over the
    /// panel's `[generation] top_p` (pairwise judges under the paper's
    /// sampling); `None`: the panel's.
    pub top_p: Option<f32>,
}

impl Binding {
    pub fn new(provider: Arc<dyn Provider>, model: impl Into<String>) -> Self {
        Self { provider, model: model.into(), top_p: None }
    }
    /// This binding with its requests asking for the nucleus `top_p`.
    pub fn with_top_p(self, top_p: Option<f32>) -> Self {
        Self { top_p, ..self }
    }
    /// Provider name and effective model, as recorded in the session.
    pub fn model_ref(&self) -> ModelRef {
        let info = self.provider.info();
        let model = if self.model.is_empty() { info.model } else { self.model.clone() };
        ModelRef { provider: info.name, model }
    }
}

impl std::fmt::Debug for Binding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let r = self.model_ref();
        write!(f, "Binding({}/{})", r.provider, r.model)
    }
}

/// Which provider and model each participant talks to.
#[derive(Clone, Debug)]
pub struct Bindings {
    pub default: Binding,
    /// Per agent name.
    pub agents: BTreeMap<String, Binding>,
    /// Per role the protocol declares; a role without one uses `default`.
    pub roles: BTreeMap<Role, Binding>,
}

impl Bindings {
    /// Everyone talks to the same provider and model.
    pub fn uniform(binding: Binding) -> Self {
        Self { default: binding, agents: BTreeMap::new(), roles: BTreeMap::new() }
    }
    pub fn for_agent(&self, name: &str) -> &Binding {
        self.agents.get(name).unwrap_or(&self.default)
    }
    pub fn for_role(&self, role: Role) -> &Binding {
        self.roles.get(&role).unwrap_or(&self.default)
    }

    /// Where the pools among these providers stand (each provider once).
    pub fn pools(&self) -> Vec<super::pool::PoolStatus> {
        let mut seen: Vec<&Arc<dyn Provider>> = Vec::new();
        for b in std::iter::once(&self.default).chain(self.agents.values()).chain(self.roles.values()) {
            if !seen.iter().any(|p| Arc::ptr_eq(p, &b.provider)) {
                seen.push(&b.provider);
            }
        }
        seen.iter().filter_map(|p| p.pool_status()).collect()
    }
}
