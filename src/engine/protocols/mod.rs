//! Protocol runners for the runs that are not (yet) compositions of
//! stages: the pairwise modes of CollabEval, ChatEval and the round-table. Every other run is its composition's,
//! taken through the stages by [`stages::run`](crate::engine::stages::run).

pub mod chat_eval;
pub mod collab_eval;
pub mod round_table;

use crate::panel::Protocol;

use super::runtime::Run;

/// Run the panel's protocol to its end.
pub(crate) async fn run(run: &Run) {
    if let Some(composition) = run.panel.protocol.composition() {
        return crate::engine::stages::run(run, &composition).await;
    }
    match run.panel.protocol.kind {
        Protocol::CollabEval => collab_eval::run(run).await,
        Protocol::ChatEval => chat_eval::run(run).await,
        Protocol::RoundTable => round_table::run(run).await,
        Protocol::MajEval | Protocol::GEval | Protocol::SageEval | Protocol::Pairwise | Protocol::Composition => {
            run.fail(format!("{} has no stages for this run", run.panel.protocol.kind.as_str()));
        }
    }
}
