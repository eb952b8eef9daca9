//! Paired samples as counts over their distinct (x, y) cells, statistics of
//! weighted cells, and a fast percentile bootstrap built on them.
//!
//! Ratings are discrete: a 1–5 human scale against the mean of a few
//! agents' 1–5 scores has at most a few hundred distinct (x, y) pairs, however
//! many items there are. Every statistic here (Pearson r, Spearman ρ,
//! Kendall τ-b, confusion counts) depends on a sample only through how often
//! each distinct cell occurs, so a resample of n items with replacement is
//! fully described by its cell counts, and those follow a multinomial
//! distribution over the cells with probabilities count/n.
//! [`bootstrap_cells`] draws the counts directly (one binomial draw per
//! cell), which costs O(K) instead of O(n) per resample for K distinct cells,
//! and evaluates the statistics on the weighted cells in O(K log K).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Binomial, Distribution};

use super::bootstrap::{BootstrapCi, check_params, interval};
use super::{StatResult, Undefined, check_finite, check_same_len, cmp_f64, finite};

/// Per-item resampling is used instead of multinomial counts when the
/// number of distinct cells times this factor exceeds the number of items:
/// one binomial draw costs about as much as this many index draws.
const MULTINOMIAL_FACTOR: usize = 8;

/// Paired values reduced to their distinct cells.
#[derive(Debug, Clone, PartialEq)]
pub struct PairedCells {
    /// Distinct x values, ascending.
    x_levels: Vec<f64>,
    /// Distinct y values, ascending.
    y_levels: Vec<f64>,
    /// Level indices of each cell; cells are ordered by x level, then y level.
    cell_x: Vec<usize>,
    cell_y: Vec<usize>,
    /// Items in each cell.
    counts: Vec<u64>,
    /// The cell of each item, in input order.
    item_cell: Vec<usize>,
}

/// Distinct values of `v` (ascending) and the level index of each value.
fn levels(v: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut sorted = v.to_vec();
    sorted.sort_unstable_by(|a, b| cmp_f64(*a, *b));
    sorted.dedup_by(|a, b| a == b);
    let index = v.iter().map(|a| sorted.partition_point(|l| l < a)).collect();
    (sorted, index)
}

impl PairedCells {
    /// Groups the pairs `(x[i], y[i])` into distinct cells.
    ///
    /// Undefined when the lengths differ or a value is not finite.
    pub fn new(x: &[f64], y: &[f64]) -> StatResult<Self> {
        check_same_len(x.len(), y.len())?;
        check_finite(x)?;
        check_finite(y)?;
        let (x_levels, xi) = levels(x);
        let (y_levels, yi) = levels(y);
        let ky = y_levels.len().max(1);
        let mut keys: Vec<usize> = xi.iter().zip(&yi).map(|(a, b)| a * ky + b).collect();
        keys.sort_unstable();
        keys.dedup();
        let (mut cell_x, mut cell_y) = (Vec::with_capacity(keys.len()), Vec::with_capacity(keys.len()));
        for key in &keys {
            cell_x.push(key / ky);
            cell_y.push(key % ky);
        }
        let mut counts = vec![0u64; keys.len()];
        let item_cell: Vec<usize> = xi
            .iter()
            .zip(&yi)
            .map(|(a, b)| {
                // Every key is present, so the search always hits.
                let c = keys.partition_point(|k| *k < a * ky + b);
                counts[c] += 1;
                c
            })
            .collect();
        Ok(Self { x_levels, y_levels, cell_x, cell_y, counts, item_cell })
    }

    /// Number of items.
    pub fn n(&self) -> usize {
        self.item_cell.len()
    }

    /// Number of distinct cells.
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// Whether there are no items.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// Distinct x values, ascending.
    pub fn x_levels(&self) -> &[f64] {
        &self.x_levels
    }

    /// Distinct y values, ascending.
    pub fn y_levels(&self) -> &[f64] {
        &self.y_levels
    }

    /// Items in each cell (cells ordered by x, then y).
    pub fn counts(&self) -> &[u64] {
        &self.counts
    }

    /// The x and y values of cell `j`.
    pub fn cell(&self, j: usize) -> (f64, f64) {
        (self.x_levels[self.cell_x[j]], self.y_levels[self.cell_y[j]])
    }

