//! What the round-table declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::RoundTable,
    id: "round-table",
    title: "Round-table: shuffled rounds until all agree; a confidence-weighted result",
    roles: &[],
    settings: &[SettingSpec {
        key: "max_rounds",
        kind: SettingKind::Integer { min: 1, max: 20, default: 3 },
        about: "rounds at most; they stop earlier once all agree",
        paper: Paper::AsDefault,
    }],
    order: SpeakerOrder::ShuffledRounds,
    uses_steps: false,
    confidence_weighted: true,
};
