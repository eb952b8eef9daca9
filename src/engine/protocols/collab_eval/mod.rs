//! CollabEval: initial evaluations with confidence, consensus checks, rounds
//! of discussion in a seeded shuffled order, and a final judge when the
//! evaluators do not converge. In its pairwise mode ([`pairwise`]) the
//! evaluators compare two candidates and agree on a label instead.

mod pairwise;

use futures::future::join_all;

use super::initial_phase;
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, Spoken, eval_scores};
use crate::engine::trim::Prompt;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase, Role, Scores};

/// How a group's discussion ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Consensus,
    Judged,
    Mean,
}

pub(crate) async fn run(run: &Run) {
    if run.panel.protocol.compares_pairs() {
        return pairwise::run(run).await;
    }
    initial_phase(run, true).await;
    let outcomes = join_all(run.panel.groups.iter().map(|g| discuss(run, &g.name))).await;
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let mut notes = Vec::new();
    for (g, outcome) in run.panel.groups.iter().zip(outcomes) {
        let (method, note) = match outcome {
            Outcome::Consensus => ("consensus", format!("{}: consensus reached.", g.name)),
            Outcome::Judged => {
                let why =
                    run.state().judged.get(&g.name).map(|e| e.justification.trim().to_string()).unwrap_or_default();
                ("final_judge", format!("{}: no consensus; the final judge decided. {why}", g.name))
            }
            Outcome::Mean => {
                ("mean", format!("{}: no consensus and no final judgment; mean of the latest evaluations.", g.name))
            }
        };
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = if empty { format!("{}: no result: no readable evaluation.", g.name) } else { note };
        run.emit_aggregate(Some(&g.name), note.clone(), method);
        notes.push(note);
    }
    let method = if run.panel.groups.len() == 1 {
        run.state()
            .aggregates
            .get(&Some(run.panel.groups[0].name.clone()))
            .map(|a| a.method.clone())
            .unwrap_or_default()
    } else {
        "mean".to_string()
    };
    run.emit_aggregate(None, notes.join("\n"), &method);
    run.state().finished = true;
}

fn snapshot(run: &Run, group: &str) -> std::collections::BTreeMap<String, Scores> {
    let st = run.state();
    st.agents
        .iter()
        .filter(|a| a.group == group)
        .map(|a| (a.name.clone(), a.progress.latest.as_ref().map(eval_scores).unwrap_or_default()))
        .collect()
}

async fn discuss(run: &Run, group: &str) -> Outcome {
    if run.check_consensus(group, Some(0)) {
        run.emit_finals(group);
        return Outcome::Consensus;
    }
    let mut rounds = Rounds { previous: snapshot(run, group), reached: false };
    discussion::discuss(run, group, &mut rounds, Order::rounds(run, group)).await;
    run.emit_finals(group);
    if rounds.reached {
        return Outcome::Consensus;
    }
    if run.stop.is_cancelled() {
        return Outcome::Mean;
    }
    final_judgment(run, group).await
}

/// CollabEval's discussion: after each round, the consensus is checked; the
/// rounds end when it holds or when a round changed nobody's scores.
struct Rounds {
    previous: std::collections::BTreeMap<String, Scores>,
    reached: bool,
}

impl Floor for Rounds {
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
        if run.check_consensus(group, Some(round)) {
            self.reached = true;
            return false;
        }
        let now = snapshot(run, group);
        let moved = now != self.previous;
        self.previous = now;
        moved
    }
}

async fn final_judgment(run: &Run, group: &str) -> Outcome {
    run.emit(EventKind::PhaseStarted { phase: Phase::FinalJudgment, group: Some(group.to_string()), round: None });
    let history = run.state().histories[group].clone();
    let build = |h: &[HistoryEntry]| prompts::final_judge_messages(&run.panel, run.item(), h);
    let binding = run.config.bindings.for_role(Role::FinalJudge).clone();
    let sampling = run.role_sampling(Role::FinalJudge);
    let out = run
        .evaluating_turn(
            Role::FinalJudge.label(),
            Some(group),
            Phase::FinalJudgment,
            None,
            Role::FinalJudge,
            &binding,
            Prompt::discussion(&history, &build),
            sampling,
            &run.quit,
            None,
        )
        .await;
    match out {
        Spoken::Evaluated { evaluation, .. } => {
            run.state().judged.insert(group.to_string(), evaluation);
            Outcome::Judged
        }
        Spoken::Unparsed { .. } => Outcome::Mean,
        Spoken::Failed(crate::provider::ProviderError::Cancelled) => Outcome::Mean,
        Spoken::Failed(e) => {
            run.fail(format!("final judge: {e}"));
            Outcome::Mean
        }
    }
}
