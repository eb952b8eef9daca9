//! A resumed run's calls answered from its old log (see
//! [`journal`](crate::engine::journal)), and the wait while the log cannot
//! be written.

use std::time::Duration;

use super::{CallSpec, Run};
use crate::engine::journal::{CallId, Journal, Recorded, failure};
use crate::provider::{Completion, ProviderError};
use crate::session::event::{Evaluation, EventKind, Role};

/// Why a turn of the old log is closed without its reply.
pub(crate) const ABANDONED: &str = "the session was interrupted while this turn was streaming; asked again on resuming";

/// How often a log that cannot be written is tried again.
pub(crate) const WRITE_RETRY: Duration = Duration::from_millis(500);

type Answer = (u64, Result<Completion, ProviderError>, u64);

impl Run {
    /// The old log's answer to this call, recorded as its old turn; `None`:
    /// the call is made (a turn the log abandoned is closed first).
    pub(super) async fn answer_from_log(&self, journal: &Journal, spec: &CallSpec<'_>) -> Option<Answer> {
        // A person's actions that came before this call in the log apply first.
        tokio::task::yield_now().await;
        let id = CallId {
            agent: spec.turn.participant,
            group: spec.turn.group,
            phase: spec.turn.phase,
            round: spec.turn.round,
            kind: spec.kind,
            dimension: spec.turn.dimension,
            pair: spec.turn.pair,
        };
        match journal.take_call(&id) {
            None | Some(Recorded::Abandoned) => {
                self.settle_log().await;
                None
            }
            Some(Recorded::Open { turn, agent }) => {
                self.emit(EventKind::TurnAbandoned { turn, agent, reason: ABANDONED.into() });
                self.settle_log().await;
                None
            }
            Some(Recorded::Completed { turn, completion, latency_ms, evaluation }) => {
                if let Some(ev) = evaluation {
                    self.from_log.lock().unwrap_or_else(|e| e.into_inner()).insert(turn, *ev);
                }
                self.start_turn(turn, spec);
                // Actions taken while the turn streamed apply before it ends.
                tokio::task::yield_now().await;
                Some((turn, Ok(completion), latency_ms))
            }
            Some(Recorded::Failed { turn, error, event }) => {
                self.start_turn(turn, spec);
                tokio::task::yield_now().await;
                let error = failure(&error);
                if spec.turn.role == Role::Agent
                    && let Some(g) = spec.turn.group
                    && !matches!(error, ProviderError::Cancelled)
                {
                    self.state().failed_calls.push((g.to_string(), turn));
                }
                self.emit(*event);
                Some((turn, Err(error), 0))
            }
        }
    }

    /// The evaluation the old log recorded for turn `turn`, answered from it
    /// (once): what its reply's verdict cannot read again without the
    /// reply's log-probabilities (see [`Verdict::restore`](crate::engine::verdict::Verdict::restore)).
    pub(crate) fn logged_evaluation(&self, turn: u64) -> Option<Evaluation> {
        self.rec.journal()?;
        self.from_log.lock().unwrap_or_else(|e| e.into_inner()).remove(&turn)
    }

    /// Let a person's actions the old log released apply (a resumed run's
    /// calls are answered at once: the run yields where it would have waited).
    pub(crate) async fn yield_to_log(&self) {
        if self.rec.journal().is_some() {
            tokio::task::yield_now().await;
        }
    }

    /// Past the old log (no call left for it to answer): every action of
    /// the log not applied yet is applied now. True when some were.
    pub(crate) async fn settle_log(&self) -> bool {
        let Some(journal) = self.rec.journal() else { return false };
        let released = journal.settle();
        tokio::task::yield_now().await;
        released
    }

    /// While the log cannot be written, wait (the session is paused) and
    /// try again, until it can or the session is quit.
    pub(crate) async fn wait_writable(&self) {
        while self.rec.blocked().is_some() {
            tokio::select! {
                () = tokio::time::sleep(WRITE_RETRY) => {}
                () = self.quit.cancelled() => return,
            }
            self.rec.retry();
        }
    }
}
