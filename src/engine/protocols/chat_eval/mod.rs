//! ChatEval: the panel's agents, each a fixed role, give first evaluations,
//! then discuss for `turns` rounds with one of three strategies (a
//! `[protocol]` setting):
//!
//! - `one-by-one`: a fixed order (the panel's), each seeing everything said
//!   before;
//! - `simultaneous`: every agent of a round speaks at once, seeing only what
//!   was said in earlier rounds;
//! - `simultaneous-summarizer`: as `simultaneous`, and after each round a
//!   summarizer (a role with its own provider and model) rewrites a running
//!   summary of the discussion, which agents see instead of the raw history.
//!
//! The final scores are each agent's last evaluation; the result is their
//! mean per group and the mean of the groups (categorical dimensions: the
//! majority label).

mod prompts;

use futures::future::join_all;

use super::initial_phase;
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self as shared, HistoryEntry};
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Text;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase, Role};

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
    initial_phase(run, false).await;
    let strategy = Strategy::of(&run.panel.protocol.choice("strategy"));
    let turns = u32::try_from(run.panel.protocol.integer("turns")).unwrap_or(1);
    join_all(run.panel.groups.iter().map(|g| discuss(run, &g.name, strategy, turns))).await;
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    for g in &run.panel.groups {
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = if empty {
            format!("{}: no result: no readable evaluation.", g.name)
        } else {
            format!("{}: mean of each agent's last evaluation.", g.name)
        };
        run.emit_aggregate(Some(&g.name), note.clone(), "mean");
        notes.push(note);
    }
    run.emit_aggregate(None, notes.join("\n"), "mean");
    run.state().finished = true;
}

fn ended(run: &Run) -> bool {
    run.stop.is_cancelled() || run.state().failure.is_some()
}

async fn discuss(run: &Run, group: &str, strategy: Strategy, turns: u32) {
    let mut floor = Chat { summarized: strategy == Strategy::SimultaneousSummarizer };
    match strategy {
        Strategy::OneByOne => {
            discussion::discuss(run, group, &mut floor, Order::rounds_of(run, group, turns, false)).await;
        }
        Strategy::Simultaneous => discussion::discuss(run, group, &mut floor, Order::simultaneous(1, turns)).await,
        Strategy::SimultaneousSummarizer => {
            for round in 1..=turns {
                if ended(run) {
                    break;
                }
                discussion::discuss(run, group, &mut floor, Order::simultaneous(round, round)).await;
                if ended(run) {
                    break;
                }
                summarize(run, group, round).await;
            }
        }
    }
    run.emit_finals(group);
}

/// ChatEval's discussion turns: the discussion prompt, over the raw history
/// or, with the summarizer, over the latest summary (and what people said
/// since).
struct Chat {
    summarized: bool,
}

impl Floor for Chat {
    fn phase(&self) -> Phase {
        Phase::Discussion
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        let round = t.round.unwrap_or(1);
        match self.summarized.then(|| prompts::summary_view(history)).flatten() {
            Some(view) => shared::discussion_messages(t.panel, t.group, t.speaker, t.item, &view, round),
            None => shared::discussion_messages(t.panel, t.group, t.speaker, t.item, history, round),
        }
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        shared::discussion_ahead(t.panel, t.item, t.group, history, &t.speaker.name, t.round.unwrap_or(1), so_far)
    }
}

/// The summarizer's turn after `round`: the running summary, rewritten with
/// the round's contributions, joins the group's history. A summary that
/// fails leaves the previous one (or, before the first, the raw history) in
/// front of the agents.
async fn summarize(run: &Run, group: &str, round: u32) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Summary, group: Some(group.to_string()), round: Some(round) });
    let history = run.state().histories.get(group).cloned().unwrap_or_default();
    let messages = prompts::summarizer_messages(&run.panel, run.item(), group, &history, round);
    let binding = run.config.bindings.for_role(Role::Summarizer).clone();
    let turn = TurnSpec {
        participant: Role::Summarizer.label(),
        group: Some(group),
        phase: Phase::Summary,
        round: Some(round),
        role: Role::Summarizer,
        binding: &binding,
        sampling: run.role_sampling(Role::Summarizer),
        cancel: &run.stop,
        dimension: None,
        pair: None,
    };
    let verdict = Text { what: "the updated summary" };
    match run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await {
        Spoken::Evaluated { evaluation: text, .. } => run.push_history(group, HistoryEntry::Summary { round, text }),
        Spoken::Failed(e) if !matches!(e, crate::provider::ProviderError::Cancelled) => {
            let mut failures = 0;
            run.on_turn_error(Role::Summarizer.label(), &e, &mut failures);
        }
        _ => {}
    }
}
