//! What a discussion's next request starts with while a speech still
//! streams (see [`crate::provider::Provider::read_ahead`]): the shared
//! prompt with the speech so far as its newest entry, always the beginning
//! of the request that follows the finished speech.

use super::history::{HistoryEntry, speech_entry};
use super::members::{DEBATE_HEADING, DISCUSSION_HEADING, discussion};
use super::panel::panel_system;
use super::partial::{evaluation_so_far, prose_so_far};
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;

/// A speech's history entry as far as its reply has streamed: always the
/// beginning of the entry [`render_history`](super::render_history) will write for the whole reply.
fn speech_so_far(panel: &Panel, agent: &str, round: Option<u32>, so_far: &str) -> String {
    let prose = prose_so_far(so_far);
    let evaluation = evaluation_so_far(panel, &so_far[prose.len()..]);
    let prose = (!prose.trim().is_empty()).then_some(prose);
    speech_entry(panel, agent, round, prose, evaluation.as_ref(), false)
}

/// What a debate's next request (the moderator's or the next speaker's)
/// starts with while `speaker`'s speech streams: the system prompt and the
/// group's shared part, with the speech so far as the newest entry. See
/// [`crate::provider::Provider::read_ahead`].
pub fn debate_ahead(
    panel: &Panel,
    item: &Item,
    group: &str,
    history: &[HistoryEntry],
    speaker: &str,
    so_far: &str,
) -> Vec<ChatMessage> {
    ahead(panel, item, group, DEBATE_HEADING, history, speaker, None, so_far)
}

/// What a discussion round's next request starts with while `speaker`'s
/// contribution streams (see [`debate_ahead`]).
pub fn discussion_ahead(
    panel: &Panel,
    item: &Item,
    group: &str,
    history: &[HistoryEntry],
    speaker: &str,
    round: u32,
    so_far: &str,
) -> Vec<ChatMessage> {
    ahead(panel, item, group, DISCUSSION_HEADING, history, speaker, Some(round), so_far)
}

#[allow(clippy::too_many_arguments)]
fn ahead(
    panel: &Panel,
    item: &Item,
    group: &str,
    heading: &str,
    history: &[HistoryEntry],
    speaker: &str,
    round: Option<u32>,
    so_far: &str,
) -> Vec<ChatMessage> {
    let history = with_placeholder(history, speaker, round);
    let shared = discussion(panel, item, group, heading, &history);
    vec![
        ChatMessage::system(panel_system(panel)),
        ChatMessage::user(shared_so_far(panel, shared, speaker, round, so_far)),
    ]
}

/// The shared message of a discussion request, `shared`, rendered with a
/// placeholder entry for `speaker`'s contribution, cut where that entry
/// starts and followed by the contribution as far as it has streamed.
pub(crate) fn shared_so_far(
    panel: &Panel,
    mut shared: String,
    speaker: &str,
    round: Option<u32>,
    so_far: &str,
) -> String {
    let entry = shared.rfind(PLACEHOLDER).and_then(|at| shared[..at].rfind('\n')).map_or(0, |at| at + 1);
    shared.truncate(entry);
    shared.push_str(&speech_so_far(panel, speaker, round, so_far));
    shared
}

/// Stands for a contribution still streaming in [`with_placeholder`].
const PLACEHOLDER: &str = "\u{1}speech\u{1}";

