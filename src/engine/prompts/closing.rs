//! The requests of the roles that close a panel: the aggregator's synthesis
//! and the final judge of a discussion without consensus.

use super::history::{HistoryEntry, render_history};
use std::fmt::Write;

use super::format::{fmt_num, one_decimal};
use super::panel::{output_format, render_item, rubric, task_text};
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::ChatMessage;
use crate::session::event::Scores;

/// Messages for the aggregator's synthesis: every member's final
/// evaluation (`finals`), then what the groups' results show
/// ([`results_facts`]).
pub fn aggregator_messages(panel: &Panel, item: &Item, finals: &str, facts: &str) -> Vec<ChatMessage> {
    let system = format!(
        "You write the synthesis of an evaluation panel's debate. The task: {}\n\
         Be faithful to what the panel said; do not add your own scores.",
        task_text(panel)
    );
    let user = format!(
        "{}\n\nThe final evaluations of every stakeholder group:\n{finals}\n{facts}\n\
         Write a short synthesis (at most 200 words) in three paragraphs, beginning with {}: what the \
         stakeholders agree on, where their results are closest; \
         where their results differ most, and the reasons the members gave; what the panel's result says about \
         the content's quality. Say what the panel found, not whether a member is right. Do not list the scores \
         again; a number you give is one of the lines above.",
        render_item(item),
        section_headings(),
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// The follow-up to a synthesis that gave someone a score the results do
/// not show: what it gave (`claims`, each as
/// `synthesis_claims::Misstated::note` words it), and the request to write
/// it again.
pub fn synthesis_retry(claims: &[String]) -> ChatMessage {
    ChatMessage::user(format!(
        "Your synthesis gives {}. Write it again, in the same three paragraphs: give a member's score only as \
         that member's and a group's result only as that group's, as the lines above show them, or leave the \
         number out.",
        claims.join("; ")
    ))
}

/// One group's result and its members' final scores, for
/// [`results_facts`].
#[derive(Debug, Clone, Default)]
pub struct GroupResult {
    pub name: String,
    /// The group's result by the aggregation's rule, a person's overrides
    /// applied.
    pub result: Scores,
    /// The keys of `result` a person set.
    pub human: Vec<String>,
    /// Each member's name and final scores.
    pub members: Vec<(String, Scores)>,
}

/// What the groups' results show, as sentences the panel's synthesis may
/// draw on (a small model does not reliably work them out from the
/// members' scores): each group's result and the dimension its members
/// differ most on; with two groups or more, the dimensions their results
/// are closest and differ most on; the panel's result (`panel_result`).
pub fn results_facts(panel: &Panel, groups: &[GroupResult], panel_result: &GroupResult) -> String {
    let mut keys: Vec<(&str, String)> =
        panel.dimensions.iter().filter(|d| d.labels.is_empty()).map(|d| (d.key.as_str(), dimension_words(d))).collect();
    if panel.asks_overall() {
        keys.push(("overall", "overall".to_string()));
    }
    let scored: Vec<&GroupResult> = groups.iter().filter(|g| !g.result.is_empty()).collect();
    if keys.is_empty() || scored.is_empty() {
        return String::new();
    }
    let words = |k: &str| keys.iter().find(|(key, _)| *key == k).map_or(k.to_string(), |(_, w)| w.clone());
    // One decimal on a scale of whole numbers, two on a 0–1 scale.
    let num = |v: f64| if panel.scale.is_integer() { one_decimal(v) } else { fmt_num(v) };
    let result = |g: &GroupResult| -> String {
        let by = |k: &str| if g.human.iter().any(|h| h == k) { " (set by a person)" } else { "" };
        let each: Vec<String> =
            keys.iter().filter_map(|(k, w)| Some(format!("{w} {}{}", num(*g.result.get(*k)?), by(k)))).collect();
        each.join(", ")
    };
    let mut out = format!(
        "What the results show, from {} (worst) to {} (best):\n",
        fmt_num(panel.scale.min),
        fmt_num(panel.scale.max)
    );
    for g in &scored {
        let _ = write!(out, "- {}: {}", g.name, result(g));
        if g.members.len() > 1 {
            match spread_key(&keys, |k| g.members.iter().map(|(_, s)| s.get(k).copied()).collect(), true) {
                Some(k) => {
                    let who: Vec<String> =
                        g.members.iter().filter_map(|(n, s)| Some(format!("{n} {}", num(*s.get(k)?)))).collect();
                    let _ = write!(out, "; its members differ most on {} ({})", words(k), who.join(", "));
                }
                None => out.push_str("; its members give the same scores"),
            }
        }
        out.push_str(".\n");
    }
    if scored.len() > 1 {
        let values = |k: &str| scored.iter().map(|g| g.result.get(k).copied()).collect::<Vec<_>>();
        match spread_key(&keys, values, true) {
            Some(far) => {
                if let Some(near) = spread_key(&keys, values, false)
                    && let Some((lo, hi)) = span(&values(near))
                {
                    let range =
                        if lo == hi { format!("all {}", num(lo)) } else { format!("{} to {}", num(lo), num(hi)) };
                    let _ = writeln!(out, "- The groups' results are closest on {} ({range}).", words(near));
                }
                let each: Vec<String> =
                    scored.iter().filter_map(|g| Some(format!("{} {}", g.name, num(*g.result.get(far)?)))).collect();
                let _ = writeln!(out, "- The groups' results differ most on {} ({}).", words(far), each.join(", "));
            }
            None => out.push_str("- The groups' results are the same.\n"),
        }
    }
    if !panel_result.result.is_empty() {
        let _ = writeln!(out, "- The panel's result: {}.", result(panel_result));
    }
    out
}

/// The dimension's words: its label (its name, else its key) lower-cased,
/// with blanks for underscores.
fn dimension_words(d: &crate::panel::Dimension) -> String {
    d.label().trim().replace('_', " ").to_lowercase()
}

/// The lowest and highest of the values given.
fn span(values: &[Option<f64>]) -> Option<(f64, f64)> {
    let given = values.iter().flatten().copied();
    Some((given.clone().reduce(f64::min)?, given.reduce(f64::max)?))
}

/// The key whose values (`of` it) span the most (`most`; none when no
/// two values differ), or the least; the first such key on a tie.
fn spread_key<'k>(keys: &[(&'k str, String)], of: impl Fn(&str) -> Vec<Option<f64>>, most: bool) -> Option<&'k str> {
    let spans = keys.iter().filter_map(|(k, _)| span(&of(k)).map(|(lo, hi)| (*k, hi - lo)));
    let better = |next: f64, best: f64| if most { next > best } else { next < best };
    spans
        .filter(|&(_, s)| !most || s > 0.0)
        .reduce(|best, next| if better(next.1, best.1) { next } else { best })
        .map(|(k, _)| k)
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
         Write the group's synthesis (at most 250 words) in three paragraphs, beginning with {}: where the \
         members agree, where they still disagree and why, and \
         what the group's average scores mean for the content's quality. Do not list every score again.",
        render_item(item),
        render_history(panel, history),
        section_headings(),
    );
    vec![ChatMessage::system(system), ChatMessage::user(user)]
}

