//! Several human raters on a score dimension (the items' `human_raters`):
//! agreement among the raters, and of the panel's result with their mean,
//! their majority and, leaving each rater out in turn, the others' mean.
//! Definitions: `docs/statistics.md`.

use super::panel::PanelReport;
use super::{MIN_PAIRS, Row, Stage};
use crate::stats::score_raters::{item_means, item_pluralities, leave_one_rater_out_scores, pair_kappa_quadratic};
use crate::stats::{AlphaLevel, CorrelationKind, StatResult, Undefined, complete_pairs, krippendorff_alpha};

/// The correlations the section reports.
const KINDS: [CorrelationKind; 2] = [CorrelationKind::Pearson, CorrelationKind::Spearman];

impl PanelReport {
    /// The rater names of the panel's items, sorted.
    pub(super) fn rater_names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.records.iter().flat_map(|r| r.human_raters.iter().map(|(n, _)| n.clone())).collect();
        names.sort();
        names.dedup();
        names
    }

    /// Rows of the "Human raters" section, for every key on which some item
    /// has two or more raters.
    pub(super) fn rater_rows(&self, rows: &mut Vec<Row>) {
        let names = self.rater_names();
        if names.len() < 2 {
            return;
        }
        let levels: Option<Vec<i64>> = self.info.integer_scale().map(|(lo, hi)| (lo..=hi).collect());
        for (k, key) in self.info.keys.iter().enumerate() {
            // Items × raters; a rater who did not rate an item has no value there.
            let ratings: Vec<Vec<Option<f64>>> = self
                .records
                .iter()
                .map(|r| {
                    names.iter().map(|n| r.human_raters.iter().find(|(m, _)| m == n).and_then(|(_, v)| v[k])).collect()
                })
                .collect();
            if !ratings.iter().any(|row| row.iter().flatten().count() >= 2) {
                continue;
            }
            let judge: Vec<Option<f64>> =
                self.records.iter().map(|r| self.stage_value(r, None, Stage::Aggregate, k)).collect();
            let at = |stage: Option<Stage>, metric: &str, raters: Option<Vec<String>>| {
                let mut row = Row::new(&self.summary.name, Some(key), None, stage, metric);
                row.raters = raters;
                row
            };

            for level in [AlphaLevel::Interval, AlphaLevel::Ordinal] {
                let mut row = at(None, &format!("raters_{}", level.name()), None);
                match krippendorff_alpha(&ratings, level) {
                    Ok(a) => {
                        row.value = Some(a.alpha);
                        row = row.with_n(a.pairable_units, Some(ratings.len() - a.pairable_units));
                    }
                    Err(u) => {
                        row.undefined_reason = Some(u.reason);
                        row.n = Some(0);
                    }
                }
                rows.push(row);
            }

            let column = |r: usize| -> Vec<Option<f64>> { ratings.iter().map(|row| row[r]).collect() };
            let mut kappas = Vec::new();
            for a in 0..names.len() {
                for b in a + 1..names.len() {
                    let pair = vec![names[a].clone(), names[b].clone()];
                    let row = at(None, "raters_cohen_kappa_quadratic", Some(pair));
                    let row = match pair_kappa_quadratic(&column(a), &column(b), levels.as_deref(), MIN_PAIRS) {
                        Ok(k) => {
                            if let Ok(v) = k.kappa {
                                kappas.push(v);
                            }
                            row.set(k.kappa).with_n(k.n, None)
                        }
                        Err(u) => row.set(Err(u)),
                    };
                    rows.push(row);
                }
            }
            let mean_kappa = if kappas.is_empty() {
                Err(Undefined::new("no pair of raters has a κ"))
            } else {
                Ok(kappas.iter().sum::<f64>() / kappas.len() as f64)
            };
            rows.push(at(None, "raters_cohen_kappa_quadratic_mean", None).set(mean_kappa).with_n(kappas.len(), None));

            for (name, truth) in
                [("raters_mean", item_means(&ratings)), ("raters_majority", item_pluralities(&ratings))]
            {
                for kind in KINDS {
                    let row = at(Some(Stage::Aggregate), &format!("{name}_{}", kind.name()), None);
                    rows.push(match complete_pairs(&truth, &judge) {
                        Ok(p) => {
                            let value = enough(p.n()).and_then(|()| kind.compute(&p.x, &p.y)).map(|c| c.value);
                            row.set(value).with_n(p.n(), Some(p.dropped))
                        }
                        Err(u) => row.set(Err(u)),
                    });
                }
            }

            for kind in KINDS {
                let loo = match leave_one_rater_out_scores(&ratings, &judge, kind, MIN_PAIRS) {
                    Ok(l) => l,
                    Err(u) => {
                        rows.push(at(None, &format!("raters_loo_rater_{}", kind.name()), None).set(Err(u)));
                        continue;
                    }
                };
                for (name, h) in names.iter().zip(&loo.held_out) {
                    let who = Some(vec![name.clone()]);
                    rows.push(
                        at(None, &format!("raters_loo_rater_{}", kind.name()), who.clone())
                            .set(h.rater.clone())
                            .with_n(h.n, None),
                    );
                    rows.push(
                        at(Some(Stage::Aggregate), &format!("raters_loo_judge_{}", kind.name()), who)
                            .set(h.judge.clone())
                            .with_n(h.n, None),
                    );
                }
                let n = loo.averaged();
                rows.push(
                    at(None, &format!("raters_loo_rater_{}", kind.name()), None).set(loo.rater_mean()).with_n(n, None),
                );
                rows.push(
                    at(Some(Stage::Aggregate), &format!("raters_loo_judge_{}", kind.name()), None)
                        .set(loo.judge_mean())
                        .with_n(n, None),
                );
            }
        }
    }
}

fn enough(n: usize) -> StatResult<()> {
    if n < MIN_PAIRS { Err(Undefined::new(format!("n < {MIN_PAIRS}"))) } else { Ok(()) }
}
