//! MASA's agreement splits of a pairwise report (its Tables 4 and 7): the
//! decision against every rater and against at least k raters, the
//! agreement with the majority on comparisons whose judge changed its
//! verdict under the swap and on the others, and the people's own
//! unanimity and consensus of at least k. Every share has a percentile
//! bootstrap interval resampling items. Definitions: `docs/report.md`.

use std::collections::BTreeMap;

use super::{At, Ctx, Decider, MIN_PAIRS};
use crate::report::build::Row;
use crate::stats::consensus::{Share, largest_bloc, matching};
use crate::stats::position::order_changed;
use crate::stats::raters::{bootstrap_ratio, majority};
use crate::stats::{Preference, StatResult, Undefined};

impl Ctx<'_> {
    /// The most labels any comparison has.
    fn most_raters(&self) -> usize {
        self.units.iter().map(|u| u.humans.len()).max().unwrap_or(0)
    }

    /// A share over comparisons (`cases`: comparison, hit), with an interval
    /// resampling items; undefined below [`MIN_PAIRS`] comparisons.
    fn share_row(&self, at: &At<'_>, metric: &str, cases: &[(usize, bool)], dropped: Option<usize>) -> Row {
        let share = Share { hits: cases.iter().filter(|c| c.1).count(), n: cases.len() };
        let value: StatResult<f64> =
            if share.n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { share.rate() };
        let mut per_item: BTreeMap<usize, (u64, u64)> = BTreeMap::new();
        for &(u, hit) in cases {
            let e = per_item.entry(self.units[u].item).or_default();
            e.0 += u64::from(hit);
            e.1 += 1;
        }
        let items: Vec<(u64, u64)> = per_item.into_values().collect();
        let ci = (self.opts.bootstrap > 0 && value.is_ok())
            .then(|| bootstrap_ratio(&items, self.opts.bootstrap, self.opts.seed, self.opts.level));
        self.interval(ci, self.row(at, metric).set(value).with_n(share.n, dropped))
    }

    /// One decider's agreement with every rater, with at least k raters,
    /// and (for a judge) with the majority split by whether its verdict
    /// changed when the order was swapped.
    pub(super) fn masa_rows(&self, at: &At<'_>, said: &[Option<Preference>], d: Decider) -> Vec<Row> {
        let rated: Vec<usize> = (0..self.units.len()).filter(|&i| !self.units[i].humans.is_empty()).collect();
        let decided = |i: &&usize| said[**i].is_some();
        let used: Vec<usize> = rated.iter().filter(decided).copied().collect();
        let hits = |i: usize| said[i].map_or(0, |s| matching(&s, &self.labels(i)));
        let mut rows = Vec::new();
        let all: Vec<(usize, bool)> = used.iter().map(|&i| (i, hits(i) == self.units[i].humans.len())).collect();
        rows.push(self.share_row(at, "human_all_agreement", &all, Some(rated.len() - used.len())));
        for k in 1..=self.most_raters() {
            let enough = |i: &&usize| self.units[**i].humans.len() >= k;
            let cases: Vec<(usize, bool)> = used.iter().filter(enough).map(|&i| (i, hits(i) >= k)).collect();
            let without = rated.iter().filter(enough).count() - cases.len();
            rows.push(self.share_row(at, &format!("human_agreement_at_least_{k}"), &cases, Some(without)));
        }
        if let Decider::Judge(j) = d {
            let (mut biased, mut consistent) = (Vec::new(), Vec::new());
            for &i in &used {
                let Some((first, second)) = self.units[i].judges[j].and_then(|c| c.orders) else { continue };
                let truth = majority(&self.labels(i)).unwrap_or(Preference::Tie);
                let case = (i, said[i] == Some(truth));
                if order_changed(first, second) { biased.push(case) } else { consistent.push(case) }
            }
            let one_order = Some(used.len() - biased.len() - consistent.len());
            rows.push(self.share_row(at, "human_majority_agreement_position_biased", &biased, one_order));
            rows.push(self.share_row(at, "human_majority_agreement_position_consistent", &consistent, one_order));
        }
        rows
    }

    /// The people among themselves: the share of comparisons on which all
    /// their raters agree, and on which at least k raters give one label.
    pub(super) fn consensus_rows(&self) -> Vec<Row> {
        let at = At { agent: None, group: None, stage: None };
        let labelled: Vec<(usize, Vec<Preference>)> =
            (0..self.units.len()).map(|i| (i, self.labels(i))).filter(|(_, l)| !l.is_empty()).collect();
        let single = Some(labelled.iter().filter(|(_, l)| l.len() < 2).count());
        let unanimous: Vec<(usize, bool)> =
            labelled.iter().filter(|(_, l)| l.len() >= 2).map(|(i, l)| (*i, largest_bloc(l) == l.len())).collect();
        let mut rows = vec![self.share_row(&at, "human_unanimous_share", &unanimous, single)];
        for k in 2..=self.most_raters() {
            let cases: Vec<(usize, bool)> =
                labelled.iter().filter(|(_, l)| l.len() >= k).map(|(i, l)| (*i, largest_bloc(l) >= k)).collect();
            let fewer = Some(labelled.len() - cases.len());
            rows.push(self.share_row(&at, &format!("human_consensus_at_least_{k}"), &cases, fewer));
        }
        rows
    }
}
