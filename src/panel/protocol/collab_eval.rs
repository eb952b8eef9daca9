//! What CollabEval declares: its roles, settings and speaker order.

use super::*;

pub(super) const SPEC: ProtocolSpec = ProtocolSpec {
    protocol: Protocol::CollabEval,
    id: "collab-eval",
    title: "CollabEval: rounds of discussion, a final judge",
    roles: &[Role::FinalJudge],
    settings: &[],
    order: SpeakerOrder::ShuffledRounds,
    uses_steps: false,
    confidence_weighted: false,
};
