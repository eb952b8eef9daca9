//! SAGEval: an evaluator judges every aspect G-Eval style (definition,
//! evaluation steps, reasoning, a score or a label), then a meta-evaluator
//! (SAGE) reviews that evaluation: it rectifies values it disagrees with,
//! proposes better definitions and up to `max_new_aspects` new aspects.
//! The rectified values are the result; a person may reject a rectification
//! (the evaluator's value comes back) and adopt proposals into a new panel file.
//!
//! Phases: `steps` (as G-Eval: written, given or cached, editable),
//! `initial` (one turn per evaluator for every aspect, or with `per_aspect`
//! one per evaluator and aspect), `critique` (one
//! meta-evaluator turn per evaluation), a pause for a person in interactive
//! runs when something changed, then `aggregation` (means of the rectified
//! values, a person's rejections applied).

mod decide;
mod prompts;
mod verdicts;

use std::collections::BTreeMap;

use futures::future::join_all;

use crate::engine::command::Command;
use crate::engine::review::{Proposal, Revision};
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::stages;
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::panel::Dimension;
use crate::provider::ProviderError;
use crate::session::event::{AspectValue, Evaluation, EventKind, Phase, ProposalKind, Role, TurnKind};
use verdicts::{AspectScores, Assessed, NewAspect, ReviewVerdict};

pub(crate) use verdicts::mean_overall;

/// The author of the pause after the meta-evaluator's review.
pub const REVIEW_AUTHOR: &str = "sage-eval (review)";

pub(crate) async fn run(run: &Run) {
    stages::write_steps(run).await;
    if run.stop.is_cancelled() {
        finish(run, &[]);
        return;
    }
    let steps = stages::start_scoring(run);
    let assessed = evaluate(run, &steps).await;
    let mut unread = Vec::new();
    if !run.stop.is_cancelled() && assessed.iter().any(Option::is_some) {
        unread = review(run, &assessed).await;
        let changed = {
            let st = run.state();
            !st.sage.revisions.is_empty() || !st.sage.proposals.is_empty()
        };
        if changed && run.config.linger && !run.stop.is_cancelled() {
            // A person decides on the changes; resuming goes on to the result.
            run.apply_command(Command::Pause { author: REVIEW_AUTHOR.into() });
            run.gate().await;
        }
    }
    finish(run, &unread);
}

/// Every evaluator judges every aspect: in one turn, or (`per_aspect`) in
/// one turn per aspect, one after the other.
async fn evaluate(run: &Run, steps: &BTreeMap<String, String>) -> Vec<Option<(Assessed, u64)>> {
    run.emit(EventKind::PhaseStarted { phase: Phase::Initial, group: None, round: None });
    let count = run.state().agents.len();
    let per_aspect = run.panel.protocol.flag("per_aspect");
    let calls = (0..count).map(|i| async move {
        if !per_aspect {
            return judge(run, i, steps, &run.panel.dimensions, None).await.read();
        }
        let mut so_far: Option<(Assessed, u64)> = None;
        for d in &run.panel.dimensions {
            let before = so_far.as_ref().map(|(a, _)| &a.evaluation);
            match judge(run, i, steps, std::slice::from_ref(d), before).await {
                Judged::Read(one, turn) => {
                    so_far = Some(match so_far {
                        Some((all, _)) => (all.with(*one, &run.panel), turn),
                        None => (*one, turn),
                    });
                }
                Judged::Unread => {}
                Judged::Stopped => break,
            }
        }
        so_far
    });
    join_all(calls).await
}

/// What one evaluator turn came to.
enum Judged {
    Read(Box<Assessed>, u64),
    /// No readable value (a parse failure, or a failure worth going on after).
    Unread,
    /// The run is stopping, or failed.
    Stopped,
}

impl Judged {
    fn read(self) -> Option<(Assessed, u64)> {
        match self {
            Judged::Read(a, turn) => Some((*a, turn)),
            _ => None,
        }
    }
}

