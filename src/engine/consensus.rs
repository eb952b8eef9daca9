//! Consensus rules over a group's current scores.

use std::collections::BTreeMap;

use crate::panel::ConsensusRule;
use crate::session::event::Scores;

/// The outcome of one consensus check.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsensusOutcome {
    /// Per key (dimensions and `overall`): max − min for `exact`/`range`, population stdev for `stdev`.
    pub spread: Scores,
    pub reached: bool,
}

/// Check `rule` over `scores` (agent → key → score) on `keys` (dimension keys plus `overall`).
pub fn check(rule: ConsensusRule, tolerance: f64, scores: &BTreeMap<String, Scores>, keys: &[String]) -> ConsensusOutcome {
    let _ = (rule, tolerance, scores, keys);
    ConsensusOutcome { spread: Scores::new(), reached: false }
}
