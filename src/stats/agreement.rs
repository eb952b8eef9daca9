//! Agreement between two raters on categorical labels: confusion counts,
//! raw agreement rate, Cohen's κ (unweighted and weighted).
//!
//! Labels are any ordered type (strings, integers, [`Preference`](super::Preference)…).
//! The order of the categories matters only for weighted κ, where the
//! weight of a disagreement depends on how many categories apart the two
//! labels are.

use std::collections::BTreeMap;

use super::{StatResult, Undefined, check_same_len};

/// Disagreement weights for Cohen's κ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KappaWeights {
    /// Every disagreement weighs 1 (plain Cohen's κ).
    Unweighted,
    /// Weight |i − j| for categories i and j positions apart.
    Linear,
    /// Weight (i − j)² for categories i and j positions apart.
    Quadratic,
}

impl KappaWeights {
    fn weight(self, i: usize, j: usize) -> f64 {
        let d = i.abs_diff(j) as f64;
        match self {
            Self::Unweighted => f64::from(u8::from(i != j)),
            Self::Linear => d,
            Self::Quadratic => d * d,
        }
    }
}

/// Confusion counts of two raters over the same items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confusion<T> {
    /// Categories in order; rows and columns of `counts` follow it.
    pub labels: Vec<T>,
    /// `counts[i][j]`: items the first rater labelled `labels[i]` and the
    /// second `labels[j]`.
    pub counts: Vec<Vec<u64>>,
}

impl<T: Ord + Clone> Confusion<T> {
    /// Confusion counts with the categories being the sorted union of the
    /// labels both raters used.
    ///
    /// Undefined only when the lengths differ.
    pub fn new(a: &[T], b: &[T]) -> StatResult<Self> {
        let mut labels: Vec<T> = a.iter().chain(b).cloned().collect();
        labels.sort();
        labels.dedup();
        Self::with_labels(a, b, &labels)
    }

    /// Confusion counts over the given categories, in the given order (use
    /// this to fix a full scale such as 1–5 even when some levels are unused).
    ///
    /// Undefined when the lengths differ, a category is listed twice, or a
    /// label is not among the categories.
    pub fn with_labels(a: &[T], b: &[T], labels: &[T]) -> StatResult<Self> {
        check_same_len(a.len(), b.len())?;
        let mut index = BTreeMap::new();
        for (i, l) in labels.iter().enumerate() {
            if index.insert(l, i).is_some() {
                return Err(Undefined::new("duplicate category"));
            }
        }
        let k = labels.len();
        let mut counts = vec![vec![0u64; k]; k];
        for (la, lb) in a.iter().zip(b) {
            match (index.get(la), index.get(lb)) {
                (Some(&i), Some(&j)) => counts[i][j] += 1,
                _ => return Err(Undefined::new("label outside the categories")),
            }
        }
        Ok(Self { labels: labels.to_vec(), counts })
    }

    /// Number of items counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().flatten().sum()
    }

    /// Items the first rater labelled `a` and the second `b` (0 for unknown labels).
    pub fn count(&self, a: &T, b: &T) -> u64 {
        let i = self.labels.iter().position(|l| l == a);
        let j = self.labels.iter().position(|l| l == b);
        match (i, j) {
            (Some(i), Some(j)) => self.counts[i][j],
            _ => 0,
        }
    }

    /// Share of items on which both raters gave the same label.
    ///
    /// Undefined with no items (`"no pairs"`).
    pub fn agreement_rate(&self) -> StatResult<f64> {
        let total = self.total();
        if total == 0 {
            return Err(Undefined::new("no pairs"));
        }
        let agree: u64 = (0..self.labels.len()).map(|i| self.counts[i][i]).sum();
        Ok(agree as f64 / total as f64)
    }

    /// Cohen's κ = 1 − Σ w·observed / Σ w·expected, where expected counts
    /// are the products of the two raters' marginals divided by the total.
    ///
    /// Undefined with no items (`"no pairs"`) or when chance alone would give
    /// perfect agreement, e.g. both raters used one and the same category
    /// (`"no expected disagreement"`).
    pub fn kappa(&self, weights: KappaWeights) -> StatResult<f64> {
        let flat: Vec<u64> = self.counts.iter().flatten().copied().collect();
        kappa_of_counts(&flat, self.labels.len(), weights)
    }
}

