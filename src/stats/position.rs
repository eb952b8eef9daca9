//! Position bias of pairwise judgments: how often a verdict changes when the
//! two candidates are shown in the other order.
//!
//! Each comparison is judged twice, with the candidates in one order and in
//! the other. Both verdicts are position labels (A = shown first). The
//! second order is consistent with the first when it names the same
//! candidate, i.e. when it equals the first with A and B exchanged.

use super::pairwise::Preference;
use super::{StatResult, Undefined, check_same_len};

/// Counts of swapped-order comparisons by how their two verdicts relate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PositionBias {
    /// Comparisons whose two orders name the same candidate (or both tie).
    pub consistent: u64,
    /// One order names a winner, the other says tie.
    pub win_tie_flips: u64,
    /// The orders name opposite candidates (the same position both times).
    pub opposite_flips: u64,
}

impl PositionBias {
    pub fn n(&self) -> u64 {
        self.consistent + self.win_tie_flips + self.opposite_flips
    }
    /// Share of comparisons whose verdict changed with the order.
    pub fn rate(&self) -> StatResult<f64> {
        self.share(self.win_tie_flips + self.opposite_flips)
    }
    /// Share of comparisons with a win↔tie flip.
    pub fn win_tie_rate(&self) -> StatResult<f64> {
        self.share(self.win_tie_flips)
    }
    /// Share of comparisons with an A↔B flip.
    pub fn opposite_rate(&self) -> StatResult<f64> {
        self.share(self.opposite_flips)
    }
    fn share(&self, k: u64) -> StatResult<f64> {
        if self.n() == 0 {
            return Err(Undefined::new("no swapped comparisons"));
        }
        Ok(k as f64 / self.n() as f64)
    }
}

fn swapped(p: Preference) -> Preference {
    match p {
        Preference::A => Preference::B,
        Preference::B => Preference::A,
        Preference::Tie => Preference::Tie,
    }
}

/// Whether a comparison's verdict changed when the order was swapped: the
/// second order's verdict (position labels) does not name the same
/// candidate as the first's (a win↔tie or an A↔B flip, as
/// [`position_bias`] counts them).
pub fn order_changed(first: Preference, second: Preference) -> bool {
    first != swapped(second)
}

/// Position bias over comparisons: `first[i]` is the verdict of comparison
/// i in its first order, `second[i]` in the swapped order (position labels).
pub fn position_bias(first: &[Preference], second: &[Preference]) -> StatResult<PositionBias> {
    check_same_len(first.len(), second.len())?;
    let mut out = PositionBias::default();
    for (&p, &q) in first.iter().zip(second) {
        if !order_changed(p, q) {
            out.consistent += 1;
        } else if p == Preference::Tie || q == Preference::Tie {
            out.win_tie_flips += 1;
        } else {
            out.opposite_flips += 1;
        }
    }
    Ok(out)
}

/// Share of items where the judge agrees with at least one human rater.
/// Items without any rater are left out; undefined when none is left.
pub fn agreement_with_any<T: PartialEq>(judge: &[T], raters: &[Vec<T>]) -> StatResult<f64> {
    check_same_len(judge.len(), raters.len())?;
    let (mut n, mut hits) = (0usize, 0usize);
    for (j, r) in judge.iter().zip(raters) {
        if r.is_empty() {
            continue;
        }
        n += 1;
        hits += usize::from(r.contains(j));
    }
    if n == 0 {
        return Err(Undefined::new("no item has a human rater"));
    }
    Ok(hits as f64 / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Preference::*;

    #[test]
    fn a_judge_that_always_says_a_is_always_flipped() {
        let b = position_bias(&[A, A, A], &[A, A, A]).unwrap();
        assert_eq!(b.opposite_flips, 3);
        assert_eq!(b.rate().unwrap(), 1.0);
        assert_eq!(b.win_tie_rate().unwrap(), 0.0);
    }

    #[test]
    fn flips_are_counted_by_kind() {
        // consistent, consistent, win↔tie, win↔tie, A↔B
        let b = position_bias(&[A, Tie, B, Tie, B], &[B, Tie, Tie, A, B]).unwrap();
        assert_eq!(b, PositionBias { consistent: 2, win_tie_flips: 2, opposite_flips: 1 });
        assert!((b.rate().unwrap() - 0.6).abs() < 1e-12);
        assert!(position_bias(&[], &[]).unwrap().rate().is_err());
        assert!(!order_changed(A, B) && !order_changed(Tie, Tie));
        assert!(order_changed(A, A) && order_changed(A, Tie) && order_changed(Tie, B));
        assert!(position_bias(&[A], &[]).is_err());
    }

    #[test]
    fn agreement_with_at_least_one_rater() {
        let raters = vec![vec![A, B], vec![Tie], vec![], vec![B, B]];
        let got = agreement_with_any(&[B, A, A, A], &raters).unwrap();
        assert!((got - 1.0 / 3.0).abs() < 1e-12);
        assert!(agreement_with_any(&[A], &[vec![]]).is_err());
    }
}
