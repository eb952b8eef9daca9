//! A group's shared history and how prompts show it: each contribution's
//! words, then its scores; older entries left out or condensed.

use std::fmt::Write;

use super::format::{clip, fmt_num, format_scores};
use super::members::full_first_feedback;
use super::partial::prose_so_far;
use crate::panel::Panel;
use crate::session::event::Evaluation;

/// How many history entries a prompt shows (older ones are summarised by the scores table).
pub const HISTORY_WINDOW: usize = 14;
/// Longest text of one history entry shown to a model.
const ENTRY_CHARS: usize = 900;

/// How many of a discussion's latest contributions a prompt shows: every
/// one under `history = "whole"` (MAJ-EVAL's paper), else the latest
/// [`HISTORY_WINDOW`]. Either way, a request that does not fit the model's
/// context is shortened by the rule of [`crate::engine::trim`].
pub fn history_window(panel: &Panel) -> usize {
    if whole_history(panel) { usize::MAX } else { HISTORY_WINDOW }
}

fn whole_history(panel: &Panel) -> bool {
    panel.protocol.has("history", "whole")
}

/// Longest text of one contribution a prompt shows: all of it under
/// `history = "whole"`, else [`ENTRY_CHARS`].
fn entry_chars(panel: &Panel) -> usize {
    if whole_history(panel) { usize::MAX } else { ENTRY_CHARS }
}

/// One entry of a group's shared history.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryEntry {
    /// An evaluation given in the initial phase.
    Initial { agent: String, evaluation: Option<Evaluation>, text: String },
    /// A debate or discussion contribution.
    Speech { agent: String, round: Option<u32>, text: String, evaluation: Option<Evaluation> },
    /// A comment by a person steering the panel.
    Comment { author: String, text: String },
    /// A person changed a score.
    Override { author: String, agent: String, dimension: String, from: Option<f64>, to: f64, reason: Option<String> },
    /// A speech or first evaluation shown as its score line only, to fit the
    /// model's context (see [`crate::engine::trim`]).
    Condensed { agent: String, round: Option<u32>, first: bool, evaluation: Evaluation },
    /// A contribution left out to fit the model's context; the discussion
    /// says how many were.
    LeftOut,
    /// A summary of the discussion up to the end of `round` (ChatEval's summarizer).
    Summary { round: u32, text: String },
}

pub(crate) fn render_history(panel: &Panel, history: &[HistoryEntry]) -> String {
    if history.is_empty() {
        return "(nothing yet)".into();
    }
    let start = history.len().saturating_sub(history_window(panel));
    let chars = entry_chars(panel);
    let mut s = String::new();
    if start > 0 {
        let _ = writeln!(s, "({start} earlier contributions not shown)");
    }
    let left_out = history[start..].iter().filter(|e| matches!(e, HistoryEntry::LeftOut)).count();
    if left_out > 0 {
        let _ = writeln!(s, "({left_out} older contributions left out to fit the model's context)");
    }
    for e in &history[start..] {
        match e {
            HistoryEntry::Initial { agent, evaluation, text } => match evaluation {
                // Feedback written before the scores (MAJ-EVAL's `first_feedback = "full"`).
                Some(ev) if full_first_feedback(panel) && has_prose(text) => {
                    let _ = writeln!(
                        s,
                        "[{agent}, first evaluation] {}\n  ({agent}'s scores: {})",
                        clip(strip_json_tail(text), chars),
                        format_scores(panel, ev)
                    );
                }
                Some(ev) => {
                    let _ = writeln!(
                        s,
                        "[{agent}, first evaluation] {} — {}",
                        format_scores(panel, ev),
                        clip(&ev.justification, chars)
                    );
                }
                None => {
                    let _ = writeln!(s, "[{agent}, first evaluation, no readable scores] {}", clip(text, chars));
                }
            },
            HistoryEntry::Speech { agent, round, text, evaluation } => {
                let words = strip_json_tail(text);
                let prose = (evaluation.is_none() || !is_only_json(words)).then_some(words);
                s.push_str(&speech_entry(panel, agent, *round, prose, evaluation.as_ref(), true));
            }
            HistoryEntry::Condensed { agent, round, first, evaluation } => {
                let head = if *first { format!("[{agent}, first evaluation]") } else { speech_head(agent, *round) };
                let _ = writeln!(s, "{head} {}: {}", what_now(evaluation), format_scores(panel, evaluation));
            }
            HistoryEntry::LeftOut => {}
            HistoryEntry::Comment { author, text } => {
                let _ = writeln!(s, "[HUMAN MODERATOR {author}] {}", clip(text, chars));
            }
            HistoryEntry::Summary { round, text } => {
                let _ = writeln!(s, "[Summary of the discussion up to round {round}] {}", text.trim());
            }
            HistoryEntry::Override { author, agent, dimension, from, to, reason } => {
                let from = from.map(fmt_num).unwrap_or_else(|| "none".into());
                let why = reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
                let _ = writeln!(
                    s,
                    "[HUMAN MODERATOR {author}] set {agent}'s {dimension} score to {} (was {from}){why}",
                    fmt_num(*to)
                );
            }
        }
    }
    s
}

