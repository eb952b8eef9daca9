//! The panel members' requests: a first evaluation, a debate turn, a
//! collaborative (or debating) discussion round, and the repair of an
//! unreadable reply.

use super::format::format_scores;
use super::history::{HistoryEntry, render_history};
use super::panel::{agent_system, item_parts, output_format, panel_system, render_item};
use super::persona::{persona, persona_text, roster};
use crate::item::Item;
use crate::panel::{AgentSpec, Panel};
use crate::provider::ChatMessage;
use crate::session::event::Evaluation;

/// The closing reminder of an agent's request (the full output form is in
/// the panel's system prompt, which every agent shares).
const END_WITH_JSON: &str =
    "Write two to four sentences of plain prose first (no lists), then end with the JSON evaluation.";
/// The closing reminder of a free debate turn (MAJ-EVAL's `turns = "free"`):
/// no length asked for.
const FREE_END_WITH_JSON: &str = "Write in plain prose, then end with the JSON evaluation.";

/// Whether each agent's instructions carry its own persona alone (MAJ-EVAL's
/// `personas = "own"`): its own system prompt, and no roster of the others.
pub(super) fn own_personas(panel: &Panel) -> bool {
    panel.protocol.has("personas", "own")
}

/// A member's request: the system prompt (the panel's shared one, or the
/// agent's own under `personas = "own"`), the shared part and its own part.
fn member_request(panel: &Panel, group: &str, agent: &AgentSpec, shared: String, turn: String) -> Vec<ChatMessage> {
    if own_personas(panel) {
        vec![ChatMessage::system(agent_system(panel, group, agent)), ChatMessage::user(shared), ChatMessage::user(turn)]
    } else {
        request(panel, shared, turn)
    }
}

/// The speaker's line in its own part of a request: its persona (see
/// [`persona`]) or, when its own system prompt carries the persona, its
/// name and group alone.
fn speaker_line(panel: &Panel, group: &str, agent: &AgentSpec) -> String {
    if own_personas(panel) {
        format!(
            "You are {}, a member of the \"{group}\" stakeholder group (your profile is in your instructions).\n",
            agent.name
        )
    } else {
        persona(panel, group, agent)
    }
}

/// A panel member's request: the shared system prompt, a message with what
/// everyone in the group sees (the item and the discussion so far) and one
/// with this speaker's part (persona or moderator instructions). Keeping the
/// shared part in a message of its own marks where conversations branch, so
/// the embedded model knows which cached state later turns will continue.
pub(super) fn request(panel: &Panel, shared: String, turn: String) -> Vec<ChatMessage> {
    vec![ChatMessage::system(panel_system(panel)), ChatMessage::user(shared), ChatMessage::user(turn)]
}

/// What every member of a group sees first: the item (the same for all
/// groups), then the group's members.
fn group_context(panel: &Panel, item: &Item, group: &str) -> String {
    if own_personas(panel) {
        let names = others(panel, group, "");
        if names.is_empty() {
            return render_item(item);
        }
        return format!("{}\n\nThe \"{group}\" stakeholder group's members: {}.", render_item(item), names.join(", "));
    }
    let roster = roster(panel, group);
    if roster.is_empty() { render_item(item) } else { format!("{}\n\n{}", render_item(item), roster.trim_end()) }
}

/// The heading of the discussion in debates and in the moderator's requests.
pub(super) const DEBATE_HEADING: &str = "The panel's discussion so far:";
/// The heading of the discussion in collaborative discussion rounds.
pub(crate) const DISCUSSION_HEADING: &str = "Everyone's results, confidences and reasons so far:";

/// The group's context followed by the discussion under `heading`.
pub(super) fn discussion(panel: &Panel, item: &Item, group: &str, heading: &str, history: &[HistoryEntry]) -> String {
    format!("{}\n\n{heading}\n{}", group_context(panel, item, group), render_history(panel, history))
}

