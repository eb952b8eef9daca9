//! ChatEval's pairwise mode ([`pairs`]): label verdicts on an item's two
//! candidates under the panel's strategy and `first_round`. Its scores mode
//! is a composition of stages (`panel::protocol::chat_eval`).

mod pairs;

use crate::engine::discussion::{self, Floor, Order};
use crate::engine::runtime::Run;
use crate::engine::stages::summarize;

/// How the agents of a round take the floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strategy {
    OneByOne,
    Simultaneous,
    SimultaneousSummarizer,
}

impl Strategy {
    fn of(name: &str) -> Self {
        match name {
            "simultaneous" => Strategy::Simultaneous,
            "simultaneous-summarizer" => Strategy::SimultaneousSummarizer,
            _ => Strategy::OneByOne,
        }
    }
}

pub(crate) async fn run(run: &Run) {
    pairs::run(run).await
}

/// Whether the agents first evaluate on their own (`first_round = "independent"`).
fn independent_first(run: &Run) -> bool {
    run.panel.protocol.is("first_round", "independent")
}

fn ended(run: &Run) -> bool {
    run.stop.is_cancelled() || run.state().failure.is_some()
}

/// The strategy and the number of rounds.
fn plan(run: &Run) -> (Strategy, u32) {
    let strategy = Strategy::of(&run.panel.protocol.choice("strategy"));
    (strategy, u32::try_from(run.panel.protocol.integer("turns")).unwrap_or(1))
}

/// A group's rounds on `floor` under `strategy`; `subject` is what the
/// summarizer is told is under evaluation.
async fn discuss<F: Floor>(run: &Run, group: &str, strategy: Strategy, turns: u32, floor: &mut F, subject: &str) {
    match strategy {
        Strategy::OneByOne => {
            discussion::discuss(run, group, floor, Order::rounds_of(run, group, turns, false)).await;
        }
        Strategy::Simultaneous => discussion::discuss(run, group, floor, Order::simultaneous(1, turns)).await,
        Strategy::SimultaneousSummarizer => {
            for round in 1..=turns {
                if ended(run) {
                    break;
                }
                discussion::discuss(run, group, floor, Order::simultaneous(round, round)).await;
                if ended(run) {
                    break;
                }
                summarize(run, group, round, subject).await;
            }
        }
    }
    run.emit_finals(group);
}