/// Evaluator `i` judges `aspects` in one turn; `so_far` holds its values of
/// the aspects it judged before (one turn per aspect), recorded with this
/// turn's.
async fn judge(
    run: &Run,
    i: usize,
    steps: &BTreeMap<String, String>,
    aspects: &[Dimension],
    so_far: Option<&Evaluation>,
) -> Judged {
    if !run.gate().await {
        return Judged::Stopped;
    }
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[i];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let verdict = AspectScores { panel: &run.panel, aspects, so_far };
    let messages = prompts::evaluate_messages(&run.panel, run.item(), &spec, steps, aspects, &verdict_text(&verdict));
    let one = match aspects {
        [d] => Some(d.key.as_str()),
        _ => None,
    };
    let turn = TurnSpec {
        participant: &name,
        group: Some(&group),
        phase: Phase::Initial,
        round: None,
        role: Role::Agent,
        binding: &binding,
        sampling: run.agent_sampling(&spec),
        cancel: &run.stop,
        dimension: one,
        pair: None,
    };
    match run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await {
        Spoken::Evaluated { evaluation, turn, .. } => {
            let recorded = verdict.evaluation(&evaluation).unwrap_or_else(|| evaluation.evaluation.clone());
            let mut st = run.state();
            let a = &mut st.agents[i];
            a.initial = Some(recorded.clone());
            a.own = Some(recorded.clone());
            a.progress.spoke(Phase::Initial, TurnKind::Speak, turn, Some(&recorded), false);
            let evaluation = Assessed { turns: aspects.iter().map(|d| (d.key.clone(), turn)).collect(), ..evaluation };
            Judged::Read(Box::new(evaluation), turn)
        }
        Spoken::Unparsed { .. } => Judged::Unread,
        Spoken::Failed(ProviderError::Cancelled) => Judged::Stopped,
        Spoken::Failed(e) if !e.is_retryable() => {
            run.fail(format!("{name}: {e}"));
            Judged::Stopped
        }
        Spoken::Failed(_) => Judged::Unread,
    }
}

fn verdict_text<V: crate::engine::verdict::Verdict>(v: &V) -> String {
    v.instructions()
}

/// The meta-evaluator reviews each readable evaluation. Returns the agents
/// whose review could not be read.
async fn review(run: &Run, assessed: &[Option<(Assessed, u64)>]) -> Vec<String> {
    run.emit(EventKind::PhaseStarted { phase: Phase::Critique, group: None, round: None });
    let who = Role::MetaEvaluator.label();
    let binding = run.config.bindings.for_role(Role::MetaEvaluator).clone();
    let sampling = run.role_sampling(Role::MetaEvaluator);
    let max_new = usize::try_from(run.panel.protocol.integer("max_new_aspects")).unwrap_or(0);
    let calls =
        assessed.iter().enumerate().filter_map(|(i, a)| a.as_ref().map(|a| (i, a))).map(|(i, (a, agent_turn))| {
            let binding = &binding;
            async move {
                if !run.gate().await {
                    return None;
                }
                let (name, group) = {
                    let st = run.state();
                    (st.agents[i].name.clone(), st.agents[i].group.clone())
                };
                let verdict = ReviewVerdict { panel: &run.panel, base: &a.evaluation, max_new };
                let messages = prompts::review_messages(
                    &run.panel,
                    run.item(),
                    &name,
                    &a.evaluation,
                    &a.reasons,
                    max_new,
                    &verdict_text(&verdict),
                );
                let turn = TurnSpec {
                    participant: who,
                    group: Some(&group),
                    phase: Phase::Critique,
                    round: None,
                    role: Role::MetaEvaluator,
                    binding,
                    sampling,
                    cancel: &run.stop,
                    dimension: None,
                    pair: None,
                };
                match run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await {
                    Spoken::Evaluated { evaluation: review, turn, .. } => {
                        record(run, i, &name, (&a.turns, *agent_turn), turn, &a.evaluation, review);
                        None
                    }
                    Spoken::Unparsed { .. } => Some(name),
                    Spoken::Failed(ProviderError::Cancelled) => None,
                    Spoken::Failed(e) => {
                        if !e.is_retryable() {
                            run.fail(format!("{who}: {e}"));
                        }
                        Some(name)
                    }
                }
            }
        });
    join_all(calls).await.into_iter().flatten().collect()
}

