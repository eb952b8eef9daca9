//! Correlation of two paired samples: Pearson r, Spearman ρ, Kendall τ-b,
//! and pairwise deletion of incomplete pairs.
//!
//! All three coefficients need at least two complete pairs and variation in
//! both samples; otherwise they are [`Undefined`].

use super::{StatResult, Undefined, average_ranks, check_finite, check_same_len, cmp_f64, finite};

/// A correlation coefficient together with the number of pairs it is based on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Correlation {
    /// The coefficient, in [-1, 1].
    pub value: f64,
    /// Number of pairs used.
    pub n: usize,
}

/// Which correlation coefficient to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CorrelationKind {
    /// Pearson's product-moment r.
    Pearson,
    /// Spearman's ρ (Pearson r of average ranks).
    Spearman,
    /// Kendall's τ-b (adjusted for ties).
    KendallTauB,
}

impl CorrelationKind {
    /// All kinds, in report order.
    pub const ALL: [CorrelationKind; 3] = [Self::Pearson, Self::Spearman, Self::KendallTauB];

    /// Metric name used in reports: `pearson`, `spearman`, `kendall_tau_b`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Pearson => "pearson",
            Self::Spearman => "spearman",
            Self::KendallTauB => "kendall_tau_b",
        }
    }

    /// Computes this coefficient.
    pub fn compute(self, x: &[f64], y: &[f64]) -> StatResult<Correlation> {
        match self {
            Self::Pearson => pearson(x, y),
            Self::Spearman => spearman(x, y),
            Self::KendallTauB => kendall_tau_b(x, y),
        }
    }

    /// The coefficient as a plain statistic, suitable for
    /// [`bootstrap_ci`](super::bootstrap_ci).
    pub fn statistic(self) -> fn(&[f64], &[f64]) -> StatResult<f64> {
        match self {
            Self::Pearson => |x, y| pearson(x, y).map(|c| c.value),
            Self::Spearman => |x, y| spearman(x, y).map(|c| c.value),
            Self::KendallTauB => |x, y| kendall_tau_b(x, y).map(|c| c.value),
        }
    }
}

/// Complete pairs kept by [`complete_pairs`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompletePairs {
    /// First member of each complete pair.
    pub x: Vec<f64>,
    /// Second member of each complete pair.
    pub y: Vec<f64>,
    /// Number of pairs dropped because a member was missing or not finite.
    pub dropped: usize,
}

impl CompletePairs {
    /// Number of complete pairs kept.
    pub fn n(&self) -> usize {
        self.x.len()
    }
}

/// Pairwise deletion: keeps the positions where both `x` and `y` hold a
/// finite value and counts the others as dropped.
///
/// Undefined only when the two inputs differ in length.
pub fn complete_pairs(x: &[Option<f64>], y: &[Option<f64>]) -> StatResult<CompletePairs> {
    check_same_len(x.len(), y.len())?;
    let mut out = CompletePairs { x: Vec::with_capacity(x.len()), y: Vec::with_capacity(y.len()), dropped: 0 };
    for (a, b) in x.iter().zip(y) {
        match (a, b) {
            (Some(a), Some(b)) if a.is_finite() && b.is_finite() => {
                out.x.push(*a);
                out.y.push(*b);
            }
            _ => out.dropped += 1,
        }
    }
    Ok(out)
}

/// Common checks: equal length, finite values, n ≥ 2, neither sample constant.
fn check_pairs(x: &[f64], y: &[f64]) -> StatResult<usize> {
    check_same_len(x.len(), y.len())?;
    check_finite(x)?;
    check_finite(y)?;
    let n = x.len();
    if n < 2 {
        return Err(Undefined::new("n < 2"));
    }
    if is_constant(x) || is_constant(y) {
        return Err(Undefined::new("constant input"));
    }
    Ok(n)
}

fn is_constant(v: &[f64]) -> bool {
    v.iter().all(|&a| a == v[0])
}

/// Pearson's product-moment correlation r.
///
/// Undefined when the lengths differ, a value is not finite, n < 2, or
/// either sample is constant.
pub fn pearson(x: &[f64], y: &[f64]) -> StatResult<Correlation> {
    let n = check_pairs(x, y)?;
    Ok(Correlation { value: pearson_unchecked(x, y)?, n })
}

