//! CollabEval's pairwise mode ([`pairwise`]): the evaluators compare two
//! candidates and agree on a label. Its scores mode is a composition of
//! stages (`panel::protocol::collab_eval`).

mod pairwise;

use crate::engine::runtime::Run;

pub(crate) async fn run(run: &Run) {
    pairwise::run(run).await
}
