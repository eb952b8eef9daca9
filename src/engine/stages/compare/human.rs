//! A person's part in pairwise judging, applied as commands:
//!
//! - **settle** a pair the panel left as a tie, left undecided, or on which
//!   a judge's two orders disagreed (a flip): the person's decision replaces
//!   the panel's (`pair_settled`);
//! - **vote**: one more vote on a pair, counted with the judges' decisions
//!   as if from one more judge (the panel's majority is over judges and
//!   votes; `pair_voted`);
//! - **abstain**: decline to decide a pair; the panel's decision stands
//!   (`pair_abstained`);
//! - **label** (blind runs): the person's own verdict before the judges'
//!   verdicts and the systems' names are shown (`pair_labelled`).
//!
//! A command that does not apply is refused with `command_rejected` and its
//! reason. After aggregation, a change publishes the panel's decision on the
//! pair again (when a vote changed it) and the result with its ranking.

use super::{panel_event, publish};
use crate::engine::pairs::PairwiseState;
use crate::engine::pairs::combine::Preference;
use crate::engine::runtime::Run;
use crate::panel::Results;
use crate::session::event::EventKind;

/// Which pair a command names, and what it prefers.
struct Target {
    index: usize,
    first: String,
    second: String,
}

impl Run {
    fn pair_target(&self, command: &str, first: &str, second: &str, author: &str) -> Option<Target> {
        if self.panel.protocol.results() != Results::Pairs {
            let protocol = self.panel.protocol.kind.as_str();
            self.reject(command, format!("{protocol} compares no pairs: {command} works in pairwise runs"), author);
            return None;
        }
        let found = {
            let st = self.state();
            let pw = &st.pairwise;
            let found = pw.pairs.iter().position(|p| {
                let (a, b) = (&pw.cands[p.pair.0], &pw.cands[p.pair.1]);
                (a == first && b == second) || (a == second && b == first)
            });
            match found {
                Some(index) => {
                    let p = pw.pairs[index].pair;
                    Ok(Target { index, first: pw.cands[p.0].clone(), second: pw.cands[p.1].clone() })
                }
                None if pw.pairs.is_empty() => Err("the comparisons have not started yet".to_string()),
                None => Err(format!("no pair {first} vs {second}; pairs: {}", pair_list(pw))),
            }
        };
        match found {
            Ok(t) => Some(t),
            Err(why) => {
                self.reject(command, why, author);
                None
            }
        }
    }

    /// A winner (a candidate id, `None` for a tie) as a preference within the pair.
    fn preference(&self, command: &str, t: &Target, winner: &Option<String>, author: &str) -> Option<Preference> {
        match winner.as_deref() {
            None => Some(Preference::Tie),
            Some(w) if w == t.first => Some(Preference::First),
            Some(w) if w == t.second => Some(Preference::Second),
            Some(w) => {
                let why = format!("{w} is not in the pair {} vs {} (name one of them, or tie)", t.first, t.second);
                self.reject(command, why, author);
                None
            }
        }
    }

    /// Settle a tie, a flip or an undecided pair: the person's decision replaces the panel's.
    pub(crate) fn settle_pair(&self, first: String, second: String, winner: Option<String>, author: String) {
        let Some(t) = self.pair_target("settle", &first, &second, &author) else { return };
        let Some(pref) = self.preference("settle", &t, &winner, &author) else { return };
        let refused = {
            let mut st = self.state();
            let blind = st.pairwise.blind;
            let ps = &mut st.pairwise.pairs[t.index];
            if !ps.revealed(blind) {
                Some("a blind run: give your own verdict on the pair first (A, B or T)".to_string())
            } else if ps.judged.is_none() {
                Some(format!(
                    "the judges have not finished {} vs {} yet; settle it once the panel has decided",
                    t.first, t.second
                ))
            } else if !ps.needs_settling() {
                let w = if ps.panel() == Some(Preference::First) { &t.first } else { &t.second };
                Some(format!(
                    "the panel prefers {w} in both orders, with no flip: nothing to settle (an extra vote counts with the judges')"
                ))
            } else {
                ps.settled = Some((pref, author.clone()));
                ps.abstained = false;
                None
            }
        };
        if let Some(why) = refused {
            return self.reject("settle", why, &author);
        }
        self.emit(EventKind::PairSettled { first: t.first, second: t.second, winner, author });
        self.republish(None);
    }

