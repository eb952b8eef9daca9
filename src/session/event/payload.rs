//! The values event payloads carry: an agent's verdict, token usage,
//! participants, score-override targets, trimmed discussion entries, aspect
//! values, proposals, and how a session ended.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Role, Scores, TurnKind};

/// Structured verdict of one agent turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Evaluation {
    /// Score per dimension key.
    pub scores: Scores,
    /// Overall score on the panel's scale, when given or derivable.
    #[serde(default)]
    pub overall: Option<f64>,
    /// Self-reported confidence in 0..=1.
    #[serde(default)]
    pub confidence: Option<f64>,
    #[serde(default)]
    pub justification: String,
    /// The agent said `NO MORE COMMENTS` in this reply.
    #[serde(default)]
    pub done: bool,
    /// A label verdict (pairwise `A`/`B`/`tie`), for label protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Labels of categorical dimensions (a dimension with `labels` in the
    /// panel), by dimension key; these dimensions have no score.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Probability-weighted scores (Σ p(s)·s over the scale's score tokens at
    /// the score position), when the provider returned log-probabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighted_scores: Option<Scores>,
    /// Why the verdict was read from a broken JSON object (cut off by the
    /// reply limit, or malformed): only its complete fields were used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salvaged: Option<String>,
}

impl Evaluation {
    /// Score for a dimension key, `overall` included.
    pub fn score(&self, key: &str) -> Option<f64> {
        if key == "overall" { self.overall } else { self.scores.get(key).copied() }
    }

    /// Set a score for a dimension key, `overall` included.
    pub fn set_score(&mut self, key: &str, value: f64) {
        if key == "overall" {
            self.overall = Some(value);
        } else {
            self.scores.insert(key.to_string(), value);
        }
    }
}

/// Tokens used by one call or summed over many.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Counts were estimated, not reported by the server.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub estimated: bool,
    /// Cost in the currency of the configured prices, when prices are configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Of `input_tokens`, those the server read from its prefix cache, when
    /// it says (OpenAI-compatible `prompt_tokens_details.cached_tokens`,
    /// llama.cpp's `timings.cache_n`, Anthropic's `cache_read_input_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_tokens: Option<u64>,
    /// Of `input_tokens` and `output_tokens`, those of calls answered
    /// through a batch API (`moot eval --batch`), billed at
    /// [`BATCH_PRICE_SHARE`] of the listed prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_output_tokens: Option<u64>,
}

/// The share of the listed prices a batch API charges: OpenAI's Batch API
/// and Anthropic's Message Batches both bill half (docs/scale.md, *Batch APIs*).
pub const BATCH_PRICE_SHARE: f64 = 0.5;

fn add_some(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, b) => a.or(b),
    }
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.estimated |= other.estimated;
        self.cached_input_tokens = add_some(self.cached_input_tokens, other.cached_input_tokens);
        self.batch_input_tokens = add_some(self.batch_input_tokens, other.batch_input_tokens);
        self.batch_output_tokens = add_some(self.batch_output_tokens, other.batch_output_tokens);
        self.cost = match (self.cost, other.cost) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }

    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Input and output tokens as billed at the listed prices: a batch
    /// call's tokens count for [`BATCH_PRICE_SHARE`] of theirs.
    pub fn billed_tokens(&self) -> (f64, f64) {
        let off = 1.0 - BATCH_PRICE_SHARE;
        let billed = |all: u64, batch: Option<u64>| all as f64 - off * batch.unwrap_or(0).min(all) as f64;
        (billed(self.input_tokens, self.batch_input_tokens), billed(self.output_tokens, self.batch_output_tokens))
    }
}

/// Usage totals of a session, split by role, by agent and by group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UsageTotals {
    pub total: Usage,
    #[serde(default)]
    pub by_role: BTreeMap<String, Usage>,
    #[serde(default)]
    pub by_agent: BTreeMap<String, Usage>,
    /// Calls made for a group (its agents' turns and its moderator calls).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_group: BTreeMap<String, Usage>,
    /// Number of model calls (attempts that produced a reply).
    #[serde(default)]
    pub calls: u64,
}

