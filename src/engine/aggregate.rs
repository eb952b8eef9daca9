//! Numeric aggregation: means of evaluations, per group and panel-wide, with
//! human overrides applied on top (the original values stay in the record).

use std::collections::BTreeMap;

use super::runtime::{AggregateRecord, Run, State, eval_scores};
use crate::engine::vote::{GroupRule, majority_scores};
use crate::session::event::{Evaluation, EventKind, Scores};

/// Mean per key over the evaluations that have it.
pub fn mean_scores<'a>(evaluations: impl IntoIterator<Item = &'a Evaluation>, keys: &[String]) -> Scores {
    mean_of(evaluations.into_iter().map(eval_scores), keys)
}

/// Per categorical dimension, the label given most often; none on a tie.
pub fn majority_labels<'a>(labels: impl IntoIterator<Item = &'a BTreeMap<String, String>>) -> BTreeMap<String, String> {
    weighted_labels(labels.into_iter().map(|l| (l, 1.0)))
}

/// Per categorical dimension, the label with the most weight; none on a tie.
pub fn weighted_labels<'a>(
    labels: impl IntoIterator<Item = (&'a BTreeMap<String, String>, f64)>,
) -> BTreeMap<String, String> {
    let mut weights: BTreeMap<&str, BTreeMap<&str, f64>> = BTreeMap::new();
    for (map, w) in labels {
        for (k, l) in map {
            *weights.entry(k).or_default().entry(l).or_default() += w;
        }
    }
    weights
        .into_iter()
        .filter_map(|(k, by_label)| {
            let top = by_label.values().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut winners = by_label.into_iter().filter(|(_, w)| (*w - top).abs() < 1e-9);
            let (label, _) = winners.next()?;
            winners.next().is_none().then(|| (k.to_string(), label.to_string()))
        })
        .collect()
}

/// The weight of an evaluation in a confidence-weighted result: its
/// confidence (0–1); one that gives none weighs 0.5.
pub fn confidence_weight(ev: &Evaluation) -> f64 {
    ev.confidence.map_or(0.5, |c| c.clamp(0.0, 1.0))
}

