//! Several human raters on pairwise decisions: the majority label, Cohen's
//! κ between raters (averaged over rater pairs: Light's κ), leave-one-rater-
//! out agreement, and a bootstrap of win, loss and tie rates that resamples
//! items.
//!
//! A unit is one comparison; each rater gives it at most one label. Raters
//! are identified by an index (the same index is the same person on every
//! unit).

use super::bootstrap::BootstrapCi;
use super::cells::{PairedCells, bootstrap_cells};
use super::pairwise::Preference;
use super::{StatResult, Undefined, cohen_kappa};

/// The label of more than half of the votes, else a tie; none without votes.
pub fn majority(votes: &[Preference]) -> Option<Preference> {
    if votes.is_empty() {
        return None;
    }
    for side in [Preference::A, Preference::B, Preference::Tie] {
        if votes.iter().filter(|&&v| v == side).count() * 2 > votes.len() {
            return Some(side);
        }
    }
    Some(Preference::Tie)
}

/// Cohen's κ between human raters, averaged over the pairs of raters
/// (Light's κ).
#[derive(Debug, Clone, PartialEq)]
pub struct RaterKappa {
    /// Mean of the pairs' κ.
    pub mean: f64,
    /// Rater pairs whose κ entered the mean.
    pub pairs: usize,
    /// Units rated by both raters of a pair, summed over those pairs.
    pub shared_units: usize,
}

/// Cohen's κ of every pair of raters over the units both rated (pairs with
/// fewer than `min_shared` such units, or whose κ is undefined, are left
/// out), averaged. `units[u]` lists the (rater, label) of unit u.
///
/// Undefined when no pair of raters has a κ.
pub fn rater_kappa(units: &[Vec<(usize, Preference)>], min_shared: usize) -> StatResult<RaterKappa> {
    let raters = units.iter().flatten().map(|(r, _)| r + 1).max().unwrap_or(0);
    let (mut sum, mut pairs, mut shared_units) = (0.0, 0, 0);
    let mut reason = "fewer than two raters".to_string();
    for a in 0..raters {
        for b in a + 1..raters {
            let (la, lb): (Vec<Preference>, Vec<Preference>) = units
                .iter()
                .filter_map(|u| {
                    let get = |r: usize| u.iter().find(|(x, _)| *x == r).map(|(_, l)| *l);
                    Some((get(a)?, get(b)?))
                })
                .unzip();
            if la.len() < min_shared {
                reason = format!("no two raters share {min_shared} comparisons");
                continue;
            }
            match cohen_kappa(&la, &lb) {
                Ok(k) => {
                    sum += k;
                    pairs += 1;
                    shared_units += la.len();
                }
                Err(u) => reason = u.reason,
            }
        }
    }
    if pairs == 0 {
        return Err(Undefined::new(reason));
    }
    Ok(RaterKappa { mean: sum / pairs as f64, pairs, shared_units })
}

/// Leave-one-rater-out agreement: on each unit, each rater is held out in
/// turn and scored against the majority of the unit's other raters; the
/// judge is scored against the same majority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LeaveOneOut {
    /// (unit, held-out rater) cases: units with a judge label and at least
    /// two raters, one case per rater.
    pub cases: usize,
    /// Cases where the held-out rater equals the others' majority.
    pub rater_hits: usize,
    /// Cases where the judge equals the others' majority.
    pub judge_hits: usize,
}

impl LeaveOneOut {
    /// Share of cases where the held-out rater agrees with the others.
    pub fn rater_rate(&self) -> StatResult<f64> {
        self.share(self.rater_hits)
    }
    /// Share of cases where the judge agrees with the others.
    pub fn judge_rate(&self) -> StatResult<f64> {
        self.share(self.judge_hits)
    }
    fn share(&self, k: usize) -> StatResult<f64> {
        if self.cases == 0 {
            return Err(Undefined::new("no comparison has a judge decision and two raters"));
        }
        Ok(k as f64 / self.cases as f64)
    }
}

/// Leave-one-rater-out counts. `judge[u]` is the judge's label of unit u
/// (units without one are left out), `units[u]` its raters' labels.
pub fn leave_one_rater_out(judge: &[Option<Preference>], units: &[Vec<Preference>]) -> StatResult<LeaveOneOut> {
    super::check_same_len(judge.len(), units.len())?;
    let mut out = LeaveOneOut::default();
    let mut others = Vec::new();
    for (j, labels) in judge.iter().zip(units) {
        let Some(j) = j else { continue };
        if labels.len() < 2 {
            continue;
        }
        for held in 0..labels.len() {
            others.clear();
            others.extend(labels.iter().enumerate().filter(|(i, _)| *i != held).map(|(_, l)| *l));
            let Some(m) = majority(&others) else { continue };
            out.cases += 1;
            out.rater_hits += usize::from(labels[held] == m);
            out.judge_hits += usize::from(*j == m);
        }
    }
    Ok(out)
}

