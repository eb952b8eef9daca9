//! Panels: who judges, on what dimensions and scale, under which protocol.
//!
//! A panel is a TOML file (see `docs/panels.md`). [`Panel::load`] parses and
//! validates it, with errors that name the file, line and field.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use crate::roles::Role;

pub mod adopt;
mod check;
pub mod composition;
mod protocol;

pub use check::line_col;
use protocol::ProtocolFile;
pub use protocol::{
    ConsensusCheck, Departure, Paper, Preset, Protocol, ProtocolSection, ProtocolSpec, Results, Screen, SettingKind,
    SettingSpec, SettingValue, SpeakingOrder, StageNames,
};

/// How the next speaker in a debate is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
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

impl<'de> Deserialize<'de> for ModeratorPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        check::one_of(d, "moderator policy", &Self::ALL, |p| p.as_str())
    }
}

/// When a group counts as agreeing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
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
    /// The rule named `s` in a panel file (`exact`, `range`, `stdev`).
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl<'de> Deserialize<'de> for ConsensusRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        check::one_of(d, "consensus rule", &Self::ALL, |r| r.as_str())
    }
}

/// The rating scale shared by all dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Scale {
    #[serde(deserialize_with = "check::finite")]
    pub min: f64,
    #[serde(deserialize_with = "check::finite")]
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
    /// Whether the scale is whole numbers (1–5, 0–10…). A scale one wide
    /// (0–1) is a fraction scale: judges give numbers such as 0.75.
    pub fn is_integer(&self) -> bool {
        self.min.fract() == 0.0 && self.max.fract() == 0.0 && self.max - self.min > 1.0
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dimension {
    #[serde(deserialize_with = "check::text")]
    pub key: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// Evaluation steps for this dimension (G-Eval); written by the judge when absent.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "check::some_text")]
    pub steps: Option<String>,
    /// A categorical dimension: judges choose one of these labels instead of
    /// a score (empty: a scored dimension).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<String>,
}

impl Dimension {
    /// The display name, falling back to the key.
    pub fn label(&self) -> &str {
        if self.name.is_empty() { &self.key } else { &self.name }
    }
}

/// The judge text of a panel beyond its `task` (`[judge]` in the file). Each
/// part is optional; present parts follow the task, under a heading, in every
/// judge's instructions (see `engine::prompts::task_text`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct JudgeText {
    /// What earns each score.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rubric: String,
    /// Advice on applying the rubric: edge cases, what to ignore.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub guidance: String,
    /// Worked examples with the score they deserve.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub examples: String,
}

impl JudgeText {
    pub fn is_empty(&self) -> bool {
        self.rubric.trim().is_empty() && self.guidance.trim().is_empty() && self.examples.trim().is_empty()
    }
}

/// Provider/model/sampling settings that a panel, role or agent may set.
///
/// In a panel file the settings of the panel, of the moderator and of an
/// agent sit among that table's own keys: `PanelFile`, `ModeratorFile` and
/// `AgentFile` declare them there (`as_written!`), with the attributes they have here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ModelSettings {
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "check::some_text")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "check::some_text")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "check::some_temperature")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "check::some_count")]
    pub max_tokens: Option<u32>,
}

