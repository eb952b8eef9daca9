//! Resuming a session from its log: the run is made again from the start
//! with the same panel, item and seed, and the log answers for it.
//!
//! - Every model call whose turn completed (or finally failed) in the log is
//!   answered from the log — matched by the turn's identity (who, group,
//!   phase, round, kind, dimension, pair) and its occurrence among the
//!   calls of that identity, never by call order, since groups and first
//!   evaluations run at once and may interleave differently.
//! - A turn the log started but never closed is recorded as
//!   `turn_abandoned` and its call is made again as a new turn.
//! - Every event the run emits that the log already holds is matched to it
//!   and not written again; the others are appended after the log's last
//!   line, numbered on from its last `seq`.
//! - A person's actions in the log (comments, overrides, picks, vetoes,
//!   pauses, steps, stops, decisions…) are applied again right after the
//!   event they followed, so the run takes the same decisions.
//!
//! A run whose provider answers each request the same way thus ends with
//! the result it would have had without the interruption.

mod human;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

use tokio::sync::mpsc::UnboundedSender;

use super::command::Command;
use crate::provider::{Completion, ProviderError};
use crate::session::event::{Evaluation, Event, EventKind, Phase, TurnKind};
use crate::session::pairwise::PairRef;

/// Why a log cannot be resumed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ResumeError {
    #[error("the log has no events")]
    Empty,
    #[error("the log does not begin with `session_started` (it begins with `{0}`)")]
    NoStart(String),
    #[error("session {id} ended ({status}) at {at}; nothing to resume")]
    Ended { id: String, status: String, at: String },
}

/// A model call of the log, as the resumed run gets it back.
#[derive(Debug, Clone)]
pub(crate) enum Recorded {
    /// The turn completed: its reply.
    Completed { turn: u64, completion: Completion, latency_ms: u64, evaluation: Option<Box<Evaluation>> },
    /// The turn failed for good: its last `turn_failed`.
    Failed { turn: u64, error: String, event: Box<EventKind> },
    /// The turn started and never ended: it is abandoned and asked again.
    Open { turn: u64, agent: String },
    /// An earlier resumption abandoned the turn: the next call of its
    /// identity in the log is the one that asked again.
    Abandoned,
}

impl Recorded {
    /// The log answers the call (it completed or failed).
    fn answers(&self) -> bool {
        matches!(self, Recorded::Completed { .. } | Recorded::Failed { .. })
    }
}

/// The identity of a call: who makes it, where in the protocol, about what.
pub(crate) struct CallId<'a> {
    pub agent: &'a str,
    pub group: Option<&'a str>,
    pub phase: Phase,
    pub round: Option<u32>,
    pub kind: TurnKind,
    pub dimension: Option<&'a str>,
    pub pair: Option<&'a PairRef>,
}

impl CallId<'_> {
    fn key(&self) -> String {
        serde_json::json!([self.agent, self.group, self.phase, self.round, self.kind, self.dimension, self.pair])
            .to_string()
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// Call identity → the log's calls of that identity, in log order.
    calls: HashMap<String, VecDeque<Recorded>>,
    /// Completed or failed calls not given back yet.
    answers_left: usize,
    /// An event as matched (see [`match_key`]) → the `seq`s of the log's
    /// events with that content not matched yet.
    unmatched: HashMap<String, VecDeque<u64>>,
    /// `seq` of an event of the log → a person's actions that followed it.
    anchored: BTreeMap<u64, Vec<Command>>,
    /// Where released actions go: the run's own command queue.
    commands: Option<UnboundedSender<Command>>,
    /// Released actions waiting for the run to take its queue (before it started).
    waiting: Vec<Command>,
    /// Send a `Resume` once the log is used up (a log that ends paused,
    /// resumed where nobody can press resume).
    unpause: Option<String>,
    ends_paused: bool,
}

/// The log of an interrupted session, answering its resumed run.
#[derive(Debug)]
pub struct Journal {
    inner: Mutex<Inner>,
    /// The first `seq` after the log's last event.
    next_seq: u64,
    /// The first turn number after the log's last turn.
    next_turn: u64,
    /// The log's `session_started`.
    started: EventKind,
    events: Vec<Event>,
}

/// What two events must share to be the same event: everything but the
/// time it took.
fn match_key(kind: &EventKind) -> String {
    if let EventKind::SessionStarted { .. } = kind {
        return "session_started".into();
    }
    let mut v = serde_json::to_value(kind).unwrap_or(serde_json::Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.remove("latency_ms");
    }
    v.to_string()
}

