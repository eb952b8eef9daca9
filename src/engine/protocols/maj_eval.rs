//! MAJ-EVAL: independent evaluations, a moderated free debate per stakeholder
//! group, then an aggregator's synthesis and the means of the final scores.

use std::fmt::Write;

use futures::future::join_all;

use crate::engine::initial::initial_phase;
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
    /// A free turn (`turns = "free"`) begins as the speaker likes.
    fn opening(&self, t: &Turn<'_>, history: &[HistoryEntry]) -> Option<String> {
        if t.panel.protocol.has("turns", "free") {
            return None;
        }
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

/// Phase 3: means per group and panel-wide, and the aggregator's synthesis:
/// one of every member's final evaluation (`aggregation = "panel"`), or one
/// per group from its whole debate, the panel's made of the groups'
/// (`aggregation = "per-group"`, the paper's).
async fn aggregate(run: &Run) {
    if run.quit.is_cancelled() {
        return;
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let has_any = {
        let st = run.state();
        st.failure.is_none() && st.agents.iter().any(|a| a.progress.latest.is_some())
    };
    let feedback = if run.panel.protocol.has("aggregation", "per-group") {
        let mut parts = Vec::new();
        for g in &run.panel.groups {
            let synthesis = if has_any { group_synthesis(run, &g.name).await } else { String::new() };
            if !synthesis.is_empty() {
                parts.push(format!("{}: {synthesis}", g.name));
            }
            run.emit_aggregate(Some(&g.name), synthesis, "mean");
        }
        parts.join("\n\n")
    } else {
        for g in &run.panel.groups {
            run.emit_aggregate(Some(&g.name), String::new(), "mean");
        }
        let messages = prompts::aggregator_messages(&run.panel, run.item(), &panel_finals(run));
        if has_any { synthesis(run, None, Prompt::fixed(messages)).await } else { String::new() }
    };
    run.emit_aggregate(None, feedback, "mean");
    run.state().finished = true;
}

/// Every member's final evaluation, by group, for the panel's synthesis.
fn panel_finals(run: &Run) -> String {
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
}

/// One group's synthesis: the aggregator reads the group's whole debate
/// (shortened only to fit the model's context), each member's final
/// feedback (its last contribution: the one that said NO MORE COMMENTS, for
/// a member who finished) and the group's average scores.
async fn group_synthesis(run: &Run, group: &str) -> String {
    let (history, finals, average) = {
        let st = run.state();
        let history = st.histories.get(group).cloned().unwrap_or_default();
        let mut finals = String::new();
        for a in st.agents.iter().filter(|a| a.group == group) {
            let last = history.iter().rev().find_map(|e| match e {
                HistoryEntry::Speech { agent, text, evaluation, .. }
                | HistoryEntry::Initial { agent, text, evaluation }
                    if *agent == a.name =>
                {
                    let words = prompts::reply_words(text, true, evaluation.is_some()).trim();
                    Some(if words.is_empty() { evaluation.as_ref().map_or("", |e| e.justification.trim()) } else { words })
                }
                _ => None,
            });
            let scores = a.progress.latest.as_ref().map(|ev| prompts::format_scores(&run.panel, ev));
            let _ = writeln!(
                finals,
                "- {} ({}){}: {} [scores: {}]",
                a.name,
                a.spec.role,
                if a.progress.finished { ", finished" } else { "" },
                last.filter(|t| !t.is_empty()).unwrap_or("(no words)"),
                scores.as_deref().unwrap_or("none")
            );
        }
        let mean = run.base_result(&st, Some(group));
        let average = if mean.is_empty() {
            "none (no member has readable scores)".to_string()
        } else {
            mean.iter().map(|(k, v)| format!("{k} {}", prompts::fmt_num(*v))).collect::<Vec<_>>().join(", ")
        };
        (history, finals, average)
    };
    let build = |h: &[HistoryEntry]| {
        prompts::group_synthesis_messages(&run.panel, run.item(), group, h, &finals, &average)
    };
    let prompt = Prompt::discussion(&run.panel, &history, &build);
    synthesis(run, Some(group), prompt).await
}

/// The aggregator's call: its synthesis, or nothing when the call failed
/// (which fails the run) or the run is closing.
async fn synthesis(run: &Run, group: Option<&str>, messages: Prompt<'_>) -> String {
    let binding = run.config.bindings.for_role(Role::Aggregator).clone();
    let spec = CallSpec {
        turn: TurnSpec::of_role(run, Role::Aggregator, &binding, group, Phase::Aggregation, &run.quit),
        kind: TurnKind::Judge,
        messages: messages.opening(Some(prompts::AGGREGATOR_OPENING.to_string())),
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
            c.text.trim().to_string()
        }
        Err(crate::provider::ProviderError::Cancelled) => String::new(),
        Err(e) => {
            run.fail(format!("aggregator: {e}"));
            String::new()
        }
    }
}