/// Messages for an independent first evaluation: the JSON evaluation alone,
/// so that its scores show as soon as they are written (the debate's turns
/// speak first; see [`END_WITH_JSON`]). The shared message is the item
/// alone, the same for every agent of the panel, and the speaker's part
/// holds its whole persona: an evaluation made on one's own needs nobody
/// else's profile, and a model that keeps prompt states reads the item once
/// for all agents instead of each group's roster for each (the debate's
/// requests add the roster after the item).
pub fn initial_messages(
    panel: &Panel,
    group: &str,
    agent: &AgentSpec,
    item: &Item,
    with_confidence: bool,
) -> Vec<ChatMessage> {
    let confidence = if with_confidence { " State how confident you are." } else { "" };
    let who = if own_personas(panel) { speaker_line(panel, group, agent) } else { persona_text(group, agent, true) };
    let turn = if full_first_feedback(panel) {
        format!(
            "{who}\nEvaluate the content above on your own, before hearing anyone else. First write your feedback in \
             plain prose. Begin with \"{}\" and say, from your perspective, what the content does well and what it \
             does poorly, in several sentences that point to specific parts of it. Then end with the JSON \
             evaluation.{confidence}",
            feedback_opening(panel, item)
        )
    } else {
        format!(
            "{who}\nEvaluate the content above on your own, before hearing anyone else. Give your first scores at \
             once: answer with the JSON evaluation alone, no words before it, its justification naming what in \
             {} earns those scores from your perspective.{confidence}",
            item_parts(panel, item)
        )
    };
    member_request(panel, group, agent, render_item(item), turn)
}

/// The words a first evaluation's feedback begins with (MAJ-EVAL's
/// `first_feedback = "full"`): the first of the item's parts that the
/// requests name ("The question"; "The content" by default). Without
/// them the embedded models began with a markdown heading about their own
/// persona ("### Feedback on the Content … from Ms. Okafor") and wrote
/// about it; given them, they wrote about the item.
pub fn feedback_opening(panel: &Panel, item: &Item) -> String {
    let parts = item_parts(panel, item);
    let first = parts.split(',').next().unwrap_or_default();
    let first = first.split(" or ").next().unwrap_or_default().split(" and ").next().unwrap_or_default().trim();
    let first = first.strip_suffix(" to evaluate").unwrap_or(first);
    let first = if first.is_empty() { "the content" } else { first };
    let mut chars = first.chars();
    chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default()
}

/// Whether a first evaluation is feedback in several sentences before its
/// scores (MAJ-EVAL's `first_feedback = "full"`) rather than the scores at once.
pub(crate) fn full_first_feedback(panel: &Panel) -> bool {
    panel.protocol.has("first_feedback", "full")
}

/// Messages for a debate turn in a moderated free debate.
pub fn debate_messages(
    panel: &Panel,
    group: &str,
    agent: &AgentSpec,
    item: &Item,
    history: &[HistoryEntry],
    own_latest: Option<&Evaluation>,
) -> Vec<ChatMessage> {
    let own = own_latest.map(|e| format_scores(panel, e)).unwrap_or_else(|| "(none yet)".into());
    if panel.protocol.has("turns", "free") {
        let turn = format!(
            "{}Your latest scores: {own}\nIt is your turn in the debate, {}. Answer the discussion from your own \
             perspective: agree, disagree or add nuance, pointing to specific parts of the item. \
             {FREE_END_WITH_JSON}",
            speaker_line(panel, group, agent),
            agent.name,
        );
        return member_request(panel, group, agent, discussion(panel, item, group, DEBATE_HEADING, history), turn);
    }
    let parts = item_parts(panel, item);
    let task = match (last_speaker(history, &agent.name), addressee(panel, group, &agent.name, history, own_latest)) {
        (Some(last), _) => format!(
            "{last} spoke last. Begin with \"{}\" and answer their point: agree or disagree, pointing to \
             {parts}.",
            opening_words(last)
        ),
        // Nobody's scores differ from the speaker's: asking where they
        // disagree would have them invent a disagreement that their own
        // scores then contradict.
        (None, Some(first)) if score_distance(own_latest, latest_evaluation(history, &first)) == Some(0.0) => {
            format!(
                "Open the debate: begin with \"{}\" and say what you would add to {first}'s first evaluation, \
                 pointing to {parts}; you both gave the same scores.",
                opening_words(&first)
            )
        }
        (None, Some(first)) => format!(
            "Open the debate: begin with \"{}\" and say where you disagree with {first}'s first evaluation, \
             pointing to {parts}.",
            opening_words(&first)
        ),
        (None, None) => format!("Open the debate: say where you disagree with the others, pointing to {parts}."),
    };
    let turn = format!(
        "{}Your latest scores: {own}\nIt is your turn in the debate, {}. {task} {END_WITH_JSON}",
        speaker_line(panel, group, agent),
        agent.name,
    );
    member_request(panel, group, agent, discussion(panel, item, group, DEBATE_HEADING, history), turn)
}

