//! A decision against several raters' labels of the same unit, and the
//! raters' agreement among themselves, as MASA reports them: the judge's
//! agreement with every rater and with at least k raters, the share of
//! units on which all raters agree and on which at least k give the same
//! label.
//!
//! A unit is one comparison with the labels of its raters (any number, one
//! label per rater).

use super::{StatResult, Undefined, check_same_len};

/// `hits` of `n` units.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Share {
    pub hits: usize,
    pub n: usize,
}

impl Share {
    /// hits / n; undefined when no unit qualifies.
    pub fn rate(&self) -> StatResult<f64> {
        if self.n == 0 {
            return Err(Undefined::new("no unit has enough raters"));
        }
        Ok(self.hits as f64 / self.n as f64)
    }

    fn add(&mut self, counts: bool, hit: bool) {
        if counts {
            self.n += 1;
            self.hits += usize::from(hit);
        }
    }
}

/// How many of `labels` equal `decision`.
pub fn matching<T: PartialEq>(decision: &T, labels: &[T]) -> usize {
    labels.iter().filter(|l| *l == decision).count()
}

/// The most raters that gave one same label (0 without labels).
pub fn largest_bloc<T: PartialEq>(labels: &[T]) -> usize {
    labels.iter().map(|l| matching(l, labels)).max().unwrap_or(0)
}

/// Share of units with at least `k` labels (and at least one) on which at
/// least `k` labels equal the judge's decision. With k = 1 this is the
/// agreement with at least one rater.
pub fn agreement_at_least<T: PartialEq>(judge: &[T], raters: &[Vec<T>], k: usize) -> StatResult<Share> {
    check_same_len(judge.len(), raters.len())?;
    let k = k.max(1);
    let mut s = Share::default();
    for (j, labels) in judge.iter().zip(raters) {
        s.add(labels.len() >= k, matching(j, labels) >= k);
    }
    Ok(s)
}

/// Share of units with a label on which every label equals the judge's
/// decision (with one rater: that rater's).
pub fn agreement_with_all<T: PartialEq>(judge: &[T], raters: &[Vec<T>]) -> StatResult<Share> {
    check_same_len(judge.len(), raters.len())?;
    let mut s = Share::default();
    for (j, labels) in judge.iter().zip(raters) {
        s.add(!labels.is_empty(), matching(j, labels) == labels.len());
    }
    Ok(s)
}

/// Share of units with at least `k` labels (k ≥ 2) on which at least `k`
/// raters gave the same label. With k = the number of raters of every
/// unit this is the share of unanimous units.
pub fn consensus_at_least<T: PartialEq>(raters: &[Vec<T>], k: usize) -> Share {
    let k = k.max(2);
    let mut s = Share::default();
    for labels in raters {
        s.add(labels.len() >= k, largest_bloc(labels) >= k);
    }
    s
}

/// Share of units with two or more labels on which all raters gave the same label.
pub fn unanimous_share<T: PartialEq>(raters: &[Vec<T>]) -> Share {
    let mut s = Share::default();
    for labels in raters {
        s.add(labels.len() >= 2, largest_bloc(labels) == labels.len());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Preference::{A, B, Tie};

    #[test]
    fn the_judge_against_every_and_at_least_k_raters() {
        let raters = vec![vec![A, A, A, B], vec![A, B, B, Tie], vec![Tie], vec![], vec![B, B]];
        let judge = [A, B, A, A, B];
        assert_eq!(agreement_at_least(&judge, &raters, 1).unwrap(), Share { hits: 3, n: 4 });
        assert_eq!(agreement_at_least(&judge, &raters, 2).unwrap(), Share { hits: 3, n: 3 });
        assert_eq!(agreement_at_least(&judge, &raters, 3).unwrap(), Share { hits: 1, n: 2 });
        assert_eq!(agreement_at_least(&judge, &raters, 4).unwrap(), Share { hits: 0, n: 2 });
        assert_eq!(
            agreement_at_least(&judge, &raters, 5).unwrap().rate().unwrap_err().reason,
            "no unit has enough raters"
        );
        assert_eq!(agreement_with_all(&judge, &raters).unwrap(), Share { hits: 1, n: 4 });
        assert!(agreement_with_all(&judge[1..], &raters).is_err());
    }

    #[test]
    fn the_raters_among_themselves() {
        let raters = vec![vec![A, A, A, B], vec![A, B, B, Tie], vec![Tie, Tie], vec![B], vec![A, A, A, A]];
        assert_eq!(unanimous_share(&raters), Share { hits: 2, n: 4 });
        assert_eq!(consensus_at_least(&raters, 3), Share { hits: 2, n: 3 });
        assert_eq!(consensus_at_least(&raters, 2), Share { hits: 4, n: 4 });
        assert_eq!(largest_bloc::<u8>(&[]), 0);
    }
}