/// Declares a table as written in a panel file: its own keys, then the
/// [`ModelSettings`] keys beside them (serde's `flatten` would hide unknown
/// keys from `serde_ignored`), and `model_settings` to take those out.
macro_rules! as_written {
    ($(#[$doc:meta])* struct $name:ident { $($fields:tt)* }) => {
        $(#[$doc])*
        #[derive(Deserialize)]
        struct $name {
            $($fields)*
            #[serde(default, deserialize_with = "check::some_text")]
            provider: Option<String>,
            #[serde(default, deserialize_with = "check::some_text")]
            model: Option<String>,
            #[serde(default, deserialize_with = "check::some_temperature")]
            temperature: Option<f32>,
            #[serde(default, deserialize_with = "check::some_count")]
            max_tokens: Option<u32>,
        }

        impl $name {
            fn model_settings(&mut self) -> ModelSettings {
                ModelSettings {
                    provider: self.provider.take(),
                    model: self.model.take(),
                    temperature: self.temperature,
                    max_tokens: self.max_tokens,
                }
            }
        }
    };
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "ModeratorFile")]
pub struct ModeratorSettings {
    pub policy: ModeratorPolicy,
    /// Debate turns per group (MAJ-EVAL).
    pub max_turns: u32,
    #[serde(flatten)]
    pub model: ModelSettings,
}

as_written! {
/// `[moderator]` as written: [`ModeratorSettings`] with its model settings among its keys.
struct ModeratorFile {
    #[serde(default)]
    policy: ModeratorPolicy,
    #[serde(default = "default_max_turns", deserialize_with = "check::count")]
    max_turns: u32,
}
}

impl From<ModeratorFile> for ModeratorSettings {
    fn from(mut f: ModeratorFile) -> Self {
        let model = f.model_settings();
        Self { policy: f.policy, max_turns: f.max_turns, model }
    }
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
pub struct ConsensusSettings {
    #[serde(default)]
    pub rule: ConsensusRule,
    #[serde(default = "default_tolerance", deserialize_with = "check::tolerance")]
    pub tolerance: f64,
    /// Discussion rounds before the final judge (CollabEval).
    #[serde(default = "default_max_rounds", deserialize_with = "check::count")]
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

/// The key of the overall score, beside the dimensions or as one of them.
pub const OVERALL: &str = "overall";

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

static NO_SETTINGS: ModelSettings = ModelSettings { provider: None, model: None, temperature: None, max_tokens: None };

/// Sampling defaults for the whole panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationSettings {
    #[serde(default = "default_temperature", deserialize_with = "check::temperature")]
    pub temperature: f32,
    #[serde(default = "default_max_tokens", deserialize_with = "check::count")]
    pub max_tokens: u32,
    #[serde(default, deserialize_with = "check::seed")]
    pub seed: Option<u64>,
    /// Nucleus sampling for every call (0 < p ≤ 1); `None`: each provider's
    /// default, and nothing is sent. Panel-wide, like the temperature: how
    /// a model draws its tokens is not a protocol's business, except where a
    /// paper fixes it (pairwise `sampling = "paper"`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "some_top_p")]
    pub top_p: Option<f32>,
}

/// A nucleus share: above 0, at most 1.
fn some_top_p<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f32>, D::Error> {
    let p = f64::deserialize(d)?;
    if p > 0.0 && p <= 1.0 {
        Ok(Some(p as f32))
    } else {
        Err(serde::de::Error::custom(format!("top_p {p} must be above 0 and at most 1")))
    }
}

fn default_temperature() -> f32 {
    0.7
}
fn default_max_tokens() -> u32 {
    700
}

impl Default for GenerationSettings {
    fn default() -> Self {
        Self { temperature: default_temperature(), max_tokens: default_max_tokens(), seed: None, top_p: None }
    }
}

/// One judge with a persona.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "AgentFile")]
pub struct AgentSpec {
    pub name: String,
    /// One-line role, e.g. "Primary school teacher".
    pub role: String,
    pub demographics: String,
    pub perspective: String,
    pub specialty: String,
    pub traits: String,
    pub relationships: String,
    #[serde(flatten)]
    pub model: ModelSettings,
}

as_written! {
/// An agent as written: [`AgentSpec`] with its model settings among its keys.
struct AgentFile {
    #[serde(deserialize_with = "check::text")]
    name: String,
    #[serde(default)]
    role: String,
    #[serde(default)]
    demographics: String,
    #[serde(default)]
    perspective: String,
    #[serde(default)]
    specialty: String,
    #[serde(default)]
    traits: String,
    #[serde(default)]
    relationships: String,
}
}

impl From<AgentFile> for AgentSpec {
    fn from(mut f: AgentFile) -> Self {
        let model = f.model_settings();
        Self {
            name: f.name,
            role: f.role,
            demographics: f.demographics,
            perspective: f.perspective,
            specialty: f.specialty,
            traits: f.traits,
            relationships: f.relationships,
            model,
        }
    }
}

/// A stakeholder group that debates together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupSpec {
    #[serde(deserialize_with = "check::text")]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub agents: Vec<AgentSpec>,
}

/// A validated panel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "PanelFile")]
pub struct Panel {
    pub name: String,
    /// `protocol = "maj-eval"`, or a `[protocol]` table with `kind` and settings.
    pub protocol: ProtocolSection,
    /// What is being evaluated and why, shown to every agent.
    pub task: String,
    /// The tunable rest of the judges' instructions (`[judge]`): rubric,
    /// scoring guidance, worked examples. `moot optimize` rewrites these and
    /// `task`; the protocol's own rules and output format stay in code.
    #[serde(skip_serializing_if = "JudgeText::is_empty")]
    pub judge: JudgeText,
    /// How a judge's request names the item's parts when it asks the judge
    /// to point to them ("the question, the answer or the story"); `None`:
    /// by the parts the item shows (see `engine::prompts::item_parts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_parts: Option<String>,
    pub scale: Scale,
    pub dimensions: Vec<Dimension>,
    /// Whether judges give an overall score beside the dimensions
    /// (`overall = false` at the top of the file: they do not, and
    /// evaluations have none). A dimension keyed `overall` is the overall
    /// score whatever this says; see [`Panel::asks_overall`].
    #[serde(skip_serializing_if = "is_true")]
    pub overall: bool,
    pub moderator: ModeratorSettings,
    pub consensus: ConsensusSettings,
    pub generation: GenerationSettings,
    /// Panel-wide provider/model.
    #[serde(flatten)]
    pub model: ModelSettings,
    pub aggregator: ModelSettings,
    pub final_judge: ModelSettings,
    /// Other roles' settings, `[roles.<role>]` (e.g. `[roles.meta_evaluator]`);
    /// a role listed here and in its own table takes this one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub roles: BTreeMap<Role, ModelSettings>,
    pub groups: Vec<GroupSpec>,
    /// Where the panel was loaded from (not part of the file).
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

as_written! {
/// A panel file as written: [`Panel`] with the panel-wide model settings
/// among its keys (serde's `flatten` would hide unknown keys from
/// `serde_ignored`) and the roles by name. serde rejects wrong types and bad
/// values as it reads; `check` reports unknown keys and the rules between
/// fields.
struct PanelFile {
    #[serde(deserialize_with = "check::text")]
    name: String,
    protocol: ProtocolFile,
    #[serde(deserialize_with = "check::text")]
    task: String,
    #[serde(default)]
    judge: JudgeText,
    #[serde(default, deserialize_with = "check::some_text")]
    item_parts: Option<String>,
    #[serde(default)]
    scale: Scale,
    /// Required: `check` says what is missing, left out or empty.
    #[serde(default)]
    dimensions: Vec<Dimension>,
    #[serde(default = "yes")]
    overall: bool,
    #[serde(default)]
    moderator: ModeratorSettings,
    #[serde(default)]
    consensus: ConsensusSettings,
    #[serde(default)]
    generation: GenerationSettings,
    #[serde(default)]
    aggregator: ModelSettings,
    #[serde(default)]
    final_judge: ModelSettings,
    #[serde(default)]
    roles: BTreeMap<String, ModelSettings>,
    /// Required, as `dimensions` is.
    #[serde(default)]
    groups: Vec<GroupSpec>,
}
}

impl TryFrom<PanelFile> for Panel {
    type Error = String;
    fn try_from(mut f: PanelFile) -> Result<Self, String> {
        let model = f.model_settings();
        let roles = f
            .roles
            .into_iter()
            .map(|(name, settings)| match Role::ALL.into_iter().find(|r| r.as_str() == name) {
                Some(role) => Ok((role, settings)),
                None => Err(format!("unknown role `{name}`")),
            })
            .collect::<Result<_, _>>()?;
        let protocol = ProtocolSection::try_from(f.protocol)?;
        Ok(Panel {
            name: f.name,
            protocol,
            task: f.task,
            judge: f.judge,
            item_parts: f.item_parts,
            scale: f.scale,
            dimensions: f.dimensions,
            overall: f.overall,
            moderator: f.moderator,
            consensus: f.consensus,
            generation: f.generation,
            model,
            aggregator: f.aggregator,
            final_judge: f.final_judge,
            roles,
            groups: f.groups,
            source: None,
        })
    }
}

impl Panel {
    /// Every agent with its group name, in panel order.
    pub fn agents(&self) -> impl Iterator<Item = (&GroupSpec, &AgentSpec)> {
        self.groups.iter().flat_map(|g| g.agents.iter().map(move |a| (g, a)))
    }
    pub fn agent(&self, name: &str) -> Option<(&GroupSpec, &AgentSpec)> {
        self.agents().find(|(_, a)| a.name == name)
    }
    /// Where a run of this panel departs from its protocol's paper: the
    /// settings whose values are not the paper's (empty under the `paper`
    /// preset unless the panel sets one otherwise).
    pub fn departures(&self) -> Vec<Departure> {
        self.protocol.departures()
    }
    pub fn dimension_keys(&self) -> Vec<String> {
        self.dimensions.iter().map(|d| d.key.clone()).collect()
    }
    /// Whether a dimension is keyed `overall`: it is rated like any other,
    /// with its own description, and its score is the evaluation's overall.
    pub fn rates_overall(&self) -> bool {
        self.dimensions.iter().any(|d| d.key == OVERALL)
    }
    /// Whether judges are asked for an `overall` field beside the
    /// dimensions: unless the panel says `overall = false` or rates overall
    /// as one of its dimensions (then it is asked once, as that dimension).
    pub fn asks_overall(&self) -> bool {
        self.overall && !self.rates_overall()
    }
    /// Whether the panel's evaluations have an overall score: asked for
    /// beside the dimensions, or rated as a dimension keyed `overall`.
    pub fn has_overall(&self) -> bool {
        self.overall || self.rates_overall()
    }
    /// The keys an evaluation is scored on, in order: the dimensions, then
    /// `overall` where the panel has one (a dimension keyed `overall` comes
    /// last, once).
    pub fn score_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.dimensions.iter().map(|d| d.key.clone()).filter(|k| k != OVERALL).collect();
        if self.has_overall() {
            keys.push(OVERALL.into());
        }
        keys
    }
    /// The run header's line on its method: a written composition's
    /// stages (it has no paper to depart from), or the preset and the
    /// departures from the paper (those a log recorded, given here).
    pub fn method_line(panel: Option<&Panel>, preset: Preset, departures: &[Departure]) -> String {
        match panel.filter(|p| p.protocol.kind.takes_stages()) {
            Some(p) => {
                format!("no paper; stages: {}", composition::Composition::new(p.protocol.stages.clone()).outline())
            }
            None => crate::preset::preset_line(preset, departures),
        }
    }
    /// Whether the panel's method is built on probability-weighted scores
    /// (a G-Eval `score` stage, SAGEval's `assess` and `review`): its screens
    /// show each score's weighted value beside it. Other panels record the
    /// weighted values too (for the report's `weighted` stage) without
    /// showing them in the debate.
    pub fn shows_weighted(&self) -> bool {
        use composition::StageKind::{Assess, Review, Score};
        self.protocol.composition().is_some_and(|c| [Score, Assess, Review].into_iter().any(|k| c.has(k)))
    }
    /// A bundled protocol's run as stages (`stages: evaluate → …`); none
    /// for a written composition (its method line lists them) or a run
    /// that is not a composition.
    pub fn stages_line(&self) -> Option<String> {
        if self.protocol.kind.takes_stages() {
            return None;
        }
        let c = self.protocol.composition()?;
        let on_pair = self.protocol.compares_pairs() && !c.has(composition::StageKind::Compare);
        Some(format!("stages: {}{}", c.outline(), if on_pair { ", on the item's pair (label verdicts)" } else { "" }))
    }
    /// Settings that are valid but probably not what was meant: several
    /// votes (a protocol's `votes` setting) from a judge at temperature 0
    /// are copies of one verdict.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        let votes = self.protocol.pairs_option("votes").and_then(|v| v.parse::<i64>().ok());
        if let Some(votes) = votes {
            // The paper's sampling (`sampling = "paper"`) puts every judge at temperature 0.
            let paper = self.protocol.pairs_option("sampling").as_deref() == Some("paper");
            let cold: Vec<&str> = self
                .agents()
                .filter(|(_, a)| paper || a.model.temperature.unwrap_or(self.generation.temperature) == 0.0)
                .map(|(_, a)| a.name.as_str())
                .collect();
            if votes > 1 && !cold.is_empty() {
                out.push(format!(
                    "votes = {votes} at temperature 0 ({}): the votes are copies of one verdict; give the judges a \
                     temperature above 0 or use several judges",
                    cold.join(", ")
                ));
            }
        }
        out
    }
    /// The panel as recorded in a session (it holds no secrets: keys live in the environment).
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
    pub fn source_display(&self) -> String {
        self.source.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_else(|| "<panel>".into())
    }
    /// The model settings the panel gives a role (`[moderator]`, `[aggregator]`, `[final_judge]`).
    pub fn role_model(&self, role: Role) -> &ModelSettings {
        if let Some(m) = self.roles.get(&role) {
            return m;
        }
        match role {
            Role::Moderator => &self.moderator.model,
            Role::Aggregator => &self.aggregator,
            Role::FinalJudge => &self.final_judge,
            Role::Agent | Role::MetaEvaluator | Role::Summarizer | Role::Verifier | Role::Feedback | Role::Rewriter => {
                &NO_SETTINGS
            }
        }
    }
    /// Extra per-dimension descriptions by key.
    pub fn dimension_map(&self) -> BTreeMap<&str, &Dimension> {
        self.dimensions.iter().map(|d| (d.key.as_str(), d)).collect()
    }
}