    /// The data itself as a weighted sample (every cell with its own count).
    pub fn weighted(&self) -> Weighted<'_> {
        let mut w = Weighted::new(self);
        w.counts.copy_from_slice(&self.counts);
        w.refresh();
        w
    }
}

/// A sample given as counts over the cells of a [`PairedCells`]: the data
/// itself, or one bootstrap resample of it. Holds scratch space so that
/// evaluating statistics allocates nothing.
#[derive(Debug, Clone)]
pub struct Weighted<'a> {
    cells: &'a PairedCells,
    counts: Vec<u64>,
    n: u64,
    /// Counts per x level and per y level.
    mx: Vec<u64>,
    my: Vec<u64>,
    /// Average ranks of the levels (valid where the level's count is non-zero).
    rx: Vec<f64>,
    ry: Vec<f64>,
    /// Fenwick tree over y levels for Kendall's τ-b.
    tree: Vec<u64>,
}

impl<'a> Weighted<'a> {
    /// All counts zero; fill with [`Weighted::set_counts`].
    fn new(cells: &'a PairedCells) -> Self {
        let (kx, ky) = (cells.x_levels.len(), cells.y_levels.len());
        Self {
            cells,
            counts: vec![0; cells.len()],
            n: 0,
            mx: vec![0; kx],
            my: vec![0; ky],
            rx: vec![0.0; kx],
            ry: vec![0.0; ky],
            tree: vec![0; ky + 1],
        }
    }

    /// A weighted sample with the given count for each cell.
    ///
    /// Undefined when `counts` does not have one entry per cell.
    pub fn with_counts(cells: &'a PairedCells, counts: &[u64]) -> StatResult<Self> {
        check_same_len(cells.len(), counts.len())?;
        let mut w = Self::new(cells);
        w.counts.copy_from_slice(counts);
        w.refresh();
        Ok(w)
    }

    /// Recomputes totals, marginals and ranks after the counts changed.
    fn refresh(&mut self) {
        self.mx.fill(0);
        self.my.fill(0);
        let mut n = 0;
        for ((&c, &a), &b) in self.counts.iter().zip(&self.cells.cell_x).zip(&self.cells.cell_y) {
            self.mx[a] += c;
            self.my[b] += c;
            n += c;
        }
        self.n = n;
        mid_ranks(&self.mx, &mut self.rx);
        mid_ranks(&self.my, &mut self.ry);
    }