impl Journal {
    /// Read the events of an interrupted session's log (complete lines, in order).
    pub fn new(events: Vec<Event>) -> Result<Self, ResumeError> {
        let first = events.first().ok_or(ResumeError::Empty)?;
        if !matches!(first.kind, EventKind::SessionStarted { .. }) {
            return Err(ResumeError::NoStart(first.kind.type_name().into()));
        }
        if let Some(end) = events.iter().rev().find(|e| matches!(e.kind, EventKind::SessionEnded { .. })) {
            let (EventKind::SessionEnded { status, .. }, EventKind::SessionStarted { session_id, .. }) =
                (&end.kind, &first.kind)
            else {
                unreachable!("matched above")
            };
            return Err(ResumeError::Ended {
                id: session_id.clone(),
                status: format!("{status:?}").to_lowercase(),
                at: end.t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            });
        }
        let mut inner = Inner::default();
        let closing = closings(&events);
        let mut anchor = 0;
        let mut paused = false;
        let mut next_turn = 1;
        for e in &events {
            if let Some(cmd) = human::command_of(&e.kind) {
                match &cmd {
                    Command::Pause { .. } => paused = true,
                    Command::Resume { .. } => paused = false,
                    _ => {}
                }
                inner.anchored.entry(anchor).or_default().push(cmd);
            }
            if !matches!(e.kind, EventKind::SessionStarted { .. }) {
                inner.unmatched.entry(match_key(&e.kind)).or_default().push_back(e.seq);
            }
            if let EventKind::TurnStarted { turn, agent, group, phase, round, kind, dimension, pair, .. } = &e.kind {
                next_turn = next_turn.max(turn + 1);
                let id = CallId {
                    agent: agent.as_str(),
                    group: group.as_deref(),
                    phase: *phase,
                    round: *round,
                    kind: *kind,
                    dimension: dimension.as_deref(),
                    pair: pair.as_ref(),
                };
                let recorded = match closing.get(turn) {
                    Some(r) => r.clone(),
                    None => Recorded::Open { turn: *turn, agent: agent.clone() },
                };
                let answers = recorded.answers();
                inner.answers_left += usize::from(answers);
                inner.calls.entry(id.key()).or_default().push_back(recorded);
                if !answers {
                    // The run will not start this turn again: nothing follows it.
                    continue;
                }
            }
            if anchors(&e.kind) {
                anchor = e.seq;
            }
        }
        inner.ends_paused = paused;
        let next_seq = events.last().map_or(0, |e| e.seq + 1);
        Ok(Self { inner: Mutex::new(inner), next_seq, next_turn, started: first.kind.clone(), events })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The log's `session_started`.
    pub fn started(&self) -> &EventKind {
        &self.started
    }

    /// The events of the log.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The first `seq` the resumed run writes.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub(crate) fn next_turn(&self) -> u64 {
        self.next_turn
    }

    /// The log ends with the session paused by a person.
    pub fn ends_paused(&self) -> bool {
        self.lock().ends_paused
    }

    /// Once the log is used up, resume a session it left paused, as `author`
    /// (for a resumed run nobody can unpause: `--headless`).
    pub fn unpause_at_end(&self, author: &str) {
        let mut inner = self.lock();
        if inner.ends_paused {
            inner.unpause = Some(author.to_string());
        }
    }

    /// The log's answer to a call of this identity, if it has one.
    pub(crate) fn take_call(&self, id: &CallId<'_>) -> Option<Recorded> {
        let mut inner = self.lock();
        let calls = inner.calls.get_mut(&id.key())?;
        // A turn an earlier resumption abandoned was asked again as the next one.
        while matches!(calls.front(), Some(Recorded::Abandoned)) {
            calls.pop_front();
        }
        let recorded = calls.pop_front()?;
        if recorded.answers() {
            inner.answers_left -= 1;
        }
        Some(recorded)
    }

    /// The run's command queue: actions released before it was given wait for it.
    pub(crate) fn connect(&self, commands: UnboundedSender<Command>) {
        let mut inner = self.lock();
        for cmd in inner.waiting.drain(..) {
            let _ = commands.send(cmd);
        }
        inner.commands = Some(commands);
    }

    /// An event the run emits: the `seq` of the same event in the log, when
    /// it holds it (then it is not written again). A person's actions that
    /// followed it in the log are released to the run.
    pub(crate) fn claim(&self, kind: &EventKind) -> Option<u64> {
        let mut inner = self.lock();
        let seq = if let EventKind::SessionStarted { .. } = kind {
            0
        } else {
            let key = match_key(kind);
            let seqs = inner.unmatched.get_mut(&key)?;
            let seq = seqs.pop_front()?;
            if seqs.is_empty() {
                inner.unmatched.remove(&key);
            }
            seq
        };
        if let Some(cmds) = inner.anchored.remove(&seq) {
            inner.release(cmds);
        }
        Some(seq)
    }

    /// Release every action of the log not applied yet (the protocol has
    /// ended: what is left of the log is applied after it, as it was).
    pub(crate) fn release_rest(&self) {
        let mut inner = self.lock();
        let rest: Vec<Command> = std::mem::take(&mut inner.anchored).into_values().flatten().collect();
        inner.release(rest);
    }

