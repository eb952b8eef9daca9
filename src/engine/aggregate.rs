//! Numeric aggregation: means of evaluations, per group and panel-wide, with
//! human overrides applied on top (the original values stay in the record).

use super::runtime::{AggregateRecord, Run, State, eval_scores};
use crate::session::event::{Evaluation, EventKind, Scores};

/// Mean per key over the evaluations that have it.
pub fn mean_scores<'a>(evaluations: impl IntoIterator<Item = &'a Evaluation>, keys: &[String]) -> Scores {
    mean_of(evaluations.into_iter().map(eval_scores), keys)
}

/// Mean per key over score maps that have it.
pub fn mean_of(maps: impl IntoIterator<Item = Scores>, keys: &[String]) -> Scores {
    let mut sums: Scores = Scores::new();
    let mut counts: std::collections::BTreeMap<&str, u32> = Default::default();
    for m in maps {
        for k in keys {
            if let Some(v) = m.get(k) {
                *sums.entry(k.clone()).or_default() += v;
                *counts.entry(k.as_str()).or_default() += 1;
            }
        }
    }
    for (k, v) in sums.iter_mut() {
        *v /= f64::from(counts[k.as_str()]);
    }
    sums
}

impl Run {
    /// The computed result for a group (or panel-wide for `None`), before overrides.
    pub(crate) fn base_result(&self, st: &State, group: Option<&str>) -> Scores {
        match group {
            Some(g) => match st.judged.get(g) {
                Some(ev) => eval_scores(ev),
                None => {
                    mean_scores(st.agents.iter().filter(|a| a.group == g).filter_map(|a| a.latest.as_ref()), &self.keys)
                }
            },
            None => mean_of(
                self.panel.groups.iter().map(|g| self.result_scores(st, Some(&g.name))).filter(|s| !s.is_empty()),
                &self.keys,
            ),
        }
    }

    /// The result with human overrides of that result applied.
    pub(crate) fn result_scores(&self, st: &State, group: Option<&str>) -> Scores {
        let mut scores = self.base_result(st, group);
        for o in st.final_overrides.iter().filter(|o| o.group.as_deref() == group) {
            scores.insert(o.dimension.clone(), o.value);
        }
        scores
    }

    /// Compute, store and emit the aggregate of a group or of the panel.
    pub(crate) fn emit_aggregate(&self, group: Option<&str>, feedback: String, method: &str) {
        let kind = {
            let mut st = self.state();
            st.aggregates.insert(
                group.map(str::to_string),
                AggregateRecord { feedback: feedback.clone(), method: method.to_string() },
            );
            self.aggregate_event(&st, group, feedback, method)
        };
        self.emit(kind);
    }

    fn aggregate_event(&self, st: &State, group: Option<&str>, feedback: String, method: &str) -> EventKind {
        let base = self.base_result(st, group);
        let mut scores = self.result_scores(st, group);
        let original: Scores = base
            .iter()
            .filter(|(k, v)| scores.get(*k).is_some_and(|s| s != *v))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        let overall = scores.remove("overall");
        EventKind::AggregationCompleted {
            group: group.map(str::to_string),
            feedback,
            scores,
            overall,
            original,
            method: Some(method.to_string()),
        }
    }

    /// After a human changed a score, emit every aggregate already published again.
    pub(crate) fn reemit_aggregates(&self) {
        let events: Vec<EventKind> = {
            let st = self.state();
            let mut targets: Vec<(Option<String>, AggregateRecord)> =
                st.aggregates.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            // Groups first, then the panel-wide result that depends on them.
            targets.sort_by_key(|(g, _)| g.is_none());
            targets
                .into_iter()
                .map(|(g, rec)| self.aggregate_event(&st, g.as_deref(), rec.feedback, "override"))
                .collect()
        };
        for e in events {
            self.emit(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_skip_missing_keys() {
        let keys = vec!["a".to_string(), "overall".to_string()];
        let m = mean_of(
            vec![Scores::from([("a".into(), 2.0), ("overall".into(), 3.0)]), Scores::from([("a".into(), 4.0)])],
            &keys,
        );
        assert_eq!(m["a"], 3.0);
        assert_eq!(m["overall"], 3.0);
    }
}
