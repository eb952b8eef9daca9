//! What CollabEval declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::CollabEval,
    id: "collab-eval",
    title: "CollabEval: rounds of discussion, a final judge",
    roles: &[Role::FinalJudge],
    settings: &[
        SettingSpec {
            key: "mode",
            kind: SettingKind::Choice { options: &["scores", "pairwise"], default: "scores" },
            about: "scores: rate the item's content; pairwise: say which of the item's two candidates is better \
                    (A, B or tie), and agree on that label",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "candidate_name",
            kind: SettingKind::Text { default: "Summary" },
            about: "pairwise mode: what the evaluators call the candidates: \"Summary A\" and \"Summary B\"",
            paper: Paper::AsDefault,
        },
    ],
    order: SpeakerOrder::ShuffledRounds,
    uses_steps: false,
    confidence_weighted: false,
};