// ---------------------------------------------------------------------------
// Loading and validation
// ---------------------------------------------------------------------------

/// Names the session log uses for non-agent participants; agents may not take them.
pub const RESERVED_NAMES: &[&str] =
    &["moderator", "aggregator", "final judge", "meta-evaluator", "summarizer", "verifier", "human"];

/// The bundled panel used when none is given.
pub const DEFAULT_PANEL: &str = "storybook-qa";

/// Panels compiled into the binary: `(file stem, TOML text)`.
pub const BUNDLED_PANELS: &[(&str, &str)] = &[
    ("storybook-qa", include_str!("../../assets/panels/storybook-qa.toml")),
    ("summary-collab", include_str!("../../assets/panels/summary-collab.toml")),
    ("summary-geval", include_str!("../../assets/panels/summary-geval.toml")),
    ("summary-chateval", include_str!("../../assets/panels/summary-chateval.toml")),
    ("summary-roundtable", include_str!("../../assets/panels/summary-roundtable.toml")),
    ("survey-sage", include_str!("../../assets/panels/survey-sage.toml")),
    ("pairwise-summaries", include_str!("../../assets/panels/pairwise-summaries.toml")),
    ("pairwise-collab", include_str!("../../assets/panels/pairwise-collab.toml")),
    // The paper presets (with CollabEval's debate ablation), and ChatEval and
    // the round-table on pairs (docs/papers.md).
    ("storybook-qa-paper", include_str!("../../assets/panels/storybook-qa-paper.toml")),
    ("summary-collab-paper", include_str!("../../assets/panels/summary-collab-paper.toml")),
    ("summary-collab-debate", include_str!("../../assets/panels/summary-collab-debate.toml")),
    ("summary-geval-paper", include_str!("../../assets/panels/summary-geval-paper.toml")),
    ("survey-sage-paper", include_str!("../../assets/panels/survey-sage-paper.toml")),
    ("summary-chateval-paper", include_str!("../../assets/panels/summary-chateval-paper.toml")),
    ("summary-roundtable-paper", include_str!("../../assets/panels/summary-roundtable-paper.toml")),
    ("pairwise-summaries-paper", include_str!("../../assets/panels/pairwise-summaries-paper.toml")),
    ("pairwise-chateval", include_str!("../../assets/panels/pairwise-chateval.toml")),
    ("pairwise-roundtable", include_str!("../../assets/panels/pairwise-roundtable.toml")),
    // Compositions of stages written in the panel (docs/panels.md).
    ("summary-geval-verified", include_str!("../../assets/panels/summary-geval-verified.toml")),
    // Public datasets in their own formats, with bundled slices of the same
    // names (docs/datasets.md).
    ("mslr-cochrane", include_str!("../../assets/panels/mslr-cochrane.toml")),
    ("mslr-pairwise", include_str!("../../assets/panels/mslr-pairwise.toml")),
    ("summeval", include_str!("../../assets/panels/summeval.toml")),
    ("topical-chat", include_str!("../../assets/panels/topical-chat.toml")),
    ("mt-bench", include_str!("../../assets/panels/mt-bench.toml")),
    ("stsb", include_str!("../../assets/panels/stsb.toml")),
];

