//! Discussion turns that ChatEval and the round-table share when nobody
//! gave a first evaluation on their own: the turn of a speaker who opens
//! the discussion (nothing said yet), the turn of one who reviews the
//! evaluation given just before theirs (the round-table's sequential
//! start), and what agents see of a summarized discussion (ChatEval's
//! summarizer).

use crate::engine::discussion::Turn;
use crate::engine::prompts::{self, HistoryEntry, persona};
use crate::provider::ChatMessage;

/// The closing reminder of a scoring turn (the output form itself is in the
/// panel's system prompt).
const END_WITH_JSON: &str =
    "Write two to four sentences of plain prose first (no lists), then end with the JSON evaluation.";

/// Whether nobody has contributed to the discussion yet (a person's comment
/// or score change is no contribution): the next speaker opens it.
pub(crate) fn opens(history: &[HistoryEntry]) -> bool {
    !history.iter().any(|e| {
        matches!(
            e,
            HistoryEntry::Initial { .. }
                | HistoryEntry::Speech { .. }
                | HistoryEntry::Condensed { .. }
                | HistoryEntry::Summary { .. }
                | HistoryEntry::LeftOut
        )
    })
}

/// Who made the discussion's latest contribution, if not `speaker`.
pub(crate) fn last_speaker<'h>(history: &'h [HistoryEntry], speaker: &str) -> Option<&'h str> {
    history.iter().rev().find_map(|e| match e {
        HistoryEntry::Speech { agent, .. } | HistoryEntry::Initial { agent, .. } if agent != speaker => {
            Some(agent.as_str())
        }
        HistoryEntry::Condensed { agent, .. } if agent != speaker => Some(agent.as_str()),
        _ => None,
    })
}

/// How a scoring turn is asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ask {
    /// Where the speaker agrees and disagrees with the others (moot's shared discussion turn).
    Discuss,
    /// Review the evaluation given just before theirs: agree, or revise it.
    Review,
}

/// A scoring discussion turn: the shared discussion request, with the
/// speaker's part replaced when they open the discussion, or when `ask` is
/// [`Ask::Review`] and someone spoke before them.
pub(crate) fn scoring_messages(t: &Turn<'_>, history: &[HistoryEntry], ask: Ask) -> Vec<ChatMessage> {
    let round = t.round.unwrap_or(1);
    let mut messages = prompts::discussion_messages(t.panel, t.group, t.speaker, t.item, history, round, false);
    let name = &t.speaker.name;
    let task = if opens(history) {
        format!(
            "Discussion round {round}. {name}, you speak first: nobody has given an evaluation yet. Say how you judge \
             the content from your perspective and why, pointing to what in it earns your scores. Then give your \
             evaluation and confidence."
        )
    } else {
        match (ask, last_speaker(history, name)) {
            (Ask::Review, Some(last)) => format!(
                "Discussion round {round}. {name}, {last} gave the evaluation just before yours. Review it: begin \
                 with \"{last}, …\", say whether you agree with it or would revise it and why, pointing to the \
                 content. Then give your own evaluation and confidence, the same scores or others."
            ),
            _ => return messages,
        }
    };
    if let Some(last) = messages.last_mut() {
        *last = ChatMessage::user(format!("{}\n{task} {END_WITH_JSON}", persona(t.panel, t.group, t.speaker)));
    }
    messages
}

/// What agents see once a summary exists: the latest summary, then what
/// people said or changed after it. `None` before the first summary.
pub(crate) fn summary_view(history: &[HistoryEntry]) -> Option<Vec<HistoryEntry>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_comment_opens_nothing_and_a_first_evaluation_does() {
        let comment = HistoryEntry::Comment { author: "kim".into(), text: "Mind the dates.".into() };
        assert!(opens(&[]));
        assert!(opens(std::slice::from_ref(&comment)));
        let first = HistoryEntry::Initial { agent: "Ann".into(), evaluation: None, text: "4".into() };
        assert!(!opens(&[comment.clone(), first.clone()]));
        assert_eq!(last_speaker(&[first.clone(), comment], "Bea"), Some("Ann"));
        assert_eq!(last_speaker(&[first], "Ann"), None);
    }
}
