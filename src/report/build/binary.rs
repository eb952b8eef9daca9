//! Dimensions whose human values are binary (two distinct values, e.g. 0/1
//! correctness labels): the judge's scores ranked against them (ROC AUC),
//! and, where the judge's values are binary on the same two levels, MASA's
//! detection metrics. The human's higher value is the positive class.
//! Definitions: `docs/statistics.md` (*Binary truth*).

use super::bootstrap::collect;
use super::rows::Target;
use super::{MIN_PAIRS, ReportOptions, Row, Stage};
use crate::stats::{
    self, BinaryCounts, PairedCells, StatResult, Undefined, Weighted, complete_pairs, roc_auc, roc_auc_of_counts,
};

/// The detection metrics, in the order of [`BinaryJob::rows`] after `roc_auc`.
pub const DETECTION: [&str; 5] =
    ["detection_accuracy", "detection_precision", "detection_sensitivity", "detection_specificity", "detection_f1"];

/// The two distinct values of a key's human values, (negative, positive);
/// none unless there are exactly two.
pub(super) fn binary_levels(human: &[Option<f64>]) -> Option<(f64, f64)> {
    let mut levels: Vec<f64> = human.iter().flatten().copied().filter(|v| v.is_finite()).collect();
    levels.sort_by(|a, b| a.total_cmp(b));
    levels.dedup();
    match levels[..] {
        [lo, hi] => Some((lo, hi)),
        _ => None,
    }
}

/// The intervals of one target's binary rows, from one bootstrap of its
/// (human, judge) pairs (the same resamples as its correlations).
pub(super) struct BinaryJob {
    x: Vec<f64>,
    y: Vec<f64>,
    positive: f64,
    /// Rows of `roc_auc` and of the [`DETECTION`] metrics.
    rows: [Option<usize>; 6],
}

/// The detection metrics of counts, in [`DETECTION`] order.
fn detection(c: &BinaryCounts) -> [StatResult<f64>; 5] {
    [c.accuracy(), c.macro_precision(), c.macro_sensitivity(), c.specificity(), c.macro_f1()]
}

/// `roc_auc` and, where the judge's values are the human's two levels, the
/// detection rows of one target; their intervals are queued as one job.
pub(super) fn binary_rows(
    at: &Target<'_>,
    human: &[Option<f64>],
    judge: &[Option<f64>],
    (negative, positive): (f64, f64),
    rows: &mut Vec<Row>,
    jobs: &mut Vec<super::Job>,
) {
    let Ok(pairs) = complete_pairs(human, judge) else { return };
    let n = pairs.n();
    let dropped = Some(pairs.dropped);
    let few = |v: StatResult<f64>| if n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { v };
    let truth: Vec<bool> = pairs.x.iter().map(|&v| v == positive).collect();
    let mut slots = [None; 6];
    let push = |metric: &str, value: StatResult<f64>, rows: &mut Vec<Row>| -> Option<usize> {
        let value = few(value);
        let defined = value.is_ok();
        rows.push(at.row(metric).set(value).with_n(n, dropped));
        defined.then(|| rows.len() - 1)
    };
    slots[0] = push("roc_auc", roc_auc(&truth, &pairs.y), rows);
    // ROUGE-L is a ranking, never a detection, even where it is 0 or 1;
    // without pairs nothing says the judge's values are binary.
    let detects = at.stage != Stage::RougeL && n > 0 && pairs.y.iter().all(|&v| v == negative || v == positive);
    if detects {
        let said: Vec<bool> = pairs.y.iter().map(|&v| v == positive).collect();
        let values = match BinaryCounts::new(&truth, &said) {
            Ok(c) => detection(&c),
            Err(u) => std::array::from_fn(|_| Err(u.clone())),
        };
        for (i, (metric, value)) in DETECTION.iter().zip(values).enumerate() {
            slots[i + 1] = push(metric, value, rows);
        }
    }
    if slots.iter().any(Option::is_some) {
        jobs.push(super::Job::Binary(BinaryJob { x: pairs.x, y: pairs.y, positive, rows: slots }));
    }
}

impl BinaryJob {
    pub(super) fn run(&self, opts: &ReportOptions) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
        let Ok(cells) = PairedCells::new(&self.x, &self.y) else { return Vec::new() };
        let pos_x: Vec<bool> = cells.x_levels().iter().map(|&v| v == self.positive).collect();
        let pos_y: Vec<bool> = cells.y_levels().iter().map(|&v| v == self.positive).collect();
        let levels = cells.y_levels().len();
        let (mut positives, mut negatives) = (vec![0u64; levels], vec![0u64; levels]);
        let wanted = self.rows.map(|r| r.is_some());
        let statistic = |w: &mut Weighted<'_>, out: &mut [Option<f64>]| {
            positives.fill(0);
            negatives.fill(0);
            let mut c = BinaryCounts::default();
            for (a, b, count) in w.cells() {
                if pos_x[a] {
                    positives[b] += count;
                } else {
                    negatives[b] += count;
                }
                c.add(pos_x[a], pos_y[b], count);
            }
            if wanted[0] {
                out[0] = roc_auc_of_counts(&positives, &negatives).ok();
            }
            for (i, v) in detection(&c).into_iter().enumerate() {
                if wanted[i + 1] {
                    out[i + 1] = v.ok();
                }
            }
        };
        collect(&self.rows, stats::bootstrap_cells(&cells, 6, statistic, opts.bootstrap, opts.seed, opts.level))
    }
}
