//! Pairwise requests: one judge, one order of one pair. Candidates are shown
//! as "<name> A" and "<name> B" (the panel's `candidate_name`); their ids,
//! the systems' names, never reach a judge.
//!
//! Two sets of instructions, as the panel's `prompt` says (after MASA's two
//! evaluator prompts, in moot's words): `baseline` names the criteria and
//! warns against position bias; `enhanced` adds a way to check each
//! well-known criterion, puts factual consistency first, asks the judge to
//! look for invented or contradicted claims, to reason in steps (coverage
//! against length among them) and to say how sure it is.

use std::fmt::Write;

use crate::engine::prompts::judge_line;
use crate::engine::prompts::task_text;
use crate::item::Item;
use crate::panel::{AgentSpec, Panel};
use crate::provider::ChatMessage;

/// The system prompt: the task and how to compare. The same for every pair,
/// order and judge of a panel, so providers reuse the work on it.
pub fn system(panel: &Panel, noun: &str) -> String {
    format!(
        "You compare two candidate texts written for the same task and say which one is better, or that they are \
         equally good.\nThe task: {}\n\
         The two are shown as {noun} A and {noun} B. Which one is shown first says nothing about its quality: judge \
         only what each text says and how it says it. A length difference is not a reason on its own.",
        task_text(panel)
    )
}

/// The criteria the judges weigh: the panel's dimensions.
pub(crate) fn criteria(panel: &Panel) -> String {
    let mut s = String::new();
    for d in &panel.dimensions {
        let description = d.description.trim();
        if description.is_empty() {
            let _ = writeln!(s, "- {} ({})", d.label(), d.key);
        } else {
            let _ = writeln!(s, "- {} ({}): {description}", d.label(), d.key);
        }
    }
    s
}

/// The two texts in one order, fenced as material (never instructions), with
/// the item's context and reference.
pub fn render_pair(item: &Item, noun: &str, a: &str, b: &str) -> String {
    let mut s = crate::engine::prompts::fence_start("compare");
    if let Some(ctx) = item.context.as_deref().filter(|c| !c.trim().is_empty()) {
        let _ = write!(s, "--- CONTEXT ---\n{}\n", ctx.trim());
    }
    if let Some(r) = item.reference.as_deref().filter(|c| !c.trim().is_empty()) {
        let _ = write!(s, "--- REFERENCE ---\n{}\n", r.trim());
    }
    let upper = noun.to_uppercase();
    let _ = write!(s, "--- {upper} A ---\n{}\n--- {upper} B ---\n{}\n", a.trim(), b.trim());
    s.push_str(&crate::engine::prompts::fence_end(item));
    s
}

/// Which instructions the judges get (the panel's `prompt`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guidance {
    Baseline,
    Enhanced,
}

impl Guidance {
    /// The panel's `prompt` setting.
    /// The enhanced instructions, or the baseline's.
    pub fn of(enhanced: bool) -> Self {
        if enhanced { Guidance::Enhanced } else { Guidance::Baseline }
    }
}

/// How to check a well-known criterion, in the enhanced instructions: the
/// operational definition the bare name lacks.
pub fn check_of(key: &str) -> Option<&'static str> {
    Some(match key.to_ascii_lowercase().as_str() {
        "consistency" | "factual_consistency" | "faithfulness" => {
            "take each claim in turn and find it in the source; a claim the source contradicts, or one it does \
             not support, is a factual error, however well written"
        }
        "relevance" => {
            "list what the source is mainly about; the better text keeps those points and leaves out side \
             details, so a missing essential point counts against it, and so does filler"
        }
        "coherence" => {
            "read it as one text: each sentence follows from the one before, related facts sit together, and \
             nothing leaves the reader asking how two statements connect"
        }
        "fluency" => {
            "look for grammar mistakes, broken or run-on sentences and wording a fluent reader would stumble \
             over; style preferences are not errors"
        }
        _ => return None,
    })
}

/// The criteria with, under the enhanced instructions, how to check each one.
fn criteria_checked(panel: &Panel) -> String {
    let mut s = String::new();
    for d in &panel.dimensions {
        let description = d.description.trim();
        let _ = match (description.is_empty(), check_of(&d.key)) {
            (false, Some(check)) => writeln!(s, "- {} ({}): {description} To check: {check}.", d.label(), d.key),
            (true, Some(check)) => writeln!(s, "- {} ({}): to check, {check}.", d.label(), d.key),
            (false, None) => writeln!(s, "- {} ({}): {description}", d.label(), d.key),
            (true, None) => writeln!(
                s,
                "- {} ({}): take the word's plain meaning, and say in your reasoning how you read it.",
                d.label(),
                d.key
            ),
        };
    }
    s
}

