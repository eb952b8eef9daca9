//! The session event vocabulary: every line of a session log is one [`Event`].
//!
//! The schema is the contract described in `docs/session-log.md`; keep both in step.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::item::Item;
use crate::session::pairwise::{Confidence, Flip, Label, PairRef, RankEntry};

/// The version of the session log format this build writes. Version 1 is
/// every log written before `session_started` carried the field; version 2
/// adds it, protocol settings in the recorded panel, G-Eval's and SAGEval's events;
/// version 3 adds pairwise judging's events and the result's `ranking`.
/// Every earlier version still loads.
pub const SCHEMA_VERSION: u32 = 3;

fn first_schema_version() -> u32 {
    1
}

/// Scores keyed by dimension key (plus `overall` where relevant).
pub type Scores = BTreeMap<String, f64>;

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub t: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Which stage of a protocol a turn or marker belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Initial,
    Debate,
    Discussion,
    FinalJudgment,
    Critique,
    /// Evaluation steps are written (G-Eval).
    Steps,
    /// Each dimension is scored on its own (G-Eval).
    Scoring,
    /// A round of discussion is condensed (ChatEval's summarizer).
    Summary,
    /// Judges compare two candidates, in each order (pairwise).
    Comparison,
    Aggregation,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Initial => "initial",
            Phase::Debate => "debate",
            Phase::Discussion => "discussion",
            Phase::FinalJudgment => "final_judgment",
            Phase::Critique => "critique",
            Phase::Steps => "steps",
            Phase::Scoring => "scoring",
            Phase::Summary => "summary",
            Phase::Comparison => "comparison",
            Phase::Aggregation => "aggregation",
        }
    }
}

/// Who a model call speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    #[default]
    Agent,
    Moderator,
    Aggregator,
    FinalJudge,
    /// Checks and rectifies an evaluator's scores (SAGEval's SAGE).
    MetaEvaluator,
    /// Condenses each round of a discussion (ChatEval).
    Summarizer,
    /// Explains a judge's mistakes against human labels (`moot optimize`).
    Feedback,
    /// Rewrites a judge's prompt from that feedback (`moot optimize`).
    Rewriter,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Moderator => "moderator",
            Role::Aggregator => "aggregator",
            Role::FinalJudge => "final_judge",
            Role::MetaEvaluator => "meta_evaluator",
            Role::Summarizer => "summarizer",
            Role::Feedback => "feedback",
            Role::Rewriter => "rewriter",
        }
    }
    pub const ALL: [Role; 8] = [
        Role::Agent,
        Role::Moderator,
        Role::Aggregator,
        Role::FinalJudge,
        Role::MetaEvaluator,
        Role::Summarizer,
        Role::Feedback,
        Role::Rewriter,
    ];
    /// The roles of `moot optimize`, which any panel may bind with `[roles.<role>]`.
    pub const OPTIMIZE: [Role; 2] = [Role::Feedback, Role::Rewriter];
    /// The participant name of a role in events and on screen (`final judge`).
    pub fn label(self) -> &'static str {
        match self {
            Role::FinalJudge => "final judge",
            Role::MetaEvaluator => "meta-evaluator",
            other => other.as_str(),
        }
    }
}

/// Why a model call was made within a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TurnKind {
    /// A normal evaluation or debate turn.
    #[default]
    Speak,
    /// A second request after a reply that could not be parsed.
    Repair,
    /// A moderator call choosing the next speaker.
    Select,
    /// A synthesis or decisive judgment.
    Judge,
}

/// Where a dimension's evaluation steps came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepsSource {
    /// Given in the panel file.
    Panel,
    /// Written by a judge in this session (turn recorded).
    Generated,
    /// Kept from an earlier run of the panel.
    Cache,
    /// Edited by a person in this session.
    Human,
}

impl StepsSource {
    pub fn as_str(self) -> &'static str {
        match self {
            StepsSource::Panel => "panel",
            StepsSource::Generated => "generated",
            StepsSource::Cache => "cache",
            StepsSource::Human => "human",
        }
    }
}

