//! The scoring requests: one dimension, scored with its evaluation steps.

use crate::engine::prompts::render_item;
use crate::engine::stages::steps::prompts::{criterion, system};
use crate::item::Item;
use crate::panel::{AgentSpec, Dimension, Panel};
use crate::provider::ChatMessage;

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
            crate::engine::prompts::judge_line(judge),
            criterion(dimension),
            steps.trim(),
        )),
    ]
}
