//! Two panels on the same items (e.g. the same judge with two prompts, or
//! two models): the difference of their agreement with the people, with a
//! paired bootstrap interval (items resampled jointly: the same draw for
//! both panels). Score panels: Spearman's ρ of each panel's `aggregate`
//! with the human values, per dimension; pairwise panels: agreement of the
//! panel's decision with the raters' majority. Rows `agreement_difference`,
//! the row's panel minus `versus`. Definitions: `docs/report.md`.

use std::collections::{BTreeMap, HashMap};

use super::bootstrap::Job;
use super::panel::PanelReport;
use super::{MIN_PAIRS, ReportOptions, Row, Stage};
use crate::report::pairwise::{DIMENSION, Judged};
use crate::stats::paired::{
    PairedHits, bootstrap_ratio_difference, bootstrap_spearman_difference, correlation_difference, ratio_difference,
};
use crate::stats::{self, CorrelationKind, Preference, StatResult, Undefined};

/// The metric of every row here.
pub const METRIC: &str = "agreement_difference";

/// What a panel's difference rows need of it.
pub(super) struct Digest {
    name: String,
    of: Kind,
}

enum Kind {
    Scores { keys: Vec<String>, items: Items },
    Pairs(Pairs),
}

/// Per item id: the human values and the panel-wide aggregate, by key.
type Items = HashMap<String, (Vec<Option<f64>>, Vec<Option<f64>>)>;

/// Per (item, pair in a fixed order): the panel's decision and the
/// people's majority, in that order.
type Pairs = HashMap<(String, String, String), (Option<Preference>, Option<Preference>)>;

impl Digest {
    pub(super) fn of_scores(panel: &PanelReport) -> Self {
        let keys = panel.info.keys.clone();
        let items = panel
            .records
            .iter()
            .zip(&panel.truth)
            .map(|(r, t)| {
                let aggregate = (0..keys.len()).map(|k| panel.stage_value(r, None, Stage::Aggregate, k)).collect();
                (r.item_id.clone(), (t.vals.clone(), aggregate))
            })
            .collect();
        Digest { name: panel.summary.name.clone(), of: Kind::Scores { keys, items } }
    }

    pub(super) fn of_pairs(name: &str, judged: Vec<Judged>) -> Self {
        let flip = |p: Option<Preference>| {
            p.map(|p| match p {
                Preference::A => Preference::B,
                Preference::B => Preference::A,
                Preference::Tie => Preference::Tie,
            })
        };
        let pairs = judged
            .into_iter()
            .map(|j| {
                if j.first <= j.second {
                    ((j.item, j.first, j.second), (j.decision, j.truth))
                } else {
                    ((j.item, j.second, j.first), (flip(j.decision), flip(j.truth)))
                }
            })
            .collect();
        Digest { name: name.to_string(), of: Kind::Pairs(pairs) }
    }
}

/// Rows comparing every two panels of the same kind that share items (each
/// pair once, the earlier panel minus the later); score intervals are
/// queued as jobs.
pub(super) fn versus_rows(digests: &[Digest], opts: &ReportOptions, rows: &mut Vec<Row>, jobs: &mut Vec<Job>) {
    for (i, a) in digests.iter().enumerate() {
        for b in &digests[i + 1..] {
            match (&a.of, &b.of) {
                (Kind::Scores { keys, items }, Kind::Scores { keys: keys_b, items: items_b }) => {
                    score_rows(a, b, (keys, items), (keys_b, items_b), rows, jobs)
                }
                (Kind::Pairs(pa), Kind::Pairs(pb)) => pair_row(a, b, pa, pb, opts, rows),
                _ => {}
            }
        }
    }
}

fn row(a: &Digest, b: &Digest, dimension: &str) -> Row {
    let mut r = Row::new(&a.name, Some(dimension), None, Some(Stage::Aggregate), METRIC);
    r.versus = Some(b.name.clone());
    r
}

fn enough(n: usize) -> StatResult<()> {
    if n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { Ok(()) }
}

