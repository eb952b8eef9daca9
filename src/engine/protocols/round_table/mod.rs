//! Round-table (ReConcile style): after their first evaluations, with a
//! confidence, the agents speak one after another in a seeded shuffled
//! order, each seeing the ones before, agreeing or revising with a
//! confidence; rounds go on until all agree (the panel's consensus rule) or
//! `max_rounds` have passed. The result is the confidence-weighted mean of
//! the agents' last scores, and for categorical dimensions the
//! confidence-weighted majority label (see `docs/panels.md`).

use futures::future::join_all;

use super::initial_phase;
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::Run;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase};

pub(crate) async fn run(run: &Run) {
    initial_phase(run, true).await;
    let max_rounds = u32::try_from(run.panel.protocol.integer("max_rounds")).unwrap_or(1);
    let agreed = join_all(run.panel.groups.iter().map(|g| discuss(run, &g.name, max_rounds))).await;
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    for (g, agreed) in run.panel.groups.iter().zip(agreed) {
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = match (empty, agreed) {
            (true, _) => format!("{}: no result: no readable evaluation.", g.name),
            (false, true) => format!("{}: all agreed; confidence-weighted mean of the last evaluations.", g.name),
            (false, false) => {
                format!("{}: no agreement within the rounds; confidence-weighted mean of the last evaluations.", g.name)
            }
        };
        run.emit_aggregate(Some(&g.name), note.clone(), "confidence_weighted");
        notes.push(note);
    }
    run.emit_aggregate(None, notes.join("\n"), "confidence_weighted");
    run.state().finished = true;
}

/// A group's rounds; true when its agents came to agree.
async fn discuss(run: &Run, group: &str, max_rounds: u32) -> bool {
    let mut table = Table { agreed: run.check_consensus(group, Some(0)) };
    if !table.agreed {
        discussion::discuss(run, group, &mut table, Order::rounds_of(run, group, max_rounds, true)).await;
    }
    run.emit_finals(group);
    table.agreed
}

/// The round-table's floor: the discussion prompt; after each round, the
/// agreement is checked and ends the rounds when it holds.
struct Table {
    agreed: bool,
}

impl Floor for Table {
    fn phase(&self) -> Phase {
        Phase::Discussion
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        prompts::discussion_messages(t.panel, t.group, t.speaker, t.item, history, t.round.unwrap_or(1))
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        prompts::discussion_ahead(t.panel, t.item, t.group, history, &t.speaker.name, t.round.unwrap_or(1), so_far)
    }
    fn end_of_round(&mut self, run: &Run, group: &str, round: u32) -> bool {
        self.agreed = run.check_consensus(group, Some(round));
        !self.agreed
    }
}