/// The words the aggregator's synthesis begins with (see
/// [`ChatRequest::opening`](crate::provider::ChatRequest::opening)): its
/// first paragraph's label.
pub const AGGREGATOR_OPENING: &str = SYNTHESIS_SECTIONS[0];

/// The headings of a synthesis's three paragraphs, in order.
pub const SYNTHESIS_SECTIONS: [&str; 3] = ["Agreement:", "Disagreement:", "Overall:"];

/// [`SYNTHESIS_SECTIONS`] as a synthesis request names them:
/// `"Agreement:", "Disagreement:" and "Overall:"`.
fn section_headings() -> String {
    let [first, second, last] = SYNTHESIS_SECTIONS;
    format!("\"{first}\", \"{second}\" and \"{last}\"")
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::panel::Protocol;

    fn scores(pairs: &[(&str, f64)]) -> Scores {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn group(name: &str, members: &[(&str, [f64; 3])]) -> GroupResult {
        let members: Vec<(String, Scores)> = members
            .iter()
            .map(|(n, [g, r, o])| (n.to_string(), scores(&[("grammar", *g), ("relevance", *r), ("overall", *o)])))
            .collect();
        let mean = |k: &str| members.iter().map(|(_, s)| s[k]).sum::<f64>() / members.len() as f64;
        let result =
            scores(&[("grammar", mean("grammar")), ("relevance", mean("relevance")), ("overall", mean("overall"))]);
        GroupResult { name: name.into(), result, human: Vec::new(), members }
    }

    #[test]
    fn the_synthesis_is_told_where_results_differ_and_where_they_are_close() {
        let panel =
            crate::testkit::panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bo"]), ("Parents", &["Cy", "Di"])]);
        let teachers = group("Teachers", &[("Ann", [4.0, 1.0, 3.0]), ("Bo", [4.0, 2.0, 3.0])]);
        let mut parents = group("Parents", &[("Cy", [5.0, 5.0, 4.0]), ("Di", [5.0, 4.0, 4.0])]);
        parents.human.push("overall".into());
        let whole = GroupResult {
            result: scores(&[("grammar", 4.5), ("relevance", 3.0), ("overall", 3.5)]),
            ..GroupResult::default()
        };
        let facts = results_facts(&panel, &[teachers, parents], &whole);
        assert_eq!(
            facts,
            "What the results show, from 1 (worst) to 5 (best):\n\
             - Teachers: grammar 4, relevance 1.5, overall 3; its members differ most on relevance (Ann 1, Bo 2).\n\
             - Parents: grammar 5, relevance 4.5, overall 4 (set by a person); its members differ most on relevance (Cy 5, Di 4).\n\
             - The groups' results are closest on grammar (4 to 5).\n\
             - The groups' results differ most on relevance (Teachers 1.5, Parents 4.5).\n\
             - The panel's result: grammar 4.5, relevance 3, overall 3.5.\n"
        );
        let same = group("Teachers", &[("Ann", [4.0, 4.0, 4.0]), ("Bo", [4.0, 4.0, 4.0])]);
        let none = GroupResult::default();
        let facts = results_facts(&panel, &[same.clone(), GroupResult { name: "Parents".into(), ..same }], &none);
        assert!(facts.contains("- Teachers: grammar 4, relevance 4, overall 4; its members give the same scores.\n"));
        assert!(facts.ends_with("- The groups' results are the same.\n"), "{facts}");
        assert_eq!(results_facts(&panel, &[GroupResult { name: "Teachers".into(), ..none.clone() }], &none), "");
        let messages = aggregator_messages(&panel, &crate::testkit::item(), "- Ann: grammar 4\n", &facts);
        assert!(messages[1].content.contains("- Ann: grammar 4\n\nWhat the results show"));
        // The request names the headings the reply is held to, in order.
        assert!(
            messages[1].content.contains(
                "in three paragraphs, beginning with \"Agreement:\", \"Disagreement:\" and \"Overall:\": what the \
                 stakeholders agree on"
            ),
            "{}",
            messages[1].content
        );
    }
}
