//! The agreement score S of a judge with human labels.
//!
//! - `agreement` (graded labels): 1 − mean |judge − human| / (scale max − min).
//! - `accuracy` (binary labels): the share of examples where the judge's score,
//!   cut at the middle of the scale (≥ middle is positive), matches the label.
//! - `auc` (binary labels): ROC AUC of the judge's scores against the labels.
//! - `pearson` (graded labels): Pearson r of the judge's scores and the
//!   labels (the STS-B metric the prompt-optimisation paper reports); no
//!   score when fewer than two examples were judged or either side is
//!   constant.
//!
//! Examples the judge failed on (no readable score) are left out of S and
//! counted apart; S of no judged example is no score, with the reason.

use serde::{Deserialize, Serialize};

use crate::panel::Scale;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    Agreement,
    Accuracy,
    Auc,
    Pearson,
}

impl Objective {
    pub const NAMES: [&str; 4] = ["agreement", "accuracy", "auc", "pearson"];
    pub fn as_str(self) -> &'static str {
        match self {
            Objective::Agreement => "agreement",
            Objective::Accuracy => "accuracy",
            Objective::Auc => "auc",
            Objective::Pearson => "pearson",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "agreement" => Some(Objective::Agreement),
            "accuracy" => Some(Objective::Accuracy),
            "auc" => Some(Objective::Auc),
            "pearson" => Some(Objective::Pearson),
            _ => None,
        }
    }
    /// Accuracy when every label is one end of the scale (binary labels),
    /// agreement otherwise.
    pub fn auto(labels: &[f64], scale: &Scale) -> Self {
        if !labels.is_empty() && labels.iter().all(|&l| l == scale.min || l == scale.max) {
            Objective::Accuracy
        } else {
            Objective::Agreement
        }
    }
    /// The paper's metric for these labels: ROC AUC when every label is one
    /// end of the scale (Instruct-QA's correct / wrong), Pearson r otherwise
    /// (STS-B's graded similarity).
    pub fn paper(labels: &[f64], scale: &Scale) -> Self {
        match Self::auto(labels, scale) {
            Objective::Accuracy => Objective::Auc,
            _ => Objective::Pearson,
        }
    }
    /// Why this objective cannot score these labels, if it cannot.
    pub fn check(self, labels: &[f64], scale: &Scale) -> Result<(), String> {
        if matches!(self, Objective::Accuracy | Objective::Auc)
            && let Some(l) = labels.iter().find(|&&l| l != scale.min && l != scale.max)
        {
            return Err(format!(
                "{} needs binary labels ({} or {}), found {l}",
                self.as_str(),
                crate::engine::prompts::fmt_num(scale.min),
                crate::engine::prompts::fmt_num(scale.max)
            ));
        }
        Ok(())
    }
}

/// S of `(judge, human)` pairs; `None` pairs (failed judgements) are skipped.
pub fn score(objective: Objective, pairs: &[(Option<f64>, f64)], scale: &Scale) -> Result<f64, String> {
    let judged: Vec<(f64, f64)> = pairs.iter().filter_map(|(j, h)| j.map(|j| (j, *h))).collect();
    if judged.is_empty() {
        return Err(if pairs.is_empty() { "no examples".into() } else { "no example was judged".into() });
    }
    let n = judged.len() as f64;
    let span = scale.max - scale.min;
    let middle = scale.min + span / 2.0;
    match objective {
        Objective::Agreement => Ok(1.0 - judged.iter().map(|(j, h)| (j - h).abs() / span).sum::<f64>() / n),
        Objective::Accuracy => {
            let right = judged.iter().filter(|(j, h)| (*j >= middle) == (*h >= middle)).count();
            Ok(right as f64 / n)
        }
        Objective::Auc => {
            let truth: Vec<bool> = judged.iter().map(|(_, h)| *h >= middle).collect();
            let scores: Vec<f64> = judged.iter().map(|(j, _)| *j).collect();
            crate::stats::auc::roc_auc(&truth, &scores).map_err(|e| format!("ROC AUC: {e}"))
        }
        Objective::Pearson => {
            let (judge, human): (Vec<f64>, Vec<f64>) = judged.into_iter().unzip();
            crate::stats::correlation::pearson(&judge, &human).map(|c| c.value).map_err(|e| format!("Pearson r: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNIT: Scale = Scale { min: 0.0, max: 1.0 };

    #[test]
    fn agreement_is_one_minus_normalised_mae() {
        let s = score(Objective::Agreement, &[(Some(1.0), 0.5), (Some(0.0), 0.0), (None, 1.0)], &UNIT).unwrap();
        assert!((s - 0.75).abs() < 1e-12);
        let five = Scale { min: 1.0, max: 5.0 };
        assert!((score(Objective::Agreement, &[(Some(5.0), 1.0)], &five).unwrap()).abs() < 1e-12);
    }

    #[test]
    fn accuracy_cuts_at_the_middle_and_auc_ranks() {
        let pairs = [(Some(0.9), 1.0), (Some(0.4), 1.0), (Some(0.1), 0.0), (Some(0.6), 0.0)];
        assert_eq!(score(Objective::Accuracy, &pairs, &UNIT).unwrap(), 0.5);
        assert_eq!(score(Objective::Auc, &pairs, &UNIT).unwrap(), 0.75);
    }

    #[test]
    fn nothing_judged_is_no_score() {
        assert!(score(Objective::Agreement, &[(None, 1.0)], &UNIT).unwrap_err().contains("no example"));
        assert!(score(Objective::Auc, &[(Some(1.0), 1.0)], &UNIT).is_err());
    }

    #[test]
    fn pearson_correlates_and_needs_spread() {
        let five = Scale { min: 1.0, max: 5.0 };
        let pairs = [(Some(1.0), 1.0), (Some(3.0), 2.0), (Some(5.0), 3.0), (None, 5.0)];
        assert!((score(Objective::Pearson, &pairs, &five).unwrap() - 1.0).abs() < 1e-12);
        let turned = [(Some(5.0), 1.0), (Some(3.0), 2.0), (Some(1.0), 3.0)];
        assert!((score(Objective::Pearson, &turned, &five).unwrap() + 1.0).abs() < 1e-12);
        // A constant judge correlates with nothing.
        assert!(score(Objective::Pearson, &[(Some(3.0), 1.0), (Some(3.0), 5.0)], &five).is_err());
        assert_eq!(Objective::parse("pearson"), Some(Objective::Pearson));
        assert!(Objective::Pearson.check(&[2.5], &five).is_ok());
        assert_eq!(Objective::paper(&[1.0, 5.0], &five), Objective::Auc);
        assert_eq!(Objective::paper(&[1.0, 2.5], &five), Objective::Pearson);
    }

    #[test]
    fn auto_picks_accuracy_for_binary_labels() {
        assert_eq!(Objective::auto(&[0.0, 1.0, 1.0], &UNIT), Objective::Accuracy);
        assert_eq!(Objective::auto(&[0.0, 0.5], &UNIT), Objective::Agreement);
        assert!(Objective::Auc.check(&[0.5], &UNIT).is_err());
    }
}
