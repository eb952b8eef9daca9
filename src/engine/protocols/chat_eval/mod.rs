//! ChatEval: the panel's agents, each a fixed role, discuss for `turns`
//! rounds with one of three strategies (a `[protocol]` setting):
//!
//! - `one-by-one`: a fixed order (the panel's), each seeing everything said
//!   before;
//! - `simultaneous`: every agent of a round speaks at once, seeing only what
//!   was said in earlier rounds;
//! - `simultaneous-summarizer`: as `simultaneous`, and after each round a
//!   summarizer (a role with its own provider and model) rewrites a running
//!   summary of the discussion, which agents see instead of the raw history.
//!
//! `first_round` says how the discussion starts: `independent` (moot's
//! default), every agent first evaluates on its own; `debate` (the paper's),
//! there is no such round and the first round of the discussion holds the
//! agents' first words (its first speaker, or everyone in a simultaneous
//! round, opens with nothing said yet).
//!
//! The final scores are each agent's last evaluation; the result is their
//! mean per group and the mean of the groups (categorical dimensions: the
//! majority label). In the pairwise mode ([`pairs`]) the agents give label
//! verdicts on an item's two candidates instead, and each group's result is
//! the majority of its agents' last labels.

mod pairs;
mod prompts;

use futures::future::join_all;

use crate::engine::initial::initial_phase;
use crate::engine::discussion::turns::{self, Ask};
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

/// Whether the agents first evaluate on their own (`first_round = "independent"`).
fn independent_first(run: &Run) -> bool {
    run.panel.protocol.is("first_round", "independent")
}

pub(crate) async fn run(run: &Run) {
    if run.panel.protocol.compares_pairs() {
        return pairs::run(run).await;
    }
    if independent_first(run) {
        initial_phase(run, false).await;
    }
    let (strategy, turns) = plan(run);
    let subject = run.item().content.clone();
    let floors = run.panel.groups.iter().map(|g| {
        let mut floor = Chat { summarized: strategy == Strategy::SimultaneousSummarizer };
        let subject = &subject;
        async move { discuss(run, &g.name, strategy, turns, &mut floor, subject).await }
    });
    join_all(floors).await;
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

/// The strategy and the number of rounds.
fn plan(run: &Run) -> (Strategy, u32) {
    let strategy = Strategy::of(&run.panel.protocol.choice("strategy"));
    (strategy, u32::try_from(run.panel.protocol.integer("turns")).unwrap_or(1))
}

/// A group's rounds on `floor` (scores or labels) under `strategy`;
/// `subject` is what the summarizer is told is under evaluation.
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
        match self.summarized.then(|| turns::summary_view(history)).flatten() {
            Some(view) => turns::scoring_messages(t, &view, Ask::Discuss),
            None => turns::scoring_messages(t, history, Ask::Discuss),
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
async fn summarize(run: &Run, group: &str, round: u32, subject: &str) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Summary, group: Some(group.to_string()), round: Some(round) });
    let history = run.state().histories.get(group).cloned().unwrap_or_default();
    let messages = prompts::summarizer_messages(&run.panel, subject, group, &history, round);
    let binding = run.config.bindings.for_role(Role::Summarizer).clone();
    let turn = TurnSpec {
        round: Some(round),
        ..TurnSpec::of_role(run, Role::Summarizer, &binding, Some(group), Phase::Summary, &run.stop)
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
