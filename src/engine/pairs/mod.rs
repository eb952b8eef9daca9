//! Comparing two candidates: the pieces pairwise judging and the debate
//! protocols' pairwise modes share.
//!
//! - [`label`]: the label verdict (`A`, `B` or `tie`, optionally per
//!   criterion, with a confidence and the reasoning);
//! - [`combine`]: how verdicts combine (votes per order by majority, then the
//!   swap rule), which pairs are compared, and the ranking by win rate;
//! - [`PairwiseState`]: what a run keeps about each pair for people's commands.

pub mod combine;
pub mod label;

use crate::session::pairwise::Flip;
use combine::{Preference, majority};
use label::Label;

/// What the engine keeps about each pair, for people's commands.
#[derive(Debug, Default)]
pub(crate) struct PairwiseState {
    /// The item's candidate ids.
    pub cands: Vec<String>,
    pub pairs: Vec<PairState>,
    pub blind: bool,
    /// Aggregation has run: a person's change publishes the result again.
    pub aggregated: bool,
    /// How the result was reached, when not by the pairwise protocol's
    /// judges (`None`: `pairwise`), and notes that open its feedback.
    pub method: Option<String>,
    pub notes: Vec<String>,
}

/// One pair: the judges' decisions once aggregation has them, and people's part.
#[derive(Debug, Clone, Default)]
pub(crate) struct PairState {
    /// Indices into the candidates: first, second.
    pub pair: (usize, usize),
    /// Each judge's decision (`None`: no readable verdict); `None` before aggregation.
    pub judged: Option<Vec<Option<Preference>>>,
    /// The orders' labels and flip the panel's decision repeats (one judge only).
    pub orders: (Option<Label>, Option<Label>, Option<Flip>),
    /// Some judge's two orders disagreed.
    pub flipped: bool,
    /// People's extra votes, one per person: (author, preference).
    pub votes: Vec<(String, Preference)>,
    /// A person's decision, replacing the panel's: (preference, author).
    pub settled: Option<(Preference, String)>,
    pub abstained: bool,
    /// A person gave their own verdict, blind.
    pub labelled: bool,
    /// Blind runs: the screen shows the second candidate on the left.
    pub shown_swapped: bool,
}

impl PairState {
    /// The panel's decision: the judges' decisions and people's extra votes
    /// by majority (a judge or a vote each); `None` when nobody decided.
    pub fn panel(&self) -> Option<Preference> {
        let judged = self.judged.as_ref()?;
        let all: Vec<Option<Preference>> =
            judged.iter().copied().chain(self.votes.iter().map(|(_, p)| Some(*p))).collect();
        majority(&all, all.len(), Preference::Tie)
    }
    /// What the pair came to: a person's settlement, else the panel's decision.
    pub fn decision(&self) -> Option<Preference> {
        self.settled.as_ref().map(|s| s.0).or_else(|| self.panel())
    }
    /// Decided by the panel, and a tie, no decision, or a flip.
    pub fn needs_settling(&self) -> bool {
        self.judged.is_some() && (self.flipped || !matches!(self.panel(), Some(Preference::First | Preference::Second)))
    }
    /// The screen may show the judges' verdicts (blind runs: after a label or abstention).
    pub fn revealed(&self, blind: bool) -> bool {
        !blind || self.labelled || self.abstained
    }
}

/// The id of the candidate a preference names; `None` for a tie.
pub(crate) fn winner(p: Preference, first: &str, second: &str) -> Option<String> {
    match p {
        Preference::First => Some(first.to_string()),
        Preference::Second => Some(second.to_string()),
        Preference::Tie => None,
    }
}
