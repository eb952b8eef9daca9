//! `evaluate`: every member's own first evaluation, at once, before anyone
//! has seen another's (with a confidence, unless `confidence = false`); on
//! a pair, every member's own first verdict.

use crate::engine::initial::initial_phase;
use crate::engine::labels::{self, Pair};
use crate::engine::runtime::Run;
use crate::panel::composition::Stage;

pub(super) async fn run(run: &Run, stage: &Stage, pair: Option<&Pair<'_>>) {
    match pair {
        Some(pair) => labels::first_verdicts(run, pair).await,
        None => initial_phase(run, stage.flag("confidence")).await,
    }
}