/// The top-level `name = "…"` of a panel's TOML: its line, before the
/// first table, read as TOML on its own.
fn top_level_name(text: &str) -> Option<String> {
    let line = text
        .lines()
        .take_while(|l| !l.trim_start().starts_with('['))
        .find(|l| l.split('=').next().is_some_and(|k| k.trim() == "name"))?;
    let table: toml::Table = toml::from_str(line).ok()?;
    table.get("name")?.as_str().map(str::to_string)
}

/// Prefix of [`Panel::source`] for bundled panels (`bundled:storybook-qa`);
/// [`Panel::resolve`] accepts it too.
pub const BUNDLED_PREFIX: &str = "bundled:";

/// Why a panel could not be loaded.
///
/// Positions are 1-based; the column counts characters. Field paths use
/// 0-based indices into arrays, e.g. `groups[1].agents[0].name`.
#[derive(Debug, thiserror::Error)]
pub enum PanelError {
    /// The file could not be read.
    #[error("{}: cannot read panel: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The text is not valid TOML.
    #[error("{file}:{line}:{column}: TOML syntax error: {message}")]
    Syntax { file: String, line: usize, column: usize, message: String },
    /// The TOML is well-formed but is not a valid panel.
    #[error("{file}:{line}:{column}: {}{message}", field_prefix(field))]
    Invalid { file: String, line: usize, column: usize, field: String, message: String },
    /// [`Panel::resolve`] found neither a file nor a bundled panel.
    #[error("no panel file or bundled panel named \"{name}\"; bundled panels: {bundled}")]
    NotFound { name: String, bundled: String },
}