/// Whom a debate speaker answers: the member who spoke last or, in the
/// debate's first turn, the member whose latest scores differ most from the
/// speaker's (the first in the panel's order on ties, or when nobody has
/// scores to compare).
pub fn addressee(
    panel: &Panel,
    group: &str,
    speaker: &str,
    history: &[HistoryEntry],
    own: Option<&Evaluation>,
) -> Option<String> {
    if let Some(last) = last_speaker(history, speaker) {
        return Some(last.to_string());
    }
    let distance = |name: &str| score_distance(own, latest_evaluation(history, name)).unwrap_or(0.0);
    let mut best: Option<(&str, f64)> = None;
    for name in others(panel, group, speaker) {
        let d = distance(name);
        if best.is_none_or(|(_, most)| d > most) {
            best = Some((name, d));
        }
    }
    best.map(|(name, _)| name.to_string())
}

/// `name`'s latest readable evaluation in the discussion.
fn latest_evaluation<'h>(history: &'h [HistoryEntry], name: &str) -> Option<&'h Evaluation> {
    history.iter().rev().find_map(|e| match e {
        HistoryEntry::Initial { agent, evaluation: Some(ev), .. }
        | HistoryEntry::Speech { agent, evaluation: Some(ev), .. }
            if agent == name =>
        {
            Some(ev)
        }
        _ => None,
    })
}

/// How far apart two evaluations' scores are (the sum of the differences
/// over the dimensions both score), when there are both.
fn score_distance(a: Option<&Evaluation>, b: Option<&Evaluation>) -> Option<f64> {
    let (a, b) = (a?, b?);
    Some(a.scores.iter().filter_map(|(k, v)| b.scores.get(k).map(|t| (v - t).abs())).sum())
}

/// The words a debate speech begins with when it answers `addressee`: their
/// name and the speaker's "I", so that the speech is the speaker's own
/// answer (the embedded model is given them; see
/// [`ChatRequest::opening`](crate::provider::ChatRequest::opening)).
pub fn opening_words(addressee: &str) -> String {
    format!("{addressee}, I")
}

/// The member an opening of [`opening_words`] answers ("Dana, I": "Dana").
pub fn answered_in(opening: &str) -> Option<&str> {
    opening.strip_suffix(", I")
}

/// The group's members other than `speaker`, in the panel's order.
fn others<'p>(panel: &'p Panel, group: &str, speaker: &str) -> Vec<&'p str> {
    panel
        .groups
        .iter()
        .filter(|g| g.name == group)
        .flat_map(|g| &g.agents)
        .map(|a| a.name.as_str())
        .filter(|name| *name != speaker)
        .collect()
}

/// Who made the discussion's latest speech, if not `speaker`.
pub(super) fn last_speaker<'h>(history: &'h [HistoryEntry], speaker: &str) -> Option<&'h str> {
    history.iter().rev().find_map(|e| match e {
        HistoryEntry::Speech { agent, .. } if agent != speaker => Some(agent.as_str()),
        _ => None,
    })
}

/// Whether CollabEval's discussion rounds are a debate (`discussion =
/// "debate"`, the paper's ablation) rather than a collaboration: each
/// evaluator defends its own result and attacks the others'.
pub(crate) fn debates(panel: &Panel) -> bool {
    panel.protocol.has("discussion", "debate")
}