/// `[Ann, round 2]`: who spoke, and when.
fn speech_head(agent: &str, round: Option<u32>) -> String {
    match round {
        Some(r) => format!("[{agent}, round {r}]"),
        None => format!("[{agent}]"),
    }
}

/// Whether a reply has words before its evaluation.
fn has_prose(text: &str) -> bool {
    let words = strip_json_tail(text);
    !words.is_empty() && !is_only_json(words)
}

/// Whether a reply (without its trailing evaluation) is nothing but JSON.
fn is_only_json(words: &str) -> bool {
    words.trim_start_matches("```json").trim_start().starts_with('{')
}

/// A speech's history entry: its words (`prose`), then the speaker's scores
/// on a line of their own; or, for a reply that was only the evaluation
/// (`prose` is `None`; small models often skip the prose), its scores, then
/// its justification, in the order they were written. `closed: false`
/// leaves off the end (a closing parenthesis, the newline) for a reply still
/// streaming, so that the entry stays the beginning of the finished one.
pub(super) fn speech_entry(
    panel: &Panel,
    agent: &str,
    round: Option<u32>,
    prose: Option<&str>,
    evaluation: Option<&Evaluation>,
    closed: bool,
) -> String {
    let mut s = speech_head(agent, round);
    match (prose, evaluation) {
        (Some(words), _) => {
            let _ = write!(s, " {}", clip(words, entry_chars(panel)));
            if let Some(ev) = evaluation {
                let _ = write!(s, "\n  ({agent}'s {} now: {}", what_now(ev), format_scores(panel, ev));
                if closed {
                    s.push(')');
                }
            }
        }
        (None, Some(ev)) => {
            let _ = write!(s, " {} now: {}", what_now(ev), format_scores(panel, ev));
            if !ev.justification.trim().is_empty() {
                let _ = write!(s, " — {}", clip(&ev.justification, entry_chars(panel)));
            }
        }
        (None, None) => {}
    }
    if closed {
        s.push('\n');
    }
    s
}

/// What an evaluation holds: a label verdict or scores.
fn what_now(ev: &Evaluation) -> &'static str {
    if ev.label.is_some() && ev.scores.is_empty() { "verdict" } else { "scores" }
}

/// The reply text without a trailing JSON evaluation (history shows scores separately).
fn strip_json_tail(text: &str) -> &str {
    let t = text.trim_end();
    let t = t.strip_suffix("```").map(str::trim_end).unwrap_or(t);
    if t.ends_with('}')
        && let Some(start) = t.rfind("\n{").or_else(|| t.rfind("```json")).or_else(|| t.rfind('{'))
    {
        let head = text[..start].trim_end();
        let head = head.strip_suffix("```json").unwrap_or(head).trim_end();
        if !head.is_empty() {
            return head;
        }
    }
    text.trim()
}

