//! Resuming an interrupted optimisation from its log.
//!
//! The loop runs again from the start and the log answers for it: a judged
//! example the log holds is not judged again (its score, error and reason
//! are taken as recorded, keyed by iteration, split and example), a feedback
//! or rewrite call the log holds is answered with its recorded reply (or
//! failure), a condition the log scored is not judged again, and a person's
//! actions are applied again right after the event they followed. Every
//! event the run emits that the log holds is matched to it and not written
//! again; the others are appended.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use super::OptCommand;
use super::judge::Judgement;
use super::log::{Condition, ConditionRow, Decision, OptEvent, OptKind, Split};
use crate::session::event::Role;

/// What the log answers, and the state of matching the run's events to it.
#[derive(Debug, Clone)]
pub struct Journal {
    answers: Arc<Answers>,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct Answers {
    judged: HashMap<(u32, Split, String), Judgement>,
    feedback: BTreeMap<u32, Result<String, String>>,
    rewrite: BTreeMap<u32, Result<String, String>>,
    conditions: Vec<(Condition, Split, Vec<ConditionRow>)>,
}

#[derive(Debug)]
struct State {
    old: Vec<OptEvent>,
    matched: Vec<bool>,
    /// Old events up to here have had the person's actions after them released.
    released: usize,
    /// A person's actions released and not yet applied by the loop.
    queue: VecDeque<OptCommand>,
    /// A stop was released: judging that the log does not answer is skipped.
    stopping: bool,
}

/// Whether an event records what a person (not the loop) did.
fn by_person(kind: &OptKind) -> bool {
    match kind {
        OptKind::FeedbackWritten { by, .. } => by == super::HUMAN,
        OptKind::RewriteDecided { author, .. } => author != "auto",
        OptKind::RolledBack { .. }
        | OptKind::ExamplePinned { .. }
        | OptKind::ExampleUnpinned { .. }
        | OptKind::ExampleDropped { .. }
        | OptKind::StopRequested { .. } => true,
        _ => false,
    }
}

/// `kind` without the name of the person (a resumed run may be someone else's).
fn anonymous(kind: &OptKind) -> OptKind {
    let mut k = kind.clone();
    match &mut k {
        OptKind::FeedbackWritten { author, .. } => *author = author.as_ref().map(|_| String::new()),
        OptKind::RewriteDecided { author, .. } if author != "auto" => author.clear(),
        OptKind::RolledBack { author, .. }
        | OptKind::ExamplePinned { author, .. }
        | OptKind::ExampleUnpinned { author, .. }
        | OptKind::ExampleDropped { author, .. }
        | OptKind::StopRequested { author, .. } => author.clear(),
        _ => {}
    }
    k
}

/// The command that would make the loop record `kind` again.
fn command_of(kind: &OptKind) -> Option<OptCommand> {
    Some(match kind {
        OptKind::FeedbackWritten { text, .. } => OptCommand::EditFeedback(text.clone()),
        OptKind::RewriteDecided { decision: Decision::Accepted, .. } => OptCommand::Accept,
        OptKind::RewriteDecided { decision: Decision::Edited, prompt: Some(p), .. } => {
            OptCommand::AcceptEdited(p.clone())
        }
        OptKind::RewriteDecided { decision: Decision::Rejected, .. } => OptCommand::Reject,
        OptKind::RolledBack { to, .. } => OptCommand::RollBack(*to),
        OptKind::ExamplePinned { id, .. } => OptCommand::Pin(id.clone()),
        OptKind::ExampleUnpinned { id, .. } => OptCommand::Unpin(id.clone()),
        OptKind::ExampleDropped { id, .. } => OptCommand::Drop(id.clone()),
        OptKind::StopRequested { choose, .. } => OptCommand::Stop { choose: *choose },
        _ => return None,
    })
}

impl Journal {
    /// The journal of a log's events (complete lines only, first one
    /// `optimize_started`, no `optimize_ended`).
    pub fn new(old: Vec<OptEvent>) -> Self {
        let mut a = Answers::default();
        for e in &old {
            match &e.kind {
                OptKind::Judged { iteration, split, id, judge, error, reason, .. } => {
                    let j = Judgement { value: *judge, error: error.clone(), reason: reason.clone() };
                    a.judged.insert((*iteration, *split, id.clone()), j);
                }
                OptKind::FeedbackWritten { iteration, text, by, .. } if by == "feedback" => {
                    a.feedback.insert(*iteration, Ok(text.clone()));
                }
                OptKind::RewriteProposed { iteration, prompt } => {
                    a.rewrite.insert(*iteration, Ok(prompt.render()));
                }
                OptKind::RewriteFailed { iteration, error, reply } => {
                    // An empty reply is refused by the call itself, as it was.
                    let answer = reply.clone().ok_or_else(|| error.clone());
                    a.rewrite.insert(*iteration, answer);
                }
                OptKind::CallFailed { iteration, role, error } => {
                    let map = if role == Role::Feedback.as_str() { &mut a.feedback } else { &mut a.rewrite };
                    map.insert(*iteration, Err(error.clone()));
                }
                OptKind::ConditionScored { condition, split, rows, .. } if !rows.is_empty() => {
                    a.conditions.push((*condition, *split, rows.clone()));
                }
                _ => {}
            }
        }
        let matched = vec![false; old.len()];
        let state = State { old, matched, released: 0, queue: VecDeque::new(), stopping: false };
        Self { answers: Arc::new(a), state: Arc::new(Mutex::new(state)) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The seq after the log's last event.
    pub fn next_seq(&self) -> u64 {
        self.state().old.last().map_or(0, |e| e.seq + 1)
    }

    /// Match an event the run emits to the log: `true` when the log holds it
    /// (it is not written again). The person's actions that followed it in
    /// the log are released to the loop.
    pub(super) fn matches(&self, kind: &OptKind) -> bool {
        // As the log would read it back (a number parsed from its text may
        // differ from the one written in its last digit).
        let read_back = serde_json::to_string(kind).ok().and_then(|t| serde_json::from_str::<OptKind>(&t).ok());
        let kind = read_back.as_ref().unwrap_or(kind);
        let mut s = self.state();
        // The first event is the log's own (its time and version stay).
        let found = if matches!(kind, OptKind::OptimizeStarted { .. }) {
            s.old.first().filter(|_| !s.matched[0]).map(|_| 0)
        } else {
            let same = |old: &OptKind| {
                if by_person(kind) { by_person(old) && anonymous(old) == anonymous(kind) } else { old == kind }
            };
            (0..s.old.len()).find(|&i| !s.matched[i] && same(&s.old[i].kind))
        };
        let Some(i) = found else { return false };
        s.matched[i] = true;
        if by_person(kind) {
            return true;
        }
        let mut next = i + 1;
        while next < s.old.len() && by_person(&s.old[next].kind) && next >= s.released {
            if let Some(cmd) = command_of(&s.old[next].kind) {
                if matches!(cmd, OptCommand::Stop { .. }) {
                    s.stopping = true;
                }
                s.queue.push_back(cmd);
            }
            next += 1;
        }
        s.released = s.released.max(next);
        true
    }

    /// The next released action of a person.
    pub(super) fn next_command(&self) -> Option<OptCommand> {
        self.state().queue.pop_front()
    }

    /// Whether the log holds events the run has not emitted yet (so a review
    /// point the log went past was answered by going on).
    /// Events of the log before the last one matched that are still not
    /// matched never will be (the run will not emit them again).
    pub(super) fn ahead(&self) -> bool {
        let s = self.state();
        let last = s.matched.iter().rposition(|&m| m).unwrap_or(0);
        s.matched.iter().zip(&s.old).skip(last + 1).any(|(m, e)| !m && !by_person(&e.kind))
    }

    /// Whether a stop was released and not yet applied (judging not in the
    /// log is not started meanwhile).
    pub(super) fn stopping(&self) -> bool {
        self.state().stopping
    }

    /// The released stop was applied: judging goes on as asked (the test
    /// split's, after the loop).
    pub(super) fn stopped(&self) {
        self.state().stopping = false;
    }

    pub(super) fn judged(&self, iteration: u32, split: Split, id: &str) -> Option<Judgement> {
        self.answers.judged.get(&(iteration, split, id.to_string())).cloned()
    }

    pub(super) fn reply(&self, role: Role, iteration: u32) -> Option<Result<String, String>> {
        let map = if role == Role::Feedback { &self.answers.feedback } else { &self.answers.rewrite };
        map.get(&iteration).cloned()
    }

    pub(super) fn condition(&self, condition: Condition, split: Split) -> Option<Vec<ConditionRow>> {
        self.answers.conditions.iter().find(|(c, s, _)| *c == condition && *s == split).map(|(_, _, r)| r.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimize::JudgePrompt;

    fn event(seq: u64, kind: OptKind) -> OptEvent {
        OptEvent { seq, t: chrono::Utc::now(), kind }
    }

    fn log() -> Vec<OptEvent> {
        let feedback = |by: &str, text: &str| OptKind::FeedbackWritten {
            iteration: 1,
            text: text.into(),
            by: by.into(),
            author: (by == "human").then(|| "ann".into()),
        };
        vec![
            event(0, OptKind::RolledBack { to: 9, author: "x".into() }),
            event(1, feedback("feedback", "The model's.")),
            event(2, OptKind::ExamplePinned { id: "a".into(), author: "ann".into() }),
            event(3, feedback("human", "Ann's.")),
            event(
                4,
                OptKind::RewriteProposed {
                    iteration: 1,
                    prompt: JudgePrompt { task: "T".into(), ..Default::default() },
                },
            ),
            event(5, OptKind::CallFailed { iteration: 2, role: "feedback".into(), error: "HTTP 500".into() }),
        ]
    }

    #[test]
    fn replies_come_from_the_log_and_a_person_s_actions_after_the_event_they_followed() {
        let j = Journal::new(log());
        assert_eq!(j.next_seq(), 6);
        assert_eq!(j.reply(Role::Feedback, 1), Some(Ok("The model's.".into())), "the model's, not the person's");
        assert_eq!(
            j.reply(Role::Rewriter, 1).unwrap().unwrap(),
            "## Task\nT\n\n## Rubric\n\n\n## Guidance\n\n\n## Examples\n"
        );
        assert_eq!(j.reply(Role::Feedback, 2), Some(Err("HTTP 500".into())));
        assert_eq!(j.reply(Role::Rewriter, 2), None);
        assert!(j.next_command().is_none(), "nothing released before its event");
        // The model's feedback is emitted again: the pin and the edit after it are released, in order.
        let again = log()[1].kind.clone();
        assert!(j.matches(&again));
        assert_eq!(j.next_command(), Some(OptCommand::Pin("a".into())));
        assert_eq!(j.next_command(), Some(OptCommand::EditFeedback("Ann's.".into())));
        assert_eq!(j.next_command(), None);
        assert!(j.ahead(), "the rewrite is still ahead");
        // The person's events are matched whoever resumes.
        assert!(j.matches(&OptKind::ExamplePinned { id: "a".into(), author: "bob".into() }));
        assert!(!j.matches(&OptKind::ExamplePinned { id: "a".into(), author: "bob".into() }), "once only");
        assert!(!j.matches(&OptKind::ExamplePinned { id: "b".into(), author: "ann".into() }));
        assert!(j.matches(&log()[4].kind) && j.matches(&log()[5].kind));
        assert!(!j.ahead(), "the log is used up");
    }
}
