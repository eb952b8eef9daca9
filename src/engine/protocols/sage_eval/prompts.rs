//! SAGEval's requests: the evaluator scoring every aspect with its steps,
//! and the meta-evaluator reviewing those scores.

use crate::engine::stages::judge_line;
use std::collections::BTreeMap;
use std::fmt::Write;

use crate::engine::prompts::{fmt_num, render_item};
use crate::item::Item;
use crate::panel::{AgentSpec, Dimension, Panel};
use crate::provider::ChatMessage;
use crate::session::event::{AspectValue, Evaluation};

fn system(panel: &Panel) -> String {
    format!(
        "You review generated text aspect by aspect, without a reference answer.\n\
         The task: {}\n\
         Scored aspects take whole numbers from {} (worst) to {} (best); a descriptive aspect takes one of its labels.",
        crate::engine::prompts::task_text(panel),
        fmt_num(panel.scale.min),
        fmt_num(panel.scale.max),
    )
}

/// `Accuracy (accuracy): definition`, with the labels of a categorical aspect.
fn aspect_line(d: &Dimension) -> String {
    let mut s = format!("{} ({})", d.label(), d.key);
    if !d.description.trim().is_empty() {
        let _ = write!(s, ": {}", d.description.trim());
    }
    if !d.labels.is_empty() {
        let _ = write!(s, " [labels: {}]", d.labels.join(", "));
    }
    s
}

/// Asks the evaluator for a value and a reason on `judged` (every aspect,
/// or one), following each aspect's steps.
pub fn evaluate_messages(
    panel: &Panel,
    item: &Item,
    judge: &AgentSpec,
    steps: &BTreeMap<String, String>,
    judged: &[Dimension],
    instructions: &str,
) -> Vec<ChatMessage> {
    let mut aspects = String::new();
    for (n, d) in judged.iter().enumerate() {
        let _ = writeln!(aspects, "{}. {}", n + 1, aspect_line(d));
        if let Some(s) = steps.get(&d.key).filter(|s| !s.trim().is_empty()) {
            let _ = writeln!(aspects, "   Steps:\n{}", indent(s.trim()));
        }
    }
    let ask = if judged.len() == 1 {
        "Judge the item above on this aspect, following its steps:\n{aspects}\nReason briefly about what in the item \
         supports your value, then give it."
    } else {
        "Judge the item above on each of these aspects, following its steps:\n{aspects}\nFor each aspect, reason \
         briefly about what in the item supports your value, then give it."
    }
    .replace("{aspects}", &aspects);
    vec![
        ChatMessage::system(system(panel)),
        ChatMessage::user(render_item(item)),
        ChatMessage::user(format!("{}\n{ask} {instructions}", judge_line(judge))),
    ]
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("   {l}")).collect::<Vec<_>>().join("\n")
}

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
