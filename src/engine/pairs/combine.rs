//! How pairwise verdicts combine: votes within one order, the two orders of
//! a pair (the swap rule), several judges, and which pairs are compared.

use super::label::Label;
pub use crate::session::pairwise::Flip;

/// A preference in terms of the pair's candidates rather than positions:
/// `First` is the pair's first candidate (shown as A in the first order and
/// as B in the swapped order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Preference {
    First,
    Second,
    Tie,
}

impl Preference {
    /// The preference a position label means in one order.
    pub fn from_label(label: Label, swapped: bool) -> Preference {
        match (label, swapped) {
            (Label::Tie, _) => Preference::Tie,
            (Label::A, false) | (Label::B, true) => Preference::First,
            (Label::B, false) | (Label::A, true) => Preference::Second,
        }
    }
}

/// The swap rule: a candidate wins only when both orders prefer it;
/// anything else is a tie. `first` is the label of the order with the first
/// candidate as A, `second` of the order with it as B.
pub fn swap_rule(first: Label, second: Label) -> (Preference, Flip) {
    let p = Preference::from_label(first, false);
    let q = Preference::from_label(second, true);
    if p == q {
        return (p, Flip::None);
    }
    let flip = if p == Preference::Tie || q == Preference::Tie { Flip::WinTie } else { Flip::Opposite };
    (Preference::Tie, flip)
}

/// Majority over votes: a label needs more than half of `asked` (votes that
/// could not be read count for nothing and so push toward a tie); otherwise
/// tie. `None` when no vote at all could be read (a failure, not a tie).
pub fn majority<T: Copy + PartialEq>(votes: &[Option<T>], asked: usize, tie: T) -> Option<T> {
    let read: Vec<T> = votes.iter().flatten().copied().collect();
    if read.is_empty() {
        return None;
    }
    for candidate in &read {
        if read.iter().filter(|v| *v == candidate).count() * 2 > asked.max(read.len()) {
            return Some(*candidate);
        }
    }
    Some(tie)
}

/// Which pairs of systems (indices into an item's candidates) are compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pairing {
    /// Each system against the reference system at this index: n−1 pairs.
    Reference(usize),
    /// Every pair: n(n−1)/2.
    AllPairs,
}

/// The pairs to compare among `n` candidates; the first of each pair is the
/// reference under [`Pairing::Reference`].
pub fn plan(n: usize, pairing: Pairing) -> Vec<(usize, usize)> {
    match pairing {
        Pairing::Reference(r) if r < n => (0..n).filter(|&i| i != r).map(|i| (r, i)).collect(),
        Pairing::Reference(_) => Vec::new(),
        Pairing::AllPairs => (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).collect(),
    }
}

/// A system's record over its comparisons.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Record {
    pub wins: u32,
    pub losses: u32,
    pub ties: u32,
}

impl Record {
    pub fn total(&self) -> u32 {
        self.wins + self.losses + self.ties
    }
    /// Wins over all comparisons, ties counting as half a win (for ranking).
    pub fn score(&self) -> f64 {
        if self.total() == 0 { 0.0 } else { (self.wins as f64 + 0.5 * self.ties as f64) / self.total() as f64 }
    }
}

/// Records per candidate from decided pairs, and a ranking by
/// [`Record::score`] (best first; equal scores keep candidate order).
pub fn rank(n: usize, decided: &[((usize, usize), Preference)]) -> (Vec<Record>, Vec<usize>) {
    let mut records = vec![Record::default(); n];
    for &((i, j), p) in decided {
        match p {
            Preference::First => {
                records[i].wins += 1;
                records[j].losses += 1;
            }
            Preference::Second => {
                records[j].wins += 1;
                records[i].losses += 1;
            }
            Preference::Tie => {
                records[i].ties += 1;
                records[j].ties += 1;
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| records[b].score().total_cmp(&records[a].score()));
    (records, order)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Label::*;

    #[test]
    fn swap_rule_on_every_combination() {
        let cases = [
            (A, B, Preference::First, Flip::None),
            (B, A, Preference::Second, Flip::None),
            (Tie, Tie, Preference::Tie, Flip::None),
            (A, A, Preference::Tie, Flip::Opposite),
            (B, B, Preference::Tie, Flip::Opposite),
            (A, Tie, Preference::Tie, Flip::WinTie),
            (Tie, B, Preference::Tie, Flip::WinTie),
            (B, Tie, Preference::Tie, Flip::WinTie),
            (Tie, A, Preference::Tie, Flip::WinTie),
        ];
        for (first, second, want, flip) in cases {
            assert_eq!(swap_rule(first, second), (want, flip), "{first:?} then {second:?}");
        }
    }

    #[test]
    fn a_judge_that_always_says_a_flips_every_pair_into_a_tie() {
        assert_eq!(swap_rule(A, A), (Preference::Tie, Flip::Opposite));
    }

    #[test]
    fn majority_needs_more_than_half() {
        assert_eq!(majority(&[Some(A), Some(A), Some(B)], 3, Tie), Some(A));
        assert_eq!(majority(&[Some(A), Some(B), Some(Tie)], 3, Tie), Some(Tie));
        assert_eq!(majority(&[Some(A), Some(B)], 2, Tie), Some(Tie));
        // Unreadable votes count for nothing: 1 of 3 is no majority.
        assert_eq!(majority(&[Some(B), None, None], 3, Tie), Some(Tie));
        assert_eq!(majority(&[Some(B), Some(B), None], 3, Tie), Some(B));
        assert_eq!(majority::<Label>(&[None, None, None], 3, Tie), None);
    }

    #[test]
    fn reference_and_all_pairs_counts() {
        for n in 2..8 {
            assert_eq!(plan(n, Pairing::Reference(0)).len(), n - 1);
            assert_eq!(plan(n, Pairing::AllPairs).len(), n * (n - 1) / 2);
        }
        assert_eq!(plan(3, Pairing::Reference(1)), vec![(1, 0), (1, 2)]);
        assert!(plan(3, Pairing::Reference(5)).is_empty());
    }

    #[test]
    fn ranking_from_win_rates() {
        let decided = [((0, 1), Preference::Second), ((0, 2), Preference::Tie), ((1, 2), Preference::First)];
        let (records, order) = rank(3, &decided);
        assert_eq!(records[1], Record { wins: 2, losses: 0, ties: 0 });
        assert_eq!(order, vec![1, 0, 2]);
    }
}
