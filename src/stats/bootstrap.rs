//! Percentile bootstrap confidence intervals.
//!
//! Resamples are drawn with replacement by a ChaCha8 generator seeded from a
//! `u64`, so an interval is reproducible from its seed on every platform.
//! The resample buffers are allocated once and reused, so the cost per
//! resample is n index draws plus one evaluation of the statistic.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{StatResult, Undefined, check_same_len, cmp_f64};

/// A percentile bootstrap confidence interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapCi {
    /// Lower bound: the (1 − level)/2 quantile of the resampled statistics.
    pub low: f64,
    /// Upper bound: the (1 + level)/2 quantile of the resampled statistics.
    pub high: f64,
    /// Confidence level, e.g. 0.95.
    pub level: f64,
    /// Resamples drawn.
    pub resamples: usize,
    /// Resamples where the statistic was undefined (or not finite); they are
    /// left out of the quantiles.
    pub skipped: usize,
}

impl BootstrapCi {
    /// Resamples that produced a value and entered the quantiles.
    pub fn used(&self) -> usize {
        self.resamples - self.skipped
    }
}

pub(crate) fn check_params(n: usize, resamples: usize, level: f64) -> StatResult<()> {
    if n == 0 {
        return Err(Undefined::new("empty input"));
    }
    if resamples == 0 {
        return Err(Undefined::new("no resamples"));
    }
    if !(level > 0.0 && level < 1.0) {
        return Err(Undefined::new("confidence level outside (0, 1)"));
    }
    Ok(())
}

/// Percentile bootstrap interval for a statistic of paired samples `x`, `y`.
///
/// Each resample draws n indices with replacement (the same index for `x`
/// and `y`, keeping pairs together) and evaluates `statistic` on the
/// resampled pairs. Resamples where the statistic is undefined are skipped
/// and counted in [`BootstrapCi::skipped`]. The bounds are the (1 − level)/2
/// and (1 + level)/2 quantiles of the values, interpolated linearly (as
/// `numpy.percentile` does by default).
///
/// Undefined when the lengths differ, the input is empty, `resamples` is 0,
/// `level` is outside (0, 1), or the statistic is undefined in every resample.
pub fn bootstrap_ci<F>(
    x: &[f64],
    y: &[f64],
    mut statistic: F,
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<BootstrapCi>
where
    F: FnMut(&[f64], &[f64]) -> StatResult<f64>,
{
    check_same_len(x.len(), y.len())?;
    let n = x.len();
    check_params(n, resamples, level)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut bx = vec![0.0; n];
    let mut by = vec![0.0; n];
    let mut values = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for (a, b) in bx.iter_mut().zip(by.iter_mut()) {
            let i = rng.random_range(0..n);
            *a = x[i];
            *b = y[i];
        }
        if let Ok(v) = statistic(&bx, &by)
            && v.is_finite()
        {
            values.push(v);
        }
    }
    interval(values, resamples, level)
}

/// Percentile bootstrap interval for a statistic of one sample (for
/// example a win rate as the mean of 0/1 indicators).
///
/// Same method, seeding and undefined cases as [`bootstrap_ci`].
pub fn bootstrap_ci_single<F>(
    x: &[f64],
    mut statistic: F,
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<BootstrapCi>
where
    F: FnMut(&[f64]) -> StatResult<f64>,
{
    let n = x.len();
    check_params(n, resamples, level)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut bx = vec![0.0; n];
    let mut values = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for a in bx.iter_mut() {
            *a = x[rng.random_range(0..n)];
        }
        if let Ok(v) = statistic(&bx)
            && v.is_finite()
        {
            values.push(v);
        }
    }
    interval(values, resamples, level)
}

pub(crate) fn interval(mut values: Vec<f64>, resamples: usize, level: f64) -> StatResult<BootstrapCi> {
    if values.is_empty() {
        return Err(Undefined::new("statistic undefined in every resample"));
    }
    let tail = (1.0 - level) / 2.0;
    Ok(BootstrapCi {
        low: quantile(&mut values, tail),
        high: quantile(&mut values, 1.0 - tail),
        level,
        resamples,
        skipped: resamples - values.len(),
    })
}

