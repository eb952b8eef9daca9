//! The aggregator's written synthesis (`synthesis`): one of every
//! member's final evaluation (`panel`), or one per group from its whole
//! discussion, its members' final feedback and average scores (`per-group`).

use std::fmt::Write;

use crate::engine::discussion::redraws;
use crate::engine::prompts::{self, HistoryEntry};
use crate::engine::runtime::{CallSpec, Marks, Run, TurnSpec, eval_scores};
use crate::engine::synthesis_claims::{self, ResultFacts};
use crate::engine::trim::Prompt;
use crate::provider::{ChatMessage, Completion, NoCopy};
use crate::session::event::{Phase, Role, TurnKind};

/// The panel's synthesis of every member's final evaluation.
pub(super) async fn of_panel(run: &Run) -> String {
    let (facts, checked) = {
        let (groups, whole) = group_results(run);
        (prompts::results_facts(&run.panel, &groups, &whole), ResultFacts::new(&run.panel, &groups, Some(&whole)))
    };
    let messages = prompts::aggregator_messages(&run.panel, run.item(), &panel_finals(run), &facts);
    synthesis(run, None, Prompt::fixed(messages), &checked).await
}

/// Each group's result and the panel's (a person's overrides applied),
/// with the group members' final scores, for the facts the panel's
/// synthesis is given.
fn group_results(run: &Run) -> (Vec<prompts::GroupResult>, prompts::GroupResult) {
    let st = run.state();
    let of = |group: Option<&str>| prompts::GroupResult {
        name: group.unwrap_or_default().to_string(),
        result: run.result_scores(&st, group),
        human: st.final_overrides.iter().filter(|o| o.group.as_deref() == group).map(|o| o.dimension.clone()).collect(),
        members: st
            .agents
            .iter()
            .filter(|a| group == Some(a.group.as_str()))
            .filter_map(|a| Some((a.name.clone(), eval_scores(a.progress.latest.as_ref()?))))
            .collect(),
    };
    (run.panel.groups.iter().map(|g| of(Some(&g.name))).collect(), of(None))
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
pub(super) async fn of_group(run: &Run, group: &str) -> String {
    let (history, finals, average, checked) = {
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
                    Some(if words.is_empty() {
                        evaluation.as_ref().map_or("", |e| e.justification.trim())
                    } else {
                        words
                    })
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
        let members = st
            .agents
            .iter()
            .filter(|a| a.group == group)
            .filter_map(|a| Some((a.name.clone(), eval_scores(a.progress.latest.as_ref()?))))
            .collect();
        let result = prompts::GroupResult { name: group.to_string(), result: mean, human: Vec::new(), members };
        (history, finals, average, ResultFacts::new(&run.panel, &[result], None))
    };
    let build =
        |h: &[HistoryEntry]| prompts::group_synthesis_messages(&run.panel, run.item(), group, h, &finals, &average);
    let prompt = Prompt::discussion(&run.panel, &history, &build);
    synthesis(run, Some(group), prompt, &checked).await
}

/// Nothing to avoid but the synthesis's own earlier words (the embedded
/// model's copy guard keeps a reply from repeating itself); the names of
/// the members, groups and dimensions stay free, and so do the item's own
/// names and quotations of it (refused, the 0.5B misspelt a story's
/// character). Off under `repeats = "keep"`, like the speeches' guard.
fn own_words_only(run: &Run) -> NoCopy {
    let st = run.state();
    let names = st
        .agents
        .iter()
        .map(|a| a.name.clone())
        .chain(run.panel.groups.iter().map(|g| g.name.clone()))
        .chain(run.panel.dimensions.iter().flat_map(|d| [d.key.clone(), d.name.clone()]))
        .collect();
    NoCopy { names, quotable: run.quotable(), ..NoCopy::default() }
}

/// The aggregator's call: its synthesis, or nothing when the call failed
/// (which fails the run) or the run is closing. Under `claims = "checked"`
/// a synthesis that gives someone a score the results (`facts`) do not
/// show is recorded with those claims and written again once; the second
/// is kept, marked if it still does (a failed second call keeps the first).
async fn synthesis(run: &Run, group: Option<&str>, messages: Prompt<'_>, facts: &ResultFacts) -> String {
    let binding = run.config.bindings.for_role(Role::Aggregator).clone();
    let checked = !run.panel.protocol.has("claims", "as-given");
    let no_copy = redraws(&run.panel).then(|| std::sync::Arc::new(own_words_only(run)));
    let messages =
        messages.opening(Some(prompts::AGGREGATOR_OPENING.to_string())).sections(&prompts::SYNTHESIS_SECTIONS);
    let spec = |messages, kind| CallSpec {
        turn: TurnSpec::of_role(run, Role::Aggregator, &binding, group, Phase::Aggregation, &run.quit),
        kind,
        messages,
        schema: None,
        top_logprobs: None,
        prose_first: true,
        ahead: None,
        no_copy: no_copy.clone(),
        echo: None,
    };
    // Record a reply, with the claims of it that the results do not hold.
    let settle = |turn, kind, c: &Completion, latency| {
        let wrong = if checked { synthesis_claims::check(&c.text, facts) } else { Vec::new() };
        let marks = Marks { misstates: wrong.iter().map(ToString::to_string).collect(), ..Marks::default() };
        run.complete_turn(turn, Role::Aggregator.label(), Role::Aggregator, kind, c, None, None, latency, false, marks);
        wrong
    };
    let (turn, result, latency) = run.call(spec(messages.clone(), TurnKind::Judge)).await;
    let first = match result {
        Ok(c) => c,
        Err(crate::provider::ProviderError::Cancelled) => return String::new(),
        Err(e) => {
            run.fail(format!("aggregator: {e}"));
            return String::new();
        }
    };
    let wrong = settle(turn, TurnKind::Judge, &first, latency);
    if wrong.is_empty() || run.quit.is_cancelled() {
        return first.text.trim().to_string();
    }
    let again = messages.then([
        ChatMessage::assistant(first.text.clone()),
        prompts::synthesis_retry(&wrong.iter().map(|m| m.note()).collect::<Vec<_>>()),
    ]);
    let (turn, result, latency) = run.call(spec(again, TurnKind::Redraw)).await;
    match result {
        Ok(c) => {
            settle(turn, TurnKind::Redraw, &c, latency);
            c.text.trim().to_string()
        }
        Err(_) => first.text.trim().to_string(),
    }
}
