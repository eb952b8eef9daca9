//! Agreement statistics between judges and humans.
//!
//! Everything here works on plain slices and returns `Result<_, Undefined>`:
//! a statistic that has no value for its input (constant input, too few
//! pairs, no variation, …) says so with a reason instead of producing NaN,
//! and no function panics on any input.
//!
//! Metric names used in reports and their definitions are listed in
//! `docs/statistics.md`.
//!
//! - [`correlation`]: Pearson r, Spearman ρ, Kendall τ-b, pairwise deletion.
//! - [`bootstrap`]: percentile bootstrap confidence intervals.
//! - [`cells`]: paired data as counts over distinct cells; fast bootstrap of
//!   correlations and agreement on discrete ratings.
//! - [`krippendorff`]: Krippendorff's α (interval, ordinal).
//! - [`agreement`]: confusion counts, agreement rate, Cohen's κ.
//! - [`pairwise`]: win rates and tie confusions for A/B/tie decisions.
//! - [`position`]: position bias of swapped-order judgments (win↔tie and A↔B
//!   flips), agreement with at least one human rater.
//! - [`raters`]: several raters: majority label, κ between raters (Light's
//!   κ), leave-one-rater-out agreement, bootstrap of win rates over items.
//! - [`score_raters`]: several raters on scores: each item's plurality
//!   score, quadratic-weighted κ between two raters, leave-one-rater-out
//!   correlations.
//! - [`scale`]: exact accuracy, gap ratios, over- and under-rating ratios.
//! - [`auc`]: ROC AUC for binary truth.
//! - [`binary`]: binary detection (MASA's table): accuracy, macro precision,
//!   sensitivity and F1, the positive class's specificity.
//! - [`consensus`]: a decision against every and at least k raters; the
//!   raters' unanimity and consensus of at least k.
//! - [`paired`]: the difference of two judges on the same items, with a
//!   paired bootstrap interval.
//! - [`rouge`]: ROUGE-L F1 of a text against a reference.
//! - [`descriptive`]: mean, population standard deviation, median.

pub mod agreement;
pub mod auc;
pub mod binary;
pub mod bootstrap;
pub mod cells;
pub mod consensus;
pub mod correlation;
pub mod descriptive;
pub mod krippendorff;
pub mod paired;
pub mod pairwise;
pub mod position;
pub mod raters;
pub mod rouge;
pub mod scale;
pub mod score_raters;

pub use agreement::{
    Confusion, KappaWeights, agreement_rate, cohen_kappa, cohen_kappa_quadratic, confusion, kappa_of_counts,
};
pub use auc::{roc_auc, roc_auc_of_counts};
pub use binary::BinaryCounts;
pub use bootstrap::{BootstrapCi, bootstrap_ci, bootstrap_ci_single};
pub use cells::{PairedCells, Resampling, Weighted, bootstrap_cells, bootstrap_cells_with};
pub use correlation::{CompletePairs, Correlation, CorrelationKind, complete_pairs, kendall_tau_b, pearson, spearman};
pub use descriptive::{mean, median, population_stdev};
pub use krippendorff::{AlphaLevel, KrippendorffAlpha, krippendorff_alpha};
pub use pairwise::{Preference, TieConfusion, WinRates, tie_confusion, win_indicators, win_rates};
pub use scale::{ScaleErrors, scale_errors};

/// A statistic has no value for the given input.
///
/// The reason is a short, human-readable phrase such as `"constant input"`,
/// `"n < 2"` or `"no pairable units"`; reports print it in place of a number.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("undefined: {reason}")]
pub struct Undefined {
    /// Why the statistic has no value.
    pub reason: String,
}

impl Undefined {
    /// An `Undefined` with the given reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }
}

/// Result of a statistic that may be undefined for its input.
pub type StatResult<T> = Result<T, Undefined>;

/// Fails with `"non-finite input"` when any value is NaN or infinite.
pub(crate) fn check_finite(values: &[f64]) -> StatResult<()> {
    if values.iter().all(|v| v.is_finite()) { Ok(()) } else { Err(Undefined::new("non-finite input")) }
}

/// Fails with `"length mismatch"` when the two inputs differ in length.
pub(crate) fn check_same_len(a: usize, b: usize) -> StatResult<()> {
    if a == b { Ok(()) } else { Err(Undefined::new(format!("length mismatch ({a} vs {b})"))) }
}

/// Passes a finite result through; an overflowing computation is undefined.
pub(crate) fn finite(value: f64) -> StatResult<f64> {
    if value.is_finite() { Ok(value) } else { Err(Undefined::new("numeric overflow")) }
}

/// Total order on finite floats where `-0.0 == 0.0`.
pub(crate) fn cmp_f64(a: f64, b: f64) -> std::cmp::Ordering {
    a.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal)
}

/// Average ranks (1-based, ties get the mean of the ranks they span) of finite values.
pub(crate) fn average_ranks(values: &[f64]) -> Vec<f64> {
    let n = values.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| cmp_f64(values[a], values[b]));
    let mut ranks = vec![0.0; n];
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Ranks start..end (0-based) map to 1-based start+1..=end; their mean:
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Small deterministic data for tests, so they need no RNG: `n` values in
/// `0..levels` from a linear congruential generator.
#[cfg(test)]
pub(crate) fn lcg_values(seed: u64, n: usize, levels: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % levels) as f64
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn average_ranks_share_ties() {
        assert_eq!(average_ranks(&[10.0, 20.0, 10.0, 30.0]), vec![1.5, 3.0, 1.5, 4.0]);
        assert_eq!(average_ranks(&[2.0, 2.0, 2.0]), vec![2.0, 2.0, 2.0]);
        assert_eq!(average_ranks(&[]), Vec::<f64>::new());
        assert_eq!(average_ranks(&[0.0, -0.0, 1.0]), vec![1.5, 1.5, 3.0]);
    }

    #[test]
    fn undefined_displays_reason() {
        assert_eq!(Undefined::new("constant input").to_string(), "undefined: constant input");
    }

    #[test]
    fn checks_report_reasons() {
        assert!(check_finite(&[1.0, 2.0]).is_ok());
        assert_eq!(check_finite(&[1.0, f64::NAN]).unwrap_err().reason, "non-finite input");
        assert_eq!(check_same_len(2, 3).unwrap_err().reason, "length mismatch (2 vs 3)");
    }
}