    /// Total count (items in the sample).
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The non-empty cells as (x level index, y level index, count).
    pub fn cells(&self) -> impl Iterator<Item = (usize, usize, u64)> + '_ {
        self.counts
            .iter()
            .zip(&self.cells.cell_x)
            .zip(&self.cells.cell_y)
            .filter(|((c, _), _)| **c > 0)
            .map(|((&c, &a), &b)| (a, b, c))
    }

    /// The same checks as the plain correlations: n ≥ 2 and variation on both sides.
    fn check(&self) -> StatResult<()> {
        if self.n < 2 {
            return Err(Undefined::new("n < 2"));
        }
        let used = |m: &[u64]| m.iter().filter(|&&c| c > 0).count();
        if used(&self.mx) < 2 || used(&self.my) < 2 {
            return Err(Undefined::new("constant input"));
        }
        Ok(())
    }

    /// Weighted Pearson r of level values `xv`, `yv` (means first, then
    /// centred sums, as the plain version).
    fn pearson_of(&self, xv: &[f64], yv: &[f64]) -> StatResult<f64> {
        let nf = self.n as f64;
        let weighted_mean = |m: &[u64], v: &[f64]| {
            m.iter().zip(v).map(|(&c, &a)| if c > 0 { c as f64 * a } else { 0.0 }).sum::<f64>() / nf
        };
        let mx = weighted_mean(&self.mx, xv);
        let my = weighted_mean(&self.my, yv);
        let spread = |m: &[u64], v: &[f64], mean: f64| {
            m.iter().zip(v).map(|(&c, &a)| if c > 0 { c as f64 * (a - mean) * (a - mean) } else { 0.0 }).sum::<f64>()
        };
        let sxx = spread(&self.mx, xv, mx);
        let syy = spread(&self.my, yv, my);
        let mut sxy = 0.0;
        for (a, b, c) in self.cells() {
            sxy += c as f64 * (xv[a] - mx) * (yv[b] - my);
        }
        if !(sxx.is_finite() && syy.is_finite()) {
            return Err(Undefined::new("numeric overflow"));
        }
        Ok(finite(sxy / (sxx.sqrt() * syy.sqrt()))?.clamp(-1.0, 1.0))
    }

    /// Pearson's r of the weighted sample; equal (up to rounding) to
    /// [`pearson`](super::pearson) of the sample with each cell repeated
    /// count times, with the same undefined cases.
    pub fn pearson(&self) -> StatResult<f64> {
        self.check()?;
        self.pearson_of(&self.cells.x_levels, &self.cells.y_levels)
    }

    /// Spearman's ρ of the weighted sample (Pearson r of the average ranks,
    /// which come from the level counts).
    pub fn spearman(&self) -> StatResult<f64> {
        self.check()?;
        self.pearson_of(&self.rx, &self.ry)
    }

    /// Kendall's τ-b of the weighted sample: concordant and discordant
    /// pairs counted over the cells in x order with a Fenwick tree over the y
    /// levels, ties from the level counts. O(K log k_y).
    pub fn kendall_tau_b(&mut self) -> StatResult<f64> {
        self.check()?;
        self.tree.fill(0);
        let cells = self.cells;
        let (mut concordant, mut discordant): (u128, u128) = (0, 0);
        let mut earlier: u64 = 0;
        let k = cells.len();
        let mut start = 0;
        while start < k {
            let mut end = start + 1;
            while end < k && cells.cell_x[end] == cells.cell_x[start] {
                end += 1;
            }
            // Pairs with every item of an earlier (smaller) x level.
            for j in start..end {
                let c = self.counts[j];
                if c == 0 {
                    continue;
                }
                let b = cells.cell_y[j];
                let below = fenwick_prefix(&self.tree, b);
                let at_or_below = fenwick_prefix(&self.tree, b + 1);
                concordant += u128::from(c) * u128::from(below);
                discordant += u128::from(c) * u128::from(earlier - at_or_below);
            }
            for j in start..end {
                let c = self.counts[j];
                if c > 0 {
                    fenwick_add(&mut self.tree, cells.cell_y[j], c);
                    earlier += c;
                }
            }
            start = end;
        }
        let pairs = |m: u64| u128::from(m) * u128::from(m.saturating_sub(1)) / 2;
        let total = pairs(self.n);
        let x_ties: u128 = self.mx.iter().map(|&m| pairs(m)).sum();
        let y_ties: u128 = self.my.iter().map(|&m| pairs(m)).sum();
        let con_minus_dis = (concordant as i128 - discordant as i128) as f64;
        let tau = con_minus_dis / ((total - x_ties) as f64).sqrt() / ((total - y_ties) as f64).sqrt();
        Ok(tau.clamp(-1.0, 1.0))
    }
}

/// Average 1-based ranks of levels with the given counts (levels with count
/// 0 get no rank and keep whatever value they had).
fn mid_ranks(counts: &[u64], ranks: &mut [f64]) {
    let mut before = 0u64;
    for (r, &c) in ranks.iter_mut().zip(counts) {
        if c > 0 {
            *r = (2 * before + c + 1) as f64 / 2.0;
            before += c;
        }
    }
}

/// Sum of the first `i` entries of a Fenwick tree (1-based internally).
fn fenwick_prefix(tree: &[u64], mut i: usize) -> u64 {
    let mut s = 0;
    while i > 0 {
        s += tree[i];
        i &= i - 1;
    }
    s
}

/// Adds `c` at position `i` (0-based).
fn fenwick_add(tree: &mut [u64], i: usize, c: u64) {
    let mut i = i + 1;
    while i < tree.len() {
        tree[i] += c;
        i += i & i.wrapping_neg();
    }
}

/// How the cell counts of a resample are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resampling {
    /// One multinomial draw over the cells, as conditional binomials.
    Multinomial,
    /// n item indices drawn with replacement, counted per cell.
    PerItem,
}

