//! The session event vocabulary: every line of a session log is one [`Event`].
//!
//! The schema is the contract described in `docs/session-log.md`; keep both in step.

mod kind;
mod payload;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use kind::EventKind;
pub use payload::{
    AgentInfo, AspectValue, Departure, EndStatus, Evaluation, ModelRef, OverrideTarget, Preset, ProposalKind,
    TrimmedEntry, Usage, UsageTotals, preset_line,
};

/// The version of the session log format this build writes. Version 1 is
/// every log written before `session_started` carried the field; version 2
/// adds it, protocol settings in the recorded panel, G-Eval's and SAGEval's events;
/// version 3 adds pairwise judging's events and the result's `ranking`;
/// version 4 adds the protocol's `preset` and the run's `departures` from
/// its paper to `session_started` (for an earlier log they are read from
/// its recorded panel, whose settings then all took moot's defaults), and
/// CollabEval's `criteria_checked`.
/// Every earlier version still loads.
pub const SCHEMA_VERSION: u32 = 4;

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
