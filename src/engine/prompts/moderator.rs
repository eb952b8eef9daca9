//! The moderator's requests: the group's scores table, who may speak next,
//! and the answer form it must keep to.

use std::fmt::Write;

use super::format::{fmt_num, turns};
use super::history::HistoryEntry;
use super::members::{DEBATE_HEADING, discussion, last_speaker, own_personas, request};
use super::persona::roster;
use crate::engine::reasons::ELIGIBLE_LINE;
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;
use crate::session::event::Evaluation;

/// The line that opens a moderator's instructions (after the shared part of
/// the prompt); see [`is_moderator_request`].
const MODERATOR_OPENING: &str = "You moderate the debate of the ";

/// One row of the moderator's scores table.
pub struct ScoresRow<'a> {
    pub agent: &'a str,
    pub latest: Option<&'a Evaluation>,
    pub turns: u32,
    pub finished: bool,
}

/// The dimensions' keys, then `overall` where the panel has one: the order
/// of the moderator's table ([`Panel::score_keys`]).
pub(super) fn score_keys(panel: &Panel) -> Vec<String> {
    panel.score_keys()
}

/// The line that ends the moderator's scores table when every member has
/// the same scores: without it, the model's reasons named a score that
/// differed when none did.
const SCORES_AGREE: &str =
    "Nobody's scores differ: choose someone whose point nobody has answered yet, or who has spoken least.";

