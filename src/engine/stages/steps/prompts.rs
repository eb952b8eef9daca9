//! The request for a dimension's evaluation steps.

use crate::panel::{Dimension, Panel};
use crate::provider::ChatMessage;

/// The system prompt of every G-Eval request of a panel: the task and the
/// scale. It is the same for steps and scores, for every dimension and judge,
/// so that providers reuse the work on it.
pub(crate) fn system(panel: &Panel) -> String {
    format!(
        "You evaluate generated text carefully and fairly, one quality at a time.\n\
         The task: {}\n\
         Scores are {}. Each request names the quality to judge and, when you score, the evaluation steps to \
         follow.",
        crate::engine::prompts::task_text(panel),
        crate::engine::prompts::scale_words(panel),
    )
}

pub(crate) fn criterion(d: &Dimension) -> String {
    let description = d.description.trim();
    if description.is_empty() { format!("{} ({})", d.label(), d.key) } else { format!("{}: {description}", d.label()) }
}

/// Asks for a dimension's evaluation steps (from the task and the dimension's
/// definition; no item is shown).
pub fn steps_messages(panel: &Panel, dimension: &Dimension) -> Vec<ChatMessage> {
    vec![
        ChatMessage::system(system(panel)),
        ChatMessage::user(format!(
            "Quality to judge — {}\n\n\
             Before any text is scored, write the evaluation steps that a careful evaluator should follow to rate \
             this quality: three to five short numbered steps, each a concrete action (what to read, what to compare \
             with what, what lowers or raises the score). Do not score anything. Reply with the numbered steps only.",
            criterion(dimension)
        )),
    ]
}
