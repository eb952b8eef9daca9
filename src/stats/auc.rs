//! ROC AUC for binary truth, by the Mann–Whitney U statistic.

use super::{StatResult, Undefined, average_ranks, check_finite, check_same_len};

/// Area under the ROC curve of `scores` (higher = more likely positive)
/// against binary `truth`.
///
/// Computed as U / (n₊ n₋) with U = R₊ − n₊(n₊ + 1)/2, R₊ the sum of the
/// positives' average ranks: the probability that a random positive scores
/// above a random negative, ties counting one half.
///
/// Undefined when the lengths differ, a score is not finite, or the truth
/// has no positives or no negatives.
pub fn roc_auc(truth: &[bool], scores: &[f64]) -> StatResult<f64> {
    check_same_len(truth.len(), scores.len())?;
    check_finite(scores)?;
    let positives = truth.iter().filter(|&&t| t).count();
    let negatives = truth.len() - positives;
    if positives == 0 {
        return Err(Undefined::new("no positives"));
    }
    if negatives == 0 {
        return Err(Undefined::new("no negatives"));
    }
    let ranks = average_ranks(scores);
    let rank_sum: f64 = ranks.iter().zip(truth).filter(|&(_, &t)| t).map(|(r, _)| r).sum();
    let (p, q) = (positives as f64, negatives as f64);
    let u = rank_sum - p * (p + 1.0) / 2.0;
    Ok(u / (p * q))
}

/// ROC AUC from counts per score level, the levels in ascending order:
/// `positives[j]` and `negatives[j]` are the items of each class whose score
/// is level j. The same value as [`roc_auc`] on the items (each positive
/// beats the negatives of lower levels and ties with those of its own,
/// counting one half), in O(levels).
pub fn roc_auc_of_counts(positives: &[u64], negatives: &[u64]) -> StatResult<f64> {
    check_same_len(positives.len(), negatives.len())?;
    let (p, q): (u64, u64) = (positives.iter().sum(), negatives.iter().sum());
    if p == 0 {
        return Err(Undefined::new("no positives"));
    }
    if q == 0 {
        return Err(Undefined::new("no negatives"));
    }
    let (mut below, mut wins) = (0u64, 0.0f64);
    for (&pos, &neg) in positives.iter().zip(negatives) {
        wins += pos as f64 * (below as f64 + neg as f64 / 2.0);
        below += neg;
    }
    Ok(wins / (p as f64 * q as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separable_reversed_and_tied() {
        let truth = [false, false, true, true];
        assert_eq!(roc_auc(&truth, &[0.1, 0.2, 0.8, 0.9]).unwrap(), 1.0);
        assert_eq!(roc_auc(&truth, &[0.9, 0.8, 0.2, 0.1]).unwrap(), 0.0);
        assert_eq!(roc_auc(&truth, &[0.5, 0.5, 0.5, 0.5]).unwrap(), 0.5);
        // Pairs (pos, neg): (0.35 vs 0.1, 0.4) → 1, 0; (0.8 vs 0.1, 0.4) → 1, 1.
        assert_eq!(roc_auc(&[false, false, true, true], &[0.1, 0.4, 0.35, 0.8]).unwrap(), 0.75);
    }

    #[test]
    fn counts_per_level_give_the_same_area() {
        let truth = [false, true, false, true, true, false, true];
        let scores = [0.0, 1.0, 0.5, 0.5, 1.0, 0.0, 0.0];
        // Levels 0, 0.5, 1: positives 1, 1, 2; negatives 2, 1, 0.
        let by_counts = roc_auc_of_counts(&[1, 1, 2], &[2, 1, 0]).unwrap();
        assert!((by_counts - roc_auc(&truth, &scores).unwrap()).abs() < 1e-12);
        assert_eq!(roc_auc_of_counts(&[0, 0], &[1, 2]).unwrap_err().reason, "no positives");
        assert_eq!(roc_auc_of_counts(&[1], &[0]).unwrap_err().reason, "no negatives");
        assert!(roc_auc_of_counts(&[1], &[0, 1]).is_err());
    }

    #[test]
    fn undefined_cases() {
        assert_eq!(roc_auc(&[true, true], &[0.1, 0.2]).unwrap_err().reason, "no negatives");
        assert_eq!(roc_auc(&[false], &[0.1]).unwrap_err().reason, "no positives");
        assert_eq!(roc_auc(&[], &[]).unwrap_err().reason, "no positives");
        assert!(roc_auc(&[true, false], &[f64::NAN, 0.1]).is_err());
        assert!(roc_auc(&[true, false], &[0.1]).is_err());
    }
}
