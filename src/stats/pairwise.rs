//! Pairwise decisions (A, B or tie): win rates and tie confusions.
//!
//! Agreement rate, accuracy against a reference and Cohen's κ of pairwise
//! decisions come from [`agreement`](super::agreement), since
//! [`Preference`] is an ordinary label.

use std::fmt;
use std::str::FromStr;

use super::{StatResult, Undefined, check_same_len};

/// Outcome of comparing candidate A with candidate B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Preference {
    /// A is better.
    A,
    /// B is better.
    B,
    /// Neither is better.
    Tie,
}

impl Preference {
    /// Whether this decision names a winner.
    pub fn has_winner(self) -> bool {
        self != Self::Tie
    }
}

impl fmt::Display for Preference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::A => "A",
            Self::B => "B",
            Self::Tie => "tie",
        })
    }
}

impl FromStr for Preference {
    type Err = Undefined;

    /// Accepts `A`, `B`, `tie` (any case, surrounding spaces ignored).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "a" => Ok(Self::A),
            "b" => Ok(Self::B),
            "tie" => Ok(Self::Tie),
            other => Err(Undefined::new(format!("not a pairwise decision: {other:?}"))),
        }
    }
}

/// Counts of each outcome over a set of decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WinRates {
    /// Decisions for A.
    pub a: usize,
    /// Decisions for B.
    pub b: usize,
    /// Ties.
    pub tie: usize,
}

fn ratio(num: usize, den: usize, reason: &str) -> StatResult<f64> {
    if den == 0 { Err(Undefined::new(reason)) } else { Ok(num as f64 / den as f64) }
}

impl WinRates {
    /// Number of decisions.
    pub fn n(&self) -> usize {
        self.a + self.b + self.tie
    }

    /// Share of decisions for A (`win_rate`). Undefined with no decisions.
    pub fn a_rate(&self) -> StatResult<f64> {
        ratio(self.a, self.n(), "no decisions")
    }

    /// Share of decisions for B (`loss_rate`). Undefined with no decisions.
    pub fn b_rate(&self) -> StatResult<f64> {
        ratio(self.b, self.n(), "no decisions")
    }

    /// Share of ties (`tie_rate`). Undefined with no decisions.
    pub fn tie_rate(&self) -> StatResult<f64> {
        ratio(self.tie, self.n(), "no decisions")
    }

    /// Share of decisions for A among those naming a winner
    /// (`win_rate_excluding_ties`). Undefined when every decision is a tie.
    pub fn a_rate_excluding_ties(&self) -> StatResult<f64> {
        ratio(self.a, self.a + self.b, "no decisive decisions")
    }
}

/// Counts A wins, B wins and ties.
pub fn win_rates(decisions: &[Preference]) -> WinRates {
    let mut w = WinRates::default();
    for d in decisions {
        match d {
            Preference::A => w.a += 1,
            Preference::B => w.b += 1,
            Preference::Tie => w.tie += 1,
        }
    }
    w
}

/// 1.0 where the decision equals `side`, else 0.0: the mean is that side's
/// win rate, and [`bootstrap_ci_single`](super::bootstrap_ci_single) with
/// [`mean`](super::mean) gives its confidence interval.
pub fn win_indicators(decisions: &[Preference], side: Preference) -> Vec<f64> {
    decisions.iter().map(|&d| if d == side { 1.0 } else { 0.0 }).collect()
}

/// How a judge handles ties compared with the truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TieConfusion {
    /// Items where the truth names a winner.
    pub truth_winner: usize,
    /// …of which the judge said tie.
    pub truth_winner_judge_tie: usize,
    /// Items where the truth is a tie.
    pub truth_tie: usize,
    /// …of which the judge picked a winner.
    pub truth_tie_judge_winner: usize,
    /// Items the judge decided otherwise than the truth (a tie for a
    /// winner, a winner for a tie, or the other winner).
    pub misjudged: usize,
}

impl TieConfusion {
    /// Share of items with a true winner that the judge called a tie
    /// (`tie_confusion_winner_as_tie`). Undefined when the truth has no winner.
    pub fn winner_as_tie_rate(&self) -> StatResult<f64> {
        ratio(self.truth_winner_judge_tie, self.truth_winner, "truth names no winner")
    }

    /// Share of true ties where the judge picked a winner
    /// (`tie_confusion_tie_as_winner`). Undefined when the truth has no tie.
    pub fn tie_as_winner_rate(&self) -> StatResult<f64> {
        ratio(self.truth_tie_judge_winner, self.truth_tie, "truth has no ties")
    }

