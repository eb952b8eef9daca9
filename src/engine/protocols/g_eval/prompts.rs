//! G-Eval's requests: writing a dimension's evaluation steps, and scoring
//! one dimension with them.

use std::fmt::Write;

use crate::engine::prompts::render_item;
use crate::item::Item;
use crate::panel::{AgentSpec, Dimension, Panel};
use crate::provider::ChatMessage;

/// The system prompt of every G-Eval request of a panel: the task and the
/// scale. It is the same for steps and scores, for every dimension and judge,
/// so that providers reuse the work on it.
pub fn system(panel: &Panel) -> String {
    format!(
        "You evaluate generated text carefully and fairly, one quality at a time.\n\
         The task: {}\n\
         Scores are {}. Each request names the quality to judge and, when you score, the evaluation steps to \
         follow.",
        crate::engine::prompts::task_text(panel),
        crate::engine::prompts::scale_words(panel),
    )
}

fn criterion(d: &Dimension) -> String {
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

/// Who the judge is, when the panel gives it a persona.
pub(crate) fn judge_line(judge: &AgentSpec) -> String {
    let mut s = format!("You are {}", judge.name);
    if !judge.role.trim().is_empty() {
        let _ = write!(s, ", {}", judge.role.trim());
    }
    s.push('.');
    if !judge.perspective.trim().is_empty() {
        let _ = write!(s, " What you care about: {}", judge.perspective.trim());
    }
    s
}

/// Asks `judge` to score the item on one dimension, following `steps`.
/// `instructions` is the verdict's closing instruction. `score_first`: the
/// reply is the score alone (the filled-in form), no reasoning before it.
pub fn score_messages(
    panel: &Panel,
    item: &Item,
    judge: &AgentSpec,
    dimension: &Dimension,
    steps: &str,
    instructions: &str,
    score_first: bool,
) -> Vec<ChatMessage> {
    let how = if score_first {
        "Follow the steps for the item above without writing them out or explaining your score."
    } else {
        "Follow the steps for the item above, without repeating them: in one or two sentences of plain prose, say \
         what in the item decides the score, then score it."
    };
    vec![
        ChatMessage::system(system(panel)),
        ChatMessage::user(render_item(item)),
        ChatMessage::user(format!(
            "{}\nQuality to judge — {}\n\nEvaluation steps:\n{}\n\n{how} {instructions}",
            judge_line(judge),
            criterion(dimension),
            steps.trim(),
        )),
    ]
}
