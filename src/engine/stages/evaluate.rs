//! `evaluate`: every member's own first evaluation, at once, before anyone
//! has seen another's (with a confidence, unless `confidence = false`).

use crate::engine::initial::initial_phase;
use crate::engine::runtime::Run;
use crate::panel::composition::Stage;

pub(super) async fn run(run: &Run, stage: &Stage) {
    initial_phase(run, stage.flag("confidence")).await;
}
