//! The fold: a session view built by applying events one by one.
//!
//! Live runs, replays and loaded logs all go through [`SessionView::apply`], so
//! they produce the same view. Nothing else mutates a view.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use super::event::{
    AgentInfo, EndStatus, Evaluation, Event, EventKind, ModelRef, OverrideTarget, Phase, Role, Scores, SelectedBy,
    StepsSource, TrimmedEntry, TurnKind, Usage, UsageTotals,
};
use super::overrides::override_latest;
use super::progress::AgentProgress;
use crate::item::Item;
use crate::panel::Panel;

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

/// One model call as seen in the log.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnView {
    pub id: u64,
    pub agent: String,
    pub group: Option<String>,
    pub phase: Phase,
    pub round: Option<u32>,
    pub role: Role,
    pub kind: TurnKind,
    /// The dimension the turn is about, when it is about one.
    pub dimension: Option<String>,
    /// Text so far (streamed) or final.
    pub text: String,
    pub state: TurnState,
    pub evaluation: Option<Evaluation>,
    pub parse_error: Option<String>,
    pub usage: Usage,
    pub latency_ms: Option<u64>,
    pub failed_attempts: u32,
    pub last_error: Option<String>,
    pub cached: bool,
    /// The reply stopped at its token limit.
    pub truncated: bool,
    pub started: DateTime<Utc>,
    /// Bumped on every change to `text`; lets views cache wrapped lines.
    pub revision: u64,
}

/// One agent's state.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentView {
    pub info: AgentInfo,
    pub state: AgentState,
    /// Latest evaluation (overrides applied), finished, turns spoken: moved
    /// by the same rules as the engine's.
    pub progress: AgentProgress,
    /// Indices into [`SessionView::turns`] of this agent's turns.
    pub turns: Vec<usize>,
    pub current_turn: Option<u64>,
    /// Dimension → original value, for scores a human changed.
    pub overridden: Scores,
    pub usage: Usage,
}

/// The moderator's choice for a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Pick {
    pub agent: String,
    pub by: SelectedBy,
    pub reason: String,
    pub fallback: Option<String>,
    pub t: DateTime<Utc>,
}

/// Moderator and consensus state of one group.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct GroupView {
    pub name: String,
    pub agents: Vec<String>,
    pub picks: Vec<Pick>,
    /// Debate turns spoken so far in this group.
    pub debate_turns: u32,
    pub round: Option<u32>,
    pub phase: Option<Phase>,
    /// Every consensus check, oldest first.
    pub consensus: Vec<ConsensusView>,
    pub aggregate: Option<AggregateView>,
    pub finals: BTreeMap<String, Evaluation>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConsensusView {
    pub round: Option<u32>,
    pub scores: BTreeMap<String, Scores>,
    pub spread: Scores,
    pub reached: bool,
    pub rule: String,
    /// Each agent's label, when labels were compared instead of scores.
    pub labels: BTreeMap<String, String>,
}

/// An aggregated result, with the values before human overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateView {
    pub feedback: String,
    pub scores: Scores,
    pub overall: Option<f64>,
    pub original: Scores,
    pub method: Option<String>,
    /// Why the result has no scores of the judges, when it has none.
    pub no_result: Option<String>,
    /// Panel-wide: the groups left out of the mean for having no result.
    pub left_out: Vec<String>,
    /// Categorical dimension → the majority label.
    pub labels: BTreeMap<String, String>,
    /// Dimension → the label as the protocol computed it, for labels people changed.
    pub original_labels: BTreeMap<String, String>,
    /// Pairwise: each candidate's record, best first.
    pub ranking: Vec<crate::session::pairwise::RankEntry>,
}

impl AggregateView {
    pub fn score(&self, key: &str) -> Option<f64> {
        if key == "overall" { self.overall } else { self.scores.get(key).copied() }
    }
}

/// A `history_trimmed` event: what a request left out to fit the model's context.
#[derive(Debug, Clone, PartialEq)]
pub struct TrimView {
    pub turn: u64,
    pub agent: String,
    pub group: Option<String>,
    pub left_out: Vec<TrimmedEntry>,
    pub condensed: Vec<TrimmedEntry>,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub context: u64,
    pub reply_tokens: u64,
    pub reply_requested: Option<u64>,
}

