//! The fold: a session view built by applying events one by one.
//!
//! Live runs, replays and loaded logs all go through [`SessionView::apply`], so
//! they produce the same view. Nothing else mutates a view.

mod apply;
mod views;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use super::event::{Departure, EndStatus, Event, ModelRef, Phase, Preset, Scores, UsageTotals};
use crate::item::Item;
use crate::panel::Panel;

pub use apply::logged_departures;
pub use views::{
    AgentView, AggregateView, ConsensusView, GroupView, Pick, StepsView, TimelineEntry, TrimView, TurnView,
    consensus_check, consensus_words, thousands,
};

/// Run state of the whole session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RunState {
    /// No `session_started` seen yet.
    #[default]
    Empty,
    Running,
    Paused,
    /// A stop was requested; the debate is winding down (aggregation may still run).
    Stopping,
    Ended(EndStatus),
}

impl RunState {
    pub fn label(self) -> &'static str {
        match self {
            RunState::Empty => "empty",
            RunState::Running => "running",
            RunState::Paused => "paused",
            RunState::Stopping => "stopping",
            RunState::Ended(EndStatus::Completed) => "done",
            RunState::Ended(EndStatus::Stopped) => "stopped",
            RunState::Ended(EndStatus::Failed) => "failed",
        }
    }

    pub fn is_ended(self) -> bool {
        matches!(self, RunState::Ended(_))
    }
}

/// What an agent is doing now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentState {
    #[default]
    Waiting,
    /// A call is in flight but no text has arrived yet.
    Thinking,
    /// The call is queued behind others (a busy local model, a rate limit).
    Queued,
    /// Text is streaming in.
    Speaking,
    /// The agent said it has no more comments (or the debate ended).
    Done,
    /// The last call failed; `retries` attempts failed so far.
    Failed { retries: u32 },
}

/// A turn's life cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    Streaming,
    Completed,
    Failed,
}

/// Everything a screen, a report or `sessions show` needs about a session.
#[derive(Debug, Clone, Default)]
pub struct SessionView {
    pub session_id: String,
    /// The log format's version (`session_started.schema_version`).
    pub schema_version: u32,
    pub protocol: String,
    pub panel: Option<Panel>,
    pub panel_json: serde_json::Value,
    pub item: Option<Item>,
    pub seed: u64,
    pub moot_version: String,
    pub provider_note: Option<String>,
    /// The protocol's preset, and where the run departs from its paper.
    pub preset: Preset,
    pub departures: Vec<Departure>,
    pub roles: BTreeMap<String, ModelRef>,
    pub started: Option<DateTime<Utc>>,
    pub last_t: Option<DateTime<Utc>>,
    pub state: RunState,
    pub phase: Option<Phase>,
    /// The group of the latest `phase_started`, when that phase belongs to one group.
    pub phase_group: Option<String>,
    pub round: Option<u32>,
    pub agents: Vec<AgentView>,
    pub groups: Vec<GroupView>,
    pub turns: Vec<TurnView>,
    pub timeline: Vec<TimelineEntry>,
    /// Panel-wide aggregate.
    pub aggregate: Option<AggregateView>,
    /// Initial, final, aggregate and human-adjusted scores (see [`super::stages`]).
    pub stages: super::stages::Stages,
    pub human_ratings: Vec<(String, Scores)>,
    pub usage: UsageTotals,
    pub end_error: Option<String>,
    pub end_reason: Option<String>,
    pub duration_ms: Option<u64>,
    /// When the panel-wide result came in: the run is done there, though a
    /// live session stays open for overrides until it is closed.
    pub result_t: Option<DateTime<Utc>>,
    /// Events applied.
    pub events: u64,
    /// Last `seq` applied.
    pub last_seq: Option<u64>,
    /// Why a call is waiting, by turn (rate limit, local model queue…).
    pub waiting: HashMap<u64, String>,
    /// Evaluation steps by dimension key (G-Eval), the latest for each.
    pub steps: BTreeMap<String, StepsView>,
    /// Revisions and proposals of a meta-evaluator (SAGEval).
    pub sage: super::sage::SageView,
    /// Pairwise comparisons: verdicts, decisions and people's settlements.
    pub pairwise: super::pairwise::PairwiseView,
    turn_index: HashMap<u64, usize>,
    agent_index: HashMap<String, usize>,
}

impl SessionView {
    pub fn new() -> Self {
        Self::default()
    }

    /// Fold a whole list of events.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut v = Self::new();
        for e in events {
            v.apply(e);
        }
        v
    }

    pub fn agent(&self, name: &str) -> Option<&AgentView> {
        self.agent_index.get(name).map(|&i| &self.agents[i])
    }

    pub fn turn(&self, id: u64) -> Option<&TurnView> {
        self.turn_index.get(&id).map(|&i| &self.turns[i])
    }

    pub fn group(&self, name: &str) -> Option<&GroupView> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// Dimension keys of the panel, in order (without `overall`).
    pub fn dimension_keys(&self) -> Vec<String> {
        self.panel.as_ref().map(|p| p.dimension_keys()).unwrap_or_default()
    }

    /// The keys an evaluation of the panel is scored on: the dimensions,
    /// then `overall` where the panel has one ([`Panel::score_keys`]).
    pub fn score_keys(&self) -> Vec<String> {
        self.panel.as_ref().map_or_else(|| vec!["overall".into()], |p| p.score_keys())
    }

    /// Whether the panel's evaluations have an overall score (a session
    /// without its panel: as every panel had before `overall = false`).
    pub fn has_overall(&self) -> bool {
        self.panel.as_ref().is_none_or(|p| p.has_overall())
    }

    /// The turn currently streaming, if any (the most recent one).
    pub fn speaking_turn(&self) -> Option<&TurnView> {
        self.turns.iter().rev().find(|t| t.state == TurnState::Streaming)
    }

    /// Elapsed time of the run: from its start to its result, or (without
    /// a result) to its end or the last event applied. The time a session
    /// stayed open for overrides after its result does not count.
    pub fn elapsed_ms(&self) -> u64 {
        let since_start = |t: DateTime<Utc>| self.started.map_or(0, |a| (t - a).num_milliseconds().max(0) as u64);
        match (self.result_t, self.duration_ms, self.last_t) {
            (Some(r), _, _) => since_start(r),
            (None, Some(d), _) => d,
            (None, None, Some(b)) => since_start(b),
            (None, None, None) => 0,
        }
    }

    /// Whether the run is over as far as its clock goes: it has its result
    /// or it ended.
    pub fn is_done(&self) -> bool {
        self.result_t.is_some() || self.state.is_ended()
    }

    fn group_mut(&mut self, name: &str) -> &mut GroupView {
        if let Some(i) = self.groups.iter().position(|g| g.name == name) {
            &mut self.groups[i]
        } else {
            self.groups.push(GroupView { name: name.to_string(), ..Default::default() });
            self.groups.last_mut().expect("just pushed")
        }
    }

    fn agent_mut(&mut self, name: &str) -> Option<&mut AgentView> {
        self.agent_index.get(name).copied().map(|i| &mut self.agents[i])
    }
}
