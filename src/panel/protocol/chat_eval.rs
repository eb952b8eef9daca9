//! What ChatEval declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::ChatEval,
    id: "chat-eval",
    title: "ChatEval: fixed roles debate one by one or all at once",
    roles: &[Role::Summarizer],
    settings: &[
        SettingSpec {
            key: "strategy",
            kind: SettingKind::Choice {
                options: &["one-by-one", "simultaneous", "simultaneous-summarizer"],
                default: "one-by-one",
            },
            about: "one-by-one: a fixed order, each agent sees all that was said; simultaneous: every agent of a round speaks at once, seeing earlier rounds only; simultaneous-summarizer: as simultaneous, agents see a running summary of the rounds",
            paper: Paper::AsDefault,
        },
        SettingSpec {
            key: "turns",
            kind: SettingKind::Integer { min: 1, max: 20, default: 2 },
            about: "rounds of discussion after the first evaluations",
            paper: Paper::AsDefault,
        },
    ],
    order: SpeakerOrder::Rounds,
    uses_steps: false,
    confidence_weighted: false,
};