/// What an evaluated reply says, for people to read: its prose, without the
/// JSON evaluation it ends with (its scores are shown apart). While the reply
/// streams (`complete: false`) the text stops where the evaluation starts and
/// holds back trailing blanks and backticks (they may begin it), so that it
/// only grows as the reply does. A complete reply that was nothing but its
/// evaluation says nothing here; one whose evaluation could not be read
/// (`evaluated: false`) is shown whole, as it came.
pub fn reply_words(text: &str, complete: bool, evaluated: bool) -> &str {
    if !complete {
        return prose_so_far(text).trim_end_matches(|c: char| c.is_whitespace() || c == '`');
    }
    if !evaluated {
        return text.trim();
    }
    let words = strip_json_tail(text);
    if is_only_json(words) { "" } else { words }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_tail_is_stripped_for_history() {
        assert_eq!(strip_json_tail("I agree.\n{\"grammar\": 4}"), "I agree.");
        assert_eq!(strip_json_tail("Fine.\n```json\n{\"grammar\": 4}\n```"), "Fine.");
        assert_eq!(strip_json_tail("no json here"), "no json here");
    }

    #[test]
    fn a_speech_that_is_only_the_evaluation_shows_its_justification() {
        let panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea"])]);
        let evaluation = Evaluation {
            scores: [("grammar".to_string(), 4.0)].into(),
            justification: "The answer skips the den.".into(),
            ..Evaluation::default()
        };
        let speech = |text: &str| HistoryEntry::Speech {
            agent: "Ann".into(),
            round: Some(1),
            text: text.into(),
            evaluation: Some(evaluation.clone()),
        };
        let bare =
            render_history(&panel, &[speech("{\"grammar\": 4, \"justification\": \"The answer skips the den.\"}")]);
        assert!(bare.contains("[Ann, round 1] scores now: grammar 4 — The answer skips the den.\n"), "{bare}");
        assert!(!bare.contains("\"grammar\""), "the JSON is not repeated: {bare}");
        let fenced = render_history(&panel, &[speech("```json\n{\"grammar\": 4}\n```")]);
        assert!(fenced.contains("[Ann, round 1] scores now: grammar 4 — The answer skips the den.\n"), "{fenced}");
        let prose = render_history(&panel, &[speech("I disagree with Bea.\n{\"grammar\": 4}")]);
        assert!(prose.contains("[Ann, round 1] I disagree with Bea.") && !prose.contains("skips the den"), "{prose}");
        assert!(prose.contains("(Ann's scores now: grammar 4"), "{prose}");
    }

    #[test]
    fn reply_words_hide_the_evaluation_and_only_grow_while_streaming() {
        let reply = "Bea, the answer skips the den. `den` is in the story.\n```json\n{\"grammar\": 4, \
                     \"justification\": \"Skips the den.\"}\n```";
        let mut shown = "";
        for cut in (0..=reply.len()).filter(|&c| reply.is_char_boundary(c)) {
            let words = reply_words(&reply[..cut], false, false);
            assert!(words.starts_with(shown), "{words:?} after {shown:?}");
            assert!(!words.contains('{') && !words.ends_with('`'), "{words:?}");
            shown = words;
        }
        assert_eq!(shown, "Bea, the answer skips the den. `den` is in the story.");
        assert_eq!(reply_words(reply, true, true), shown);
        assert_eq!(reply_words("{\"grammar\": 4}", true, true), "", "an evaluation alone has no words");
        assert_eq!(reply_words("{\"grammar\": 4}", false, false), "");
        assert_eq!(
            reply_words("  {\"grammar\": ", true, false),
            "{\"grammar\":",
            "an unreadable reply shows as it came"
        );
    }
}
