//! Which provider and model each participant of a panel talks to, and why.
//!
//! Which provider a participant uses, first match wins:
//! 1. `--provider` on the command line;
//! 2. the participant's own `provider`: an agent's, or a role section's
//!    (`[moderator]`, `[aggregator]`, `[final_judge]`);
//! 3. the panel's top-level `provider`;
//! 4. the registry's default provider (see [`crate::config::registry`]).
//!
//! The model follows the same order (`--model`, participant, panel), then the
//! provider's configured `model`, then the backend's default.

use std::collections::BTreeMap;

use crate::config::registry::{Registry, RegistryError};
use crate::panel::{ModelSettings, Panel};
use crate::provider::binding::{Binding, Bindings};
use crate::session::event::Role;

/// Who a [`Choice`] is for. Typed, so that an agent may be called
/// `default` or `moderator` without taking over a role's binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Participant {
    /// What every participant without a setting of its own uses.
    Default,
    /// An agent of the panel, by name.
    Agent(String),
    /// A role the panel's protocol declares.
    Role(Role),
}

impl Participant {
    /// Where a setting for this participant is written in the panel (for messages).
    fn context(&self) -> String {
        match self {
            Participant::Default => "the panel's default".to_string(),
            Participant::Agent(name) => format!("agent {name}"),
            Participant::Role(role) => format!("[{}]", role.as_str()),
        }
    }
}

impl std::fmt::Display for Participant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Participant::Default => "default",
            Participant::Agent(name) => name,
            Participant::Role(role) => role.label(),
        })
    }
}

/// One participant's provider and model, and where each came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub participant: Participant,
    pub provider: String,
    pub provider_from: String,
    /// Empty: the provider's default model.
    pub model: String,
    pub model_from: String,
}

/// Where each participant's provider and model come from; see the module documentation.
pub fn choices(registry: &Registry, panel: &Panel, cli_provider: Option<&str>, cli_model: Option<&str>) -> Vec<Choice> {
    let top = &panel.model;
    let choose = |participant: Participant, settings: &ModelSettings, own: &str| -> Choice {
        let (provider, provider_from) = if let Some(p) = cli_provider {
            (p.to_string(), "--provider".to_string())
        } else if let Some(p) = &settings.provider {
            (p.clone(), own.to_string())
        } else if let Some(p) = &top.provider {
            (p.clone(), "the panel's provider".to_string())
        } else {
            // Why it is the default is said once, where the default is shown.
            (registry.default_name().to_string(), "default".to_string())
        };
        let (model, model_from) = if let Some(m) = cli_model {
            (m.to_string(), "--model".to_string())
        } else if let Some(m) = &settings.model {
            (m.clone(), own.to_string())
        } else if let Some(m) = &top.model {
            (m.clone(), "the panel's model".to_string())
        } else {
            (String::new(), format!("{provider}'s default model"))
        };
        Choice { participant, provider, provider_from, model, model_from }
    };
    let mut out = vec![choose(Participant::Default, &ModelSettings::default(), "")];
    for (_, a) in panel.agents() {
        out.push(choose(Participant::Agent(a.name.clone()), &a.model, &format!("agent {} in the panel", a.name)));
    }
    // `moot optimize`'s roles are bound only where the panel names them
    // (else they use the default binding).
    let optimize = Role::OPTIMIZE.into_iter().filter(|r| panel.roles.contains_key(r));
    for role in panel.protocol.roles().into_iter().chain(optimize) {
        out.push(choose(Participant::Role(role), panel.role_model(role), &format!("[{}] in the panel", role.as_str())));
    }
    out
}