/// Pearson r of checked, non-constant input (two passes, no allocation).
/// Undefined only when the sums overflow.
fn pearson_unchecked(x: &[f64], y: &[f64]) -> StatResult<f64> {
    let nf = x.len() as f64;
    let mx = x.iter().sum::<f64>() / nf;
    let my = y.iter().sum::<f64>() / nf;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (&a, &b) in x.iter().zip(y) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if !(sxx.is_finite() && syy.is_finite()) {
        return Err(Undefined::new("numeric overflow"));
    }
    Ok(finite(sxy / (sxx.sqrt() * syy.sqrt()))?.clamp(-1.0, 1.0))
}

/// Spearman's rank correlation ρ: Pearson r of the average ranks (ties
/// share the mean of the ranks they span).
///
/// Undefined under the same conditions as [`pearson`].
pub fn spearman(x: &[f64], y: &[f64]) -> StatResult<Correlation> {
    let n = check_pairs(x, y)?;
    let rx = average_ranks(x);
    let ry = average_ranks(y);
    Ok(Correlation { value: pearson_unchecked(&rx, &ry)?, n })
}

/// Kendall's τ-b, which corrects for ties in either sample:
/// τ-b = (C − D) / √((n₀ − n₁)(n₀ − n₂)), with C and D the concordant and
/// discordant pairs, n₀ = n(n−1)/2 and n₁, n₂ the pairs tied in x and in y.
///
/// Runs in O(n log n) with Knight's algorithm (sort by x, then count the
/// discordant pairs as the swaps of a merge sort on y).
///
/// Undefined under the same conditions as [`pearson`].
pub fn kendall_tau_b(x: &[f64], y: &[f64]) -> StatResult<Correlation> {
    let n = check_pairs(x, y)?;

    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by(|&a, &b| cmp_f64(x[a], x[b]).then_with(|| cmp_f64(y[a], y[b])));

    // Pairs tied in x, and pairs tied in both x and y.
    let mut x_ties: u64 = 0;
    let mut joint_ties: u64 = 0;
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && x[order[end]] == x[order[start]] {
            end += 1;
        }
        x_ties += pairs_in(end - start);
        let mut s = start;
        while s < end {
            let mut e = s + 1;
            while e < end && y[order[e]] == y[order[s]] {
                e += 1;
            }
            joint_ties += pairs_in(e - s);
            s = e;
        }
        start = end;
    }

    let mut ys: Vec<f64> = order.iter().map(|&i| y[i]).collect();
    let discordant = merge_sort_count_swaps(&mut ys);

    // `ys` is now sorted: count the pairs tied in y.
    let mut y_ties: u64 = 0;
    let mut start = 0;
    while start < n {
        let mut end = start + 1;
        while end < n && ys[end] == ys[start] {
            end += 1;
        }
        y_ties += pairs_in(end - start);
        start = end;
    }

    let total = pairs_in(n);
    let con_minus_dis = total as i128 - x_ties as i128 - y_ties as i128 + joint_ties as i128 - 2 * discordant as i128;
    let x_untied = (total - x_ties) as f64;
    let y_untied = (total - y_ties) as f64;
    let tau = con_minus_dis as f64 / x_untied.sqrt() / y_untied.sqrt();
    Ok(Correlation { value: tau.clamp(-1.0, 1.0), n })
}

/// Number of unordered pairs among `k` items.
fn pairs_in(k: usize) -> u64 {
    let k = k as u64;
    k * k.saturating_sub(1) / 2
}

