//! The builder's requests: what each step asks the model.

use super::docs::{Chunk, Document};
use super::log::Step;
use super::state::{Group, GroupPerspective, Stakeholder};
use crate::provider::{ChatMessage, NoCopy};

const SYSTEM: &str = "You help researchers set up a panel of evaluators for generated text. \
You read the material you are given carefully, report only what it supports, and answer in the JSON \
format you are asked for.";

/// The first words of a step's reply, for the embedded model (other
/// providers ignore them): its words before the JSON object then start on
/// the task instead of restating the instructions, which small models did
/// before answering that a document held nobody relevant.
pub fn opening(step: Step) -> Option<&'static str> {
    match step {
        Step::Extract => Some("The people this text describes are"),
        Step::Consolidate => Some("By their roles, these stakeholders fall into"),
        Step::Persona => None,
    }
}

/// What a builder's reply may not copy into its words before the JSON
/// object: its instructions (small models echoed them, then answered
/// with an empty list); it may quote the evaluation task and the document
/// (between `<<<` and `>>>`).
pub fn no_copy(messages: &[ChatMessage]) -> NoCopy {
    let mut quotable = Vec::new();
    for m in messages {
        let text = m.content.as_str();
        if let Some(task) = text.strip_prefix("Evaluation task:\n") {
            quotable.push(task.split("\n\n").next().unwrap_or("").to_string());
        }
        if let (Some(start), Some(end)) = (text.find("<<<\n"), text.rfind("\n>>>"))
            && start + 4 <= end
        {
            quotable.push(text[start + 4..end].to_string());
        }
    }
    NoCopy { avoid: messages.iter().map(|m| m.content.clone()).collect(), quotable, ..NoCopy::default() }
}

/// Ask for the stakeholders of one part of a document.
pub fn extract(task: &str, doc: &Document, chunk: &Chunk<'_>, parts: usize, instructions: &str) -> Vec<ChatMessage> {
    let part = if parts > 1 { format!(" (part {} of {parts})", chunk.index) } else { String::new() };
    let user = format!(
        "Evaluation task:\n{task}\n\n\
Document: {name}{part}\n<<<\n{text}\n>>>\n\n\
List the human stakeholders this text describes whose view matters for the evaluation task: people \
in a role (teachers, parents, clinicians, children…). Leave out the authors of the text, institutions, \
organisations, software and other non-human things.\n\
For each stakeholder give its name (the role, e.g. \"Kindergarten teachers\"), one sentence on who \
they are, and the perspectives they bring to judging the task's output. Every perspective needs \
evidence: a sentence or phrase copied word for word from the document above that supports it. Do not \
paraphrase the evidence and do not invent it.\n\
If the text says nothing relevant to the task, answer with an empty list.\n\n{instructions}",
        name = doc.name,
        text = chunk.text(),
    );
    vec![ChatMessage::system(SYSTEM), ChatMessage::user(user)]
}

/// Ask for groups of similar stakeholders with merged perspectives.
pub fn consolidate(task: &str, stakeholders: &[Stakeholder], instructions: &str) -> Vec<ChatMessage> {
    let mut listing = String::new();
    for s in stakeholders {
        listing.push_str(&format!("{} {}: {}\n", s.id, s.name, s.characteristics));
        for p in &s.perspectives {
            listing.push_str(&format!("  {} {}\n", p.id, p.text));
        }
    }
    let user = format!(
        "Evaluation task:\n{task}\n\n\
Stakeholders found in the documents, each with its perspectives (ids first):\n{listing}\n\
Put stakeholders that play the same or a very similar role into one group (for example \
\"preschool teachers\" and \"kindergarten teachers\"), and give each group a short name and a \
one-sentence description. Within a group, merge perspectives that say nearly the same thing into one, \
and keep perspectives that differ apart: a group should keep the variety of its views. Every \
perspective of a group lists the ids of the perspectives it comes from; use only the ids above and \
use each at most once.\n\n{instructions}"
    );
    vec![ChatMessage::system(SYSTEM), ChatMessage::user(user)]
}

