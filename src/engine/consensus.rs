//! Consensus rules over a group's current scores.
//!
//! For each key (dimension keys plus `overall`) the spread of the agents'
//! scores is measured: max − min for `exact` and `range`, the population
//! standard deviation for `stdev`. The group agrees when every key's spread is
//! within the limit (0 for `exact`, the tolerance otherwise), with
//! [`EPSILON`] of slack for floating-point noise. Agents without a score for a
//! key are left out of that key; a key that fewer than two agents scored has
//! spread 0 and agrees. A group with no agents never agrees.
//!
//! Each key's own verdict is kept too ([`ConsensusOutcome::agreed`]), for
//! protocols that discuss every criterion to its own consensus (CollabEval's
//! `scope = "per-criterion"`); [`agreed_value`] is then a criterion's result.

use std::collections::BTreeMap;

use crate::panel::ConsensusRule;
use crate::session::event::{Evaluation, Scores};

/// Slack added to every comparison against the limit.
pub const EPSILON: f64 = 1e-9;

/// The outcome of one consensus check.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsensusOutcome {
    /// Per key (dimensions and `overall`): max − min for `exact`/`range`, population stdev for `stdev`.
    pub spread: Scores,
    pub reached: bool,
    /// The keys whose spread is within the limit, in the order checked; a
    /// key nobody scored is agreed on by nobody.
    pub agreed: Vec<String>,
}

impl ConsensusOutcome {
    /// Whether the agents agree on `key`.
    pub fn agrees(&self, key: &str) -> bool {
        self.agreed.iter().any(|k| k == key)
    }
}

/// Check `rule` over `scores` (agent → key → score) on `keys` (the dimension keys, plus `overall` where the panel has one).
pub fn check(
    rule: ConsensusRule,
    tolerance: f64,
    scores: &BTreeMap<String, Scores>,
    keys: &[String],
) -> ConsensusOutcome {
    let limit = match rule {
        ConsensusRule::Exact => 0.0,
        ConsensusRule::Range | ConsensusRule::Stdev => tolerance,
    };
    let mut reached = !scores.is_empty();
    let mut spread = Scores::new();
    let mut agreed = Vec::new();
    for key in keys {
        let values: Vec<f64> = scores.values().filter_map(|s| s.get(key).copied()).filter(|v| v.is_finite()).collect();
        let s = if values.len() < 2 {
            0.0
        } else {
            match rule {
                ConsensusRule::Exact | ConsensusRule::Range => range(&values),
                ConsensusRule::Stdev => population_stdev(&values),
            }
        };
        if s > limit + EPSILON {
            reached = false;
        } else if !values.is_empty() {
            agreed.push(key.clone());
        }
        spread.insert(key.clone(), s);
    }
    ConsensusOutcome { spread, reached, agreed }
}

/// The result the agents agree on for `key`: their common score when they
/// give the same one, else (a rule with a tolerance) the mean of their
/// scores; none when nobody scored it.
pub fn agreed_value(scores: &BTreeMap<String, Scores>, key: &str) -> Option<f64> {
    let values: Vec<f64> = scores.values().filter_map(|s| s.get(key).copied()).filter(|v| v.is_finite()).collect();
    let first = *values.first()?;
    if values.iter().all(|v| (v - first).abs() <= EPSILON) {
        return Some(first);
    }
    Some(values.iter().sum::<f64>() / values.len() as f64)
}

/// An evaluation's scores with `overall` added under its own key, as [`check`] expects them.
pub fn scores_with_overall(evaluation: &Evaluation) -> Scores {
    let mut scores = evaluation.scores.clone();
    if let Some(overall) = evaluation.overall {
        scores.insert("overall".to_string(), overall);
    }
    scores
}

fn range(values: &[f64]) -> f64 {
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    max - min
}

