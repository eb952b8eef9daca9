//! The summarizer of simultaneous rounds (`summarizer = true`): after each
//! round it rewrites a running summary of the discussion, which the members
//! read instead of the whole history.

use std::fmt::Write as _;

use crate::engine::prompts::HistoryEntry;
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Text;
use crate::panel::Panel;
use crate::provider::ChatMessage;
use crate::session::event::{EventKind, Phase, Role};

/// Longest summary asked for, in words.
const SUMMARY_WORDS: usize = 150;

/// The summarizer's request after `round`: the task and what is under
/// evaluation (`subject`: the item's content, or the two candidates of a
/// pair), the previous summary (or the first evaluations, when the agents
/// gave any on their own), and the round's contributions.
fn summarizer_messages(
    panel: &Panel,
    subject: &str,
    group: &str,
    history: &[HistoryEntry],
    round: u32,
) -> Vec<ChatMessage> {
    let system = format!(
        "You keep the minutes of an evaluation panel's discussion. You do not judge the item yourself. The panel's \
         task: {}",
        panel.task.trim()
    );
    let mut user = format!("The item under evaluation:\n{}\n\n", subject.trim());
    let before = history.iter().rposition(|e| matches!(e, HistoryEntry::Summary { .. }));
    match before.map(|i| &history[i]) {
        Some(HistoryEntry::Summary { round: r, text }) => {
            let _ = writeln!(user, "Your summary of the discussion up to round {r}:\n{}\n", text.trim());
        }
        _ if !history.iter().any(|e| matches!(e, HistoryEntry::Initial { .. })) => {}
        _ => {
            user.push_str("The members' first evaluations:\n");
            for e in history {
                if let HistoryEntry::Initial { agent, evaluation, text } = e {
                    let words = evaluation.as_ref().map_or(text.as_str(), |ev| ev.justification.as_str());
                    let scores = evaluation.as_ref().map(|ev| crate::engine::prompts::format_scores(panel, ev));
                    let _ = writeln!(user, "- {agent}: {} {}", scores.unwrap_or_default(), clip(words));
                }
            }
            user.push('\n');
        }
    }
    let _ = writeln!(user, "What the members of {group} said in round {round}:");
    for e in history {
        if let HistoryEntry::Speech { agent, round: Some(r), text, evaluation } = e
            && *r == round
        {
            let scores = evaluation.as_ref().map(|ev| crate::engine::prompts::format_scores(panel, ev));
            let _ = writeln!(
                user,
                "- {agent}: {} [{}]",
                clip(strip_json(text)),
                scores.unwrap_or_else(|| "no readable scores".into())
            );
        }
        if let HistoryEntry::Comment { author, text } = e {
            let _ = writeln!(user, "- (a person, {author}): {}", clip(text));
        }
    }
    let _ = write!(
        user,
        "\nWrite the updated summary of the whole discussion so far in at most {SUMMARY_WORDS} words of plain prose: \
         each member's view and scores by name, where they agree, where they disagree and why. Reply with the \
         summary only."
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// A reply's words without the JSON verdict it ends with.
fn strip_json(text: &str) -> &str {
    match text.rfind('{') {
        Some(i) if text[i..].trim_end().ends_with('}') => text[..i].trim_end(),
        _ => text.trim(),
    }
}

fn clip(text: &str) -> String {
    const MAX: usize = 600;
    let t = text.trim();
    match t.char_indices().nth(MAX) {
        Some((i, _)) => format!("{} […]", &t[..i]),
        None => t.to_string(),
    }
}

/// The summarizer's turn after `round`: the running summary, rewritten with
/// the round's contributions, joins the group's history. A summary that
/// fails leaves the previous one (or, before the first, the raw history) in
/// front of the members. `subject` is what is under evaluation.
pub(crate) async fn summarize(run: &Run, group: &str, round: u32, subject: &str) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Summary, group: Some(group.to_string()), round: Some(round) });
    let history = run.state().histories.get(group).cloned().unwrap_or_default();
    let messages = summarizer_messages(&run.panel, subject, group, &history, round);
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
