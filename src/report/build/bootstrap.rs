//! Bootstrap intervals: jobs queued while rows are built, each resampling
//! its paired values once for all of its statistics, run on several threads.

use std::sync::atomic::{AtomicUsize, Ordering};

use super::{ReportOptions, Row};
use crate::stats::{self, KappaWeights, PairedCells, Preference, StatResult, Weighted, kappa_of_counts};

/// Rows whose intervals come from one bootstrap of paired values (human,
/// judge): every statistic is evaluated on the same resamples.
pub(super) struct PairedJob {
    pub(super) x: Vec<f64>,
    pub(super) y: Vec<f64>,
    /// Rows of `pearson`, `spearman`, `kendall_tau_b`.
    pub(super) correlations: [Option<usize>; 3],
    /// Integer categories `lo..=hi` (values rounded and clamped as in the
    /// point estimates) with the rows of the agreement rate (`accuracy` or
    /// `agreement_rate`), `cohen_kappa` and `cohen_kappa_quadratic`.
    pub(super) categories: Option<(i64, i64, [Option<usize>; 3])>,
}

/// A bootstrap interval job.
pub(super) enum Job {
    Paired(PairedJob),
    /// Shares of decisions coded 0 (A), 1 (B), 2 (tie), with the rows of
    /// `win_rate`, `loss_rate`, `tie_rate`.
    Shares {
        codes: Vec<f64>,
        rows: [Option<usize>; 3],
    },
    /// ROC AUC and detection metrics of binary human values.
    Binary(super::binary::BinaryJob),
    /// A paired difference of two panels' Spearman ρ.
    Difference(super::versus::DifferenceJob),
}

/// A value on an integer scale: rounded to the nearest level, clamped.
pub(super) fn to_level(v: f64, lo: i64, hi: i64) -> i64 {
    (v.round() as i64).clamp(lo, hi)
}

impl Job {
    /// Computes the job's intervals: (row, interval) for each of its rows.
    fn run(&self, opts: &ReportOptions) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
        match self {
            Job::Paired(job) => job.run(opts),
            Job::Binary(job) => job.run(opts),
            Job::Difference(job) => job.run(opts),
            Job::Shares { codes, rows } => {
                let Ok(cells) = PairedCells::new(codes, codes) else { return Vec::new() };
                let levels = cells.x_levels().to_vec();
                let share = |w: &mut Weighted<'_>, out: &mut [Option<f64>]| {
                    let n = w.n() as f64;
                    for (a, _, c) in w.cells() {
                        let code = levels[a] as usize;
                        if let Some(o) = out.get_mut(code) {
                            *o = Some(o.unwrap_or(0.0) + c as f64 / n);
                        }
                    }
                    for o in out.iter_mut() {
                        o.get_or_insert(0.0);
                    }
                };
                collect(rows, stats::bootstrap_cells(&cells, 3, share, opts.bootstrap, opts.seed, opts.level))
            }
        }
    }
}

impl PairedJob {
    fn run(&self, opts: &ReportOptions) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
        let Ok(cells) = PairedCells::new(&self.x, &self.y) else { return Vec::new() };
        let corr = self.correlations.map(|r| r.is_some());
        let categories = self.categories.map(|(lo, hi, rows)| {
            let k = (hi - lo + 1) as usize;
            let index = |v: &f64| (to_level(*v, lo, hi) - lo) as usize;
            let x_cat: Vec<usize> = cells.x_levels().iter().map(index).collect();
            let y_cat: Vec<usize> = cells.y_levels().iter().map(index).collect();
            (k, x_cat, y_cat, rows.map(|r| r.is_some()))
        });
        let mut confusion = vec![0u64; categories.as_ref().map_or(0, |c| c.0 * c.0)];
        let statistic = |w: &mut Weighted<'_>, out: &mut [Option<f64>]| {
            if corr[0] {
                out[0] = w.pearson().ok();
            }
            if corr[1] {
                out[1] = w.spearman().ok();
            }
            if corr[2] {
                out[2] = w.kendall_tau_b().ok();
            }
            if let Some((k, x_cat, y_cat, wanted)) = &categories {
                let k = *k;
                confusion.fill(0);
                for (a, b, c) in w.cells() {
                    confusion[x_cat[a] * k + y_cat[b]] += c;
                }
                if wanted[0] {
                    let agree: u64 = (0..k).map(|i| confusion[i * k + i]).sum();
                    out[3] = Some(agree as f64 / w.n() as f64);
                }
                if wanted[1] {
                    out[4] = kappa_of_counts(&confusion, k, KappaWeights::Unweighted).ok();
                }
                if wanted[2] {
                    out[5] = kappa_of_counts(&confusion, k, KappaWeights::Quadratic).ok();
                }
            }
        };
        let rows: Vec<Option<usize>> =
            self.correlations.iter().copied().chain(self.categories.map_or([None; 3], |c| c.2)).collect();
        collect(&rows, stats::bootstrap_cells(&cells, 6, statistic, opts.bootstrap, opts.seed, opts.level))
    }
}

/// Pairs each wanted row with its interval.
pub(super) fn collect(
    rows: &[Option<usize>],
    cis: StatResult<Vec<StatResult<stats::BootstrapCi>>>,
) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
    let Ok(cis) = cis else { return Vec::new() };
    rows.iter().zip(cis).filter_map(|(row, ci)| Some(((*row)?, ci))).collect()
}

/// Runs the jobs on `opts.threads` threads. Each job resamples with its own
/// generator seeded from `opts.seed`, so the intervals do not depend on the
/// number of threads or on which thread runs which job.
pub(super) fn run_bootstraps(rows: &mut [Row], jobs: Vec<Job>, opts: &ReportOptions) {
    if opts.bootstrap == 0 || jobs.is_empty() {
        return;
    }
    let threads = opts.threads.clamp(1, 64).min(jobs.len());
    // Jobs differ in cost (distinct cells, items), so threads take the next
    // job from a shared counter rather than fixed chunks.
    let next = AtomicUsize::new(0);
    let results: Vec<(usize, StatResult<stats::BootstrapCi>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        done.extend(job.run(opts));
                    }
                    done
                })
            })
            .collect();
        // A job that panicked is a bug: carry its panic on rather than
        // drop its rows' intervals silently.
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    for (row, ci) in results {
        if let Ok(ci) = ci {
            rows[row].ci_low = Some(ci.low);
            rows[row].ci_high = Some(ci.high);
        }
    }
}

/// Code of a decision in [`Job::Shares`]: 0 for A, 1 for B, 2 for a tie.
pub(super) fn preference_code(p: Preference) -> f64 {
    match p {
        Preference::A => 0.0,
        Preference::B => 1.0,
        Preference::Tie => 2.0,
    }
}
