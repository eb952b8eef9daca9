//! What a report keeps of one pairwise session: the item's candidates (in
//! the item's order) and human labels, and each pair's decisions — every
//! judge's, the panel's and a person's — folded by the same
//! [`PairwiseView`] as the live screen. The judges' readable verdicts are
//! dropped once folded (a report needs the decisions only).

use crate::session::EventKind;
use crate::session::pairwise::{ComparisonView, DecisionView, PairwiseView};
use crate::stats::Preference;

/// One session's pairwise decisions.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairwiseRecord {
    /// Candidate ids in the item's order.
    pub candidates: Vec<String>,
    /// The item's `human_labels`, one per rater, as written.
    pub human_labels: Vec<String>,
    /// One entry per pair, `first` and `second` as the log has them.
    pub pairs: Vec<ComparisonView>,
}

/// Folds the pairwise events of one log.
#[derive(Debug, Default)]
pub struct PairwiseFold {
    view: PairwiseView,
    candidates: Vec<String>,
    human_labels: Vec<String>,
    pairwise: bool,
}

impl PairwiseFold {
    pub fn apply(&mut self, kind: &EventKind) {
        if let EventKind::SessionStarted { protocol, item, .. } = kind {
            self.pairwise = protocol == "pairwise";
            self.candidates = item.candidates.iter().flatten().map(|c| c.id.clone()).collect();
            self.human_labels = item.human_labels.clone();
        }
        if matches!(
            kind,
            EventKind::SessionStarted { .. }
                | EventKind::PairVerdict { .. }
                | EventKind::PairDecided { .. }
                | EventKind::PairSettled { .. }
        ) {
            self.view.apply(kind);
        }
    }

    /// The record, for a pairwise session (or any log with pairwise events).
    pub fn finish(self) -> Option<PairwiseRecord> {
        if !self.pairwise && self.view.comparisons.is_empty() {
            return None;
        }
        let mut pairs = self.view.comparisons;
        for p in &mut pairs {
            p.verdicts = Vec::new();
        }
        Some(PairwiseRecord { candidates: self.candidates, human_labels: self.human_labels, pairs })
    }
}

/// A decision as a preference in the pair's orientation (`A`: `first`
/// wins, `B`: `second` wins); `None` when it has no result.
pub fn outcome(d: &DecisionView, first: &str, second: &str) -> Option<Preference> {
    if d.no_result.is_some() {
        return None;
    }
    winner_pref(d.winner.as_deref(), first, second)
}

/// A winner (or `None` for a tie) as a preference in the pair's orientation;
/// `None` when the winner is neither candidate.
pub fn winner_pref(winner: Option<&str>, first: &str, second: &str) -> Option<Preference> {
    match winner {
        None => Some(Preference::Tie),
        Some(w) if w == first => Some(Preference::A),
        Some(w) if w == second => Some(Preference::B),
        Some(_) => None,
    }
}