/// Percentile bootstrap intervals of a system's win, loss and tie rates
/// (each over all its decided comparisons) and of its win rate excluding
/// ties, resampling items: `items[i]` is the (wins, losses, ties) of item i.
/// Each rate is a ratio of sums over the resampled items. The four
/// intervals come from the same resamples, drawn as in
/// [`bootstrap_cells`](super::bootstrap_cells).
///
/// Undefined when there are no items (or the parameters are invalid); one
/// interval is undefined when its rate is undefined in every resample.
pub fn bootstrap_win_rates(
    items: &[[u64; 3]],
    resamples: usize,
    seed: u64,
    level: f64,
) -> StatResult<Vec<StatResult<BootstrapCi>>> {
    // One code per distinct (wins, losses, ties); the cells hold the codes.
    let mut kinds: Vec<[u64; 3]> = items.to_vec();
    kinds.sort_unstable();
    kinds.dedup();
    let codes: Vec<f64> = items.iter().map(|c| kinds.partition_point(|k| k < c) as f64).collect();
    let cells = PairedCells::new(&codes, &codes)?;
    let of_level: Vec<[u64; 3]> = cells.x_levels().iter().map(|&c| kinds[c as usize]).collect();
    let statistic = |w: &mut super::Weighted<'_>, out: &mut [Option<f64>]| {
        let mut sum = [0u64; 3];
        for (a, _, c) in w.cells() {
            for (s, v) in sum.iter_mut().zip(of_level[a]) {
                *s += v * c;
            }
        }
        let all = sum[0] + sum[1] + sum[2];
        if all > 0 {
            for (o, s) in out.iter_mut().zip(sum) {
                *o = Some(s as f64 / all as f64);
            }
        }
        if sum[0] + sum[1] > 0 {
            out[3] = Some(sum[0] as f64 / (sum[0] + sum[1]) as f64);
        }
    };
    bootstrap_cells(&cells, 4, statistic, resamples, seed, level)
}

/// A percentile bootstrap interval of a ratio of sums, resampling items:
/// `items[i]` is the (hits, cases) of item i; the statistic is Σ hits / Σ
/// cases over the resampled items (for example agreement over comparisons,
/// resampling items).
pub fn bootstrap_ratio(items: &[(u64, u64)], resamples: usize, seed: u64, level: f64) -> StatResult<BootstrapCi> {
    let as_wlt: Vec<[u64; 3]> = items.iter().map(|&(h, n)| [h, n.saturating_sub(h), 0]).collect();
    bootstrap_win_rates(&as_wlt, resamples, seed, level)?.swap_remove(0)
}

/// The normal quantile of a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

/// Wilson score 95% interval of a proportion of `k` successes in `n`
/// independent trials (no continuity correction; `scipy.stats.binomtest(k,
/// n).proportion_ci(method="wilson")`). Cheap enough to recompute on every
/// progress line. Undefined when `n` is 0.
pub fn wilson_95(k: u64, n: u64) -> StatResult<(f64, f64)> {
    if n == 0 {
        return Err(Undefined::new("no trials"));
    }
    let (k, n) = (k.min(n) as f64, n as f64);
    let p = k / n;
    let z2 = Z95 * Z95;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    Ok(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::Preference::{A, B, Tie};
    use super::*;

    #[test]
    fn wilson_interval_of_a_known_case() {
        // 7 of 10: (0.3968, 0.8922) by the closed form.
        let (lo, hi) = wilson_95(7, 10).unwrap();
        assert!((lo - 0.396_75).abs() < 1e-4 && (hi - 0.892_19).abs() < 1e-4, "{lo} {hi}");
        assert_eq!(wilson_95(0, 5).unwrap().0, 0.0);
        assert!(wilson_95(0, 0).is_err());
    }

    #[test]
    fn majority_needs_more_than_half() {
        assert_eq!(majority(&[A, A, B]), Some(A));
        assert_eq!(majority(&[A, B]), Some(Tie));
        assert_eq!(majority(&[B, B, Tie, Tie]), Some(Tie));
        assert_eq!(majority(&[]), None);
    }

    #[test]
    fn leave_one_out_scores_the_held_out_rater_and_the_judge() {
        // Unit 1: raters A, A, B; judge A. Held out A → others A,B → tie (miss), judge miss;
        // held out A → same; held out B → others A,A → A: rater miss, judge hit.
        let loo = leave_one_rater_out(&[Some(A), None, Some(B)], &[vec![A, A, B], vec![A, A], vec![B]]).unwrap();
        assert_eq!(loo, LeaveOneOut { cases: 3, rater_hits: 0, judge_hits: 1 });
        assert!(leave_one_rater_out(&[Some(A)], &[vec![A]]).unwrap().rater_rate().is_err());
    }

    #[test]
    fn rater_kappa_averages_pairs() {
        let units: Vec<Vec<(usize, Preference)>> =
            vec![vec![(0, A), (1, A)], vec![(0, B), (1, B)], vec![(0, Tie), (1, B)], vec![(0, A), (1, A)]];
        let k = rater_kappa(&units, 3).unwrap();
        assert_eq!(k.pairs, 1);
        let direct = cohen_kappa(&[A, B, Tie, A], &[A, B, B, A]).unwrap();
        assert!((k.mean - direct).abs() < 1e-12);
        assert!(rater_kappa(&[vec![(0, A)]], 3).is_err());
    }

    #[test]
    fn win_rate_intervals_cover_the_estimate() {
        let items: Vec<[u64; 3]> = (0..40).map(|i| [u64::from(i % 3 == 0), u64::from(i % 3 == 1), 1]).collect();
        let cis = bootstrap_win_rates(&items, 2000, 1, 0.95).unwrap();
        let (w, all) = (14.0, 14.0 + 13.0 + 40.0);
        let win = cis[0].as_ref().unwrap();
        assert!(win.low < w / all && w / all < win.high, "{win:?}");
        let excl = cis[3].as_ref().unwrap();
        assert!(excl.low < 14.0 / 27.0 && 14.0 / 27.0 < excl.high);
        assert!(bootstrap_win_rates(&[], 10, 1, 0.95).is_err());
        let all_ties = bootstrap_win_rates(&[[0, 0, 1]; 5], 10, 1, 0.95).unwrap();
        assert!(all_ties[3].is_err());
    }
}
