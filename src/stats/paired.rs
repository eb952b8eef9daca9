//! Differences between two judges (or prompts, or panels) on the same
//! items, with paired percentile bootstrap intervals: each resample draws
//! items with replacement and evaluates both judges on the same draw, so
//! what the items have in common cancels out of the difference.

use super::bootstrap::BootstrapCi;
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

/// Paired items (human, A, B) reduced to their distinct triples, for a
/// fast bootstrap of a difference of Spearman's ρ: ratings repeat, so a
/// resample is counts over the distinct triples, and each coordinate's
/// average ranks follow from its level counts (as in
/// [`Weighted::spearman`](super::Weighted::spearman)).
struct Triples {
    /// Per distinct triple, its level index in each coordinate.
    level: Vec<[usize; 3]>,
    /// Distinct values per coordinate.
    levels: [usize; 3],
}

impl Triples {
    /// The distinct triples of the items and each item's triple.
    fn new(truth: &[f64], a: &[f64], b: &[f64]) -> (Self, Vec<f64>) {
        let cols = [truth, a, b];
        let sorted: [Vec<f64>; 3] = cols.map(|c| {
            let mut v = c.to_vec();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        });
        let at = |c: usize, v: f64| sorted[c].partition_point(|x| *x < v);
        let mut kinds: Vec<[usize; 3]> =
            (0..truth.len()).map(|i| [at(0, truth[i]), at(1, a[i]), at(2, b[i])]).collect();
        let of_item = kinds.clone();
        kinds.sort_unstable();
        kinds.dedup();
        let codes = of_item.iter().map(|k| kinds.partition_point(|x| x < k) as f64).collect();
        (Triples { level: kinds, levels: sorted.map(|v| v.len()) }, codes)
    }

    /// ρ(truth, A) − ρ(truth, B) over `count[k]` items of each triple k;
    /// none where a ρ is undefined (a constant column).
    fn spearman_difference(&self, count: &[u64]) -> Option<f64> {
        let n: u64 = count.iter().sum();
        if n < 2 {
            return None;
        }
        // Average rank of each level of each coordinate.
        let ranks: Vec<Vec<f64>> = (0..3)
            .map(|c| {
                let mut m = vec![0u64; self.levels[c]];
                for (k, &cnt) in self.level.iter().zip(count) {
                    m[k[c]] += cnt;
                }
                let mut below = 0u64;
                m.iter()
                    .map(|&cnt| {
                        let r = below as f64 + (cnt as f64 + 1.0) / 2.0;
                        below += cnt;
                        r
                    })
                    .collect()
            })
            .collect();
        let rank = |k: &[usize; 3], c: usize| ranks[c][k[c]];
        let mean = (n as f64 + 1.0) / 2.0;
        let (mut s00, mut s11, mut s22, mut s01, mut s02) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (k, &cnt) in self.level.iter().zip(count) {
            let w = cnt as f64;
            let (d0, d1, d2) = (rank(k, 0) - mean, rank(k, 1) - mean, rank(k, 2) - mean);
            s00 += w * d0 * d0;
            s11 += w * d1 * d1;
            s22 += w * d2 * d2;
            s01 += w * d0 * d1;
            s02 += w * d0 * d2;
        }
        if s00 == 0.0 || s11 == 0.0 || s22 == 0.0 {
            return None;
        }
        let v = s01 / (s00 * s11).sqrt() - s02 / (s00 * s22).sqrt();
        v.is_finite().then_some(v)
    }
}

/// Paired percentile bootstrap interval of the difference of Spearman's ρ
/// ([`correlation_difference`] with [`CorrelationKind::Spearman`]): each
/// resample draws n items with replacement and takes both ρ on the same
/// items; resamples where either is undefined are skipped. The items are
/// reduced to their distinct (truth, A, B) triples and each resample is
/// drawn as counts over them, as [`bootstrap_cells`] draws pairs (the same
/// distribution as drawing items one by one); quantiles and seeding as in
/// [`bootstrap_ci`](super::bootstrap_ci).
pub fn bootstrap_spearman_difference(
    truth: &[f64],
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<BootstrapCi> {
    check_same_len(truth.len(), a.len())?;
    check_same_len(truth.len(), b.len())?;
    super::check_finite(truth)?;
    super::check_finite(a)?;
    super::check_finite(b)?;
    let (triples, codes) = Triples::new(truth, a, b);
    let cells = PairedCells::new(&codes, &codes)?;
    let kind_of: Vec<usize> = cells.x_levels().iter().map(|&c| c as usize).collect();
    let mut count = vec![0u64; triples.level.len()];
    let statistic = |w: &mut super::Weighted<'_>, out: &mut [Option<f64>]| {
        count.fill(0);
        for (lvl, _, c) in w.cells() {
            count[kind_of[lvl]] += c;
        }
        out[0] = triples.spearman_difference(&count);
    };
    bootstrap_cells(&cells, 1, statistic, resamples, seed, level)?.swap_remove(0)
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
        let ci = bootstrap_spearman_difference(&truth, &a, &b, 300, 0, 0.95).unwrap();
        assert_eq!((ci.low, ci.high, ci.skipped), (0.0, 0.0, 0));
        // A noisier b: a positive difference, the interval around it.
        let noisy: Vec<f64> = truth.iter().zip(lcg(5, 40, 9)).map(|(t, e)| t + e).collect();
        let d = correlation_difference(kind, &truth, &a, &noisy).unwrap();
        let ci = bootstrap_spearman_difference(&truth, &a, &noisy, 1000, 0, 0.95).unwrap();
        assert!(d > 0.0 && ci.low < d && d < ci.high, "{d} {ci:?}");
        assert!(correlation_difference(kind, &truth, &a, &b[1..]).is_err());
        assert!(bootstrap_spearman_difference(&truth, &a, &b[1..], 10, 0, 0.95).is_err());
    }

    #[test]
    fn counts_over_triples_give_the_plain_difference() {
        let truth: Vec<f64> = lcg(7, 60, 5);
        let a: Vec<f64> = truth.iter().zip(lcg(8, 60, 3)).map(|(t, e)| t + e).collect();
        let b: Vec<f64> = lcg(9, 60, 4);
        let (triples, codes) = Triples::new(&truth, &a, &b);
        let mut count = vec![0u64; triples.level.len()];
        for c in &codes {
            count[*c as usize] += 1;
        }
        let fast = triples.spearman_difference(&count).unwrap();
        let plain = correlation_difference(CorrelationKind::Spearman, &truth, &a, &b).unwrap();
        assert!((fast - plain).abs() < 1e-12, "{fast} vs {plain}");
        // Only the first ten items, some twice: the same as the data repeated.
        let mut some = vec![0u64; count.len()];
        let (mut t, mut x, mut y) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..10 {
            let times = 1 + (i % 2) as u64;
            some[codes[i] as usize] += times;
            for _ in 0..times {
                t.push(truth[i]);
                x.push(a[i]);
                y.push(b[i]);
            }
        }
        let plain = correlation_difference(CorrelationKind::Spearman, &t, &x, &y).unwrap();
        assert!((triples.spearman_difference(&some).unwrap() - plain).abs() < 1e-12);
        // A constant column: undefined.
        assert_eq!(
            triples
                .spearman_difference(&[0, 0, 3].iter().chain(&vec![0; count.len() - 3]).copied().collect::<Vec<_>>()),
            None
        );
    }
}