/// Linear-interpolation quantile of non-empty data, `q` in [0, 1]: the
/// value `numpy.percentile` gives, found by selection of the two order
/// statistics around the position in O(n) instead of a sort (the data is
/// reordered).
fn quantile(values: &mut [f64], q: f64) -> f64 {
    let h = (values.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let t = h - lo as f64;
    let (_, &mut at, above) = values.select_nth_unstable_by(lo, |a, b| cmp_f64(*a, *b));
    // The next order statistic is the smallest value above position `lo`.
    let next = above.iter().copied().min_by(|a, b| cmp_f64(*a, *b)).unwrap_or(at);
    at + t * (next - at)
}

/// Linear-interpolation quantile of non-empty sorted data, `q` in [0, 1].
#[cfg(test)]
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(sorted.len() - 1);
    let t = h - lo as f64;
    sorted[lo] + t * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{CorrelationKind, mean};

    fn sample(n: usize) -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let y: Vec<f64> = (0..n).map(|i| i as f64 + ((i * 7919) % 13) as f64).collect();
        (x, y)
    }

    #[test]
    fn same_seed_same_interval_other_seed_differs() {
        let (x, y) = sample(40);
        let stat = CorrelationKind::Pearson.statistic();
        let a = bootstrap_ci(&x, &y, stat, 2000, 7, 0.95).unwrap();
        let b = bootstrap_ci(&x, &y, stat, 2000, 7, 0.95).unwrap();
        let c = bootstrap_ci(&x, &y, stat, 2000, 8, 0.95).unwrap();
        assert_eq!(a, b);
        assert_ne!((a.low, a.high), (c.low, c.high));
        assert!(a.low <= a.high);
    }

    #[test]
    fn interval_contains_point_estimate() {
        let (x, y) = sample(60);
        let r = crate::stats::pearson(&x, &y).unwrap().value;
        let ci = bootstrap_ci(&x, &y, CorrelationKind::Pearson.statistic(), 3000, 1, 0.95).unwrap();
        assert!(ci.low < r && r < ci.high, "{ci:?} vs {r}");
        assert_eq!(ci.skipped, 0);
        assert_eq!(ci.used(), 3000);
    }

    #[test]
    fn undefined_resamples_are_skipped_and_counted() {
        // With n = 3 many resamples repeat one pair and are constant.
        let x = [1.0, 2.0, 3.0];
        let y = [1.0, 3.0, 2.0];
        let ci = bootstrap_ci(&x, &y, CorrelationKind::Pearson.statistic(), 1000, 3, 0.9).unwrap();
        assert!(ci.skipped > 0 && ci.skipped < 1000, "{ci:?}");
        assert!(ci.low >= -1.0 && ci.high <= 1.0);
    }

    #[test]
    fn never_defined_is_undefined() {
        let x = [1.0, 1.0, 1.0];
        let err = bootstrap_ci(&x, &x, CorrelationKind::Spearman.statistic(), 50, 0, 0.95).unwrap_err();
        assert_eq!(err.reason, "statistic undefined in every resample");
    }

    #[test]
    fn parameter_errors() {
        let x = [1.0, 2.0];
        let stat = CorrelationKind::Pearson.statistic();
        assert!(bootstrap_ci(&x, &x, stat, 0, 0, 0.95).is_err());
        assert!(bootstrap_ci(&x, &x, stat, 10, 0, 1.0).is_err());
        assert!(bootstrap_ci(&x, &x, stat, 10, 0, f64::NAN).is_err());
        assert!(bootstrap_ci(&[], &[], stat, 10, 0, 0.95).is_err());
        assert!(bootstrap_ci(&x, &x[..1], stat, 10, 0, 0.95).is_err());
    }

    #[test]
    fn single_sample_win_rate() {
        // 30 wins out of 50.
        let wins: Vec<f64> = (0..50).map(|i| if i < 30 { 1.0 } else { 0.0 }).collect();
        let ci = bootstrap_ci_single(&wins, mean, 4000, 11, 0.95).unwrap();
        assert!(ci.low < 0.6 && 0.6 < ci.high);
        // Normal approximation: 0.6 ± 1.96·√(0.24/50) ≈ [0.464, 0.736].
        assert!((ci.low - 0.464).abs() < 0.03 && (ci.high - 0.736).abs() < 0.03, "{ci:?}");
        assert_eq!(ci, bootstrap_ci_single(&wins, mean, 4000, 11, 0.95).unwrap());
    }

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 4.0);
        assert_eq!(quantile_sorted(&s, 0.5), 2.5);
        assert!((quantile_sorted(&s, 0.025) - 1.075).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[5.0], 0.3), 5.0);
    }

    #[test]
    fn selection_quantile_equals_sorted_quantile() {
        let data: Vec<f64> = (0..1001).map(|i| ((i * 7919) % 1009) as f64 / 7.0).collect();
        let mut sorted = data.clone();
        sorted.sort_by(|a, b| cmp_f64(*a, *b));
        for q in [0.0, 0.025, 0.05, 0.5, 0.975, 0.999, 1.0] {
            let mut scratch = data.clone();
            assert_eq!(quantile(&mut scratch, q), quantile_sorted(&sorted, q), "q = {q}");
        }
        assert_eq!(quantile(&mut [5.0], 0.3), 5.0);
    }
}
