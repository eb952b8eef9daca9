//! The meta-evaluator's request.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::engine::prompts::render_item;
use crate::engine::stages::assess::prompts::{aspect_line, system};
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;
use crate::session::event::{AspectValue, Evaluation};

/// Asks the meta-evaluator to review an evaluation: rectify values, improve
/// definitions, propose up to `max_new` aspects.
pub fn review_messages(
    panel: &Panel,
    item: &Item,
    agent: &str,
    evaluation: &Evaluation,
    reasons: &BTreeMap<String, String>,
    max_new: usize,
    instructions: &str,
) -> Vec<ChatMessage> {
    let mut table = String::new();
    for d in &panel.dimensions {
        let value = AspectValue::of(evaluation, &d.key).map_or_else(|| "none".to_string(), |v| v.to_string());
        let _ = writeln!(table, "- {}\n  {agent}'s value: {value}", aspect_line(d));
        if let Some(r) = reasons.get(&d.key) {
            let _ = writeln!(table, "  {agent}'s reason: {r}");
        }
    }
    let new = if max_new == 0 {
        "Propose no new aspects.".to_string()
    } else {
        format!(
            "If the list misses something that matters for this kind of text, propose up to {max_new} new aspects, \
             each with a key, a definition and your score of the item on it."
        )
    };
    vec![
        ChatMessage::system(format!(
            "{}\nYou are the meta-evaluator: you check another evaluator's judgments of an item. Be sceptical of \
             generous scores, and change a value only when the item gives you a concrete reason to.",
            system(panel)
        )),
        ChatMessage::user(render_item(item)),
        ChatMessage::user(format!(
            "{agent} judged the item above on these aspects:\n{table}\n\
             For each aspect, decide whether the value stands. Keep it when it is right; rectify it when you disagree, \
             with the value you would give and the reason. Where an aspect's definition is vague, overlapping or \
             beside the point for this item, write a better one. {new}\n{instructions}"
        )),
    ]
}