    /// CollabEval's GT_Win_Pred_Tie ratio: among all misjudged items, the
    /// share where the truth names a winner and the judge said tie
    /// (`gt_win_pred_tie_ratio`). Undefined when nothing was misjudged.
    pub fn gt_win_pred_tie_ratio(&self) -> StatResult<f64> {
        ratio(self.truth_winner_judge_tie, self.misjudged, "the judge misjudged nothing")
    }

    /// CollabEval's GT_Tie_Pred_Win ratio: among all misjudged items, the
    /// share where the truth is a tie and the judge picked a winner
    /// (`gt_tie_pred_win_ratio`). Undefined when nothing was misjudged.
    pub fn gt_tie_pred_win_ratio(&self) -> StatResult<f64> {
        ratio(self.truth_tie_judge_winner, self.misjudged, "the judge misjudged nothing")
    }
}

/// Tie confusions of `judge` against `truth`. Undefined when the lengths differ.
pub fn tie_confusion(truth: &[Preference], judge: &[Preference]) -> StatResult<TieConfusion> {
    check_same_len(truth.len(), judge.len())?;
    let mut c = TieConfusion::default();
    for (t, j) in truth.iter().zip(judge) {
        c.misjudged += usize::from(t != j);
        if t.has_winner() {
            c.truth_winner += 1;
            c.truth_winner_judge_tie += usize::from(!j.has_winner());
        } else {
            c.truth_tie += 1;
            c.truth_tie_judge_winner += usize::from(j.has_winner());
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::Preference::{A, B, Tie};
    use super::*;

    #[test]
    fn win_rates_count_outcomes() {
        let d = [A, A, B, Tie, A, Tie];
        let w = win_rates(&d);
        assert_eq!((w.a, w.b, w.tie, w.n()), (3, 1, 2, 6));
        assert_eq!(w.a_rate().unwrap(), 0.5);
        assert_eq!(w.tie_rate().unwrap(), 2.0 / 6.0);
        assert_eq!(w.a_rate_excluding_ties().unwrap(), 0.75);
        assert_eq!(win_indicators(&d, B), vec![0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
        assert!(win_rates(&[]).a_rate().is_err());
        assert!(win_rates(&[Tie, Tie]).a_rate_excluding_ties().is_err());
    }

    #[test]
    fn tie_confusions() {
        let truth = [A, B, Tie, Tie, A, B];
        let judge = [Tie, B, A, Tie, A, Tie];
        let c = tie_confusion(&truth, &judge).unwrap();
        assert_eq!(c.truth_winner, 4);
        assert_eq!(c.truth_winner_judge_tie, 2);
        assert_eq!(c.truth_tie, 2);
        assert_eq!(c.truth_tie_judge_winner, 1);
        // Misjudged: A→tie, tie→A and B→tie (3 of 6); two of them a winner called a tie, one a tie given a winner.
        assert_eq!(c.misjudged, 3);
        assert_eq!(c.gt_win_pred_tie_ratio().unwrap(), 2.0 / 3.0);
        assert_eq!(c.gt_tie_pred_win_ratio().unwrap(), 1.0 / 3.0);
        // A swapped winner is misjudged but neither kind: the ratios need not sum to 1.
        let s = tie_confusion(&[A, A, Tie], &[B, Tie, A]).unwrap();
        assert_eq!(
            (s.misjudged, s.gt_win_pred_tie_ratio().unwrap(), s.gt_tie_pred_win_ratio().unwrap()),
            (3, 1.0 / 3.0, 1.0 / 3.0)
        );
        assert!(tie_confusion(&[A, Tie], &[A, Tie]).unwrap().gt_win_pred_tie_ratio().is_err());
        assert_eq!(c.winner_as_tie_rate().unwrap(), 0.5);
        assert_eq!(c.tie_as_winner_rate().unwrap(), 0.5);
        let no_ties = tie_confusion(&[A, B], &[A, A]).unwrap();
        assert_eq!(no_ties.tie_as_winner_rate().unwrap_err().reason, "truth has no ties");
        assert!(tie_confusion(&[A], &[]).is_err());
    }

    #[test]
    fn parse_and_display() {
        assert_eq!(" a ".parse::<Preference>().unwrap(), A);
        assert_eq!("TIE".parse::<Preference>().unwrap(), Tie);
        assert!("C".parse::<Preference>().is_err());
        assert_eq!(Tie.to_string(), "tie");
        assert_eq!(crate::stats::agreement_rate(&[A, B, Tie], &[A, B, B]).unwrap(), 2.0 / 3.0);
    }
}
