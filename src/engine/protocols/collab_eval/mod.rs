//! CollabEval: initial evaluations with confidence, consensus checks, rounds
//! of discussion in a seeded shuffled order, and a final judge when the
//! evaluators do not converge. In its pairwise mode ([`pairwise`]) the
//! evaluators compare two candidates and agree on a label instead.
//!
//! When the evaluators agree is the `consensus` setting ([`Agreement`]): the
//! panel's `[consensus]` rule, or the same score from everyone (the paper's).
//! What must agree is the `scope` setting: the whole evaluation at once (one
//! discussion, one final judgment), or each criterion to its own consensus
//! ([`criteria`], the paper's). How the evaluators talk in a round is the
//! `discussion` setting: they collaborate (the paper's method) or debate
//! (the paper's ablation); only the speaker's part of a turn's request
//! differs ([`prompts::discussion_messages`]), in both modes.

mod criteria;
mod pairwise;

use std::collections::BTreeMap;

use futures::future::join_all;

use crate::engine::initial::initial_phase;
use crate::engine::consensus::{self, ConsensusOutcome};
use crate::engine::discussion::{self, Floor, Order, Turn};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{Run, Spoken, eval_scores};
use crate::engine::trim::Prompt;
use crate::panel::ConsensusRule;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase, Role, Scores};

/// How a group's discussion ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    Consensus,
    Judged,
    Mean,
    /// Criteria discussed apart: how the group's result was formed
    /// (`consensus`, `final_judge`, `mean`, or `per_criterion` for a mix) and
    /// what became of each criterion.
    Criteria { method: &'static str, note: String },
}

/// When CollabEval's evaluators agree (the `consensus` setting).
pub(super) struct Agreement {
    rule: ConsensusRule,
    tolerance: f64,
    /// The rule as `consensus_checked` names it.
    label: String,
    /// Whether `overall` must agree besides the dimensions (the panel's rule covers it).
    overall: bool,
}

impl Agreement {
    fn of(run: &Run) -> Self {
        if run.panel.protocol.is("consensus", "same") {
            return Agreement { rule: ConsensusRule::Exact, tolerance: 0.0, label: "same score".into(), overall: false };
        }
        let c = &run.panel.consensus;
        Agreement {
            rule: c.rule,
            tolerance: c.tolerance,
            label: format!("{} ≤ {}", c.rule.as_str(), prompts::fmt_num(c.tolerance)),
            overall: true,
        }
    }

    /// The keys a check of the whole evaluation covers: every dimension,
    /// and under the panel's rule `overall` where the panel has one.
    fn keys(&self, run: &Run) -> Vec<String> {
        if self.overall { run.panel.score_keys() } else { run.panel.dimension_keys() }
    }
}

/// Check and record whether `group` agrees on `keys` (`round` 0: the first
/// evaluations); the recorded scores are those of `keys`.
fn check(run: &Run, group: &str, round: u32, agreement: &Agreement, keys: &[String], rule: String) -> ConsensusOutcome {
    let scores = snapshot(run, group, keys);
    let scores: BTreeMap<String, Scores> = scores.into_iter().filter(|(_, s)| !s.is_empty()).collect();
    let outcome = consensus::check(agreement.rule, agreement.tolerance, &scores, keys);
    run.emit(EventKind::ConsensusChecked {
        group: Some(group.to_string()),
        round: Some(round),
        scores,
        spread: outcome.spread.clone(),
        reached: outcome.reached,
        rule,
        labels: BTreeMap::new(),
    });
    outcome
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
            Outcome::Criteria { method, note } => (method, format!("{}: {note}", g.name)),
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

/// Each of the group's agents' latest scores on `keys` (none for an agent without an evaluation).
fn snapshot(run: &Run, group: &str, keys: &[String]) -> BTreeMap<String, Scores> {
    let st = run.state();
    st.agents
        .iter()
        .filter(|a| a.group == group)
        .map(|a| {
            let scores = a.progress.latest.as_ref().map(eval_scores).unwrap_or_default();
            (a.name.clone(), scores.into_iter().filter(|(k, _)| keys.contains(k)).collect())
        })
        .collect()
}

async fn discuss(run: &Run, group: &str) -> Outcome {
    let agreement = Agreement::of(run);
    if run.panel.protocol.is("scope", "per-criterion") {
        return criteria::discuss(run, group, &agreement).await;
    }
    let keys = agreement.keys(run);
    if check(run, group, 0, &agreement, &keys, agreement.label.clone()).reached {
        run.emit_finals(group);
        return Outcome::Consensus;
    }
    let mut rounds = Rounds { previous: snapshot(run, group, &keys), reached: false, agreement: &agreement, keys: &keys };
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
struct Rounds<'a> {
    previous: BTreeMap<String, Scores>,
    reached: bool,
    agreement: &'a Agreement,
    /// What must agree, and what a round must move to go on.
    keys: &'a [String],
}

impl Floor for Rounds<'_> {
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
        if check(run, group, round, self.agreement, self.keys, self.agreement.label.clone()).reached {
            self.reached = true;
            return false;
        }
        let now = snapshot(run, group, self.keys);
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
            Prompt::discussion(&run.panel, &history, &build),
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
