//! What SAGEval declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::SageEval,
    id: "sage-eval",
    title: "SAGEval: an evaluator, then a meta-evaluator that rectifies its scores",
    roles: &[Role::MetaEvaluator],
    settings: &[
        SettingSpec {
            key: "max_new_aspects",
            kind: SettingKind::Integer { min: 0, max: 10, default: 3 },
            about: "new aspects the meta-evaluator may propose per item",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "per_aspect",
            kind: SettingKind::Bool { default: false },
            about: "the evaluator judges each aspect in a request of its own, as G-Eval does, instead of every \
                    aspect in one request",
            paper: Paper::Bool(true),
        },
    ],
    results: Results::ReviewedScores,
    stage_names: StageNames { initial: "evaluator", final_: "rectified" },
    only_when: &[],
    compose: Some(compose),
};

/// Evaluation steps per dimension, every evaluator's assessment with them,
/// the meta-evaluator's review (a person's decisions on it), the means of
/// the rectified values.
fn compose(p: &ProtocolSection) -> Option<Composition> {
    Some(Composition::new(vec![
        Stage::new(StageKind::Steps),
        Stage::new(StageKind::Assess).with("per_aspect", p.flag("per_aspect")),
        Stage::new(StageKind::Review).with("max_new_aspects", p.integer("max_new_aspects")),
        Stage::new(StageKind::Aggregate),
    ]))
}
