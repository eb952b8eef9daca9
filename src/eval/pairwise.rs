//! Progress of a pairwise batch run: each system's wins, losses and ties
//! over the panel's decided comparisons, updated as items finish.
//!
//! A finished item's decisions are read back from its log (the same
//! [`PairwiseView`] fold as the screen and the report), so the tally holds
//! exactly what was recorded. A comparison without a result (no readable
//! verdict) counts as undecided, never as a win, loss or tie; a pair a
//! person settled counts with the person's decision.
//!
//! Intervals: while items run, a Wilson score 95% interval of the win rate,
//! treating comparisons as independent (cheap, redrawn several times a
//! second); the end summary gives the percentile bootstrap over items that
//! `moot report` gives (10,000 resamples, seed 0).

use std::io::BufRead;
use std::path::Path;

use crate::session::pairwise::{ComparisonView, PairwiseView};
use crate::session::{Event, EventKind};
use crate::stats::raters::{bootstrap_win_rates, wilson_95};

/// One system's record so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SystemTally {
    pub id: String,
    pub wins: u64,
    pub losses: u64,
    pub ties: u64,
    /// (wins, losses, ties) of each item the system was compared in.
    pub per_item: Vec<[u64; 3]>,
}

impl SystemTally {
    pub fn decided(&self) -> u64 {
        self.wins + self.losses + self.ties
    }
    /// `sys-a 6-1-2 win 67% [35%, 88%]` with the Wilson interval.
    fn running(&self) -> String {
        let n = self.decided();
        let rate = match wilson_95(self.wins, n) {
            Ok((lo, hi)) => {
                format!("win {:.0}% [{:.0}%, {:.0}%]", 100.0 * self.wins as f64 / n as f64, 100.0 * lo, 100.0 * hi)
            }
            Err(_) => "win rate: no data (no decided comparison)".into(),
        };
        format!("{} {}-{}-{} {rate}", self.id, self.wins, self.losses, self.ties)
    }
}

/// The panel's decisions over the items finished so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PairTally {
    /// Systems in order of first appearance.
    pub systems: Vec<SystemTally>,
    /// Items with at least one comparison.
    pub items: usize,
    pub comparisons: u64,
    /// Comparisons without a result.
    pub undecided: u64,
    /// Comparisons a person settled.
    pub settled: u64,
}

impl PairTally {
    /// Adds one finished item's comparisons.
    pub fn add_item(&mut self, comparisons: &[ComparisonView]) {
        if comparisons.is_empty() {
            return;
        }
        self.items += 1;
        let mut touched: Vec<(usize, [u64; 3])> = Vec::new();
        for c in comparisons {
            self.comparisons += 1;
            if !c.decided() {
                self.undecided += 1;
                continue;
            }
            self.settled += u64::from(c.settled.is_some());
            let winner = c.winner();
            for (me, other) in [(&c.first, &c.second), (&c.second, &c.first)] {
                let slot = match winner {
                    None => 2,
                    Some(w) if w == me => 0,
                    Some(w) if w == other => 1,
                    // A winner that is neither candidate is not a decision on this pair.
                    Some(_) => continue,
                };
                let i = self.system(me);
                match touched.iter_mut().find(|(s, _)| *s == i) {
                    Some((_, c)) => c[slot] += 1,
                    None => {
                        let mut c = [0; 3];
                        c[slot] += 1;
                        touched.push((i, c));
                    }
                }
            }
        }
        for (i, c) in touched {
            let s = &mut self.systems[i];
            s.wins += c[0];
            s.losses += c[1];
            s.ties += c[2];
            s.per_item.push(c);
        }
    }

    fn system(&mut self, id: &str) -> usize {
        match self.systems.iter().position(|s| s.id == id) {
            Some(i) => i,
            None => {
                self.systems.push(SystemTally { id: id.to_string(), ..Default::default() });
                self.systems.len() - 1
            }
        }
    }

    /// Systems best first (win rate over decided comparisons, a tie half).
    fn ranked(&self) -> Vec<&SystemTally> {
        let score = |s: &SystemTally| {
            let n = s.decided();
            if n == 0 { -1.0 } else { (s.wins as f64 + 0.5 * s.ties as f64) / n as f64 }
        };
        let mut v: Vec<&SystemTally> = self.systems.iter().collect();
        v.sort_by(|a, b| score(b).total_cmp(&score(a)).then(a.id.cmp(&b.id)));
        v
    }

