//! What pairwise judging declares: its settings. The panel's agents are the
//! judges; its dimensions are the criteria they compare on.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::Pairwise,
    id: "pairwise",
    title: "Pairwise: judges compare two candidates in both orders",
    roles: &[],
    settings: &[
        SettingSpec {
            key: "votes",
            kind: SettingKind::Integer { min: 1, max: 25, default: 1 },
            about: "independent verdicts per judge and order; a label needs more than half of them, else tie",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "swap",
            kind: SettingKind::Bool { default: true },
            about: "judge every pair in both orders; a candidate wins only when both orders prefer it",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "pairing",
            kind: SettingKind::Choice { options: &["reference", "all-pairs"], default: "reference" },
            about: "with three or more candidates: each against the reference (n-1 pairs) or every pair",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "reference",
            kind: SettingKind::Text { default: "" },
            about: "the candidate id the others are compared with (default: each item's first candidate)",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "per_criterion",
            kind: SettingKind::Bool { default: false },
            about: "ask for a label per dimension besides the overall verdict",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "candidate_name",
            kind: SettingKind::Text { default: "Summary" },
            about: "what the judges call the candidates: \"Summary A\" and \"Summary B\"",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "reply_tokens",
            kind: SettingKind::Integer { min: 32, max: 4096, default: 256 },
            about: "reply length of a verdict: a few sentences of reasoning, then the JSON verdict",
            paper: Paper::AsDefault,
        },
    ],
    order: SpeakerOrder::Independent,
    uses_steps: false,
    confidence_weighted: false,
};
