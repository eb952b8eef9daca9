//! The session event vocabulary: every line of a session log is one [`Event`].
//!
//! The schema is the contract described in `docs/session-log.md`; keep both in step.

mod kind;
mod payload;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use crate::preset::{Departure, Preset, preset_line};
pub use crate::roles::Role;
pub use kind::{EventKind, after_round, check_place, round_label};
pub use payload::{
    AgentInfo, AspectValue, BATCH_PRICE_SHARE, EndStatus, Evaluation, ModelRef, OverrideTarget, ProposalKind,
    TrimmedEntry, Usage, UsageTotals,
};

/// The version of the session log format this build writes. Version 1 is
/// every log written before `session_started` carried the field; version 2
/// adds it, protocol settings in the recorded panel, G-Eval's and SAGEval's events;
/// version 3 adds pairwise judging's events and the result's `ranking`;
/// version 4 adds the protocol's `preset` and the run's `departures` from
/// its paper to `session_started` (for an earlier log they are read from
/// its recorded panel, whose settings then all took moot's defaults), and
/// CollabEval's `criteria_checked`; version 5 compositions (the
/// `composition` protocol with its recorded `stage` list), the `verifier`
/// role and the `verification` phase; version 6 the `redraw` turn kind,
/// `turn_completed.repeats` and `speaker_selected.reason_replaced`;
/// version 7 `turn_abandoned` (a resumed session's interrupted turns) and
/// `speaker_requested` (a person's pick or veto, recorded when given);
/// version 8 `turn_completed.misquotes` (an earlier log's replies were not
/// checked for them); version 9 `turn_completed.misstates` (a synthesis's
/// numbers checked against the results). Every earlier version still loads.
pub const SCHEMA_VERSION: u32 = 9;

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
    /// A verifier confirms or corrects each member's scores (a composition's `verify` stage).
    Verification,
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
            Phase::Verification => "verification",
            Phase::Aggregation => "aggregation",
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
    /// A speech asked for once more because it repeated an earlier one of
    /// its discussion (see `turn_completed`'s `repeats`).
    Redraw,
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