impl UsageTotals {
    /// Add one call's usage. Repair requests and speeches asked for again
    /// are counted apart from the role's own calls (`by_role["repair"]`,
    /// `by_role["redraw"]`), so their cost is visible.
    pub fn record(&mut self, role: Role, kind: TurnKind, agent: &str, usage: &Usage) {
        self.total.add(usage);
        let bucket = match kind {
            TurnKind::Repair => "repair",
            TurnKind::Redraw => "redraw",
            _ => role.as_str(),
        };
        self.by_role.entry(bucket.to_string()).or_default().add(usage);
        self.by_agent.entry(agent.to_string()).or_default().add(usage);
        self.calls += 1;
    }

    /// Like [`UsageTotals::record`], also counting the call for `group`.
    pub fn record_in_group(&mut self, role: Role, kind: TurnKind, agent: &str, group: Option<&str>, usage: &Usage) {
        self.record(role, kind, agent, usage);
        if let Some(g) = group {
            self.by_group.entry(g.to_string()).or_default().add(usage);
        }
    }
}

/// Which provider and model one participant talks to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ModelRef {
    pub provider: String,
    pub model: String,
}

/// One participant as recorded in `session_started`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    pub name: String,
    pub group: String,
    #[serde(default)]
    pub role: String,
    pub provider: String,
    pub model: String,
}

/// What a score override applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OverrideTarget {
    /// One recorded turn's evaluation.
    Turn { turn: u64, agent: String },
    /// An agent's latest (and so final) evaluation.
    Agent { agent: String },
    /// The aggregated result: of one group, or panel-wide when `group` is absent.
    Final {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
}

/// A contribution to a group's discussion that a request showed condensed
/// or left out, to fit the model's context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrimmedEntry {
    /// Its position in the group's discussion, from 1.
    pub index: u32,
    pub agent: String,
    /// The discussion round, for a contribution made in one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u32>,
    /// It was the agent's first evaluation.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first: bool,
}

/// The value of one aspect: a score, or the label of a categorical dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AspectValue {
    Score(f64),
    Label(String),
}

impl AspectValue {
    pub fn score(&self) -> Option<f64> {
        match self {
            AspectValue::Score(v) => Some(*v),
            AspectValue::Label(_) => None,
        }
    }

    /// The value of `dimension` in an evaluation: its label, else its score.
    pub fn of(ev: &Evaluation, dimension: &str) -> Option<Self> {
        match ev.labels.get(dimension) {
            Some(l) => Some(AspectValue::Label(l.clone())),
            None => ev.score(dimension).map(AspectValue::Score),
        }
    }

    /// Put this value into an evaluation as `dimension`'s.
    pub fn set_in(&self, ev: &mut Evaluation, dimension: &str) {
        match self {
            AspectValue::Score(v) => ev.set_score(dimension, *v),
            AspectValue::Label(l) => {
                ev.labels.insert(dimension.to_string(), l.clone());
            }
        }
    }
}

impl std::fmt::Display for AspectValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AspectValue::Score(v) if v.fract() == 0.0 => write!(f, "{v:.0}"),
            AspectValue::Score(v) => write!(f, "{v:.2}"),
            AspectValue::Label(l) => f.write_str(l),
        }
    }
}

/// What a proposal of a meta-evaluator changes in the panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalKind {
    /// A rewritten definition (description) of an existing dimension.
    Definition,
    /// A dimension the panel does not have.
    Aspect,
}

impl ProposalKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProposalKind::Definition => "definition",
            ProposalKind::Aspect => "aspect",
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    Completed,
    Stopped,
    Failed,
}

impl EndStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EndStatus::Completed => "completed",
            EndStatus::Stopped => "stopped",
            EndStatus::Failed => "failed",
        }
    }
}
