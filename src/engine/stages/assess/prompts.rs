//! The assessment's request: every aspect (or one) with its evaluation
//! steps, a value and a reason for each.

use crate::engine::prompts::judge_line;
use std::collections::BTreeMap;
use std::fmt::Write;

use crate::engine::prompts::{fmt_num, render_item};
use crate::item::Item;
use crate::panel::{AgentSpec, Dimension, Panel};
use crate::provider::ChatMessage;

pub(crate) fn system(panel: &Panel) -> String {
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
pub(crate) fn aspect_line(d: &Dimension) -> String {
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