/// A syntax error in a file named as YAML or JSON says that a panel file
/// is TOML: the file was likely written in another format.
fn not_toml_hint(error: PanelError, path: &Path) -> PanelError {
    let other = path.extension().and_then(|x| x.to_str()).map(str::to_ascii_lowercase);
    match error {
        PanelError::Syntax { file, line, column, message }
            if matches!(other.as_deref(), Some("yaml" | "yml" | "json")) =>
        {
            let message = format!(
                "{message} (a panel file is TOML, not {}; see docs/panels.md)",
                other.unwrap_or_default().to_uppercase()
            );
            PanelError::Syntax { file, line, column, message }
        }
        error => error,
    }
}

fn field_prefix(field: &str) -> String {
    if field.is_empty() { String::new() } else { format!("{field}: ") }
}

impl PanelError {
    /// `(line, column)` of the problem, when it has one.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            PanelError::Syntax { line, column, .. } | PanelError::Invalid { line, column, .. } => {
                Some((*line, *column))
            }
            _ => None,
        }
    }
    /// The field path of a validation error (`groups[0].agents`), if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            PanelError::Invalid { field, .. } if !field.is_empty() => Some(field),
            _ => None,
        }
    }
}

impl Panel {
    /// Reads and validates a panel file. [`Panel::source`] is set to `path`.
    pub fn load(path: &Path) -> Result<Panel, PanelError> {
        let text =
            std::fs::read_to_string(path).map_err(|error| PanelError::Read { path: path.to_path_buf(), error })?;
        let mut panel = Self::from_toml_str(&text, &path.display().to_string()).map_err(|e| not_toml_hint(e, path))?;
        panel.source = Some(path.to_path_buf());
        Ok(panel)
    }

