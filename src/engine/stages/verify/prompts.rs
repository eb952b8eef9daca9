//! The verifier's request.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::engine::prompts::{format_scores, output_format, render_item, rubric, task_text};
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;
use crate::session::event::Evaluation;

/// Asks the verifier to check `member`'s evaluation, score by score.
pub(super) fn verify_messages(
    panel: &Panel,
    item: &Item,
    member: &str,
    evaluation: &Evaluation,
    steps: &BTreeMap<String, String>,
) -> Vec<ChatMessage> {
    let system = format!(
        "You check another evaluator's work before it is counted. You judge the item yourself, and you change a \
         score only when the item shows it is wrong. The task: {}\n{}",
        task_text(panel),
        rubric(panel)
    );
    let mut user = render_item(item);
    if !steps.is_empty() {
        user.push_str("\n\nThe evaluation steps each quality was scored with:");
        for d in &panel.dimensions {
            if let Some(s) = steps.get(&d.key) {
                let _ = write!(user, "\n{}:\n{}", d.label(), s.trim());
            }
        }
    }
    let _ = write!(
        user,
        "\n\n{member}'s evaluation: {}\nTheir reasons: {}\n\nCheck every score against the item: keep each one the \
         item supports, and correct each one it does not. In your justification, say which scores you kept and \
         which you changed, and why, in one to three sentences.\n\n{}",
        format_scores(panel, evaluation),
        non_empty(evaluation.justification.trim()),
        output_format(panel)
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

fn non_empty(s: &str) -> &str {
    if s.is_empty() { "(none given)" } else { s }
}