impl TrimView {
    /// The view of a `history_trimmed` event (`None` for any other).
    pub fn of(kind: &EventKind) -> Option<Self> {
        let EventKind::HistoryTrimmed {
            turn,
            agent,
            group,
            left_out,
            condensed,
            tokens_before,
            tokens_after,
            context,
            reply_tokens,
            reply_requested,
        } = kind
        else {
            return None;
        };
        Some(Self {
            turn: *turn,
            agent: agent.clone(),
            group: group.clone(),
            left_out: left_out.clone(),
            condensed: condensed.clone(),
            tokens_before: *tokens_before,
            tokens_after: *tokens_after,
            context: *context,
            reply_tokens: *reply_tokens,
            reply_requested: *reply_requested,
        })
    }

    /// One line for transcripts: `history trimmed for Ann: 3 older
    /// contributions left out, 1 condensed (5,210 → 3,480 tokens of 4,096,
    /// 512 kept for the reply)`.
    pub fn summary(&self) -> String {
        let mut what = Vec::new();
        if !self.left_out.is_empty() {
            what.push(format!("{} older contribution{} left out", self.left_out.len(), plural(self.left_out.len())));
        }
        if !self.condensed.is_empty() {
            what.push(format!("{} condensed to scores", self.condensed.len()));
        }
        if let Some(asked) = self.reply_requested {
            what.push(format!("reply budget lowered from {}", thousands(asked)));
        }
        format!(
            "history trimmed for {}: {} ({} → {} tokens of {}, {} kept for the reply)",
            self.agent,
            what.join(", "),
            thousands(self.tokens_before),
            thousands(self.tokens_after),
            thousands(self.context),
            thousands(self.reply_tokens)
        )
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// `4096` → `4,096`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An entry of the transcript, in log order.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineEntry {
    Phase {
        phase: Phase,
        group: Option<String>,
        round: Option<u32>,
    },
    /// Index into [`SessionView::turns`].
    Turn(usize),
    Pick {
        group: String,
        pick: Pick,
    },
    Comment {
        text: String,
        author: String,
        group: Option<String>,
    },
    Override {
        target: OverrideTarget,
        dimension: String,
        from: Option<f64>,
        to: f64,
        reason: Option<String>,
        author: String,
    },
    Rating {
        scores: Scores,
        author: String,
    },
    Control {
        what: &'static str,
        author: String,
    },
    Rejected {
        command: String,
        reason: String,
    },
    Consensus {
        group: Option<String>,
        round: Option<u32>,
        reached: bool,
    },
    Aggregate {
        group: Option<String>,
    },
    /// A request was shortened to fit the model's context.
    Trimmed(TrimView),
    /// A revision, proposal or decision (SAGEval), as one line; `human` when a person made it.
    Note {
        text: String,
        human: bool,
    },
    Ended {
        status: EndStatus,
        error: Option<String>,
        reason: Option<String>,
    },
}

/// A dimension's evaluation steps and where they came from.
#[derive(Debug, Clone, PartialEq)]
pub struct StepsView {
    pub steps: String,
    pub source: StepsSource,
    pub author: Option<String>,
    pub turn: Option<u64>,
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

    /// The turn currently streaming, if any (the most recent one).
    pub fn speaking_turn(&self) -> Option<&TurnView> {
        self.turns.iter().rev().find(|t| t.state == TurnState::Streaming)
    }