/// Who chose a speaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SelectedBy {
    Moderator,
    Policy,
    Human,
}

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
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.estimated |= other.estimated;
        self.cost = match (self.cost, other.cost) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
    }
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens
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
    /// Add one call's usage. Repair requests are counted apart from the role's
    /// own calls (`by_role["repair"]`), so their cost is visible.
    pub fn record(&mut self, role: Role, kind: TurnKind, agent: &str, usage: &Usage) {
        self.total.add(usage);
        let bucket = if kind == TurnKind::Repair { "repair" } else { role.as_str() };
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

/// The payload of an event, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    SessionStarted {
        /// The log format's version ([`SCHEMA_VERSION`] when written; 1 for
        /// logs written before the field existed).
        #[serde(default = "first_schema_version")]
        schema_version: u32,
        session_id: String,
        protocol: String,
        /// The resolved panel, without secrets.
        panel: serde_json::Value,
        item: Item,
        agents: Vec<AgentInfo>,
        /// Provider and model per non-agent role (moderator, aggregator, final_judge).
        #[serde(default)]
        roles: BTreeMap<String, ModelRef>,
        seed: u64,
        moot_version: String,
        /// Which provider was chosen by default and why.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        provider_note: Option<String>,
    },
    PhaseStarted {
        phase: Phase,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
    },
    SpeakerSelected {
        group: String,
        agent: String,
        by: SelectedBy,
        reason: String,
        /// The moderator's raw reply(ies), when an LLM chose.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<String>,
        /// Set when the moderator's reply was unusable and a policy chose instead.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fallback: Option<String>,
    },
    TurnStarted {
        turn: u64,
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        phase: Phase,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
        #[serde(default)]
        role: Role,
        #[serde(default)]
        kind: TurnKind,
        /// The one dimension the turn is about, when it is about one (G-Eval's steps and scores).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dimension: Option<String>,
        /// The pair the turn compares, in the order shown (pairwise).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pair: Option<PairRef>,
    },
    TurnDelta {
        turn: u64,
        text: String,
    },
    TurnCompleted {
        turn: u64,
        agent: String,
        text: String,
        evaluation: Option<Evaluation>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parse_error: Option<String>,
        usage: Usage,
        latency_ms: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cached: bool,
        /// The reply said `NO MORE COMMENTS` (also when no evaluation could be read from it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        done: bool,
        /// The reply stopped at its token limit (`max_tokens`): the server's
        /// finish reason was `length` or `max_tokens`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        truncated: bool,
    },
    TurnFailed {
        turn: u64,
        agent: String,
        error: String,
        attempt: u32,
        will_retry: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_in_ms: Option<u64>,
    },
    ConsensusChecked {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<u32>,
        scores: BTreeMap<String, Scores>,
        spread: Scores,
        reached: bool,
        rule: String,
        /// Label verdicts compared instead of scores (CollabEval's pairwise
        /// mode): each agent's latest label; agents without one are left out.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
    },
    /// An agent's evaluation that stands as its final one for the group, after the debate.
    FinalEvaluations {
        group: String,
        /// Agent name → final evaluation (the latest valid one).
        evaluations: BTreeMap<String, Evaluation>,
        /// Agent name → the turn that evaluation came from.
        turns: BTreeMap<String, u64>,
    },
    HumanComment {
        text: String,
        author: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
    },
    ScoreOverridden {
        target: OverrideTarget,
        dimension: String,
        from: Option<f64>,
        to: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        author: String,
    },
    /// The human's own rating of the item, for agreement reports.
    HumanRating {
        scores: Scores,
        author: String,
    },
    Paused {
        author: String,
    },
    Resumed {
        author: String,
    },
    StopRequested {
        author: String,
    },
    /// One more turn allowed while paused.
    Stepped {
        author: String,
    },
    /// A human command the engine could not apply (unknown agent, finished agent…).
    CommandRejected {
        command: String,
        reason: String,
        author: String,
    },
    /// A dimension's evaluation steps (G-Eval), as scoring will use them;
    /// a later one for the same dimension replaces it.
    EvaluationSteps {
        dimension: String,
        steps: String,
        source: StepsSource,
        /// The person who edited them (`human`), or who last did so (`cache`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        author: Option<String>,
        /// The turn that wrote them (`generated`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        turn: Option<u64>,
    },
    /// Another participant revised an agent's evaluation of one dimension
    /// (SAGEval: the meta-evaluator rectifying the evaluator's score or
    /// label). The revised value stands until a person rejects it
    /// (`revision_decided`).
    EvaluationRevised {
        /// Who revised it (`meta-evaluator`).
        by: String,
        /// The turn whose reply holds the revision.
        turn: u64,
        /// Whose evaluation was revised.
        agent: String,
        /// The turn that evaluation came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_turn: Option<u64>,
        dimension: String,
        /// The agent's value (absent when it gave none).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<AspectValue>,
        to: AspectValue,
        reason: String,
    },
    /// A participant proposed a new definition of a dimension it found
    /// inadequate (SAGEval). Nothing changes until a person adopts it
    /// (`proposal_adopted`).
    DefinitionProposed {
        by: String,
        turn: u64,
        dimension: String,
        definition: String,
        reason: String,
    },
    /// A participant proposed a dimension the panel lacks, with its score of
    /// the item (SAGEval). It is not part of the result.
    AspectProposed {
        by: String,
        turn: u64,
        key: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        name: String,
        definition: String,
        score: f64,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reason: String,
    },
    /// A person accepted or rejected a revision (`evaluation_revised`); a
    /// rejected one puts the agent's own value back.
    RevisionDecided {
        agent: String,
        dimension: String,
        accepted: bool,
        /// The value that stands now.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<AspectValue>,
        author: String,
    },
    /// A person adopted a proposal into a new panel file written beside the
    /// panel's own (the current directory for a bundled panel).
    ProposalAdopted {
        proposal: ProposalKind,
        /// The dimension's key.
        key: String,
        /// The panel file written.
        path: String,
        author: String,
    },
    /// A provider call is waiting for its turn (rate limit, local model queue, backoff).
    Waiting {
        turn: u64,
        reason: String,
    },
    /// A request was shortened to fit the context of the model serving it:
    /// older contributions condensed to their score line or left out, or
    /// the reply budget lowered. Comes after the turn's `turn_started`.
    HistoryTrimmed {
        turn: u64,
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        /// Contributions left out of the request.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<TrimmedEntry>,
        /// Contributions shown as their score line only.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        condensed: Vec<TrimmedEntry>,
        /// Prompt tokens with the whole discussion.
        tokens_before: u64,
        /// Prompt tokens of the request sent.
        tokens_after: u64,
        /// The context window of the model, in tokens.
        context: u64,
        /// Tokens kept for the reply (the request's `max_tokens`).
        reply_tokens: u64,
        /// The reply budget asked for, when it was lowered to fit.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reply_requested: Option<u64>,
    },
    /// One judge's readable verdict on one order of a pair (pairwise). A
    /// reply that could not be read has no such event: its turn carries the
    /// parse error.
    PairVerdict {
        turn: u64,
        judge: String,
        /// The pair: candidate ids, its first and second.
        first: String,
        second: String,
        /// This order showed `second` as A (and `first` as B).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        swapped: bool,
        /// The vote's number within its order, from 1.
        vote: u32,
        /// The position label the judge gave (A is the candidate shown first).
        label: Label,
        /// Dimension → position label, for the criteria the judge labelled.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        criteria: BTreeMap<String, Label>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confidence: Option<Confidence>,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
    },
    /// What a pair came to: one judge's votes (`judge` set), or the panel's
    /// decision over its judges (`judge` absent).
    PairDecided {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        judge: Option<String>,
        first: String,
        second: String,
        /// The label of the order with `first` as A (the majority of that
        /// order's votes); absent when none of them could be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        first_order: Option<Label>,
        /// The label of the swapped order (`second` as A); absent when it
        /// was not run or none of its votes could be read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        swapped_order: Option<Label>,
        /// The candidate preferred; absent for a tie or no result.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        /// How the two orders disagreed (a judge's decision with both orders).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        flip: Option<Flip>,
        /// Why there is no decision (no readable verdict); absent when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_result: Option<String>,
    },
    /// A person decided a pair (settled a tie or a flip, or gave their own
    /// verdict): it replaces the panel's decision and is marked human.
    PairSettled {
        first: String,
        second: String,
        /// The candidate the person preferred; absent for a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        author: String,
    },
    /// A person cast one more vote on a pair (pairwise): it counts as one
    /// more judge's decision in the panel's majority. A later vote by the
    /// same person on the same pair replaces theirs.
    PairVoted {
        first: String,
        second: String,
        /// The candidate the person preferred; absent for a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        author: String,
    },
    /// A person declined to decide a pair (pairwise): the panel's decision
    /// stands; in a blind run the judges' verdicts are shown without the
    /// person's own label.
    PairAbstained {
        first: String,
        second: String,
        author: String,
    },
    /// A blind run (`moot run --blind`): the screen hides the systems'
    /// names and the judges' verdicts on a pair until a person has given
    /// their own verdict (`pair_labelled`). `pairs` is each pair in the
    /// order the screen shows it (`swapped`: `second` on the left, as A),
    /// drawn from the session's seed.
    BlindOrder {
        pairs: Vec<PairRef>,
    },
    /// A person's own verdict on a pair, given blind (before the judges'
    /// verdicts and the systems' names were shown): a human label.
    PairLabelled {
        first: String,
        second: String,
        /// The candidate the person preferred; absent for a tie.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        winner: Option<String>,
        /// `second` was on the left of the screen (shown as A).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        swapped: bool,
        author: String,
    },
    AggregationCompleted {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        group: Option<String>,
        feedback: String,
        scores: Scores,
        overall: Option<f64>,
        /// Dimension → value before human overrides, for values that were overridden.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        original: Scores,
        /// What produced this result: `mean`, `consensus`, `final_judge`, `override`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        method: Option<String>,
        /// Why this result has no scores (no agent produced a readable evaluation…); absent when it has some.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        no_result: Option<String>,
        /// Panel-wide result: the groups left out of the mean because they have no result.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<String>,
        /// Categorical dimension → the label most of the evaluations gave
        /// (a group's agents; for the panel, its groups' labels). A tie gives no label.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        labels: BTreeMap<String, String>,
        /// Dimension → the label as the protocol computed it, for labels people changed.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        original_labels: BTreeMap<String, String>,
        /// Pairwise: each candidate's record, best first (win rate, a tie
        /// counting half).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        ranking: Vec<RankEntry>,
    },
    SessionEnded {
        status: EndStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Why the debate ended early (user stop, budget), when it did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        usage: UsageTotals,
        duration_ms: u64,
    },
}

