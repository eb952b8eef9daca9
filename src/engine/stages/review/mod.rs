//! `review`: a meta-evaluator (SAGEval's SAGE) reviews each member's
//! assessment: it rectifies the values it disagrees with, proposes better
//! definitions and up to `max_new_aspects` new aspects. The rectified values
//! are the member's; a person may reject a rectification (the member's value
//! comes back, [`decide`]) and adopt proposals into a new panel file. A live
//! run pauses after the review when something changed.

mod decide;
mod prompts;

use std::collections::BTreeMap;

use futures::future::join_all;

use super::assess::Assessments;
use super::assess::verdicts::{self, Assessed, NewAspect, ReviewVerdict};
use crate::engine::command::Command;
use crate::engine::review::{Proposal, Revision};
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::panel::composition::Stage;
use crate::provider::ProviderError;
use crate::session::event::{AspectValue, EventKind, Phase, ProposalKind, Role};

/// The author of the pause after the meta-evaluator's review.
pub const REVIEW_AUTHOR: &str = crate::engine::command::SAGE_REVIEW_AUTHOR;

/// Review every readable assessment, then (live, when something changed)
/// pause for a person's decisions. Returns what the review came to, for the
/// aggregate's account.
pub(super) async fn run(run: &Run, stage: &Stage, assessed: &Assessments) -> Option<String> {
    if run.stop.is_cancelled() || !assessed.iter().any(Option::is_some) {
        return None;
    }
    let max_new = usize::try_from(stage.integer("max_new_aspects")).unwrap_or(0);
    let unread = review(run, assessed, max_new).await;
    let changed = {
        let st = run.state();
        !st.sage.revisions.is_empty() || !st.sage.proposals.is_empty()
    };
    if changed && run.config.linger && !run.stop.is_cancelled() {
        // A person decides on the changes; resuming goes on to the result.
        run.apply_command(Command::Pause { author: REVIEW_AUTHOR.into() });
        run.gate().await;
    }
    Some(account(run, &unread))
}

fn verdict_text<V: Verdict>(v: &V) -> String {
    v.instructions()
}

/// The meta-evaluator reviews each readable evaluation. Returns the agents
/// whose review could not be read.
async fn review(run: &Run, assessed: &[Option<(Assessed, u64)>], max_new: usize) -> Vec<String> {
    run.emit(EventKind::PhaseStarted { phase: Phase::Critique, group: None, round: None });
    let who = Role::MetaEvaluator.label();
    let binding = run.config.bindings.for_role(Role::MetaEvaluator).clone();
    let sampling = run.role_sampling(Role::MetaEvaluator);
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

/// What the review changed and proposed, in words.
fn account(run: &Run, unread: &[String]) -> String {
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
        "the meta-evaluator rectified {changed} value{} ({lowered} lowered, {raised} raised), proposed \
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
    how
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