/// Sorts `v` ascending with a bottom-up merge sort and returns the number of
/// inversions (pairs i < j with v[i] > v[j]); equal values are not inversions.
fn merge_sort_count_swaps(v: &mut [f64]) -> u64 {
    let n = v.len();
    let mut buf = vec![0.0; n];
    let mut swaps: u64 = 0;
    let mut width = 1;
    let mut src_is_v = true;
    while width < n {
        {
            let (src, dst): (&[f64], &mut [f64]) = if src_is_v { (&*v, &mut buf[..]) } else { (&buf[..], &mut *v) };
            let mut lo = 0;
            while lo < n {
                let mid = (lo + width).min(n);
                let hi = (lo + 2 * width).min(n);
                let (mut i, mut j, mut k) = (lo, mid, lo);
                while i < mid && j < hi {
                    if src[i] <= src[j] {
                        dst[k] = src[i];
                        i += 1;
                    } else {
                        dst[k] = src[j];
                        j += 1;
                        swaps += (mid - i) as u64;
                    }
                    k += 1;
                }
                dst[k..k + (mid - i)].copy_from_slice(&src[i..mid]);
                k += mid - i;
                dst[k..k + (hi - j)].copy_from_slice(&src[j..hi]);
                lo = hi;
            }
        }
        src_is_v = !src_is_v;
        width *= 2;
    }
    if !src_is_v {
        v.copy_from_slice(&buf);
    }
    swaps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference τ-b by direct pair counting, O(n²).
    fn kendall_naive(x: &[f64], y: &[f64]) -> f64 {
        let n = x.len();
        let (mut s, mut tx, mut ty) = (0i64, 0i64, 0i64);
        let mut total = 0i64;
        for i in 0..n {
            for j in i + 1..n {
                total += 1;
                let dx = (x[i] - x[j]).signum() as i64 * i64::from(x[i] != x[j]);
                let dy = (y[i] - y[j]).signum() as i64 * i64::from(y[i] != y[j]);
                s += dx * dy;
                tx += i64::from(x[i] == x[j]);
                ty += i64::from(y[i] == y[j]);
            }
        }
        s as f64 / (((total - tx) * (total - ty)) as f64).sqrt()
    }

    use crate::stats::lcg_values;

    #[test]
    fn kendall_matches_pair_counting_with_ties() {
        for seed in 0..20 {
            let n = 5 + seed as usize * 7;
            let x = lcg_values(seed, n, 5);
            let y = lcg_values(seed + 100, n, 4);
            if is_constant(&x) || is_constant(&y) {
                continue;
            }
            let fast = kendall_tau_b(&x, &y).unwrap().value;
            let slow = kendall_naive(&x, &y);
            assert!((fast - slow).abs() < 1e-12, "seed {seed}: {fast} vs {slow}");
        }
    }

    #[test]
    fn merge_sort_counts_inversions() {
        let mut v = vec![3.0, 1.0, 2.0, 2.0, 0.0];
        // (3,1) (3,2) (3,2) (3,0) (1,0) (2,0) (2,0)
        assert_eq!(merge_sort_count_swaps(&mut v), 7);
        assert_eq!(v, vec![0.0, 1.0, 2.0, 2.0, 3.0]);
        let mut empty: Vec<f64> = vec![];
        assert_eq!(merge_sort_count_swaps(&mut empty), 0);
    }

    #[test]
    fn perfect_and_reversed() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let y = [10.0, 20.0, 30.0, 40.0];
        let rev = [4.0, 3.0, 2.0, 1.0];
        for kind in CorrelationKind::ALL {
            assert!((kind.compute(&x, &y).unwrap().value - 1.0).abs() < 1e-15, "{}", kind.name());
            assert!((kind.compute(&x, &rev).unwrap().value + 1.0).abs() < 1e-15, "{}", kind.name());
            assert_eq!(kind.compute(&x, &y).unwrap().n, 4);
        }
    }

    #[test]
    fn undefined_cases() {
        for kind in CorrelationKind::ALL {
            assert_eq!(kind.compute(&[1.0], &[2.0]).unwrap_err().reason, "n < 2");
            assert_eq!(kind.compute(&[], &[]).unwrap_err().reason, "n < 2");
            assert_eq!(kind.compute(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).unwrap_err().reason, "constant input");
            assert_eq!(kind.compute(&[1.0, 2.0, 3.0], &[0.1, 0.1, 0.1]).unwrap_err().reason, "constant input");
            assert_eq!(kind.compute(&[1.0, f64::NAN], &[1.0, 2.0]).unwrap_err().reason, "non-finite input");
            assert!(kind.compute(&[1.0, 2.0], &[1.0]).unwrap_err().reason.starts_with("length mismatch"));
            assert!((kind.statistic())(&[1.0], &[1.0]).is_err());
        }
        let huge = [1e200, -1e200, 3e200];
        assert_eq!(pearson(&huge, &[1.0, 2.0, 3.0]).unwrap_err().reason, "numeric overflow");
        for kind in [CorrelationKind::Spearman, CorrelationKind::KendallTauB] {
            assert!(kind.compute(&huge, &[1.0, 2.0, 3.0]).is_ok());
        }
    }

    #[test]
    fn pairwise_deletion_drops_incomplete_pairs() {
        let x = [Some(1.0), None, Some(3.0), Some(f64::NAN), Some(5.0)];
        let y = [Some(2.0), Some(1.0), None, Some(1.0), Some(4.0)];
        let p = complete_pairs(&x, &y).unwrap();
        assert_eq!(p.x, vec![1.0, 5.0]);
        assert_eq!(p.y, vec![2.0, 4.0]);
        assert_eq!(p.dropped, 3);
        assert_eq!(p.n(), 2);
        assert!(complete_pairs(&x, &y[..2]).is_err());
    }
}