    /// When the log has answered every call it can, the run is past it:
    /// every action of the log not yet applied is released (and the
    /// session unpaused, if asked). True when something was released.
    pub(crate) fn settle(&self) -> bool {
        let mut inner = self.lock();
        if inner.answers_left > 0 {
            return false;
        }
        let mut rest: Vec<Command> = std::mem::take(&mut inner.anchored).into_values().flatten().collect();
        if let Some(author) = inner.unpause.take() {
            rest.push(Command::Resume { author });
        }
        let released = !rest.is_empty();
        inner.release(rest);
        released
    }
}

impl Inner {
    fn release(&mut self, cmds: Vec<Command>) {
        match &self.commands {
            Some(tx) => cmds.into_iter().for_each(|c| {
                let _ = tx.send(c);
            }),
            None => self.waiting.extend(cmds),
        }
    }
}

/// Whether a person's actions that come after this event wait for the run
/// to emit it again: streamed text, queue notes, trims and retried attempts
/// are not emitted again (the calls are answered from the log), nor are
/// refusals or a person's own actions.
fn anchors(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::TurnDelta { .. }
            | EventKind::Waiting { .. }
            | EventKind::HistoryTrimmed { .. }
            | EventKind::TurnFailed { will_retry: true, .. }
            | EventKind::TurnAbandoned { .. }
            | EventKind::CommandRejected { .. }
    ) && human::command_of(kind).is_none()
}

/// How each turn of the log ended, by turn number.
fn closings(events: &[Event]) -> HashMap<u64, Recorded> {
    let mut out = HashMap::new();
    for e in events {
        match &e.kind {
            EventKind::TurnCompleted {
                turn, text, evaluation, usage, latency_ms, cached, truncated, endpoint, ..
            } => {
                let completion = Completion {
                    text: text.clone(),
                    usage: *usage,
                    finish_reason: truncated.then(|| "length".to_string()),
                    cached: *cached,
                    logprobs: None,
                    // The endpoint that served it then, so that the event made again matches the log's.
                    endpoint: endpoint.clone(),
                };
                let evaluation = evaluation.clone().map(Box::new);
                out.insert(*turn, Recorded::Completed { turn: *turn, completion, latency_ms: *latency_ms, evaluation });
            }
            EventKind::TurnAbandoned { turn, .. } => {
                out.insert(*turn, Recorded::Abandoned);
            }
            EventKind::TurnFailed { turn, error, will_retry: false, .. } => {
                let event = Box::new(e.kind.clone());
                out.insert(*turn, Recorded::Failed { turn: *turn, error: error.clone(), event });
            }
            _ => {}
        }
    }
    out
}

/// The error a failed turn of the log is given back as: read back from its
/// message, so that the run treats it as it did (retryable or not).
pub(crate) fn failure(error: &str) -> ProviderError {
    if error == ProviderError::Cancelled.to_string() {
        return ProviderError::Cancelled;
    }
    let http = error.strip_prefix("HTTP ").and_then(|rest| {
        let (status, body) = rest.split_once(": ")?;
        Some(ProviderError::Http { status: status.parse().ok()?, body: body.to_string(), retry_after: None })
    });
    if let Some(e) = http {
        return e;
    }
    let prefixed = |prefix: &str| error.strip_prefix(prefix).map(str::to_string);
    if let Some(m) = prefixed("connection error: ") {
        ProviderError::Connect(m)
    } else if let Some(m) = prefixed("stream ended early: ") {
        ProviderError::Incomplete(m)
    } else if let Some(m) = prefixed("invalid response: ") {
        ProviderError::Protocol(m)
    } else if let Some(m) = prefixed("server error: ") {
        ProviderError::Server { message: m, retryable: false }
    } else if error.contains(" timeout after ") {
        // A timeout is retried like a broken stream.
        ProviderError::Incomplete(error.to_string())
    } else {
        ProviderError::Config(error.to_string())
    }
}

/// What a resumed run is made of, as the log's `session_started` recorded it.
#[derive(Debug, Clone)]
pub struct RecordedRun {
    pub session_id: String,
    pub panel: crate::panel::Panel,
    pub item: crate::item::Item,
    pub seed: u64,
    pub agents: Vec<crate::session::event::AgentInfo>,
    pub roles: BTreeMap<String, crate::session::event::ModelRef>,
    pub provider_note: Option<String>,
}

impl Journal {
    /// The panel, item, seed and participants the session began with.
    pub fn recorded(&self) -> Result<RecordedRun, String> {
        let EventKind::SessionStarted { session_id, panel, item, agents, roles, seed, provider_note, .. } =
            &self.started
        else {
            unreachable!("a journal begins with session_started")
        };
        let panel: crate::panel::Panel = serde_json::from_value(panel.clone())
            .map_err(|e| format!("session_started.panel: the recorded panel cannot be read back: {e}"))?;
        Ok(RecordedRun {
            session_id: session_id.clone(),
            panel,
            item: item.clone(),
            seed: *seed,
            agents: agents.clone(),
            roles: roles.clone(),
            provider_note: provider_note.clone(),
        })
    }
}

#[cfg(test)]
mod tests;