/// What a candidate's claims are held against: the item's context, else its
/// reference, else what is known to be true.
fn source_of(item: &Item) -> &'static str {
    if item.context.as_deref().is_some_and(|c| !c.trim().is_empty()) {
        "the CONTEXT"
    } else if item.reference.as_deref().is_some_and(|r| !r.trim().is_empty()) {
        "the REFERENCE"
    } else {
        "what is well established in the field"
    }
}

/// Asks `judge` which of `a` (shown first) and `b` is better.
pub fn compare_messages(
    panel: &Panel,
    item: &Item,
    judge: &AgentSpec,
    noun: &str,
    (a, b): (&str, &str),
    instructions: &str,
    guidance: Guidance,
) -> Vec<ChatMessage> {
    let ask = match guidance {
        Guidance::Baseline => format!(
            "{}\nCompare {noun} A and {noun} B on these criteria:\n{}\n\
             In two to four sentences of plain prose, say where the two differ on the criteria and which \
             difference decides it; then give your verdict: A, B, or tie when neither is better. {instructions}",
            judge_line(judge),
            criteria(panel).trim_end(),
        ),
        Guidance::Enhanced => {
            let source = source_of(item);
            format!(
                "{}\nCompare {noun} A and {noun} B on these criteria, each with how to check it:\n{}\n\
                 Work through these steps in order, a line or two each, in plain prose:\n\
                 1. Facts first. Hold every claim of {noun} A, then of {noun} B, against {source}. Name each \
                 claim that contradicts it or that it does not support, and say whether the claim is false or \
                 only unsupported. Factual consistency matters more than anything below.\n\
                 2. Coverage against length. Which one keeps what a reader needs? Shorter is better only when \
                 nothing essential is lost; longer only when the extra is worth reading.\n\
                 3. The other criteria, one at a time, with the checks above.\n\
                 4. Decide. A false or invented claim outweighs differences of style or length; otherwise the \
                 criteria decide in the order given. Say tie only when no difference matters.\n\
                 5. How sure you are: high when one clear difference decides it, medium when minor differences \
                 do, low when you hesitated between the two.\n\
                 Then give your verdict: A, B or tie, with that confidence. {instructions}",
                judge_line(judge),
                criteria_checked(panel).trim_end(),
            )
        }
    };
    let system = match guidance {
        Guidance::Baseline => system(panel, noun),
        Guidance::Enhanced => format!(
            "{}\nBeing right about the facts comes first: a text that states what its source contradicts, or \
             adds what its source does not say, is worse than one that leaves a detail out.",
            system(panel, noun)
        ),
    };
    vec![ChatMessage::system(system), ChatMessage::user(render_pair(item, noun, a, b)), ChatMessage::user(ask)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::Candidate;

    #[test]
    fn the_pair_shows_positions_not_ids() {
        let mut item = crate::testkit::item();
        item.candidates = Some(vec![
            Candidate { id: "sys-lead".into(), text: "first text".into() },
            Candidate { id: "sys-short".into(), text: "second text".into() },
        ]);
        let s = render_pair(&item, "Summary", "second text", "first text");
        assert!(s.contains("--- SUMMARY A ---\nsecond text\n--- SUMMARY B ---\nfirst text"), "{s}");
        assert!(!s.contains("sys-"), "{s}");
    }

    #[test]
    fn the_enhanced_prompt_checks_facts_first_and_defines_the_criteria() {
        let mut panel = crate::testkit::panel(crate::panel::Protocol::Pairwise, &[("Judges", &["Ann"])]);
        panel.dimensions[0].key = "consistency".into();
        let item = crate::testkit::item();
        let judge = panel.groups[0].agents[0].clone();
        let text = |g| {
            compare_messages(&panel, &item, &judge, "Summary", ("a", "b"), "END", g)
                .iter()
                .map(|m| m.content.clone())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (baseline, enhanced) = (text(Guidance::Baseline), text(Guidance::Enhanced));
        for needle in ["Facts first", "against the CONTEXT", "does not support", "To check:", "How sure you are"] {
            assert!(enhanced.contains(needle), "{needle}: {enhanced}");
            assert!(!baseline.contains(needle), "{needle}: {baseline}");
        }
        // Facts are the first step, before coverage and the other criteria.
        assert!(enhanced.find("1. Facts first").unwrap() < enhanced.find("2. Coverage").unwrap());
        assert!(enhanced.ends_with("END") && baseline.ends_with("END"));
    }
}