/// The group's latest scores for the moderator, a line per agent with the
/// dimensions, then overall (where the panel has one), in the order the panel's system prompt names:
/// `- Ann: 4, 3, 4 (2 turns)`; then [`SCORES_AGREE`] when every member has
/// scores and they are all the same.
pub fn scores_table(panel: &Panel, rows: &[ScoresRow<'_>]) -> String {
    let mut s = String::from("Current scores:\n");
    let mut distinct = std::collections::BTreeSet::new();
    for row in rows {
        let scores = score_row(panel, row.latest).unwrap_or_else(|| "none yet".into());
        let status = if row.finished { ", finished" } else { "" };
        let _ = writeln!(s, "- {}: {scores} ({}{status})", row.agent, turns(row.turns));
        distinct.insert(row.latest.is_some().then_some(scores));
    }
    if rows.len() > 1 && distinct.len() == 1 && !distinct.contains(&None) {
        let _ = writeln!(s, "{SCORES_AGREE}");
    }
    s
}

/// A member's scores as the table shows them (`4, 3, 4`; `-` for a key
/// without a score); `None` before its first evaluation.
pub fn score_row(panel: &Panel, latest: Option<&Evaluation>) -> Option<String> {
    let ev = latest?;
    let keys = score_keys(panel);
    Some(keys.iter().map(|k| ev.score(k).map(fmt_num).unwrap_or_else(|| "-".into())).collect::<Vec<_>>().join(", "))
}

/// The heading of [`standings`].
const STANDINGS_HEADING: &str = "What the table shows about those who may speak:";

/// What the table shows about each member who may speak (see
/// [`crate::engine::moderator::standing`]), a line each after
/// [`STANDINGS_HEADING`]; under `reasons = "checked"`, the last lines of
/// the moderator's request before its answer form, after who may speak
/// (the 0.5B model gave the lines right before the answer form as its
/// reason: there they are a reason).
pub fn standings(lines: &[String]) -> String {
    let mut s = format!("{STANDINGS_HEADING}\n");
    for standing in lines {
        let _ = writeln!(s, "- {standing}.");
    }
    s
}

/// Who the moderator's request says spoke last: the latest speech's speaker.
pub fn last_to_speak(history: &[HistoryEntry]) -> Option<&str> {
    last_speaker(history, "")
}

/// Messages asking the moderator who should speak next. They begin like the
/// group's agents' prompts (panel system prompt, item, discussion so far), so
/// the shared part is read once for the moderator and the next speaker.
pub fn moderator_messages(
    panel: &Panel,
    group: &str,
    item: &Item,
    history: &[HistoryEntry],
    table: &str,
    standings: &str,
    eligible: &[&str],
) -> Vec<ChatMessage> {
    let last = match last_to_speak(history) {
        Some(last) => format!("{last} spoke last. "),
        None => String::new(),
    };
    let mut turn = format!(
        "{MODERATOR_OPENING}\"{group}\" stakeholder group.\n\
         {table}{last}Agents who {ELIGIBLE_LINE} {}.\n{standings}Answer with the JSON object only; its reason begins with the name \
         of the agent you choose and says what they should answer or which score of theirs differs.",
        eligible.join(", ")
    );
    // The members see only their own personas; the moderator, which does
    // not judge, is told what each member stands for.
    if own_personas(panel) {
        turn = format!("{turn}\n\n{}", roster(panel, group).trim_end());
    }
    request(panel, discussion(panel, item, group, DEBATE_HEADING, history), turn)
}

/// Whether a request's speaker message (its third) is a moderator's (tests
/// and stand-in servers tell participants apart with it).
pub fn is_moderator_request(speaker_message: &str) -> bool {
    speaker_message.contains(MODERATOR_OPENING)
}

/// The follow-up sent to a moderator whose reply could not be used: why,
/// then the request's [`standings`] again (when it had them: right before
/// the answer form, as there; sent back without them, the 0.5B model gave
/// the correction itself as its next reason), then the answer form.
pub fn moderator_retry(reason: &str, standings: &str, eligible: &[&str]) -> ChatMessage {
    let between = if standings.is_empty() { " ".to_string() } else { format!("\n{standings}") };
    ChatMessage::user(format!("That answer could not be used: {reason}.{between}{}", moderator_format(eligible)))
}

/// What a moderator's answer must be.
pub fn moderator_format(eligible: &[&str]) -> String {
    format!(
        "Choose exactly one of: {}. Answer only with {{\"next\": \"<name>\", \"reason\": \"<one sentence that begins with that name>\"}}.",
        eligible.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moderators_part_holds_only_what_changes_between_turns() {
        let panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cy"])]);
        let item = crate::testkit::item();
        let keys: Vec<&str> = panel.dimensions.iter().map(|d| d.key.as_str()).collect();
        let ev =
            Evaluation { scores: [(keys[0].to_string(), 4.0)].into(), overall: Some(3.5), ..Evaluation::default() };
        let rows = [
            ScoresRow { agent: "Ann", latest: Some(&ev), turns: 2, finished: false },
            ScoresRow { agent: "Bea", latest: None, turns: 0, finished: true },
        ];
        let table = scores_table(&panel, &rows);
        assert!(table.starts_with("Current scores:\n"), "{table}");
        let dashes = vec!["-"; keys.len() - 1].join(", ");
        assert!(table.contains(&format!("- Ann: 4, {dashes}, 3.5 (2 turns)\n")), "{table}");
        assert!(table.contains("- Bea: none yet (0 turns, finished)\n"), "{table}");
        assert!(!table.contains(SCORES_AGREE), "{table}");
        // Everyone with the same scores: the moderator hears that nobody differs.
        let same = [
            ScoresRow { agent: "Ann", latest: Some(&ev), turns: 2, finished: false },
            ScoresRow { agent: "Bea", latest: Some(&ev), turns: 1, finished: false },
        ];
        assert!(scores_table(&panel, &same).ends_with(&format!("{SCORES_AGREE}\n")));
        let other = Evaluation { overall: Some(4.0), ..ev.clone() };
        let differ = [
            ScoresRow { agent: "Ann", latest: Some(&other), turns: 2, finished: false },
            ScoresRow { agent: "Bea", latest: Some(&ev), turns: 1, finished: false },
        ];
        assert!(!scores_table(&panel, &differ).contains(SCORES_AGREE));
        let lines = ["Bea's grammar score (4) is furthest from the others' average (3)".to_string()];
        let messages = moderator_messages(&panel, "Parents", &item, &[], &table, &standings(&lines), &["Bea", "Cy"]);
        assert!(is_moderator_request(&messages[2].content));
        let turn = &messages[2].content;
        let at = |s: &str| turn.find(s).unwrap_or_else(|| panic!("{s:?} not in {turn}"));
        // The standings last, right before the answer form: the lines a
        // small model copies as its reason are there a reason.
        assert!(at("Current scores:") < at("Agents who may speak next: Bea, Cy."));
        assert!(at("Agents who may speak next: Bea, Cy.") < at(STANDINGS_HEADING));
        assert!(at("- Bea's grammar score (4) is furthest from the others' average (3).\nAnswer with") > 0);
        // The moderator's rules and answer form are in the shared system prompt.
        assert!(messages[0].content.contains("chooses who speaks next") && messages[0].content.contains("\"next\""));
        let order = format!("in this order: {}, overall.", keys.join(", "));
        assert!(messages[0].content.contains(&order), "the table's columns are named once: {}", messages[0].content);
        assert!(!messages[2].content.contains("chooses who speaks next"));
    }
}