/// Per key, Σ wᵢ·sᵢ / Σ wᵢ over the evaluations that have it (wᵢ their
/// confidence); the plain mean where every weight is zero.
pub fn confidence_weighted_scores<'a>(
    evaluations: impl IntoIterator<Item = &'a Evaluation>,
    keys: &[String],
) -> Scores {
    let evs: Vec<&Evaluation> = evaluations.into_iter().collect();
    let mut out = Scores::new();
    for k in keys {
        let pairs: Vec<(f64, f64)> = evs.iter().filter_map(|e| e.score(k).map(|s| (confidence_weight(e), s))).collect();
        if pairs.is_empty() {
            continue;
        }
        let total: f64 = pairs.iter().map(|(w, _)| w).sum();
        let v = if total > 0.0 {
            pairs.iter().map(|(w, s)| w * s).sum::<f64>() / total
        } else {
            pairs.iter().map(|(_, s)| s).sum::<f64>() / pairs.len() as f64
        };
        out.insert(k.clone(), v);
    }
    out
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
    /// The result of a group (or panel-wide for `None`) as the protocol
    /// computed it, before any human input: agents' own evaluations, no
    /// overrides of results.
    pub(crate) fn base_result(&self, st: &State, group: Option<&str>) -> Scores {
        self.computed(st, group, false)
    }

    /// The result with every human override applied: agents' scores a person
    /// changed, and overrides of the results themselves.
    pub(crate) fn result_scores(&self, st: &State, group: Option<&str>) -> Scores {
        let mut scores = self.computed(st, group, true);
        for o in st.final_overrides.iter().filter(|o| o.group.as_deref() == group) {
            scores.insert(o.dimension.clone(), o.value);
        }
        scores
    }

    fn computed(&self, st: &State, group: Option<&str>, human: bool) -> Scores {
        match group {
            Some(g) => match st.judged.get(g) {
                Some(ev) => eval_scores(ev),
                None => {
                    let evs = st
                        .agents
                        .iter()
                        .filter(|a| a.group == g)
                        .filter_map(|a| if human { a.progress.latest.as_ref() } else { a.own.as_ref() });
                    match self.rule {
                        GroupRule::ConfidenceWeighted => confidence_weighted_scores(evs, &self.keys),
                        GroupRule::Majority => majority_scores(evs, &self.keys),
                        GroupRule::Mean => mean_scores(evs, &self.keys),
                    }
                }
            },
            // Groups without a result are left out of the panel-wide mean.
            None => mean_of(
                self.panel
                    .groups
                    .iter()
                    .map(|g| {
                        if human {
                            self.result_scores(st, Some(&g.name))
                        } else {
                            self.computed(st, Some(&g.name), false)
                        }
                    })
                    .filter(|s| !s.is_empty()),
                &self.keys,
            ),
        }
    }

    /// The labels of a group's (or the panel's) result: the majority of the
    /// agents' latest labels, as people left them; panel-wide, of the groups' labels.
    /// With `human` false, the agents' own labels.
    pub(crate) fn result_labels(&self, st: &State, group: Option<&str>, human: bool) -> BTreeMap<String, String> {
        match group {
            Some(g) => match st.judged.get(g) {
                Some(ev) => ev.labels.clone(),
                None => {
                    let weighted = self.rule == GroupRule::ConfidenceWeighted;
                    weighted_labels(
                        st.agents
                            .iter()
                            .filter(|a| a.group == g)
                            .filter_map(|a| if human { a.progress.latest.as_ref() } else { a.own.as_ref() })
                            .map(|e| (&e.labels, if weighted { confidence_weight(e) } else { 1.0 })),
                    )
                }
            },
            None => {
                let groups: Vec<BTreeMap<String, String>> =
                    self.panel.groups.iter().map(|g| self.result_labels(st, Some(&g.name), human)).collect();
                majority_labels(groups.iter())
            }
        }
    }

    /// Why the published panel-wide result has no scores of the judges, if it has none.
    pub(crate) fn empty_result(&self, st: &State) -> Option<String> {
        if !st.aggregates.contains_key(&None) {
            return Some("the session ended before its result was aggregated".into());
        }
        if self.panel.protocol.compares_pairs() {
            return st.pair_failure.clone();
        }
        self.base_result(st, None).is_empty().then(|| self.no_result_reason(st, None))
    }

    /// Why a group (or the whole panel) has no result: which replies had no
    /// readable evaluation and which calls failed, with their turns.
    fn no_result_reason(&self, st: &State, group: Option<&str>) -> String {
        let mine = |list: &[(String, u64)]| -> Vec<u64> {
            list.iter().filter(|(g, _)| group.is_none_or(|x| x == g)).map(|(_, t)| *t).collect()
        };
        let unreadable = mine(&st.unreadable);
        let failed = mine(&st.failed_calls);
        let who = match group {
            Some(g) => format!("no agent of {g}"),
            None => "no agent".to_string(),
        };
        if unreadable.is_empty() && failed.is_empty() {
            return format!("{who} produced an evaluation: no agent's reply was received");
        }
        let mut parts = Vec::new();
        if !unreadable.is_empty() {
            parts.push(count(unreadable.len(), "reply without scores", "replies without scores"));
        }
        if !failed.is_empty() {
            parts.push(count(failed.len(), "failed call", "failed calls"));
        }
        let mut turns: Vec<u64> = unreadable.into_iter().chain(failed).collect();
        turns.sort_unstable();
        turns.dedup();
        let see = if turns.len() == 1 { "turn" } else { "turns" };
        format!("{who} produced a readable evaluation: {}; see {see} {}", parts.join(", "), turn_ranges(&turns))
    }

    /// Compute, store and emit the aggregate of a group or of the panel.
    pub(crate) fn emit_aggregate(&self, group: Option<&str>, feedback: String, method: &str) {
        let kind = {
            let mut st = self.state();
            st.aggregates.insert(group.map(str::to_string), AggregateRecord { feedback: feedback.clone() });
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
        let no_result = base.is_empty().then(|| self.no_result_reason(st, group));
        let labels = self.result_labels(st, group, true);
        let original_labels =
            self.result_labels(st, group, false).into_iter().filter(|(k, l)| labels.get(k) != Some(l)).collect();
        let left_out = match group {
            Some(_) => Vec::new(),
            None => self
                .panel
                .groups
                .iter()
                .filter(|g| self.base_result(st, Some(&g.name)).is_empty())
                .map(|g| g.name.clone())
                .collect(),
        };
        EventKind::AggregationCompleted {
            group: group.map(str::to_string),
            feedback,
            scores,
            overall,
            original,
            method: Some(method.to_string()),
            no_result,
            left_out,
            labels,
            original_labels,
            ranking: Vec::new(),
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

fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

/// Turn numbers as ranges: `1–4, 7, 9–10`.
pub fn turn_ranges(turns: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < turns.len() {
        let mut j = i;
        while j + 1 < turns.len() && turns[j + 1] == turns[j] + 1 {
            j += 1;
        }
        out.push(if j == i { turns[i].to_string() } else { format!("{}–{}", turns[i], turns[j]) });
        i = j + 1;
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_majority_label_wins_and_a_tie_gives_none() {
        let m = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let evs = [
            m(&[("tone", "formal"), ("voice", "warm")]),
            m(&[("tone", "formal"), ("voice", "cold")]),
            m(&[("tone", "casual")]),
        ];
        let out = majority_labels(evs.iter());
        assert_eq!(out.get("tone").map(String::as_str), Some("formal"));
        assert_eq!(out.get("voice"), None, "one warm, one cold: no majority");
        assert!(majority_labels([].iter()).is_empty());
    }

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

    #[test]
    fn turn_lists_collapse_into_ranges() {
        assert_eq!(turn_ranges(&[1, 2, 3, 4, 7, 9, 10]), "1–4, 7, 9–10");
        assert_eq!(turn_ranges(&[5]), "5");
        assert_eq!(turn_ranges(&[]), "");
    }
}