/// Apply a review to the agent's evaluation and record what it changed and proposed.
fn record(
    run: &Run,
    i: usize,
    agent: &str,
    (agent_turns, agent_turn): (&BTreeMap<String, u64>, u64),
    turn: u64,
    base: &crate::session::event::Evaluation,
    review: verdicts::Review,
) {
    let by = Role::MetaEvaluator.label().to_string();
    {
        let mut st = run.state();
        let a = &mut st.agents[i];
        a.own = Some(review.evaluation.clone());
        a.progress.latest = Some(review.evaluation.clone());
    }
    for (dimension, (to, reason)) in review.rectified {
        let from = AspectValue::of(base, &dimension);
        run.state().sage.revisions.push(Revision {
            agent: agent.to_string(),
            dimension: dimension.clone(),
            from: from.clone(),
            to: to.clone(),
        });
        run.emit(EventKind::EvaluationRevised {
            by: by.clone(),
            turn,
            agent: agent.to_string(),
            agent_turn: Some(agent_turns.get(&dimension).copied().unwrap_or(agent_turn)),
            dimension,
            from,
            to,
            reason,
        });
    }
    for (dimension, (definition, reason)) in review.definitions {
        let name = run.panel.dimensions.iter().find(|d| d.key == dimension).map(|d| d.name.clone()).unwrap_or_default();
        run.state().sage.proposals.push(Proposal {
            kind: ProposalKind::Definition,
            key: dimension.clone(),
            name,
            definition: definition.clone(),
        });
        run.emit(EventKind::DefinitionProposed { by: by.clone(), turn, dimension, definition, reason });
    }
    for NewAspect { key, name, definition, score, reason } in review.new_aspects {
        run.state().sage.proposals.push(Proposal {
            kind: ProposalKind::Aspect,
            key: key.clone(),
            name: name.clone(),
            definition: definition.clone(),
        });
        run.emit(EventKind::AspectProposed { by: by.clone(), turn, key, name, definition, score, reason });
    }
}

/// Final evaluations (rectified, a person's decisions applied), each group's mean and the panel's.
fn finish(run: &Run, unread: &[String]) {
    if run.quit.is_cancelled() {
        return;
    }
    for g in &run.panel.groups {
        run.emit_finals(&g.name);
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let (changed, lowered, raised, definitions, aspects) = {
        let st = run.state();
        let r = &st.sage.revisions;
        let moved = |up: bool| {
            r.iter()
                .filter(|x| match (x.from.as_ref().and_then(AspectValue::score), x.to.score()) {
                    (Some(a), Some(b)) => {
                        if up {
                            b > a
                        } else {
                            b < a
                        }
                    }
                    _ => false,
                })
                .count()
        };
        let count = |k: ProposalKind| st.sage.proposals.iter().filter(|p| p.kind == k).count();
        (r.len(), moved(false), moved(true), count(ProposalKind::Definition), count(ProposalKind::Aspect))
    };
    let mut how = format!(
        "SAGEval: the meta-evaluator rectified {changed} value{} ({lowered} lowered, {raised} raised), proposed \
         {definitions} definition{} and {aspects} new aspect{}; the rectified values stand unless a person rejected \
         them.",
        plural(changed),
        plural(definitions),
        plural(aspects)
    );
    if !unread.is_empty() {
        how.push_str(&format!(
            " The review of {} could not be read: the evaluator's values stand there.",
            unread.join(", ")
        ));
    }
    let mut notes = Vec::new();
    for g in &run.panel.groups {
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = if empty {
            format!("{}: no result: no readable evaluation.", g.name)
        } else {
            format!("{}: {how}", g.name)
        };
        run.emit_aggregate(Some(&g.name), note.clone(), "mean");
        notes.push(note);
    }
    run.emit_aggregate(None, notes.join("\n"), "mean");
    run.state().finished = true;
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
