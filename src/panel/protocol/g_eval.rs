//! What G-Eval declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::GEval,
    id: "g-eval",
    title: "G-Eval: one judge per dimension with evaluation steps",
    roles: &[],
    settings: &[
        SettingSpec {
            key: "samples",
            kind: SettingKind::Integer { min: 1, max: 100, default: 1 },
            about: "replies drawn per dimension and averaged when the provider returns no log-probabilities",
            paper: Paper::Integer(20),
        },
        SettingSpec {
            key: "reply_tokens",
            kind: SettingKind::Integer { min: 16, max: 4096, default: 96 },
            about: "reply length of a scoring turn: a sentence or two of reasoning, then the score",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "reply",
            kind: SettingKind::Choice { options: &["reason-first", "score-first"], default: "reason-first" },
            about: "what a scoring reply holds: a sentence or two on what decides the score, then the score \
                    (reason-first), or the filled-in form, the score alone (score-first), so that a weighted score \
                    reads the score token's own probabilities rather than ones conditioned on sampled reasoning",
            paper: Paper::Text("score-first"),
        },
        SettingSpec {
            key: "sample_temperature",
            kind: SettingKind::Choice { options: &["judge", "1"], default: "judge" },
            about: "temperature of the scoring draws: the judge's own ([generation] or the agent's), or 1, at \
                    which the draws sample the model's distribution of scores",
            paper: Paper::Text("1"),
        },
        SettingSpec {
            key: "score",
            kind: SettingKind::Choice { options: &["weighted", "drawn"], default: "drawn" },
            about: "a dimension's score in the result: the probability-weighted one where the provider returned \
                    log-probabilities, else the mean of the draws (weighted), or always the mean of the draws, the \
                    weighted score kept beside it for the report's weighted stage (drawn)",
            paper: Paper::Text("weighted"),
        },
        SettingSpec {
            key: "review_steps",
            kind: SettingKind::Bool { default: false },
            about: "pause after the evaluation steps are written, so that a person can edit them before scoring",
            paper: Paper::AsDefault,
        },
    ],
    results: Results::Scores,
    stage_names: STAGES,
    only_when: &[],
    compose: Some(compose),
};

/// Evaluation steps per dimension (reviewable), every judge scoring every
/// dimension alone, the means.
fn compose(p: &ProtocolSection) -> Option<Composition> {
    Some(Composition::new(vec![
        Stage::new(StageKind::Steps).with("review", p.flag("review_steps")),
        Stage::new(StageKind::Score)
            .with("samples", p.integer("samples"))
            .with("reply", p.choice("reply"))
            .with("sample_temperature", p.choice("sample_temperature"))
            .with("score", p.choice("score"))
            .with("reply_tokens", p.integer("reply_tokens")),
        Stage::new(StageKind::Aggregate),
    ]))
}