/// Bind every participant of `panel` to a provider of `registry` (built on
/// first use). `cli_provider`/`cli_model` override all.
pub fn bind(
    registry: &mut Registry,
    panel: &Panel,
    cli_provider: Option<&str>,
    cli_model: Option<&str>,
) -> Result<Bindings, RegistryError> {
    if let Some(p) = cli_provider {
        registry.set_default(p, format!("{p}: chosen with --provider"));
    }
    let choices = choices(registry, panel, cli_provider, cli_model);
    let mut bindings: Option<Bindings> = None;
    let mut agents = BTreeMap::new();
    let mut roles = BTreeMap::new();
    for c in choices {
        let binding = Binding::new(registry.get(&c.provider, &c.model, &c.participant.context())?, c.model);
        match c.participant {
            Participant::Default => bindings = Some(Bindings::uniform(binding)),
            Participant::Role(role) => {
                roles.insert(role, binding);
            }
            Participant::Agent(agent) => {
                agents.insert(agent, binding);
            }
        }
    }
    let mut b = bindings.ok_or_else(|| registry.unknown(registry.default_name(), "the panel's default"))?;
    b.agents = agents;
    b.roles = roles;
    Ok(b)
}

/// Bind the participants of a recorded session to the providers and models
/// its log names (`session_started.agents` and `roles`), as a resumed run
/// must: the same provider and model for everyone as when it began.
pub fn bind_recorded(
    registry: &mut Registry,
    agents: &[crate::session::event::AgentInfo],
    roles: &BTreeMap<String, crate::session::event::ModelRef>,
) -> Result<Bindings, RegistryError> {
    let mut bound = |provider: &str, model: &str, context: String| -> Result<Binding, RegistryError> {
        Ok(Binding::new(registry.get(provider, model, &context)?, model.to_string()))
    };
    let first = agents.first().map(|a| (a.provider.clone(), a.model.clone()));
    let (provider, model) = first.unwrap_or_else(|| (String::new(), String::new()));
    let mut b = Bindings::uniform(bound(&provider, &model, "the recorded session's default".into())?);
    for a in agents {
        b.agents
            .insert(a.name.clone(), bound(&a.provider, &a.model, format!("agent {} of the recorded session", a.name))?);
    }
    for (name, r) in roles {
        if let Some(role) = Role::ALL.into_iter().find(|r| r.as_str() == name) {
            b.roles.insert(role, bound(&r.provider, &r.model, format!("[{name}] of the recorded session"))?);
        }
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> + Send + Sync {
        move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string())
    }

    #[test]
    fn agents_named_like_roles_keep_their_own_binding() {
        let mut panel = Panel::bundled("storybook-qa").unwrap();
        panel.groups[0].agents[0].name = "moderator".into();
        panel.groups[0].agents[0].model.model = Some("agent-model".into());
        panel.groups[0].agents[1].name = "default".into();
        panel.groups[0].agents[1].model.model = Some("other-agent-model".into());
        panel.groups[1].agents[0].name = "final_judge".into();
        panel.groups[1].agents[0].model.model = Some("third-agent-model".into());
        panel.moderator.model.model = Some("moderator-model".into());
        let mut r = Registry::with_env(env(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]));
        let b = bind(&mut r, &panel, None, None).unwrap();
        assert_eq!(b.for_role(Role::Moderator).model, "moderator-model");
        assert_eq!(b.for_agent("moderator").model, "agent-model");
        assert_eq!(b.for_agent("default").model, "other-agent-model");
        assert_eq!(b.default.model, "", "the default binding keeps the provider's default model");
        assert!(!b.roles.contains_key(&Role::FinalJudge), "MAJ-EVAL declares no final judge");
        assert!(b.for_role(Role::FinalJudge).model.is_empty());
        assert_eq!(b.for_agent("final_judge").model, "third-agent-model");
        let choices = choices(&r, &panel, None, None);
        let shown: Vec<String> = choices.iter().map(|c| c.participant.to_string()).collect();
        assert_eq!(shown.iter().filter(|s| *s == "moderator").count(), 2, "{shown:?}");
        assert!(shown.contains(&"aggregator".to_string()), "{shown:?}");
        assert!(!shown.contains(&"final judge".to_string()), "MAJ-EVAL has no final judge: {shown:?}");
    }
}
