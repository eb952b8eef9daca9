//! The summarizer's request, and what agents see of a summarized discussion.

use std::fmt::Write as _;

use crate::engine::prompts::HistoryEntry;
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;

/// Longest summary asked for, in words.
const SUMMARY_WORDS: usize = 150;

/// What agents see once a summary exists: the latest summary, then what
/// people said or changed after it. `None` before the first summary.
pub(super) fn summary_view(history: &[HistoryEntry]) -> Option<Vec<HistoryEntry>> {
    let at = history.iter().rposition(|e| matches!(e, HistoryEntry::Summary { .. }))?;
    let mut view = vec![history[at].clone()];
    view.extend(
        history[at + 1..]
            .iter()
            .filter(|e| matches!(e, HistoryEntry::Comment { .. } | HistoryEntry::Override { .. }))
            .cloned(),
    );
    Some(view)
}

/// The summarizer's request after `round`: the task and the item, the
/// previous summary (or the first evaluations), and the round's contributions.
pub(super) fn summarizer_messages(
    panel: &Panel,
    item: &Item,
    group: &str,
    history: &[HistoryEntry],
    round: u32,
) -> Vec<ChatMessage> {
    let system = format!(
        "You keep the minutes of an evaluation panel's discussion. You do not judge the item yourself. The panel's \
         task: {}",
        panel.task.trim()
    );
    let mut user = format!("The item under evaluation:\n{}\n\n", item.content.trim());
    let before = history.iter().rposition(|e| matches!(e, HistoryEntry::Summary { .. }));
    match before.map(|i| &history[i]) {
        Some(HistoryEntry::Summary { round: r, text }) => {
            let _ = writeln!(user, "Your summary of the discussion up to round {r}:\n{}\n", text.trim());
        }
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