impl Resampling {
    /// The cheaper method for `n` items in `k` distinct cells.
    pub fn for_size(n: usize, k: usize) -> Self {
        if k.saturating_mul(MULTINOMIAL_FACTOR) <= n { Self::Multinomial } else { Self::PerItem }
    }
}

/// Draws the cell counts of resamples.
struct Sampler<'a> {
    cells: &'a PairedCells,
    method: Resampling,
    /// Multinomial: cells by decreasing count, with the count of that cell
    /// and of all cells after it in this order.
    order: Vec<(usize, u64, u64)>,
}

impl<'a> Sampler<'a> {
    fn new(cells: &'a PairedCells, method: Resampling) -> Self {
        let mut by_count: Vec<usize> = (0..cells.len()).collect();
        by_count.sort_by(|&a, &b| cells.counts[b].cmp(&cells.counts[a]).then(a.cmp(&b)));
        let mut rest: u64 = cells.counts.iter().sum();
        let order = by_count
            .into_iter()
            .map(|j| {
                let entry = (j, cells.counts[j], rest);
                rest -= cells.counts[j];
                entry
            })
            .collect();
        Self { cells, method, order }
    }

    /// Fills `counts` (one per cell) with a resample of n items.
    fn draw(&self, rng: &mut ChaCha8Rng, counts: &mut [u64]) {
        counts.fill(0);
        let n = self.cells.n();
        match self.method {
            Resampling::PerItem => {
                for _ in 0..n {
                    counts[self.cells.item_cell[rng.random_range(0..n)]] += 1;
                }
            }
            Resampling::Multinomial => {
                // m_j ~ Binomial(items left, count_j / count of the cells left):
                // the chain of conditionals of a multinomial.
                let mut left = n as u64;
                for &(j, c, rest) in &self.order {
                    if left == 0 {
                        break;
                    }
                    let m = if c >= rest {
                        left
                    } else {
                        let p = c as f64 / rest as f64;
                        Binomial::new(left, p).map_or(0, |b| b.sample(rng))
                    };
                    counts[j] = m;
                    left -= m;
                }
            }
        }
    }
}

