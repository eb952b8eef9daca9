//! How a group's result combines its members' last scores, as the run's
//! `aggregate` stage says (its `rule`): the plain mean,
//! confidence-weighted, or the majority (the round-table's `result`).
//!
//! The majority over scores, per key (each dimension and `overall`): the
//! score the most members gave (a plurality: on a 1–5 scale more than half
//! of three or more members often agree on no single score, and the group
//! still needs a result); when two or more scores share the most votes, the
//! median of all the members' scores for that key (the mean of the two
//! middle ones for an even count). Members without a score for a key are
//! left out of that key.

#[cfg(test)]
use crate::panel::ProtocolSection;
use crate::panel::composition::Composition;
use crate::session::event::{Evaluation, Scores};
use crate::stats::score_raters::plurality_score;

/// How a group's members' scores (and labels) combine into its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupRule {
    Mean,
    ConfidenceWeighted,
    Majority,
}

impl GroupRule {
    /// The rule of a run of `protocol`.
    #[cfg(test)]
    pub(crate) fn of(protocol: &ProtocolSection) -> Self {
        Self::of_stages(protocol.composition().as_ref())
    }
    /// The rule of a run's stages: its aggregate stage's `rule`.
    pub(crate) fn of_stages(composition: Option<&Composition>) -> Self {
        Self::named(&composition.and_then(Composition::aggregate).map(|a| a.choice("rule")).unwrap_or_default())
    }
    /// The rule a setting names (`majority`, `confidence-weighted`; else the mean).
    pub(crate) fn named(name: &str) -> Self {
        match name {
            "majority" => GroupRule::Majority,
            "confidence-weighted" => GroupRule::ConfidenceWeighted,
            _ => GroupRule::Mean,
        }
    }
    /// The `method` a result computed by this rule is recorded with.
    pub(crate) fn method(self) -> &'static str {
        match self {
            GroupRule::Mean => "mean",
            GroupRule::ConfidenceWeighted => "confidence_weighted",
            GroupRule::Majority => "majority",
        }
    }
}

/// Per key, the majority of the evaluations' scores (see the module's notes).
pub(crate) fn majority_scores<'a>(evaluations: impl IntoIterator<Item = &'a Evaluation>, keys: &[String]) -> Scores {
    let evs: Vec<&Evaluation> = evaluations.into_iter().collect();
    let mut out = Scores::new();
    for k in keys {
        let values: Vec<f64> = evs.iter().filter_map(|e| e.score(k)).filter(|v| v.is_finite()).collect();
        if let Some(v) = plurality_score(&values) {
            out.insert(k.clone(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_given_score_wins_and_a_shared_most_takes_the_median() {
        assert_eq!(plurality_score(&[]), None);
        assert_eq!(plurality_score(&[4.0]), Some(4.0));
        assert_eq!(plurality_score(&[5.0, 2.0, 2.0]), Some(2.0), "two of three");
        assert_eq!(plurality_score(&[3.0, 3.0, 4.0, 5.0]), Some(3.0), "a plurality without more than half");
        assert_eq!(plurality_score(&[2.0, 2.0, 5.0, 5.0]), Some(3.5), "a tie: the median");
        assert_eq!(plurality_score(&[1.0, 4.0, 5.0]), Some(4.0), "nobody agrees: the median");
    }

    #[test]
    fn the_round_table_names_its_rule_and_others_keep_their_declaration() {
        use crate::panel::{Protocol, SettingValue};
        let mut table = ProtocolSection::new(Protocol::RoundTable);
        assert_eq!(GroupRule::of(&table), GroupRule::ConfidenceWeighted);
        assert_eq!(GroupRule::of(&ProtocolSection::paper(Protocol::RoundTable)), GroupRule::Majority);
        table.settings.insert("result".into(), SettingValue::Text("majority".into()));
        assert_eq!(GroupRule::of(&table), GroupRule::Majority);
        assert_eq!(GroupRule::of(&ProtocolSection::new(Protocol::ChatEval)), GroupRule::Mean);
    }
}
