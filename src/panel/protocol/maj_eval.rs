//! What MAJ-EVAL declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::MajEval,
    id: "maj-eval",
    title: "MAJ-EVAL: moderated group debate",
    roles: &[Role::Moderator, Role::Aggregator],
    settings: &[],
    order: SpeakerOrder::Moderated,
    uses_steps: false,
    confidence_weighted: false,
};
