//! The round-table's pairwise mode ([`pairs`]): label verdicts on an item's
//! two candidates, in the round-table's order and start. Its scores mode is
//! a composition of stages (`panel::protocol::round_table`).

mod pairs;

use crate::engine::discussion::Order;
use crate::engine::runtime::Run;

pub(crate) async fn run(run: &Run) {
    pairs::run(run).await
}

/// Whether the rounds start at once, one agent after another (`start = "sequential"`).
fn sequential(run: &Run) -> bool {
    run.panel.protocol.is("start", "sequential")
}

/// The speaking order of a group's rounds.
fn order(run: &Run, group: &str) -> Order {
    let max_rounds = u32::try_from(run.panel.protocol.integer("max_rounds")).unwrap_or(1);
    if run.panel.protocol.is("shuffle", "once") {
        Order::rounds_shuffled_once(run, group, max_rounds)
    } else {
        Order::rounds_of(run, group, max_rounds, true)
    }
}