/// Percentile bootstrap intervals for several statistics of paired data,
/// all evaluated on the same resamples.
///
/// Each resample is n items drawn with replacement from the cells'
/// items; its cell counts come from one multinomial draw (or from n index
/// draws when there are many distinct cells, see [`Resampling::for_size`]),
/// which gives the same distribution. `statistic` receives the weighted
/// resample and writes statistic `i` into `out[i]` (`None` when undefined;
/// `out` is cleared before each call). Quantiles, skipping and seeding as in
/// [`bootstrap_ci`](super::bootstrap_ci); the same seed and data give the same intervals.
///
/// The outer result is undefined for empty input, no resamples or a level
/// outside (0, 1); the inner ones when that statistic was undefined in every
/// resample.
pub fn bootstrap_cells<F>(
    cells: &PairedCells,
    statistics: usize,
    statistic: F,
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<Vec<StatResult<BootstrapCi>>>
where
    F: FnMut(&mut Weighted<'_>, &mut [Option<f64>]),
{
    let method = Resampling::for_size(cells.n(), cells.len());
    bootstrap_cells_with(cells, method, statistics, statistic, resamples, seed, level)
}

/// [`bootstrap_cells`] with the way counts are drawn fixed.
pub fn bootstrap_cells_with<F>(
    cells: &PairedCells,
    method: Resampling,
    statistics: usize,
    mut statistic: F,
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<Vec<StatResult<BootstrapCi>>>
where
    F: FnMut(&mut Weighted<'_>, &mut [Option<f64>]),
{
    check_params(cells.n(), resamples, level)?;
    let sampler = Sampler::new(cells, method);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut w = Weighted::new(cells);
    let mut out = vec![None; statistics];
    let mut values: Vec<Vec<f64>> = (0..statistics).map(|_| Vec::with_capacity(resamples)).collect();
    for _ in 0..resamples {
        sampler.draw(&mut rng, &mut w.counts);
        w.refresh();
        out.fill(None);
        statistic(&mut w, &mut out);
        for (v, o) in values.iter_mut().zip(&out) {
            if let Some(x) = *o
                && x.is_finite()
            {
                v.push(x);
            }
        }
    }
    Ok(values.into_iter().map(|v| interval(v, resamples, level)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{CorrelationKind, bootstrap_ci};

    use crate::stats::lcg_values as lcg;

    /// Correlated discrete ratings: x on 1–5, y = mean of three noisy copies.
    fn ratings(seed: u64, n: usize) -> (Vec<f64>, Vec<f64>) {
        let x: Vec<f64> = lcg(seed, n, 5).into_iter().map(|v| v + 1.0).collect();
        let noise = [lcg(seed + 1, n, 3), lcg(seed + 2, n, 3), lcg(seed + 3, n, 3)];
        let y = (0..n).map(|i| noise.iter().map(|e| (x[i] + e[i] - 1.0).clamp(1.0, 5.0)).sum::<f64>() / 3.0).collect();
        (x, y)
    }

    fn close(a: StatResult<f64>, b: StatResult<f64>) -> bool {
        match (a, b) {
            (Ok(a), Ok(b)) => (a - b).abs() < 1e-12,
            (Err(a), Err(b)) => a == b,
            _ => false,
        }
    }

    #[test]
    fn cells_group_equal_pairs() {
        let x = [2.0, 1.0, 2.0, 1.0, 3.0];
        let y = [0.5, 0.5, 0.5, 1.5, 0.5];
        let c = PairedCells::new(&x, &y).unwrap();
        assert_eq!(c.x_levels(), &[1.0, 2.0, 3.0]);
        assert_eq!(c.y_levels(), &[0.5, 1.5]);
        assert_eq!(c.len(), 4);
        assert_eq!(c.n(), 5);
        let cells: Vec<_> = (0..c.len()).map(|j| (c.cell(j), c.counts()[j])).collect();
        assert_eq!(cells, vec![((1.0, 0.5), 1), ((1.0, 1.5), 1), ((2.0, 0.5), 2), ((3.0, 0.5), 1)]);
        assert!(PairedCells::new(&x, &y[..2]).is_err());
        assert!(PairedCells::new(&[f64::NAN], &[1.0]).is_err());
        assert!(PairedCells::new(&[], &[]).unwrap().is_empty());
    }

    /// Weighted statistics equal the plain ones on the data with each cell
    /// repeated count times.
    #[test]
    fn weighted_statistics_match_expanded_items() {
        for seed in 0..30 {
            let (x, y) = ratings(seed, 40 + seed as usize);
            let cells = PairedCells::new(&x, &y).unwrap();
            let weights: Vec<u64> = lcg(seed + 50, cells.len(), 4).into_iter().map(|v| v as u64).collect();
            let (mut ex, mut ey) = (Vec::new(), Vec::new());
            for (j, &w) in weights.iter().enumerate() {
                let (a, b) = cells.cell(j);
                for _ in 0..w {
                    ex.push(a);
                    ey.push(b);
                }
            }
            let mut w = Weighted::with_counts(&cells, &weights).unwrap();
            assert_eq!(w.n(), ex.len() as u64);
            let plain = |k: CorrelationKind| k.compute(&ex, &ey).map(|c| c.value);
            assert!(close(w.pearson(), plain(CorrelationKind::Pearson)), "seed {seed}");
            assert!(close(w.spearman(), plain(CorrelationKind::Spearman)), "seed {seed}");
            assert!(close(w.kendall_tau_b(), plain(CorrelationKind::KendallTauB)), "seed {seed}");
        }
        // The data itself.
        let (x, y) = ratings(7, 200);
        let cells = PairedCells::new(&x, &y).unwrap();
        let mut w = cells.weighted();
        assert!(close(w.pearson(), crate::stats::pearson(&x, &y).map(|c| c.value)));
        assert!(close(w.spearman(), crate::stats::spearman(&x, &y).map(|c| c.value)));
        assert!(close(w.kendall_tau_b(), crate::stats::kendall_tau_b(&x, &y).map(|c| c.value)));
    }

    #[test]
    fn weighted_undefined_cases() {
        let cells = PairedCells::new(&[1.0, 2.0, 3.0], &[1.0, 1.0, 2.0]).unwrap();
        let one = Weighted::with_counts(&cells, &[1, 0, 0]).unwrap();
        assert_eq!(one.pearson().unwrap_err().reason, "n < 2");
        let mut constant = Weighted::with_counts(&cells, &[3, 2, 0]).unwrap();
        assert_eq!(constant.spearman().unwrap_err().reason, "constant input");
        assert_eq!(constant.kendall_tau_b().unwrap_err().reason, "constant input");
        assert!(Weighted::with_counts(&cells, &[1, 2]).is_err());
    }

    #[test]
    fn multinomial_counts_sum_to_n_and_follow_the_cells() {
        let (x, y) = ratings(3, 2000);
        let cells = PairedCells::new(&x, &y).unwrap();
        assert_eq!(Resampling::for_size(cells.n(), cells.len()), Resampling::Multinomial);
        let sampler = Sampler::new(&cells, Resampling::Multinomial);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut counts = vec![0; cells.len()];
        let mut total = vec![0u64; cells.len()];
        let draws = 400;
        for _ in 0..draws {
            sampler.draw(&mut rng, &mut counts);
            assert_eq!(counts.iter().sum::<u64>(), 2000);
            for (t, c) in total.iter_mut().zip(&counts) {
                *t += c;
            }
        }
        // Mean count per cell ≈ its count in the data (within 5 standard errors).
        for (j, &c) in cells.counts().iter().enumerate() {
            let mean = total[j] as f64 / f64::from(draws);
            let p = c as f64 / 2000.0;
            let se = (2000.0 * p * (1.0 - p) / f64::from(draws)).sqrt();
            assert!((mean - c as f64).abs() <= 5.0 * se + 1e-9, "cell {j}: {mean} vs {c}");
        }
    }

    fn three_correlations(w: &mut Weighted<'_>, out: &mut [Option<f64>]) {
        out[0] = w.pearson().ok();
        out[1] = w.spearman().ok();
        out[2] = w.kendall_tau_b().ok();
    }

    #[test]
    fn intervals_are_deterministic() {
        let (x, y) = ratings(11, 500);
        let cells = PairedCells::new(&x, &y).unwrap();
        let a = bootstrap_cells(&cells, 3, three_correlations, 1000, 5, 0.95).unwrap();
        let b = bootstrap_cells(&cells, 3, three_correlations, 1000, 5, 0.95).unwrap();
        let c = bootstrap_cells(&cells, 3, three_correlations, 1000, 6, 0.95).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(bootstrap_cells(&cells, 3, three_correlations, 0, 5, 0.95).is_err());
        assert!(bootstrap_cells(&PairedCells::new(&[], &[]).unwrap(), 1, three_correlations, 10, 5, 0.95).is_err());
    }

    /// Both ways of drawing the counts, and the plain per-item bootstrap,
    /// estimate the same quantiles.
    #[test]
    fn multinomial_agrees_with_plain_bootstrap() {
        let (x, y) = ratings(21, 800);
        let cells = PairedCells::new(&x, &y).unwrap();
        let fast = bootstrap_cells_with(&cells, Resampling::Multinomial, 3, three_correlations, 4000, 9, 0.95).unwrap();
        let items = bootstrap_cells_with(&cells, Resampling::PerItem, 3, three_correlations, 4000, 9, 0.95).unwrap();
        for (i, kind) in CorrelationKind::ALL.into_iter().enumerate() {
            let plain = bootstrap_ci(&x, &y, kind.statistic(), 4000, 9, 0.95).unwrap();
            for other in [&fast[i], &items[i]] {
                let other = other.as_ref().unwrap();
                assert!(
                    (other.low - plain.low).abs() < 0.015 && (other.high - plain.high).abs() < 0.015,
                    "{}: {other:?} vs {plain:?}",
                    kind.name()
                );
                assert_eq!(other.skipped, 0);
            }
        }
    }

    #[test]
    fn undefined_in_every_resample() {
        let cells = PairedCells::new(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]).unwrap();
        let r = bootstrap_cells(&cells, 3, three_correlations, 50, 0, 0.95).unwrap();
        for ci in r {
            assert_eq!(ci.unwrap_err().reason, "statistic undefined in every resample");
        }
    }
}
