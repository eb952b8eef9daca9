//! [`SessionView::apply`]: how each event changes the view.

use super::views::{AgentView, AggregateView, ConsensusView, Pick, StepsView, TimelineEntry, TrimView, TurnView};
use super::{AgentState, RunState, SessionView, TurnState};
use crate::panel::Panel;
use crate::preset::Departure;
use crate::session::event::{Event, EventKind, OverrideTarget, Phase, Role, Scores, TurnKind, Usage};
use crate::session::overrides::override_latest;
use crate::session::progress::AgentProgress;

impl SessionView {
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
                preset,
                departures,
            } => {
                self.session_id = session_id.clone();
                self.schema_version = *schema_version;
                self.protocol = protocol.clone();
                self.panel = serde_json::from_value(panel.clone()).ok();
                self.preset = *preset;
                self.departures = logged_departures(*schema_version, departures, self.panel.as_ref());
                // The transcript opens with the preset and where the run departs from its paper.
                self.timeline.push(TimelineEntry::Note {
                    text: Panel::method_line(self.panel.as_ref(), self.preset, &self.departures),
                    human: false,
                });
                // Then its stages (logs written before runs were stages do not say how they were composed).
                if let Some(stages) = self.panel.as_ref().and_then(Panel::stages_line).filter(|_| *schema_version >= 5)
                {
                    self.timeline.push(TimelineEntry::Note { text: stages, human: false });
                }
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
            EventKind::TurnStarted { turn, agent, group, phase, round, role, kind, dimension, pair } => {
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
                    repeats: None,
                    misquotes: Vec::new(),
                    misstates: Vec::new(),
                    started: event.t,
                    pair: pair.clone(),
                    pair_verdict: None,
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
                repeats,
                misquotes,
                misstates,
                ..
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
                    t.repeats = repeats.clone();
                    t.misquotes = misquotes.clone();
                    t.misstates = misstates.clone();
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
            EventKind::TurnAbandoned { turn, agent, reason } => {
                // An interrupted turn: closed, its words kept; the call is made again as a new turn.
                if let Some(&i) = self.turn_index.get(turn) {
                    let t = &mut self.turns[i];
                    t.last_error = Some(reason.clone());
                    t.revision += 1;
                    t.state = TurnState::Failed;
                }
                if let Some(a) = self.agent_mut(agent)
                    && a.current_turn == Some(*turn)
                {
                    a.current_turn = None;
                    a.state = AgentState::Waiting;
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
                self.timeline.push(TimelineEntry::Consensus {
                    group: group.clone(),
                    round: *round,
                    reached: *reached,
                    rule: rule.clone(),
                });
            }
            EventKind::CriteriaChecked { .. } => {
                if let Some(text) = event.kind.criteria_line() {
                    self.timeline.push(TimelineEntry::Note { text, human: false });
                }
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
                self.timeline.push(TimelineEntry::Steps { dimension: dimension.clone(), steps: view.clone() });
                self.steps.insert(dimension.clone(), view);
            }
            EventKind::EvaluationRevised { .. }
            | EventKind::DefinitionProposed { .. }
            | EventKind::AspectProposed { .. }
            | EventKind::RevisionDecided { .. }
            | EventKind::ProposalAdopted { .. } => self.apply_sage(&event.kind),
            // Kept by `self.pairwise`; a verdict is what its turn's reply said.
            EventKind::PairVerdict { turn, .. } => {
                let verdict = self.pairwise.verdict_of(*turn).cloned();
                if let Some(t) = self.turn_index.get(turn).map(|&i| &mut self.turns[i]) {
                    t.pair_verdict = verdict;
                    t.revision += 1;
                }
            }
            EventKind::PairDecided { .. } | EventKind::BlindOrder { .. } => {}
            // Kept by `self.pairwise`; a person's part shows in the transcript too.
            EventKind::PairSettled { .. }
            | EventKind::PairVoted { .. }
            | EventKind::PairAbstained { .. }
            | EventKind::PairLabelled { .. } => {
                if let Some(text) = crate::session::pairwise::human_note(&event.kind) {
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
            // The pick or veto shows in the group's next `speaker_selected`.
            EventKind::SpeakerRequested { .. } => {}
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
                    None => {
                        self.aggregate = Some(view);
                        self.result_t.get_or_insert(event.t);
                    }
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

/// The departures from its paper a session started with: as its
/// `session_started` lists them, or, for a log written before version 4
/// (which did not list them), as its recorded panel gives them: its
/// settings then all took the defaults of the time, the `moot` preset's,
/// except the settings added since, whose paper values describe what such
/// a run did (see [`SINCE_VERSION`]).
pub fn logged_departures(schema_version: u32, departures: &[Departure], panel: Option<&Panel>) -> Vec<Departure> {
    if schema_version >= 4 {
        return departures.to_vec();
    }
    let mut listed = panel.map(Panel::departures).unwrap_or_default();
    listed.retain(|d| SINCE_VERSION.iter().all(|&(setting, since)| d.setting != setting || schema_version >= since));
    listed
}

/// Settings added with a log version, and that version: a run written
/// before it kept repeated and misquoting speeches as said and took the
/// moderator's reasons as given, as their paper values do.
const SINCE_VERSION: [(&str, u32); 4] = [("repeats", 6), ("reasons", 6), ("quotes", 8), ("claims", 9)];
