//! Round-table (ReConcile style, as paper 004 ran it): the agents speak one
//! after another in a seeded shuffled order, each agreeing with or revising
//! what was said before, with a confidence; rounds go on until all agree
//! (the panel's consensus rule, checked after every round) or `max_rounds`
//! have passed. Its settings:
//!
//! - `start`: `independent` (moot's default), every agent first evaluates on
//!   its own, and the rounds follow unless they already agree; `sequential`
//!   (the paper's), no such round: in round 1 the first agent of the order
//!   assesses alone and each next one reviews the evaluation before theirs;
//! - `shuffle`: a new order every round (`each-round`, moot's default) or
//!   one order per item (`once`, the paper's);
//! - `result`: `confidence-weighted` (moot's default), each agent's last
//!   scores weighed by its confidence, or `majority` (the paper's), per
//!   dimension the score most agents gave (see
//!   [`vote`](crate::engine::vote));
//! - `mode`: `scores`, or `pairwise` ([`pairs`]): label verdicts on an
//!   item's two candidates.

mod pairs;

use futures::future::join_all;

use crate::engine::initial::initial_phase;
use crate::engine::discussion::turns::{self, Ask};
use crate::engine::vote::GroupRule;
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::Run;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase};

pub(crate) async fn run(run: &Run) {
    if run.panel.protocol.compares_pairs() {
        return pairs::run(run).await;
    }
    let sequential = sequential(run);
    if !sequential {
        initial_phase(run, true).await;
    }
    let agreed = join_all(run.panel.groups.iter().map(|g| discuss(run, &g.name, sequential))).await;
    if run.quit.is_cancelled() {
        return;
    }
    let rule = GroupRule::of(&run.panel.protocol);
    let how = match rule {
        GroupRule::Majority => "majority of the last evaluations (per dimension the score most agents gave)",
        GroupRule::ConfidenceWeighted => "confidence-weighted mean of the last evaluations",
        GroupRule::Mean => "mean of the last evaluations",
    };
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    for (g, agreed) in run.panel.groups.iter().zip(agreed) {
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = match (empty, agreed) {
            (true, _) => format!("{}: no result: no readable evaluation.", g.name),
            (false, true) => format!("{}: all agreed; {how}.", g.name),
            (false, false) => format!("{}: no agreement within the rounds; {how}.", g.name),
        };
        run.emit_aggregate(Some(&g.name), note.clone(), rule.method());
        notes.push(note);
    }
    run.emit_aggregate(None, notes.join("\n"), rule.method());
    run.state().finished = true;
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

/// A group's rounds; true when its agents came to agree.
async fn discuss(run: &Run, group: &str, sequential: bool) -> bool {
    let ask = if sequential { Ask::Review } else { Ask::Discuss };
    let mut table = Table { agreed: !sequential && run.check_consensus(group, Some(0)), ask };
    if !table.agreed {
        discussion::discuss(run, group, &mut table, order(run, group)).await;
    }
    run.emit_finals(group);
    table.agreed
}

/// The round-table's floor: the discussion turn (or, starting in sequence,
/// the first assessment and the reviews); after each round, the agreement
/// is checked and ends the rounds when it holds.
struct Table {
    agreed: bool,
    ask: Ask,
}

impl Floor for Table {
    fn phase(&self) -> Phase {
        Phase::Discussion
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        turns::scoring_messages(t, history, self.ask)
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        prompts::discussion_ahead(t.panel, t.item, t.group, history, &t.speaker.name, t.round.unwrap_or(1), so_far)
    }
    fn end_of_round(&mut self, run: &Run, group: &str, round: u32) -> bool {
        self.agreed = run.check_consensus(group, Some(round));
        !self.agreed
    }
}