/// `history` with a placeholder entry for `speaker`'s contribution (so that
/// older entries are shown exactly as they will be); see [`shared_so_far`].
pub(crate) fn with_placeholder(history: &[HistoryEntry], speaker: &str, round: Option<u32>) -> Vec<HistoryEntry> {
    let mut history = history.to_vec();
    history.push(HistoryEntry::Speech {
        agent: speaker.to_string(),
        round,
        text: PLACEHOLDER.into(),
        evaluation: None,
    });
    history
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prompts::{debate_messages, discussion_messages, moderator_messages};
    use crate::session::event::Evaluation;

    #[test]
    fn what_is_read_ahead_during_a_speech_begins_the_next_requests() {
        let panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cy"])]);
        let item = crate::testkit::item();
        let agents: Vec<_> = panel.agents().map(|(_, a)| a.clone()).collect();
        let evaluation = Evaluation {
            scores: [("grammar".to_string(), 4.0), ("relevance".to_string(), 3.0)].into(),
            overall: Some(3.0),
            confidence: Some(0.8),
            justification: "Clear enough.".into(),
            ..Evaluation::default()
        };
        let history = vec![HistoryEntry::Initial {
            agent: "Bea".into(),
            evaluation: Some(evaluation.clone()),
            text: String::new(),
        }];
        let evaluation_json = "{\"grammar\": 4, \"relevance\": 3, \"overall\": 3, \"confidence\": 0.8, \
                               \"justification\": \"Clear \\\"enough\\\" \\u00e9t\u{e9}.\"}";
        let evaluation = Evaluation { justification: "Clear \"enough\" \u{e9}t\u{e9}.".into(), ..evaluation };
        let prose = format!("I disagree with Bea: the answer never says where the fox went.\n{evaluation_json}");
        // Every cut of a reply with prose, and of one that is only the evaluation.
        for speech in [prose.as_str(), evaluation_json] {
            let mut after = history.clone();
            after.push(HistoryEntry::Speech {
                agent: "Ann".into(),
                round: None,
                text: speech.into(),
                evaluation: Some(evaluation.clone()),
            });
            let table = "- Ann: grammar 4\n";
            let next = [
                moderator_messages(&panel, "Parents", &item, &after, table, "", &["Bea", "Cy"]),
                debate_messages(&panel, "Parents", &agents[1], &item, &after, Some(&evaluation)),
            ];
            for cut in (0..=speech.len()).filter(|&c| speech.is_char_boundary(c)) {
                let ahead = debate_ahead(&panel, &item, "Parents", &history, "Ann", &speech[..cut]);
                assert_eq!(ahead.len(), 2);
                for request in &next {
                    assert_eq!(ahead[0], request[0]);
                    let so_far = ahead[1].content.trim_end();
                    assert!(
                        request[1].content.starts_with(so_far),
                        "{so_far:?} does not begin {:?}",
                        request[1].content
                    );
                }
            }
        }
        let whole = debate_ahead(&panel, &item, "Parents", &history, "Ann", &prose);
        assert!(whole[1].content.contains("where the fox went") && !whole[1].content.contains("\"grammar\""));
        // Once a score has streamed in full, the scores line begins.
        assert!(
            whole[1].content.ends_with("(Ann's scores now: grammar 4, relevance 3, overall 3 (confidence 0.80)"),
            "{}",
            whole[1].content
        );
        let json = prose.find('{').unwrap();
        let bare = debate_ahead(&panel, &item, "Parents", &history, "Ann", evaluation_json);
        assert!(bare[1].content.ends_with("[Ann] scores now: grammar 4, relevance 3, overall 3 (confidence 0.80) — Clear \"enough\" \u{e9}t\u{e9}."), "{}", bare[1].content);
        let half = debate_ahead(&panel, &item, "Parents", &history, "Ann", &prose[..json + 12]);
        assert!(!half[1].content.contains("scores now"), "a number may still grow: {}", half[1].content);
        // A discussion round's entry names its round.
        let round = discussion_ahead(&panel, &item, "Parents", &history, "Ann", 2, "I agree.");
        let request = discussion_messages(
            &panel,
            "Parents",
            &agents[1],
            &item,
            &[
                history,
                vec![HistoryEntry::Speech {
                    agent: "Ann".into(),
                    round: Some(2),
                    text: "I agree.".into(),
                    evaluation: None,
                }],
            ]
            .concat(),
            2,
            false,
        );
        assert!(request[1].content.starts_with(round[1].content.trim_end()));
    }
}