/// Cohen's κ of a k × k confusion matrix given row by row (`counts[i * k + j]`:
/// items the first rater put in category i and the second in j), as
/// [`Confusion::kappa`]; for callers that count without building labels.
///
/// Undefined when `counts` is not k × k, with no items (`"no pairs"`), or
/// when chance alone would give perfect agreement (`"no expected disagreement"`).
pub fn kappa_of_counts(counts: &[u64], k: usize, weights: KappaWeights) -> StatResult<f64> {
    check_same_len(counts.len(), k * k)?;
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return Err(Undefined::new("no pairs"));
    }
    let n = total as f64;
    let cols: Vec<f64> = (0..k).map(|j| (0..k).map(|r| counts[r * k + j]).sum::<u64>() as f64).collect();
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..k {
        let row = &counts[i * k..(i + 1) * k];
        let row_total = row.iter().sum::<u64>() as f64;
        for (j, (&count, &col_total)) in row.iter().zip(&cols).enumerate() {
            let w = weights.weight(i, j);
            observed += w * count as f64;
            expected += w * row_total * col_total / n;
        }
    }
    if expected <= 0.0 {
        return Err(Undefined::new("no expected disagreement"));
    }
    Ok(1.0 - observed / expected)
}

/// Confusion counts of two raters; see [`Confusion::new`].
pub fn confusion<T: Ord + Clone>(a: &[T], b: &[T]) -> StatResult<Confusion<T>> {
    Confusion::new(a, b)
}

/// Share of items with identical labels. Undefined when the lengths differ or
/// there are no items.
pub fn agreement_rate<T: PartialEq>(a: &[T], b: &[T]) -> StatResult<f64> {
    check_same_len(a.len(), b.len())?;
    if a.is_empty() {
        return Err(Undefined::new("no pairs"));
    }
    let agree = a.iter().zip(b).filter(|(x, y)| x == y).count();
    Ok(agree as f64 / a.len() as f64)
}

/// Unweighted Cohen's κ over the labels both raters used.
pub fn cohen_kappa<T: Ord + Clone>(a: &[T], b: &[T]) -> StatResult<f64> {
    Confusion::new(a, b)?.kappa(KappaWeights::Unweighted)
}

/// Quadratic-weighted Cohen's κ, categories being the sorted union of the
/// labels both raters used (as `sklearn.metrics.cohen_kappa_score` does).
/// To weight by a full scale including unused levels, build the matrix with
/// [`Confusion::with_labels`] and call [`Confusion::kappa`].
pub fn cohen_kappa_quadratic<T: Ord + Clone>(a: &[T], b: &[T]) -> StatResult<f64> {
    Confusion::new(a, b)?.kappa(KappaWeights::Quadratic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_rates() {
        let a = ["yes", "yes", "no", "no", "yes"];
        let b = ["yes", "no", "no", "no", "yes"];
        let c = confusion(&a, &b).unwrap();
        assert_eq!(c.labels, vec!["no", "yes"]);
        assert_eq!(c.counts, vec![vec![2, 0], vec![1, 2]]);
        assert_eq!(c.count(&"yes", &"no"), 1);
        assert_eq!(c.count(&"maybe", &"no"), 0);
        assert_eq!(c.total(), 5);
        assert_eq!(c.agreement_rate().unwrap(), 0.8);
        assert_eq!(agreement_rate(&a, &b).unwrap(), 0.8);
        // p_o = 0.8, p_e = (2·3 + 3·2)/25 = 0.48, κ = 0.32/0.52.
        assert!((cohen_kappa(&a, &b).unwrap() - 0.32 / 0.52).abs() < 1e-12);
    }

    #[test]
    fn quadratic_weights_use_category_positions() {
        let a = [1, 2, 3, 4, 5, 3];
        let b = [1, 2, 3, 5, 4, 1];
        let q = cohen_kappa_quadratic(&a, &b).unwrap();
        assert!(q > cohen_kappa(&a, &b).unwrap());
        let c = Confusion::with_labels(&a, &b, &[1, 2, 3, 4, 5, 6, 7]).unwrap();
        assert_eq!(c.counts.len(), 7);
        // Unused levels at the end change neither marginals nor distances.
        assert!((c.kappa(KappaWeights::Quadratic).unwrap() - q).abs() < 1e-12);
        assert!(Confusion::with_labels(&a, &b, &[1, 2, 3]).is_err());
        assert!(Confusion::with_labels(&a, &b, &[1, 2, 3, 4, 5, 5]).is_err());
    }

    #[test]
    fn undefined_cases() {
        let empty: [u8; 0] = [];
        assert_eq!(cohen_kappa(&empty, &empty).unwrap_err().reason, "no pairs");
        assert_eq!(agreement_rate(&empty, &empty).unwrap_err().reason, "no pairs");
        assert_eq!(cohen_kappa(&[2, 2, 2], &[2, 2, 2]).unwrap_err().reason, "no expected disagreement");
        assert!(cohen_kappa(&[1, 2], &[1]).is_err());
        assert!(agreement_rate(&[1, 2], &[1]).is_err());
    }

    #[test]
    fn perfect_and_opposite() {
        assert_eq!(cohen_kappa(&[1, 2, 1, 2], &[1, 2, 1, 2]).unwrap(), 1.0);
        assert_eq!(cohen_kappa(&[1, 2, 1, 2], &[2, 1, 2, 1]).unwrap(), -1.0);
    }
}