/// Messages for a collaborative discussion round (CollabEval), or, with
/// `argue`, an arguing one (its debate ablation): only the speaker's part
/// differs.
pub fn discussion_messages(
    panel: &Panel,
    group: &str,
    agent: &AgentSpec,
    item: &Item,
    history: &[HistoryEntry],
    round: u32,
    argue: bool,
) -> Vec<ChatMessage> {
    let others = others(panel, group, &agent.name);
    let parts = item_parts(panel, item);
    let answer = match last_speaker(history, &agent.name).or(others.first().copied()) {
        Some(first) => {
            format!(" Answer at least one of the others ({}) by name, as in \"{first}, …\".", others.join(", "))
        }
        None => String::new(),
    };
    let turn = if argue {
        format!(
            "{}\n\
             Discussion round {round}. {}, argue your case: defend your own evaluation, and point out where the others' \
             scores and reasons are weak or wrong, pointing to {parts}.{answer} Change a \
             score only when an argument against it convinces you. Then give your evaluation and confidence. \
             {END_WITH_JSON}",
            persona(panel, group, agent),
            agent.name,
        )
    } else {
        format!(
            "{}\n\
             Discussion round {round}. {}, say briefly where you agree and where you disagree with the others and why, \
             pointing to {parts}.{answer} Then give your updated evaluation and \
             confidence. {END_WITH_JSON}",
            persona(panel, group, agent),
            agent.name,
        )
    };
    request(panel, discussion(panel, item, group, DISCUSSION_HEADING, history), turn)
}

