//! Differences between two judges (or prompts, or panels) on the same
//! items, with paired percentile bootstrap intervals: each resample draws
//! items with replacement and evaluates both judges on the same draw, so
//! what the items have in common cancels out of the difference.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::bootstrap::{BootstrapCi, check_params, interval};
use super::cells::{PairedCells, bootstrap_cells};
use super::{CorrelationKind, StatResult, Undefined, check_same_len};

/// One item's share of two agreement rates: how many of its `cases` judge
/// A and judge B got right.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PairedHits {
    pub hits_a: u64,
    pub hits_b: u64,
    pub cases: u64,
}

/// Σ hits_a / Σ cases − Σ hits_b / Σ cases over the items: the difference
/// of two agreement rates over the same cases. Undefined without cases.
pub fn ratio_difference(items: &[PairedHits]) -> StatResult<f64> {
    let sum = |f: fn(&PairedHits) -> u64| items.iter().map(f).sum::<u64>();
    let cases = sum(|i| i.cases);
    if cases == 0 {
        return Err(Undefined::new("no cases"));
    }
    Ok((sum(|i| i.hits_a) as f64 - sum(|i| i.hits_b) as f64) / cases as f64)
}

/// Paired percentile bootstrap interval of [`ratio_difference`],
/// resampling items (drawn as in [`bootstrap_cells`]: the items reduced to
/// their distinct (hits_a, hits_b, cases)).
pub fn bootstrap_ratio_difference(
    items: &[PairedHits],
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<BootstrapCi> {
    let mut kinds: Vec<PairedHits> = items.to_vec();
    kinds.sort_unstable();
    kinds.dedup();
    let codes: Vec<f64> = items.iter().map(|c| kinds.partition_point(|k| k < c) as f64).collect();
    let cells = PairedCells::new(&codes, &codes)?;
    let of_level: Vec<PairedHits> = cells.x_levels().iter().map(|&c| kinds[c as usize]).collect();
    let statistic = |w: &mut super::Weighted<'_>, out: &mut [Option<f64>]| {
        let (mut a, mut b, mut n) = (0u64, 0u64, 0u64);
        for (level, _, c) in w.cells() {
            let k = of_level[level];
            a += k.hits_a * c;
            b += k.hits_b * c;
            n += k.cases * c;
        }
        if n > 0 {
            out[0] = Some((a as f64 - b as f64) / n as f64);
        }
    };
    bootstrap_cells(&cells, 1, statistic, resamples, seed, level)?.swap_remove(0)
}

/// The correlation of `a` with `truth` minus that of `b` with `truth`, over
/// the same items. Undefined when either correlation is.
pub fn correlation_difference(kind: CorrelationKind, truth: &[f64], a: &[f64], b: &[f64]) -> StatResult<f64> {
    check_same_len(truth.len(), a.len())?;
    check_same_len(truth.len(), b.len())?;
    Ok(kind.compute(truth, a)?.value - kind.compute(truth, b)?.value)
}

/// Paired percentile bootstrap interval of [`correlation_difference`]: each
/// resample draws n item indices with replacement (ChaCha8 seeded with
/// `seed`) and takes both correlations on the same items; resamples where
/// either is undefined are skipped. Quantiles as in
/// [`bootstrap_ci`](super::bootstrap_ci).
pub fn bootstrap_correlation_difference(
    kind: CorrelationKind,
    truth: &[f64],
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<BootstrapCi> {
    check_same_len(truth.len(), a.len())?;
    check_same_len(truth.len(), b.len())?;
    let n = truth.len();
    check_params(n, resamples, level)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut rt, mut ra, mut rb) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
    let mut values = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for k in 0..n {
            let i = rng.random_range(0..n);
            rt[k] = truth[i];
            ra[k] = a[i];
            rb[k] = b[i];
        }
        if let Ok(v) = correlation_difference(kind, &rt, &ra, &rb)
            && v.is_finite()
        {
            values.push(v);
        }
    }
    interval(values, resamples, level)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::lcg_values as lcg;

    fn hits(a: u64, b: u64, n: u64) -> PairedHits {
        PairedHits { hits_a: a, hits_b: b, cases: n }
    }

    #[test]
    fn ratio_difference_is_over_all_cases() {
        let items = [hits(1, 0, 1), hits(2, 1, 2), hits(0, 1, 1), hits(1, 1, 1)];
        assert_eq!(ratio_difference(&items).unwrap(), (4.0 - 3.0) / 5.0);
        assert!(ratio_difference(&[]).is_err());
        let ci = bootstrap_ratio_difference(&items, 2000, 3, 0.95).unwrap();
        assert!(ci.low <= 0.2 && 0.2 <= ci.high, "{ci:?}");
        // The same judge twice: every resample's difference is 0.
        let same = [hits(1, 1, 1), hits(0, 0, 1), hits(2, 2, 2)];
        let ci = bootstrap_ratio_difference(&same, 500, 1, 0.95).unwrap();
        assert_eq!((ci.low, ci.high), (0.0, 0.0));
    }

    #[test]
    fn paired_resamples_cancel_what_the_items_share() {
        // b is a plus a constant: the same ranks, a difference of 0 in every resample.
        let truth: Vec<f64> = lcg(1, 40, 5);
        let a: Vec<f64> = truth.iter().zip(lcg(2, 40, 3)).map(|(t, e)| t + e).collect();
        let b: Vec<f64> = a.iter().map(|v| v + 10.0).collect();
        let kind = CorrelationKind::Spearman;
        assert_eq!(correlation_difference(kind, &truth, &a, &b).unwrap(), 0.0);
        let ci = bootstrap_correlation_difference(kind, &truth, &a, &b, 300, 0, 0.95).unwrap();
        assert_eq!((ci.low, ci.high, ci.skipped), (0.0, 0.0, 0));
        // A noisier b: a positive difference, the interval around it.
        let noisy: Vec<f64> = truth.iter().zip(lcg(5, 40, 9)).map(|(t, e)| t + e).collect();
        let d = correlation_difference(kind, &truth, &a, &noisy).unwrap();
        let ci = bootstrap_correlation_difference(kind, &truth, &a, &noisy, 1000, 0, 0.95).unwrap();
        assert!(d > 0.0 && ci.low < d && d < ci.high, "{d} {ci:?}");
        assert!(correlation_difference(kind, &truth, &a, &b[1..]).is_err());
    }
}
