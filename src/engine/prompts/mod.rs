//! The words moot sends to models: personas, the item, the shared history and
//! the required output form. The item is always clearly delimited so nothing
//! inside it reads as an instruction or as an agent's verdict.
//!
//! - `panel.rs`: what every prompt of a panel shows (item, task, rubric,
//!   output form, the shared system prompt); `schema.rs`, the JSON schemas
//!   that constrain a reply;
//! - `persona.rs`: a group's members and the speaker's line;
//! - `history.rs`: the shared history and how prompts show it;
//! - `members.rs`, `moderator.rs`, `closing.rs`: the requests of the panel's
//!   members, of a group's moderator, and of the aggregator and final judge;
//! - `ahead.rs` and `partial.rs`: a request's beginning while a speech still
//!   streams, read from a reply whose JSON is not complete yet;
//! - `format.rs`: numbers and scores as text (the screens use it too);
//! - `again.rs`: the note that asks a speaker again after a repeated speech.

mod again;
mod ahead;
mod closing;
mod format;
mod history;
mod members;
mod moderator;
mod panel;
mod partial;
mod persona;
mod schema;

pub use again::{misquote_note, redraw_note};
pub use ahead::{debate_ahead, discussion_ahead};
pub(crate) use ahead::{shared_so_far, with_placeholder};
pub use closing::{
    AGGREGATOR_OPENING, GroupResult, SYNTHESIS_SECTIONS, aggregator_messages, final_judge_messages,
    group_synthesis_messages, results_facts, synthesis_retry,
};
pub use format::{fmt_num, format_scores, one_decimal, turns};
pub(crate) use history::render_history;
pub use history::{HISTORY_WINDOW, HistoryEntry, history_window, reply_words};
pub(crate) use members::DISCUSSION_HEADING;
pub use members::{
    addressee, answered_in, debate_messages, discussion_messages, initial_messages, opening_words, repair_message,
};
pub(crate) use members::{debates, feedback_opening, full_first_feedback};
pub use moderator::{
    ScoresRow, is_moderator_request, last_to_speak, moderator_format, moderator_messages, moderator_retry, score_row,
    scores_table, standings,
};
pub(crate) use panel::rubric;
pub use panel::{
    fence_end, fence_mark, fence_start, item_parts, output_format, panel_system, render_item, scale_words, task_text,
};
pub use partial::{justification_streaming, streaming_evaluation};
pub use persona::{agent_named_in, judge_line, persona, roster};
pub use schema::{JUSTIFICATION_MAX, evaluation_schema, score_schema};
