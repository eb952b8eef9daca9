//! Panels: who judges, on what dimensions and scale, under which protocol.
//!
//! A panel is a TOML file (see `docs/panels.md`). [`Panel::load`] parses and
//! validates it, with errors that name the file, line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Judging protocols moot runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Protocol {
    MajEval,
    CollabEval,
}

impl Protocol {
    pub const ALL: [Protocol; 2] = [Protocol::MajEval, Protocol::CollabEval];
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::MajEval => "maj-eval",
            Protocol::CollabEval => "collab-eval",
        }
    }
}

/// How the next speaker in a debate is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ModeratorPolicy {
    #[default]
    Llm,
    RoundRobin,
    Random,
    Disagreement,
    LeastSpoken,
}

impl ModeratorPolicy {
    pub const ALL: [ModeratorPolicy; 5] = [
        ModeratorPolicy::Llm,
        ModeratorPolicy::RoundRobin,
        ModeratorPolicy::Random,
        ModeratorPolicy::Disagreement,
        ModeratorPolicy::LeastSpoken,
    ];
    pub fn as_str(self) -> &'static str {
        match self {
            ModeratorPolicy::Llm => "llm",
            ModeratorPolicy::RoundRobin => "round-robin",
            ModeratorPolicy::Random => "random",
            ModeratorPolicy::Disagreement => "disagreement",
            ModeratorPolicy::LeastSpoken => "least-spoken",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// When a group counts as agreeing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ConsensusRule {
    /// Every agent gives the same score on every dimension and overall.
    Exact,
    /// max − min ≤ tolerance on every dimension and overall.
    #[default]
    Range,
    /// Population standard deviation ≤ tolerance on every dimension and overall.
    Stdev,
}

impl ConsensusRule {
    pub const ALL: [ConsensusRule; 3] = [ConsensusRule::Exact, ConsensusRule::Range, ConsensusRule::Stdev];
    pub fn as_str(self) -> &'static str {
        match self {
            ConsensusRule::Exact => "exact",
            ConsensusRule::Range => "range",
            ConsensusRule::Stdev => "stdev",
        }
    }
}

/// The rating scale shared by all dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    pub min: f64,
    pub max: f64,
}

impl Default for Scale {
    fn default() -> Self {
        Scale { min: 1.0, max: 5.0 }
    }
}

impl Scale {
    pub fn contains(&self, v: f64) -> bool {
        v >= self.min && v <= self.max
    }
    /// Whether the scale is whole numbers (1–5, 0–10…).
    pub fn is_integer(&self) -> bool {
        self.min.fract() == 0.0 && self.max.fract() == 0.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimension {
    pub key: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
}

impl Dimension {
    /// The display name, falling back to the key.
    pub fn label(&self) -> &str {
        if self.name.is_empty() { &self.key } else { &self.name }
    }
}

/// Provider/model/sampling settings that a panel, role or agent may set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ModelSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModeratorSettings {
    #[serde(default)]
    pub policy: ModeratorPolicy,
    /// Debate turns per group (MAJ-EVAL).
    #[serde(default = "default_max_turns")]
    pub max_turns: u32,
    #[serde(flatten)]
    pub model: ModelSettings,
}

fn default_max_turns() -> u32 {
    8
}

impl Default for ModeratorSettings {
    fn default() -> Self {
        Self { policy: ModeratorPolicy::default(), max_turns: default_max_turns(), model: ModelSettings::default() }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConsensusSettings {
    #[serde(default)]
    pub rule: ConsensusRule,
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    /// Discussion rounds before the final judge (CollabEval).
    #[serde(default = "default_max_rounds")]
    pub max_rounds: u32,
}

fn default_tolerance() -> f64 {
    1.0
}
fn default_max_rounds() -> u32 {
    3
}

impl Default for ConsensusSettings {
    fn default() -> Self {
        Self { rule: ConsensusRule::default(), tolerance: default_tolerance(), max_rounds: default_max_rounds() }
    }
}

/// Sampling defaults for the whole panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GenerationSettings {
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    #[serde(default)]
    pub seed: Option<u64>,
}

fn default_temperature() -> f32 {
    0.7
}
fn default_max_tokens() -> u32 {
    700
}

impl Default for GenerationSettings {
    fn default() -> Self {
        Self { temperature: default_temperature(), max_tokens: default_max_tokens(), seed: None }
    }
}

/// One judge with a persona.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    pub name: String,
    /// One-line role, e.g. "Primary school teacher".
    #[serde(default)]
    pub role: String,
    #[serde(default)]
    pub demographics: String,
    #[serde(default)]
    pub perspective: String,
    #[serde(default)]
    pub specialty: String,
    #[serde(default)]
    pub traits: String,
    #[serde(default)]
    pub relationships: String,
    #[serde(flatten)]
    pub model: ModelSettings,
}

/// A stakeholder group that debates together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
}

/// A validated panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Panel {
    pub name: String,
    pub protocol: Protocol,
    /// What is being evaluated and why, shown to every agent.
    pub task: String,
    #[serde(default)]
    pub scale: Scale,
    pub dimensions: Vec<Dimension>,
    #[serde(default)]
    pub moderator: ModeratorSettings,
    #[serde(default)]
    pub consensus: ConsensusSettings,
    #[serde(default)]
    pub generation: GenerationSettings,
    /// Panel-wide provider/model.
    #[serde(flatten)]
    pub model: ModelSettings,
    #[serde(default)]
    pub aggregator: ModelSettings,
    #[serde(default)]
    pub final_judge: ModelSettings,
    pub groups: Vec<GroupSpec>,
    /// Where the panel was loaded from (not part of the file).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

impl Panel {
    /// Every agent with its group name, in panel order.
    pub fn agents(&self) -> impl Iterator<Item = (&GroupSpec, &AgentSpec)> {
        self.groups.iter().flat_map(|g| g.agents.iter().map(move |a| (g, a)))
    }
    pub fn agent(&self, name: &str) -> Option<(&GroupSpec, &AgentSpec)> {
        self.agents().find(|(_, a)| a.name == name)
    }
    pub fn dimension_keys(&self) -> Vec<String> {
        self.dimensions.iter().map(|d| d.key.clone()).collect()
    }
    /// The panel as recorded in a session (it holds no secrets: keys live in the environment).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
    pub fn source_display(&self) -> String {
        self.source.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_else(|| "<panel>".into())
    }
    /// Extra per-dimension descriptions by key.
    pub fn dimension_map(&self) -> BTreeMap<&str, &Dimension> {
        self.dimensions.iter().map(|d| (d.key.as_str(), d)).collect()
    }
}