    /// Parses and validates panel TOML. `source` names the text in error
    /// messages and becomes [`Panel::source`].
    pub fn from_toml_str(text: &str, source: &str) -> Result<Panel, PanelError> {
        let mut panel = check::parse(text, source)?;
        panel.source = Some(PathBuf::from(source));
        Ok(panel)
    }

    /// A panel compiled into the binary, by file stem (`storybook-qa`).
    /// Its [`Panel::source`] is `bundled:<name>`.
    pub fn bundled(name: &str) -> Option<Panel> {
        let (stem, text) = BUNDLED_PANELS.iter().find(|(stem, _)| *stem == name)?;
        Self::from_toml_str(text, &format!("{BUNDLED_PREFIX}{stem}")).ok()
    }

    /// Names of the bundled panels.
    pub fn bundled_names() -> impl Iterator<Item = &'static str> {
        BUNDLED_PANELS.iter().map(|(stem, _)| *stem)
    }

    /// The bundled panels' names with their titles (the panels' `name`),
    /// read without loading the panels: each title is the top-level `name`
    /// line of the panel's TOML (empty when it has none that reads).
    pub fn bundled_titles() -> impl Iterator<Item = (&'static str, String)> {
        BUNDLED_PANELS.iter().map(|(stem, text)| (*stem, top_level_name(text).unwrap_or_default()))
    }

    /// A panel from a command-line argument: an existing file, or the name of
    /// a bundled panel (`storybook-qa`, `bundled:storybook-qa`,
    /// `storybook-qa.toml`).
    pub fn resolve(arg: &str) -> Result<Panel, PanelError> {
        let path = Path::new(arg);
        if path.is_file() {
            return Self::load(path);
        }
        let name = arg.strip_prefix(BUNDLED_PREFIX).unwrap_or(arg);
        let name = name.strip_suffix(".toml").unwrap_or(name);
        if let Some((stem, text)) = BUNDLED_PANELS.iter().find(|(stem, _)| *stem == name) {
            return Self::from_toml_str(text, &format!("{BUNDLED_PREFIX}{stem}"));
        }
        if arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/') || path.extension().is_some() {
            return Self::load(path);
        }
        Err(PanelError::NotFound {
            name: arg.to_string(),
            bundled: Self::bundled_names().collect::<Vec<_>>().join(", "),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_enum_parses_its_own_name() {
        for p in ModeratorPolicy::ALL {
            assert_eq!(ModeratorPolicy::parse(p.as_str()), Some(p));
        }
        for r in ConsensusRule::ALL {
            assert_eq!(ConsensusRule::parse(r.as_str()), Some(r));
        }
    }

    #[test]
    fn weighted_scores_show_where_the_method_is_built_on_them() {
        for (stem, shows) in [
            ("summary-geval", true),
            ("summary-geval-paper", true),
            ("survey-sage", true),
            ("storybook-qa", false),
            ("storybook-qa-paper", false),
            ("summary-collab", false),
            ("summary-chateval", false),
        ] {
            assert_eq!(Panel::bundled(stem).unwrap().shows_weighted(), shows, "{stem}");
        }
    }

    #[test]
    fn a_panel_reads_back_from_its_session_log_json() {
        for (stem, _) in BUNDLED_PANELS {
            let panel = Panel::bundled(stem).unwrap_or_else(|| panic!("{stem}"));
            let back: Panel = serde_json::from_value(panel.to_json()).unwrap_or_else(|e| panic!("{stem}: {e}"));
            assert_eq!(back, Panel { source: None, ..panel });
        }
    }

    #[test]
    fn a_yaml_or_json_panel_file_is_told_that_panels_are_toml() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = dir.path().join("panel.yaml");
        std::fs::write(&yaml, "name: x\ngroups: [\n").unwrap();
        let err = Panel::load(&yaml).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:1:", yaml.display())), "{err}");
        assert!(err.ends_with("(a panel file is TOML, not YAML; see docs/panels.md)"), "{err}");
        let toml = dir.path().join("panel.toml");
        std::fs::write(&toml, "name: x\n").unwrap();
        let err = Panel::load(&toml).unwrap_err().to_string();
        assert!(!err.contains("a panel file is TOML"), "a TOML file's error says only what is wrong: {err}");
    }
}