/// Spearman's ρ of A's aggregate with the humans minus B's, per key both
/// have, on the items both judged (the human values as A's report has them).
fn score_rows(
    a: &Digest,
    b: &Digest,
    (keys_a, items_a): (&[String], &Items),
    (keys_b, items_b): (&[String], &Items),
    rows: &mut Vec<Row>,
    jobs: &mut Vec<Job>,
) {
    let mut common: Vec<&String> = items_a.keys().filter(|id| items_b.contains_key(*id)).collect();
    if common.is_empty() {
        return;
    }
    common.sort();
    for (k, key) in keys_a.iter().enumerate() {
        let Some(kb) = keys_b.iter().position(|x| x == key) else { continue };
        let (mut h, mut x, mut y) = (Vec::new(), Vec::new(), Vec::new());
        for id in &common {
            let (human, agg_a) = &items_a[*id];
            let agg_b = &items_b[*id].1;
            if let (Some(t), Some(va), Some(vb)) = (human[k], agg_a[k], agg_b[kb]) {
                h.push(t);
                x.push(va);
                y.push(vb);
            }
        }
        if h.is_empty() && common.iter().all(|id| items_a[*id].0[k].is_none()) {
            continue; // nobody rated this key
        }
        let kind = CorrelationKind::Spearman;
        let value = enough(h.len()).and_then(|()| correlation_difference(kind, &h, &x, &y));
        let defined = value.is_ok();
        rows.push(row(a, b, key).set(value).with_n(h.len(), Some(common.len() - h.len())));
        if defined {
            jobs.push(Job::Difference(DifferenceJob { truth: h, a: x, b: y, row: rows.len() - 1 }));
        }
    }
}

/// The panels' agreement with the raters' majority, A minus B, on the
/// comparisons both decided that have labels (the majority as A has it).
fn pair_row(a: &Digest, b: &Digest, pa: &Pairs, pb: &Pairs, opts: &ReportOptions, rows: &mut Vec<Row>) {
    let common: Vec<_> = pa.keys().filter(|k| pb.contains_key(*k)).collect();
    if common.is_empty() {
        return;
    }
    let mut per_item: BTreeMap<&str, PairedHits> = BTreeMap::new();
    let mut labelled = 0;
    for key in &common {
        let (da, truth) = pa[*key];
        let db = pb[*key].0;
        let Some(truth) = truth else { continue };
        labelled += 1;
        let (Some(da), Some(db)) = (da, db) else { continue };
        let e = per_item.entry(key.0.as_str()).or_insert(PairedHits { hits_a: 0, hits_b: 0, cases: 0 });
        e.hits_a += u64::from(da == truth);
        e.hits_b += u64::from(db == truth);
        e.cases += 1;
    }
    if labelled == 0 {
        return;
    }
    let items: Vec<PairedHits> = per_item.into_values().collect();
    let n = items.iter().map(|i| i.cases as usize).sum::<usize>();
    let value = enough(n).and_then(|()| ratio_difference(&items));
    let mut r = row(a, b, DIMENSION).set(value.clone()).with_n(n, Some(labelled - n));
    if value.is_ok()
        && opts.bootstrap > 0
        && let Ok(ci) = bootstrap_ratio_difference(&items, opts.bootstrap, opts.seed, opts.level)
    {
        r.ci_low = Some(ci.low);
        r.ci_high = Some(ci.high);
    }
    rows.push(r);
}

/// The paired interval of a Spearman difference.
pub(super) struct DifferenceJob {
    truth: Vec<f64>,
    a: Vec<f64>,
    b: Vec<f64>,
    row: usize,
}

impl DifferenceJob {
    pub(super) fn run(&self, opts: &ReportOptions) -> Vec<(usize, StatResult<stats::BootstrapCi>)> {
        let ci = bootstrap_spearman_difference(&self.truth, &self.a, &self.b, opts.bootstrap, opts.seed, opts.level);
        vec![(self.row, ci)]
    }
}
