//! MAJ-EVAL: independent evaluations, a moderated free debate per stakeholder
//! group, then an aggregator's synthesis and the means of the final scores.

use std::fmt::Write;

use futures::future::join_all;

use super::initial_phase;
use crate::engine::discussion::{Floor, Order, Turn, discuss};
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{CallSpec, Run, TurnSpec};
use crate::engine::trim::Prompt;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase, Role, TurnKind};

pub(crate) async fn run(run: &Run) {
    initial_phase(run, true).await;
    for g in &run.panel.groups {
        run.check_consensus(&g.name, Some(0));
    }
    join_all(run.panel.groups.iter().map(|g| debate(run, &g.name))).await;
    aggregate(run).await;
}

/// The moderated free debate of one group.
async fn debate(run: &Run, group: &str) {
    if run.stop.is_cancelled() {
        run.emit_finals(group);
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Debate, group: Some(group.to_string()), round: None });
    discuss(run, group, &mut Debate, Order::moderated(run, group)).await;
    run.emit_finals(group);
}

/// MAJ-EVAL's debate turns: each answers the others, and the group's
/// consensus is checked whenever someone's scores move.
struct Debate;

impl Floor for Debate {
    fn phase(&self) -> Phase {
        Phase::Debate
    }
    fn messages(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Vec<ChatMessage> {
        prompts::debate_messages(t.panel, t.group, t.speaker, t.item, history, t.latest)
    }
    fn opening(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Option<String> {
        prompts::addressee(t.panel, t.group, &t.speaker.name, history, t.latest).map(|a| prompts::opening_words(&a))
    }
    fn ahead(&self, t: &Turn<'_>, history: &[HistoryEntry], so_far: &str) -> Vec<ChatMessage> {
        prompts::debate_ahead(t.panel, t.item, t.group, history, &t.speaker.name, so_far)
    }
    fn after_turn(&mut self, run: &Run, group: &str, changed: Option<bool>) {
        if changed == Some(true) {
            run.check_consensus(group, None);
        }
    }
}

/// Phase 3: means per group and panel-wide, and the aggregator's synthesis.
async fn aggregate(run: &Run) {
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    for g in &run.panel.groups {
        run.emit_aggregate(Some(&g.name), String::new(), "mean");
    }
    let finals = {
        let st = run.state();
        let mut s = String::new();
        for g in &run.panel.groups {
            let _ = writeln!(s, "Group \"{}\":", g.name);
            for a in st.agents.iter().filter(|a| a.group == g.name) {
                match &a.progress.latest {
                    Some(ev) => {
                        let _ = writeln!(
                            s,
                            "- {} ({}): {} — {}",
                            a.name,
                            a.spec.role,
                            prompts::format_scores(&run.panel, ev),
                            ev.justification.trim()
                        );
                    }
                    None => {
                        let _ = writeln!(s, "- {} ({}): no evaluation", a.name, a.spec.role);
                    }
                }
            }
        }
        s
    };
    let has_any = {
        let st = run.state();
        st.failure.is_none() && st.agents.iter().any(|a| a.progress.latest.is_some())
    };
    let mut feedback = String::new();
    if has_any {
        let binding = run.config.bindings.for_role(Role::Aggregator).clone();
        let sampling = run.role_sampling(Role::Aggregator);
        let spec = CallSpec {
            turn: TurnSpec {
                participant: Role::Aggregator.label(),
                group: None,
                phase: Phase::Aggregation,
                round: None,
                role: Role::Aggregator,
                binding: &binding,
                sampling,
                cancel: &run.quit,
                dimension: None,
                pair: None,
            },
            kind: TurnKind::Judge,
            messages: Prompt::fixed(prompts::aggregator_messages(&run.panel, run.item(), &finals))
                .opening(Some(prompts::AGGREGATOR_OPENING.to_string())),
            schema: None,
            top_logprobs: None,
            prose_first: true,
            ahead: None,
        };
        let (turn, result, latency) = run.call(spec).await;
        match result {
            Ok(c) => {
                run.complete_turn(
                    turn,
                    Role::Aggregator.label(),
                    Role::Aggregator,
                    TurnKind::Judge,
                    &c,
                    None,
                    None,
                    latency,
                    false,
                );
                feedback = c.text.trim().to_string();
            }
            Err(crate::provider::ProviderError::Cancelled) => {}
            Err(e) => run.fail(format!("aggregator: {e}")),
        }
    }
    run.emit_aggregate(None, feedback, "mean");
    run.state().finished = true;
}