/// Names offered to persona writers, one per persona in order: small models
/// gave every persona of a build the same name.
pub const NAMES: [&str; 24] = [
    "Amina Okoye",
    "Tomás Rivera",
    "Ingrid Solberg",
    "Kenji Watanabe",
    "Priya Raman",
    "Lucas Moreau",
    "Fatima Haddad",
    "Owen Gallagher",
    "Mei Lin",
    "Samuel Mensah",
    "Elena Petrova",
    "Diego Alvarez",
    "Hana Novak",
    "Yusuf Demir",
    "Grace Whitfield",
    "Arjun Mehta",
    "Sofia Romano",
    "Kwame Asante",
    "Maja Lindgren",
    "Rafael Costa",
    "Leila Farahani",
    "Noah Brennan",
    "Aiko Sato",
    "Zanele Dlamini",
];

/// The first name of [`NAMES`] whose first word no name in `taken` uses;
/// past the list, `Judge N`.
pub fn name_for(taken: &[String]) -> String {
    let first = |n: &str| n.split_whitespace().next().unwrap_or("").to_lowercase();
    let used: Vec<String> = taken.iter().map(|t| first(t)).collect();
    NAMES
        .iter()
        .find(|n| !used.contains(&first(n)))
        .map_or_else(|| format!("Judge {}", taken.len() + 1), |n| n.to_string())
}

/// Ask for one persona standing for one perspective of a group.
pub fn persona(
    task: &str,
    group: &Group,
    perspective: &GroupPerspective,
    evidence: &[String],
    others: &[String],
    instructions: &str,
) -> Vec<ChatMessage> {
    let evidence = if evidence.is_empty() {
        "(none)".to_string()
    } else {
        evidence.iter().map(|e| format!("- {e}")).collect::<Vec<_>>().join("\n")
    };
    let avoid = format!(
        "\nCall this person {} (names already used in the panel: {}).\n",
        name_for(others),
        if others.is_empty() { "none".to_string() } else { others.join(", ") }
    );
    let user = format!(
        "Evaluation task:\n{task}\n\n\
Stakeholder group: {name} — {description}\n\
Perspective this judge stands for: {text}\n\
Evidence from the documents:\n{evidence}\n{avoid}\n\
Write one evaluator persona, a single invented person of this group who holds this perspective. Give \
a personal name, a one-line role, and one or two sentences for each of: demographics (age, \
background, work), perspective (what they look for when judging, in their own terms), specialty \
(what they know well), psychological traits (temperament, how they argue), and social relationships \
(who they work with or listen to).\n\n{instructions}",
        name = group.name,
        description = group.description,
        text = perspective.text,
    );
    vec![ChatMessage::system(SYSTEM), ChatMessage::user(user)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_persona_is_offered_a_name_whose_first_name_nobody_has() {
        assert_eq!(name_for(&[]), "Amina Okoye");
        assert_eq!(name_for(&["Amina Okoye".into(), "Tomás Bell".into()]), "Ingrid Solberg");
        let all: Vec<String> = NAMES.iter().map(|n| n.to_string()).collect();
        assert_eq!(name_for(&all), "Judge 25");
    }

    #[test]
    fn a_reply_may_quote_the_task_and_document_but_not_echo_the_instructions() {
        let messages = vec![
            ChatMessage::system(SYSTEM),
            ChatMessage::user(
                "Evaluation task:\nJudge QA pairs for children\n\nDocument: a.md\n<<<\nTeachers read aloud daily.\n>>>\n\nList the stakeholders.",
            ),
        ];
        let n = no_copy(&messages);
        assert_eq!(n.quotable, ["Judge QA pairs for children", "Teachers read aloud daily."]);
        assert_eq!(n.avoid.len(), 2);
        assert!(n.avoid[1].contains("List the stakeholders."));
    }
}