    /// Elapsed time from the first to the last event applied.
    pub fn elapsed_ms(&self) -> u64 {
        if let Some(d) = self.duration_ms {
            return d;
        }
        match (self.started, self.last_t) {
            (Some(a), Some(b)) => (b - a).num_milliseconds().max(0) as u64,
            _ => 0,
        }
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

    /// Apply one event. Unknown references (a turn never started…) are ignored,
    /// so any prefix of a log, or a log with gaps, folds without panicking.
    pub fn apply(&mut self, event: &Event) {
        self.events += 1;
        self.last_seq = Some(event.seq);
        self.last_t = Some(event.t);
        self.stages.apply(&event.kind);
        self.sage.apply(&event.kind);
        self.pairwise.apply(&event.kind);
        match &event.kind {
            EventKind::SessionStarted {
                schema_version,
                session_id,
                protocol,
                panel,
                item,
                agents,
                roles,
                seed,
                moot_version,
                provider_note,
            } => {
                self.session_id = session_id.clone();
                self.schema_version = *schema_version;
                self.protocol = protocol.clone();
                self.panel = serde_json::from_value(panel.clone()).ok();
                self.panel_json = panel.clone();
                self.item = Some(item.clone());
                self.seed = *seed;
                self.moot_version = moot_version.clone();
                self.provider_note = provider_note.clone();
                self.roles = roles.clone();
                self.started = Some(event.t);
                self.state = RunState::Running;
                self.agents.clear();
                self.agent_index.clear();
                for info in agents {
                    self.agent_index.insert(info.name.clone(), self.agents.len());
                    self.agents.push(AgentView {
                        info: info.clone(),
                        state: AgentState::Waiting,
                        progress: AgentProgress::default(),
                        turns: Vec::new(),
                        current_turn: None,
                        overridden: Scores::new(),
                        usage: Usage::default(),
                    });
                    self.group_mut(&info.group).agents.push(info.name.clone());
                }
            }
            EventKind::PhaseStarted { phase, group, round } => {
                self.phase = Some(*phase);
                self.phase_group = group.clone();
                self.round = *round;
                if let Some(g) = group {
                    let gv = self.group_mut(g);
                    gv.phase = Some(*phase);
                    // A phase without rounds (the final judgment) keeps the last round reached.
                    if round.is_some() {
                        gv.round = *round;
                    }
                }
                self.timeline.push(TimelineEntry::Phase { phase: *phase, group: group.clone(), round: *round });
            }
            EventKind::SpeakerSelected { group, agent, by, reason, fallback, .. } => {
                let pick = Pick {
                    agent: agent.clone(),
                    by: *by,
                    reason: reason.clone(),
                    fallback: fallback.clone(),
                    t: event.t,
                };
                self.group_mut(group).picks.push(pick.clone());
                self.timeline.push(TimelineEntry::Pick { group: group.clone(), pick });
            }
            EventKind::TurnStarted { turn, agent, group, phase, round, role, kind, dimension, .. } => {
                let idx = self.turns.len();
                self.turns.push(TurnView {
                    id: *turn,
                    agent: agent.clone(),
                    group: group.clone(),
                    phase: *phase,
                    round: *round,
                    role: *role,
                    kind: *kind,
                    dimension: dimension.clone(),
                    text: String::new(),
                    state: TurnState::Streaming,
                    evaluation: None,
                    parse_error: None,
                    usage: Usage::default(),
                    latency_ms: None,
                    failed_attempts: 0,
                    last_error: None,
                    cached: false,
                    truncated: false,
                    started: event.t,
                    revision: 0,
                });
                self.turn_index.insert(*turn, idx);
                self.timeline.push(TimelineEntry::Turn(idx));
                if *phase == Phase::Debate
                    && *role == Role::Agent
                    && *kind == TurnKind::Speak
                    && let Some(g) = group
                {
                    self.group_mut(g).debate_turns += 1;
                }
                if let Some(a) = self.agent_mut(agent) {
                    a.state = AgentState::Thinking;
                    a.current_turn = Some(*turn);
                    a.turns.push(idx);
                }
            }
            EventKind::TurnDelta { turn, text } => {
                if let Some(&i) = self.turn_index.get(turn) {
                    let t = &mut self.turns[i];
                    t.text.push_str(text);
                    t.revision += 1;
                    let agent = t.agent.clone();
                    self.waiting.remove(turn);
                    if let Some(a) = self.agent_mut(&agent) {
                        a.state = AgentState::Speaking;
                    }
                }
            }
            EventKind::TurnCompleted {
                turn,
                agent,
                text,
                evaluation,
                parse_error,
                usage,
                latency_ms,
                cached,
                done,
                truncated,
            } => {
                self.waiting.remove(turn);
                let Some(&i) = self.turn_index.get(turn) else { return };
                let (phase, kind) = {
                    let t = &mut self.turns[i];
                    t.text = text.clone();
                    t.revision += 1;
                    t.state = TurnState::Completed;
                    t.evaluation = evaluation.clone();
                    t.parse_error = parse_error.clone();
                    t.usage = *usage;
                    t.latency_ms = Some(*latency_ms);
                    t.cached = *cached;
                    t.truncated = *truncated;
                    (t.phase, t.kind)
                };
                let turn_id = *turn;
                if let Some(a) = self.agent_mut(agent) {
                    a.usage.add(usage);
                    a.current_turn = None;
                    a.progress.spoke(phase, kind, turn_id, evaluation.as_ref(), *done);
                    if evaluation.is_some() {
                        a.overridden.clear();
                    }
                    a.state = if a.progress.finished { AgentState::Done } else { AgentState::Waiting };
                }
            }
            EventKind::TurnFailed { turn, agent, error, attempt, will_retry, .. } => {
                if let Some(&i) = self.turn_index.get(turn) {
                    let t = &mut self.turns[i];
                    t.failed_attempts = *attempt;
                    t.last_error = Some(error.clone());
                    // A retried attempt streams again from the start.
                    t.text.clear();
                    t.revision += 1;
                    if !*will_retry {
                        t.state = TurnState::Failed;
                    }
                }
                if let Some(a) = self.agent_mut(agent) {
                    a.state = AgentState::Failed { retries: *attempt };
                    if !*will_retry {
                        a.current_turn = None;
                    }
                }
            }
            EventKind::ConsensusChecked { group, round, scores, spread, reached, rule, labels } => {
                let view = ConsensusView {
                    round: *round,
                    scores: scores.clone(),
                    spread: spread.clone(),
                    reached: *reached,
                    rule: rule.clone(),
                    labels: labels.clone(),
                };
                if let Some(g) = group {
                    self.group_mut(g).consensus.push(view);
                } else {
                    for g in &mut self.groups {
                        g.consensus.push(view.clone());
                    }
                }
                self.timeline.push(TimelineEntry::Consensus { group: group.clone(), round: *round, reached: *reached });
            }
            EventKind::FinalEvaluations { group, evaluations, turns } => {
                for (name, ev) in evaluations {
                    if let Some(a) = self.agent_mut(name) {
                        a.state = AgentState::Done;
                        a.progress.latest = Some(ev.clone());
                        if let Some(t) = turns.get(name) {
                            a.progress.latest_turn = Some(*t);
                        }
                    }
                }
                self.group_mut(group).finals = evaluations.clone();
            }
            EventKind::EvaluationSteps { dimension, steps, source, author, turn } => {
                let view = StepsView { steps: steps.clone(), source: *source, author: author.clone(), turn: *turn };
                self.steps.insert(dimension.clone(), view);
            }
            EventKind::EvaluationRevised { .. }
            | EventKind::DefinitionProposed { .. }
            | EventKind::AspectProposed { .. }
            | EventKind::RevisionDecided { .. }
            | EventKind::ProposalAdopted { .. } => self.apply_sage(&event.kind),
            // Kept by `self.pairwise`.
            EventKind::PairVerdict { .. } | EventKind::PairDecided { .. } | EventKind::BlindOrder { .. } => {}
            // Kept by `self.pairwise`; a person's part shows in the transcript too.
            EventKind::PairSettled { .. }
            | EventKind::PairVoted { .. }
            | EventKind::PairAbstained { .. }
            | EventKind::PairLabelled { .. } => {
                if let Some(text) = super::pairwise::human_note(&event.kind) {
                    self.timeline.push(TimelineEntry::Note { text, human: true });
                }
            }
            EventKind::HumanComment { text, author, group } => {
                self.timeline.push(TimelineEntry::Comment {
                    text: text.clone(),
                    author: author.clone(),
                    group: group.clone(),
                });
            }
            EventKind::ScoreOverridden { target, dimension, from, to, reason, author } => {
                match target {
                    OverrideTarget::Agent { agent } | OverrideTarget::Turn { agent, .. } => {
                        // The turn's own record shows the value a person set on it.
                        if let OverrideTarget::Turn { turn, .. } = target
                            && let Some(&i) = self.turn_index.get(turn)
                            && let Some(ev) = self.turns[i].evaluation.as_mut()
                        {
                            ev.set_score(dimension, *to);
                        }
                        if let Some(a) = self.agent_mut(agent)
                            && override_latest(
                                a.progress.latest.as_mut(),
                                a.progress.latest_turn,
                                target,
                                dimension,
                                *to,
                            )
                            .is_ok()
                            && let Some(orig) = from
                        {
                            a.overridden.entry(dimension.clone()).or_insert(*orig);
                        }
                    }
                    OverrideTarget::Final { .. } => {}
                }
                self.timeline.push(TimelineEntry::Override {
                    target: target.clone(),
                    dimension: dimension.clone(),
                    from: *from,
                    to: *to,
                    reason: reason.clone(),
                    author: author.clone(),
                });
            }
            EventKind::HumanRating { scores, author } => {
                self.human_ratings.push((author.clone(), scores.clone()));
                self.timeline.push(TimelineEntry::Rating { scores: scores.clone(), author: author.clone() });
            }
            EventKind::Paused { author } => {
                if !self.state.is_ended() && self.state != RunState::Stopping {
                    self.state = RunState::Paused;
                }
                self.timeline.push(TimelineEntry::Control { what: "paused", author: author.clone() });
            }
            EventKind::Resumed { author } => {
                if self.state == RunState::Paused {
                    self.state = RunState::Running;
                }
                self.timeline.push(TimelineEntry::Control { what: "resumed", author: author.clone() });
            }
            EventKind::StopRequested { author } => {
                if !self.state.is_ended() {
                    self.state = RunState::Stopping;
                }
                self.timeline.push(TimelineEntry::Control { what: "stop requested", author: author.clone() });
            }
            EventKind::Stepped { author } => {
                self.timeline.push(TimelineEntry::Control { what: "step", author: author.clone() });
            }
            EventKind::CommandRejected { command, reason, .. } => {
                self.timeline.push(TimelineEntry::Rejected { command: command.clone(), reason: reason.clone() });
            }
            EventKind::HistoryTrimmed { .. } => {
                if let Some(view) = TrimView::of(&event.kind) {
                    self.timeline.push(TimelineEntry::Trimmed(view));
                }
            }
            EventKind::Waiting { turn, reason } => {
                self.waiting.insert(*turn, reason.clone());
                if let Some(agent) = self.turn(*turn).map(|t| t.agent.clone())
                    && let Some(a) = self.agent_mut(&agent)
                    && a.current_turn == Some(*turn)
                {
                    a.state = AgentState::Queued;
                }
            }
            EventKind::AggregationCompleted {
                group,
                feedback,
                scores,
                overall,
                original,
                method,
                no_result,
                left_out,
                labels,
                original_labels,
                ranking,
            } => {
                let view = AggregateView {
                    feedback: feedback.clone(),
                    scores: scores.clone(),
                    overall: *overall,
                    original: original.clone(),
                    method: method.clone(),
                    no_result: no_result.clone(),
                    left_out: left_out.clone(),
                    labels: labels.clone(),
                    original_labels: original_labels.clone(),
                    ranking: ranking.clone(),
                };
                match group {
                    Some(g) => self.group_mut(g).aggregate = Some(view),
                    None => self.aggregate = Some(view),
                }
                self.timeline.push(TimelineEntry::Aggregate { group: group.clone() });
            }
            EventKind::SessionEnded { status, error, reason, usage, duration_ms } => {
                self.state = RunState::Ended(*status);
                self.end_error = error.clone();
                self.end_reason = reason.clone();
                self.usage = usage.clone();
                self.duration_ms = Some(*duration_ms);
                self.waiting.clear();
                for a in &mut self.agents {
                    if matches!(a.state, AgentState::Thinking | AgentState::Queued | AgentState::Speaking) {
                        a.state = AgentState::Waiting;
                    }
                    a.current_turn = None;
                }
                for t in &mut self.turns {
                    if t.state == TurnState::Streaming {
                        t.state = TurnState::Failed;
                    }
                }
                self.timeline.push(TimelineEntry::Ended {
                    status: *status,
                    error: error.clone(),
                    reason: reason.clone(),
                });
            }
        }
        // Running usage totals (the final `session_ended` replaces them with the engine's own).
        if let EventKind::TurnCompleted { agent, usage, turn, .. } = &event.kind
            && let Some((role, kind)) = self.turn(*turn).map(|t| (t.role, t.kind))
        {
            self.usage.record(role, kind, agent, usage);
        }
    }
}
