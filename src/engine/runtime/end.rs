//! A group's history and consensus, final evaluations, failures, and the
//! end of a session with its outcome.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{Run, eval_scores};
use crate::engine::consensus;
use crate::engine::outcome::RunOutcome;
use crate::engine::prompts::{self, HistoryEntry};
use crate::provider::ProviderError;
use crate::session::event::{EndStatus, EventKind, Scores};

impl Run {
    /// Add an agent's contribution to its group's history.
    pub fn push_history(&self, group: &str, entry: HistoryEntry) {
        self.state().histories.entry(group.to_string()).or_default().push(entry);
    }

    /// Latest scores of a group's agents (agent → key → score).
    pub fn group_scores(&self, group: &str) -> BTreeMap<String, Scores> {
        let st = self.state();
        st.agents
            .iter()
            .filter(|a| a.group == group)
            .filter_map(|a| a.progress.latest.as_ref().map(|ev| (a.name.clone(), eval_scores(ev))))
            .collect()
    }

    /// Check and record the consensus of a group.
    pub fn check_consensus(&self, group: &str, round: Option<u32>) -> bool {
        let scores = self.group_scores(group);
        let c = &self.panel.consensus;
        let outcome = consensus::check(c.rule, c.tolerance, &scores, &self.keys);
        self.emit(EventKind::ConsensusChecked {
            group: Some(group.to_string()),
            round,
            scores,
            spread: outcome.spread,
            reached: outcome.reached,
            // The exact rule has no tolerance to show.
            rule: match c.rule {
                crate::panel::ConsensusRule::Exact => c.rule.as_str().to_string(),
                _ => format!("{} ≤ {}", c.rule.as_str(), prompts::fmt_num(c.tolerance)),
            },
            labels: BTreeMap::new(),
        });
        outcome.reached
    }

    /// Record the final evaluations of a group's agents.
    pub fn emit_finals(&self, group: &str) {
        let (evaluations, turns) = {
            let st = self.state();
            let mut evs = BTreeMap::new();
            let mut turns = BTreeMap::new();
            for a in st.agents.iter().filter(|a| a.group == group) {
                if let Some(ev) = &a.progress.latest {
                    evs.insert(a.name.clone(), ev.clone());
                    if let Some(t) = a.progress.latest_turn {
                        turns.insert(a.name.clone(), t);
                    }
                }
            }
            (evs, turns)
        };
        self.emit(EventKind::FinalEvaluations { group: group.to_string(), evaluations, turns });
    }

    /// Note a failure that ends the debate (the first one wins).
    pub fn fail(&self, message: String) {
        {
            let mut st = self.state();
            if st.failure.is_none() {
                st.failure = Some(message);
            }
        }
        self.stop.cancel();
    }

    /// Interpret a failed agent turn: stop on errors that retrying cannot fix.
    pub fn on_turn_error(&self, who: &str, error: &ProviderError, consecutive: &mut u32) -> bool {
        if matches!(error, ProviderError::Cancelled) {
            return true;
        }
        *consecutive += 1;
        if !error.is_retryable() {
            self.fail(format!("{who}: {error}"));
            return true;
        }
        if *consecutive >= self.config.max_consecutive_failures {
            self.fail(format!("{who}: giving up after {consecutive} failed turns in a row; last error: {error}"));
            return true;
        }
        false
    }

    pub fn finish_lingering(&self) {
        self.quit.cancel();
    }

    /// Emit `session_ended` and summarise.
    pub fn finish(&self, elapsed: Duration) -> RunOutcome {
        let (status, error, reason) = {
            let st = self.state();
            if let Some(f) = &st.failure {
                (EndStatus::Failed, Some(f.clone()), st.stop_reason.clone())
            } else if st.stopped {
                (EndStatus::Stopped, None, st.stop_reason.clone())
            } else if let Some(why) = self.empty_result(&st) {
                // An empty result is never a success.
                (EndStatus::Failed, Some(why), None)
            } else {
                (EndStatus::Completed, None, None)
            }
        };
        let error = match (error, self.rec.write_error()) {
            (Some(e), _) => Some(e),
            (None, Some(w)) => Some(w),
            (None, None) => None,
        };
        let status = if error.is_some() { EndStatus::Failed } else { status };
        let usage = self.totals.lock().unwrap_or_else(|e| e.into_inner()).clone();
        self.emit(EventKind::SessionEnded {
            status,
            error: error.clone(),
            reason: reason.clone(),
            usage: usage.clone(),
            duration_ms: elapsed.as_millis() as u64,
        });
        let result = {
            let st = self.state();
            Some(self.result_scores(&st, None)).filter(|s| st.aggregates.contains_key(&None) && !s.is_empty())
        };
        RunOutcome {
            session_id: self.config.session_id.clone(),
            status,
            error,
            reason,
            usage,
            result,
            log_path: self.rec.log_path(),
        }
    }
}
