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
    fn undefined_cases() {
        assert_eq!(roc_auc(&[true, true], &[0.1, 0.2]).unwrap_err().reason, "no negatives");
        assert_eq!(roc_auc(&[false], &[0.1]).unwrap_err().reason, "no positives");
        assert_eq!(roc_auc(&[], &[]).unwrap_err().reason, "no positives");
        assert!(roc_auc(&[true, false], &[f64::NAN, 0.1]).is_err());
        assert!(roc_auc(&[true, false], &[0.1]).is_err());
    }
}