    /// The running line: W-L-T and win rate of up to `max` systems, best
    /// first; `None` before any comparison.
    pub fn line(&self, max: usize) -> Option<String> {
        if self.comparisons == 0 {
            return None;
        }
        let ranked = self.ranked();
        let mut parts: Vec<String> = ranked.iter().take(max).map(|s| s.running()).collect();
        if ranked.len() > max {
            parts.push(format!("+{} more", ranked.len() - max));
        }
        if self.undecided > 0 {
            parts.push(format!("{} undecided", self.undecided));
        }
        Some(parts.join(" · "))
    }

    /// The end summary: one line per system with its win rate's bootstrap
    /// interval (resampling items), and the method.
    pub fn summary(&self, resamples: usize, seed: u64) -> Vec<String> {
        if self.comparisons == 0 {
            return Vec::new();
        }
        let mut out = vec![format!(
            "pairwise: {} comparisons over {} items; {} without a result{} (W-L-T over decided comparisons; \
             win rate with a 95% percentile bootstrap interval resampling items, {resamples} resamples, seed {seed})",
            self.comparisons,
            self.items,
            self.undecided,
            if self.settled > 0 { format!("; {} settled by a person", self.settled) } else { String::new() }
        )];
        for s in self.ranked() {
            let n = s.decided();
            let rate = if n == 0 {
                "win rate: no data (no decided comparison)".to_string()
            } else {
                let p = s.wins as f64 / n as f64;
                match bootstrap_win_rates(&s.per_item, resamples, seed, 0.95).ok().and_then(|v| v.into_iter().next()) {
                    Some(Ok(ci)) => format!("win rate {p:.3} [{:.3}, {:.3}]", ci.low, ci.high),
                    _ => format!("win rate {p:.3}"),
                }
            };
            out.push(format!("  {} {}-{}-{} {rate}", s.id, s.wins, s.losses, s.ties));
        }
        out
    }
}

/// The pairwise comparisons recorded in a log (streamed text is skipped);
/// `None` when the log cannot be read.
pub fn comparisons_of_log(path: &Path) -> Option<Vec<ComparisonView>> {
    let file = std::fs::File::open(path).ok()?;
    let mut view = PairwiseView::default();
    for line in std::io::BufReader::new(file).lines() {
        let line = line.ok()?;
        if line.contains("\"type\":\"turn_delta\"")
            || !line.contains("\"type\":\"pair_") && !line.contains("session_started")
        {
            continue;
        }
        if let Ok(Event { kind, .. }) = serde_json::from_str::<Event>(&line)
            && matches!(
                kind,
                EventKind::SessionStarted { .. }
                    | EventKind::PairVerdict { .. }
                    | EventKind::PairDecided { .. }
                    | EventKind::PairSettled { .. }
            )
        {
            view.apply(&kind);
        }
    }
    Some(view.comparisons)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::pairwise::{DecisionView, SettledView};

    fn pair(first: &str, second: &str, winner: Option<&str>, no_result: bool) -> ComparisonView {
        ComparisonView {
            first: first.into(),
            second: second.into(),
            panel: Some(DecisionView {
                judge: None,
                first_order: None,
                swapped_order: None,
                winner: winner.map(Into::into),
                flip: None,
                no_result: no_result.then(|| "no readable verdict".into()),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn wins_losses_ties_and_undecided() {
        let mut t = PairTally::default();
        t.add_item(&[pair("a", "b", Some("a"), false)]);
        t.add_item(&[pair("a", "b", None, false), pair("a", "c", None, true)]);
        let mut settled = pair("b", "a", Some("a"), false);
        settled.settled = Some(SettledView { winner: Some("b".into()), author: "ann".into() });
        t.add_item(&[settled]);
        let a = &t.systems[0];
        assert_eq!((a.id.as_str(), a.wins, a.losses, a.ties), ("a", 1, 1, 1));
        assert_eq!(a.per_item, vec![[1, 0, 0], [0, 0, 1], [0, 1, 0]]);
        assert_eq!((t.comparisons, t.undecided, t.settled, t.items), (4, 1, 1, 3));
        assert!(t.systems.iter().all(|s| s.id != "c"), "an undecided comparison gives no record");
        let line = t.line(3).unwrap();
        assert!(line.contains("a 1-1-1 win 33% ["), "{line}");
        assert!(line.ends_with("1 undecided"), "{line}");
        let summary = t.summary(500, 0);
        assert!(summary[0].contains("4 comparisons over 3 items; 1 without a result; 1 settled by a person"));
        assert!(summary.iter().any(|l| l.starts_with("  a 1-1-1 win rate 0.333 [")), "{summary:?}");
    }

    #[test]
    fn nothing_before_the_first_comparison() {
        let t = PairTally::default();
        assert_eq!(t.line(3), None);
        assert!(t.summary(10, 0).is_empty());
    }
}