    /// One more vote on a pair, counted with the judges' decisions.
    pub(crate) fn vote_pair(&self, first: String, second: String, winner: Option<String>, author: String) {
        let Some(t) = self.pair_target("vote", &first, &second, &author) else { return };
        let Some(pref) = self.preference("vote", &t, &winner, &author) else { return };
        let refused = {
            let mut st = self.state();
            let blind = st.pairwise.blind;
            let ps = &mut st.pairwise.pairs[t.index];
            if !ps.revealed(blind) {
                Some("a blind run: give your own verdict on the pair first (A, B or T)".to_string())
            } else {
                ps.votes.retain(|(a, _)| *a != author);
                ps.votes.push((author.clone(), pref));
                None
            }
        };
        if let Some(why) = refused {
            return self.reject("vote", why, &author);
        }
        self.emit(EventKind::PairVoted { first: t.first, second: t.second, winner, author });
        self.republish(Some(t.index));
    }

    /// Decline to decide a pair: to settle it, or (blind) to label it.
    pub(crate) fn abstain_pair(&self, first: String, second: String, author: String) {
        let Some(t) = self.pair_target("abstain", &first, &second, &author) else { return };
        let refused = {
            let mut st = self.state();
            let blind = st.pairwise.blind;
            let ps = &mut st.pairwise.pairs[t.index];
            let why = if !ps.revealed(blind) {
                None
            } else if ps.abstained {
                Some("already abstained on this pair".to_string())
            } else if let Some((_, who)) = &ps.settled {
                Some(format!("{who} settled this pair; settle it again to change the decision"))
            } else if ps.judged.is_none() {
                Some(format!("the judges have not finished {} vs {} yet", t.first, t.second))
            } else if !ps.needs_settling() {
                Some("the panel's decision is clear (no tie, no flip): there is nothing to abstain from".to_string())
            } else {
                None
            };
            if why.is_none() {
                ps.abstained = true;
            }
            why
        };
        if let Some(why) = refused {
            return self.reject("abstain", why, &author);
        }
        self.emit(EventKind::PairAbstained { first: t.first, second: t.second, author });
    }

    /// A person's own verdict on a pair in a blind run, before seeing the judges'.
    pub(crate) fn label_pair(&self, first: String, second: String, winner: Option<String>, author: String) {
        let Some(t) = self.pair_target("label", &first, &second, &author) else { return };
        let Some(_) = self.preference("label", &t, &winner, &author) else { return };
        let outcome = {
            let mut st = self.state();
            let blind = st.pairwise.blind;
            let ps = &mut st.pairwise.pairs[t.index];
            if !blind {
                Err("labels are given blind (moot run --blind); settle or vote instead".to_string())
            } else if ps.labelled {
                Err("this pair is labelled already; its verdicts are shown".to_string())
            } else if ps.abstained {
                Err("you abstained on this pair; its verdicts are shown".to_string())
            } else {
                ps.labelled = true;
                Ok(ps.shown_swapped)
            }
        };
        match outcome {
            Ok(swapped) => {
                self.emit(EventKind::PairLabelled { first: t.first, second: t.second, winner, swapped, author })
            }
            Err(why) => self.reject("label", why, &author),
        }
    }

    /// After aggregation: the panel's decision on pair `changed` (when a
    /// vote changed it) and the result, published again.
    fn republish(&self, changed: Option<usize>) {
        let panel = {
            let st = self.state();
            if !st.pairwise.aggregated {
                return;
            }
            changed.map(|p| panel_event(&st.pairwise, p))
        };
        if let Some(e) = panel {
            self.emit(e);
        }
        publish(self);
    }
}

fn pair_list(pw: &PairwiseState) -> String {
    pw.pairs.iter().map(|p| format!("{} vs {}", pw.cands[p.pair.0], pw.cands[p.pair.1])).collect::<Vec<_>>().join(", ")
}