fn population_stdev(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<String> {
        vec!["grammar".into(), "overall".into()]
    }

    fn group(rows: &[(&str, &[(&str, f64)])]) -> BTreeMap<String, Scores> {
        rows.iter()
            .map(|(agent, s)| (agent.to_string(), s.iter().map(|(k, v)| (k.to_string(), *v)).collect()))
            .collect()
    }

    #[test]
    fn rules_table() {
        use ConsensusRule::{Exact, Range, Stdev};
        let same = group(&[("a", &[("grammar", 4.0), ("overall", 4.0)]), ("b", &[("grammar", 4.0), ("overall", 4.0)])]);
        let one_apart =
            group(&[("a", &[("grammar", 4.0), ("overall", 4.0)]), ("b", &[("grammar", 3.0), ("overall", 4.0)])]);
        let overall_apart =
            group(&[("a", &[("grammar", 4.0), ("overall", 2.0)]), ("b", &[("grammar", 4.0), ("overall", 5.0)])]);
        // 2, 4, 4, 4 on grammar: range 2, population stdev sqrt(0.75) ≈ 0.866.
        let outlier = group(&[
            ("a", &[("grammar", 2.0), ("overall", 3.0)]),
            ("b", &[("grammar", 4.0), ("overall", 3.0)]),
            ("c", &[("grammar", 4.0), ("overall", 3.0)]),
            ("d", &[("grammar", 4.0), ("overall", 3.0)]),
        ]);
        let float_noise =
            group(&[("a", &[("grammar", 0.1 + 0.2), ("overall", 3.0)]), ("b", &[("grammar", 0.3), ("overall", 3.0)])]);
        type Case<'a> = (&'a str, ConsensusRule, f64, &'a BTreeMap<String, Scores>, bool, f64);
        let cases: Vec<Case<'_>> = vec![
            ("exact, same", Exact, 1.0, &same, true, 0.0),
            ("exact ignores tolerance", Exact, 1.0, &one_apart, false, 1.0),
            ("exact within float noise", Exact, 0.0, &float_noise, true, 0.0),
            ("range at the tolerance", Range, 1.0, &one_apart, true, 1.0),
            ("range below the gap", Range, 0.5, &one_apart, false, 1.0),
            ("range fails on overall alone", Range, 1.0, &overall_apart, false, 0.0),
            ("range with an outlier", Range, 1.0, &outlier, false, 2.0),
            ("stdev with an outlier passes", Stdev, 1.0, &outlier, true, 0.75f64.sqrt()),
            ("stdev with an outlier fails", Stdev, 0.8, &outlier, false, 0.75f64.sqrt()),
            ("stdev of two one apart", Stdev, 0.5, &one_apart, true, 0.5),
        ];
        for (name, rule, tolerance, scores, reached, grammar_spread) in cases {
            let out = check(rule, tolerance, scores, &keys());
            assert_eq!(out.reached, reached, "{name}");
            assert!((out.spread["grammar"] - grammar_spread).abs() < 1e-9, "{name}: spread {:?}", out.spread);
            assert_eq!(out.spread.len(), 2, "{name}");
        }
    }

    #[test]
    fn each_key_has_its_own_verdict_and_an_agreed_value() {
        // Same grammar, overall one apart: `exact` agrees on grammar alone.
        let scores =
            group(&[("a", &[("grammar", 4.0), ("overall", 4.0)]), ("b", &[("grammar", 4.0), ("overall", 3.0)])]);
        let out = check(ConsensusRule::Exact, 0.0, &scores, &keys());
        assert!(!out.reached);
        assert_eq!(out.agreed, ["grammar"]);
        assert!(out.agrees("grammar") && !out.agrees("overall"));
        assert_eq!(agreed_value(&scores, "grammar"), Some(4.0), "the common score itself");
        // Within a tolerance, the agreed value is the mean.
        assert_eq!(check(ConsensusRule::Range, 1.0, &scores, &keys()).agreed, ["grammar", "overall"]);
        assert_eq!(agreed_value(&scores, "overall"), Some(3.5));
        assert_eq!(agreed_value(&scores, "relevance"), None);
    }

    #[test]
    fn missing_keys_are_skipped() {
        // Only one agent scored grammar: it agrees with spread 0; overall still counts.
        let scores = group(&[("a", &[("grammar", 1.0), ("overall", 3.0)]), ("b", &[("overall", 3.5)])]);
        let out = check(ConsensusRule::Range, 1.0, &scores, &keys());
        assert!(out.reached);
        assert_eq!(out.spread["grammar"], 0.0);
        assert_eq!(out.spread["overall"], 0.5);
        let out = check(ConsensusRule::Exact, 0.0, &scores, &keys());
        assert!(!out.reached);
    }

    #[test]
    fn empty_group_never_agrees() {
        let out = check(ConsensusRule::Range, 1.0, &BTreeMap::new(), &keys());
        assert!(!out.reached);
        assert_eq!(out.spread["grammar"], 0.0);
        assert!(out.agreed.is_empty(), "nobody scored anything, so nothing is agreed on");
    }

    #[test]
    fn single_agent_agrees() {
        let scores = group(&[("a", &[("grammar", 1.0), ("overall", 5.0)])]);
        assert!(check(ConsensusRule::Exact, 0.0, &scores, &keys()).reached);
    }

    #[test]
    fn overall_is_added_from_an_evaluation() {
        let mut e = Evaluation::default();
        e.scores.insert("grammar".into(), 4.0);
        e.overall = Some(3.5);
        let s = scores_with_overall(&e);
        assert_eq!(s.get("overall"), Some(&3.5));
        assert_eq!(s.get("grammar"), Some(&4.0));
    }
}
