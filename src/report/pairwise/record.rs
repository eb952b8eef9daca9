//! What a report keeps of one pairwise session: the item's candidates (in
//! the item's order) and human labels, and each pair's decisions — every
//! judge's, the panel's and a person's — folded by the same
//! [`PairwiseView`] as the live screen. The judges' readable verdicts are
//! dropped once folded (a report needs the decisions only). People's blind
//! labels (`pair_labelled`) are kept per person: they are human labels.
//!
//! A session is pairwise when its panel compares pairs (the `pairwise`
//! protocol, or CollabEval's pairwise mode: see [`compares_pairs`]) or when
//! its log has pairwise decisions.

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
    /// People's own verdicts given blind (`pair_labelled`), the latest per
    /// person and pair.
    pub blind_labels: Vec<BlindLabel>,
}

/// A person's blind verdict on a pair: a human label, rater = `author`.
#[derive(Debug, Clone, PartialEq)]
pub struct BlindLabel {
    pub first: String,
    pub second: String,
    /// The candidate preferred; `None` for a tie.
    pub winner: Option<String>,
    pub author: String,
}

/// Whether a session's panel compares an item's candidates in pairs rather
/// than rating its content: a protocol whose results are pairwise decisions,
/// or one whose settings (the panel's `protocol` table in `session_started`)
/// choose pairs, as CollabEval's `mode = "pairwise"` does.
pub fn compares_pairs(protocol: &str, panel: &serde_json::Value) -> bool {
    use serde::Deserialize;
    if crate::panel::Protocol::parse(protocol).is_some_and(|p| p.spec().results == crate::panel::Results::Pairs) {
        return true;
    }
    match panel.get("protocol").map(crate::panel::ProtocolSection::deserialize) {
        Some(Ok(section)) => section.compares_pairs(),
        // A protocol this version does not know: its settings say so.
        _ => panel.get("protocol").and_then(|p| p.get("mode")).and_then(|m| m.as_str()) == Some("pairwise"),
    }
}

/// Folds the pairwise events of one log.
#[derive(Debug, Default)]
pub struct PairwiseFold {
    view: PairwiseView,
    candidates: Vec<String>,
    human_labels: Vec<String>,
    blind_labels: Vec<BlindLabel>,
    pairwise: bool,
}

impl PairwiseFold {
    pub fn apply(&mut self, kind: &EventKind) {
        match kind {
            EventKind::SessionStarted { protocol, panel, item, .. } => {
                self.pairwise = compares_pairs(protocol, panel);
                self.candidates = item.candidates.iter().flatten().map(|c| c.id.clone()).collect();
                self.human_labels = item.human_labels.clone();
                self.blind_labels.clear();
            }
            EventKind::PairLabelled { first, second, winner, author, .. } => {
                self.blind_labels.retain(|l| !(l.first == *first && l.second == *second && l.author == *author));
                self.blind_labels.push(BlindLabel {
                    first: first.clone(),
                    second: second.clone(),
                    winner: winner.clone(),
                    author: author.clone(),
                });
            }
            _ => {}
        }
        if matches!(
            kind,
            EventKind::SessionStarted { .. }
                | EventKind::PairVerdict { .. }
                | EventKind::PairDecided { .. }
                | EventKind::PairSettled { .. }
                | EventKind::PairLabelled { .. }
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
        Some(PairwiseRecord {
            candidates: self.candidates,
            human_labels: self.human_labels,
            pairs,
            blind_labels: self.blind_labels,
        })
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