/// A follow-up asking for a readable evaluation after a reply that had none.
pub fn repair_message(panel: &Panel, error: &str) -> ChatMessage {
    ChatMessage::user(format!(
        "Your evaluation could not be read: {error}. Reply again with only the JSON object, no other text.\n{}",
        output_format(panel)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::prompts::{agent_named_in, is_moderator_request, moderator_messages};

    #[test]
    fn from_the_second_turn_on_a_speaker_answers_another_member_by_name() {
        let panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cy"])]);
        let item = crate::testkit::item();
        let agents: Vec<_> = panel.agents().map(|(_, a)| a.clone()).collect();
        let first = |agent: &str| HistoryEntry::Initial { agent: agent.into(), evaluation: None, text: "Fine.".into() };
        let mut history = vec![first("Ann"), first("Bea"), first("Cy")];
        let opening = debate_messages(&panel, "Parents", &agents[0], &item, &history, None);
        assert!(
            opening[2].content.contains("Open the debate: begin with \"Bea, I\" and say where you disagree with Bea's"),
            "nobody has scores to compare, so the first member in the panel's order: {}",
            opening[2].content
        );
        history.push(HistoryEntry::Speech {
            agent: "Ann".into(),
            round: None,
            text: "Bea, the den matters.".into(),
            evaluation: None,
        });
        let second = &debate_messages(&panel, "Parents", &agents[1], &item, &history, None)[2].content;
        assert!(second.contains("Ann spoke last. Begin with \"Ann, I\" and answer their point"), "{second}");
        assert_eq!(addressee(&panel, "Parents", "Bea", &history, None).as_deref(), Some("Ann"));
        assert_eq!(
            answered_in(&opening_words("Dr. Ann Lee")),
            Some("Dr. Ann Lee"),
            "the opening names whom it answers"
        );
        // The item's parts, as its fence shows them unless the panel names them.
        assert!(
            second
                .contains("answer their point: agree or disagree, pointing to the content to evaluate or the context."),
            "{second}"
        );
        let named = Panel { item_parts: Some("the question, the answer or the story".into()), ..panel.clone() };
        let second = &debate_messages(&named, "Parents", &agents[1], &item, &history, None)[2].content;
        assert!(second.contains("pointing to the question, the answer or the story."), "{second}");
        // Collaborative discussion rounds ask the same.
        let round = &discussion_messages(&panel, "Parents", &agents[2], &item, &history, 1, false)[2].content;
        assert!(round.contains("Answer at least one of the others (Ann, Bea) by name, as in \"Ann, …\""), "{round}");
        // The justification is about the item.
        assert!(output_format(&panel).contains("what in the item earns these scores"));
    }

    #[test]
    fn the_debate_opens_with_the_member_whose_scores_differ_most() {
        let panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cy"])]);
        let scored = |grammar: f64| Evaluation {
            scores: [("grammar".to_string(), grammar)].into_iter().collect(),
            ..Default::default()
        };
        let first = |agent: &str, grammar: f64| HistoryEntry::Initial {
            agent: agent.into(),
            evaluation: Some(scored(grammar)),
            text: String::new(),
        };
        let history = vec![first("Ann", 4.0), first("Bea", 4.0), first("Cy", 1.0)];
        let own = scored(4.0);
        assert_eq!(addressee(&panel, "Parents", "Ann", &history, Some(&own)).as_deref(), Some("Cy"));
        assert_eq!(
            addressee(&panel, "Parents", "Cy", &history, Some(&scored(1.0))).as_deref(),
            Some("Ann"),
            "a tie: the panel's order"
        );
        assert_eq!(opening_words("Cy"), "Cy, I");
        // The opening asks where the speaker disagrees only when scores differ.
        let item = crate::testkit::item();
        let agents: Vec<_> = panel.agents().map(|(_, a)| a.clone()).collect();
        let opening =
            |history: &[HistoryEntry]| debate_messages(&panel, "Parents", &agents[0], &item, history, Some(&own));
        let differ = &opening(&history)[2].content;
        assert!(differ.contains("say where you disagree with Cy's first evaluation"), "{differ}");
        let agreed = vec![first("Ann", 4.0), first("Bea", 4.0), first("Cy", 4.0)];
        let same = &opening(&agreed)[2].content;
        assert!(
            same.contains("say what you would add to Bea's first evaluation") && !same.contains("disagree"),
            "{same}"
        );
    }

    #[test]
    fn full_feedback_begins_with_the_items_first_part() {
        let mut panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea"])]);
        let item = crate::testkit::item();
        assert_eq!(feedback_opening(&panel, &item), "The content");
        panel.item_parts = Some("the question, the answer or the story".into());
        assert_eq!(feedback_opening(&panel, &item), "The question");
        panel.item_parts = Some("the summary and the source".into());
        assert_eq!(feedback_opening(&panel, &item), "The summary");
        panel.protocol.settings.insert("first_feedback".into(), crate::panel::SettingValue::from("full"));
        let agents: Vec<_> = panel.agents().collect();
        let turn = &initial_messages(&panel, "Parents", agents[0].1, &item, false)[2].content;
        assert!(turn.contains("Begin with \"The summary\""), "{turn}");
    }

    #[test]
    fn agents_share_the_system_prompt_and_are_named_in_the_request() {
        let panel = crate::testkit::panel(crate::panel::Protocol::MajEval, &[("Parents", &["Ann", "Bea"])]);
        let item = crate::testkit::item();
        let agents: Vec<_> = panel.agents().collect();
        let a = initial_messages(&panel, "Parents", agents[0].1, &item, false);
        let b = debate_messages(&panel, "Parents", agents[1].1, &item, &[], None);
        assert_eq!(a[0].content, b[0].content, "one system prompt for the whole panel");
        assert!(!a[0].content.contains("Ann") && !a[0].content.contains("Bea"));
        assert_eq!(agent_named_in(&a[2].content), Some("Ann"));
        assert_eq!(agent_named_in(&b[2].content), Some("Bea"));
        assert_eq!(a[1].content, render_item(&item), "the shared message of a first evaluation is the item");
        assert!(
            b[1].content.starts_with(&render_item(&item))
                && b[1].content.contains(roster(&panel, "Parents").trim_end()),
            "a debate's opens with the item and lists the group's members"
        );
        assert_eq!(
            agent_named_in("You are Dr. Mensah, Child psychologist, a member of the \"R\" stakeholder group."),
            Some("Dr. Mensah")
        );
        assert_eq!(agent_named_in("no persona here"), None);
        let m = moderator_messages(&panel, "Parents", &item, &[], "- Ann: none", "", &["Ann", "Bea"]);
        assert_eq!(m[0].content, a[0].content, "the moderator shares the system prompt too");
        assert!(is_moderator_request(&m[2].content) && !is_moderator_request(&b[2].content));
        assert_eq!(agent_named_in(&m[2].content), None);
        assert_eq!(m[1].content, b[1].content, "the moderator and the next speaker see the same discussion");
        assert!(m[1].content.starts_with(&a[1].content), "and it begins with the item");
    }
}