impl EventKind {
    /// The `type` tag of this event.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session_started",
            EventKind::EvaluationSteps { .. } => "evaluation_steps",
            EventKind::PhaseStarted { .. } => "phase_started",
            EventKind::SpeakerSelected { .. } => "speaker_selected",
            EventKind::TurnStarted { .. } => "turn_started",
            EventKind::TurnDelta { .. } => "turn_delta",
            EventKind::TurnCompleted { .. } => "turn_completed",
            EventKind::TurnFailed { .. } => "turn_failed",
            EventKind::ConsensusChecked { .. } => "consensus_checked",
            EventKind::FinalEvaluations { .. } => "final_evaluations",
            EventKind::HumanComment { .. } => "human_comment",
            EventKind::ScoreOverridden { .. } => "score_overridden",
            EventKind::HumanRating { .. } => "human_rating",
            EventKind::Paused { .. } => "paused",
            EventKind::Resumed { .. } => "resumed",
            EventKind::StopRequested { .. } => "stop_requested",
            EventKind::Stepped { .. } => "stepped",
            EventKind::CommandRejected { .. } => "command_rejected",
            EventKind::EvaluationRevised { .. } => "evaluation_revised",
            EventKind::DefinitionProposed { .. } => "definition_proposed",
            EventKind::AspectProposed { .. } => "aspect_proposed",
            EventKind::RevisionDecided { .. } => "revision_decided",
            EventKind::ProposalAdopted { .. } => "proposal_adopted",
            EventKind::Waiting { .. } => "waiting",
            EventKind::HistoryTrimmed { .. } => "history_trimmed",
            EventKind::PairVerdict { .. } => "pair_verdict",
            EventKind::PairDecided { .. } => "pair_decided",
            EventKind::PairSettled { .. } => "pair_settled",
            EventKind::PairVoted { .. } => "pair_voted",
            EventKind::PairAbstained { .. } => "pair_abstained",
            EventKind::BlindOrder { .. } => "blind_order",
            EventKind::PairLabelled { .. } => "pair_labelled",
            EventKind::AggregationCompleted { .. } => "aggregation_completed",
            EventKind::SessionEnded { .. } => "session_ended",
        }
    }
}
