//! The requests of the roles that close a panel: the aggregator's synthesis
//! and the final judge of a discussion without consensus.

use super::history::{HistoryEntry, render_history};
use super::panel::{output_format, render_item, rubric, task_text};
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;

/// Messages for the aggregator's synthesis.
pub fn aggregator_messages(panel: &Panel, item: &Item, finals: &str) -> Vec<ChatMessage> {
    let system = format!(
        "You write the synthesis of an evaluation panel's debate. The task: {}\n\
         Be faithful to what the panel said; do not add your own scores.",
        task_text(panel)
    );
    let user = format!(
        "{}\n\nThe final evaluations of every stakeholder group:\n{finals}\n\
         Write a short synthesis (at most 200 words) in three paragraphs, beginning with \"Agreement:\", \
         \"Disagreement:\" and \"Overall:\": where the stakeholders agree, where they disagree and why, and an \
         overall interpretation of the content's quality. Do not list the scores again.",
        render_item(item)
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// Messages for the synthesis of one stakeholder group (MAJ-EVAL's
/// `aggregation = "per-group"`): the group's whole debate, each member's
/// final feedback and the group's average scores.
pub fn group_synthesis_messages(
    panel: &Panel,
    item: &Item,
    group: &str,
    history: &[HistoryEntry],
    finals: &str,
    average: &str,
) -> Vec<ChatMessage> {
    let system = format!(
        "You write the synthesis of one stakeholder group's debate on an evaluation panel. The task: {}\n\
         Be faithful to what the group said; do not add your own scores.",
        task_text(panel)
    );
    let user = format!(
        "{}\n\nThe debate of the \"{group}\" stakeholder group, from the first evaluations on:\n{}\n\
         Each member's final feedback:\n{finals}\nThe group's average scores: {average}.\n\n\
         Write the group's synthesis (at most 250 words) in three paragraphs, beginning with \"Agreement:\", \
         \"Disagreement:\" and \"Overall:\": where the members agree, where they still disagree and why, and \
         what the group's average scores mean for the content's quality. Do not list every score again.",
        render_item(item),
        render_history(panel, history),
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// The words the aggregator's synthesis begins with (see
/// [`ChatRequest::opening`](crate::provider::ChatRequest::opening)): its
/// first paragraph's label.
pub const AGGREGATOR_OPENING: &str = "Agreement:";

/// Messages for the final judge of a discussion without consensus.
pub fn final_judge_messages(panel: &Panel, item: &Item, history: &[HistoryEntry]) -> Vec<ChatMessage> {
    let system = format!(
        "You are the final judge of an evaluation panel that could not reach consensus. The task: {}\n{}",
        task_text(panel),
        rubric(panel)
    );
    let user = format!(
        "{}\n\nThe evaluators' results, confidences, agreements, disagreements and reasons, round by round:\n{}\n\
         Weigh the arguments, not the number of voices, and give the decisive evaluation.\n\n{}",
        render_item(item),
        render_history(panel, history),
        output_format(panel)
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}
