//! The transcript: every entry of the session's timeline in log order —
//! phases, turns with their scores, the moderator's picks and reasons,
//! consensus checks, results, notes and every person's action, marked as
//! human with its author.

use std::collections::HashMap;

use super::super::layout::{badge, human_mark, score, score_line, text_block};
use super::super::markup::Html;
use crate::session::event::{OverrideTarget, Role, SelectedBy, StepsSource, TurnKind};
use crate::session::fold::{Pick, SessionView, TimelineEntry, TurnState, TurnView, consensus_check, consensus_words};
use crate::session::stages::with_overall;

pub fn transcript(h: &mut Html, v: &SessionView) {
    h.elem("h2", &[], "Transcript");
    h.open("div", &[("class", "transcript")]);
    // The k-th consensus entry of a group is the group's k-th check.
    let mut checks: HashMap<Option<&str>, usize> = HashMap::new();
    let check = consensus_check(&v.protocol, v.panel.as_ref());
    for e in &v.timeline {
        match e {
            TimelineEntry::Phase { phase, group, round } => {
                let mut s = phase.as_str().replace('_', " ");
                if let Some(g) = group {
                    s.push_str(&format!(" · group {g}"));
                }
                if let Some(r) = round {
                    s.push_str(&format!(" · round {r}"));
                }
                h.elem("div", &[("class", "phase")], &s);
            }
            TimelineEntry::Turn(i) => turn(h, v, &v.turns[*i]),
            TimelineEntry::Pick { group, pick } => pick_entry(h, group, pick),
            TimelineEntry::Comment { text, author, group } => {
                h.open("div", &[("class", "entry human comment"), ("data-human", author)]);
                h.elem("span", &[("class", "who")], author).text(" commented");
                if let Some(g) = group {
                    h.text(&format!(" to group {g}"));
                }
                human_mark(h, author);
                text_block(h, "comment", text);
                h.close("div");
            }
            TimelineEntry::Override { target, dimension, from, to, reason, author } => {
                h.open("div", &[("class", "entry human override"), ("data-human", author)]);
                let from = from.map(score).unwrap_or_else(|| "none".into());
                h.elem("span", &[("class", "who")], author).text(&format!(
                    " overrode {}'s {dimension}: {from} → {}",
                    target_name(target),
                    score(*to)
                ));
                human_mark(h, author);
                if let Some(r) = reason {
                    h.elem("div", &[("class", "what")], &format!("reason: {r}"));
                }
                h.close("div");
            }
            TimelineEntry::Rating { scores, author } => {
                h.open("div", &[("class", "entry human rating"), ("data-human", author)]);
                h.elem("span", &[("class", "who")], author).text(" rated the item");
                human_mark(h, author);
                score_line(h, scores.iter().map(|(k, x)| (k.clone(), score(*x))));
                h.close("div");
            }
            TimelineEntry::Control { what, author } => {
                h.open("div", &[("class", "entry human control"), ("data-human", author)]);
                h.elem("span", &[("class", "who")], author).text(&format!(" {what}"));
                human_mark(h, author);
                h.close("div");
            }
            TimelineEntry::Rejected { command, reason } => {
                h.elem("div", &[("class", "entry rejected")], &format!("a person's {command} was refused: {reason}"));
            }
            TimelineEntry::Consensus { group, round, reached, rule } => {
                let k = checks.entry(group.as_deref()).or_default();
                let view = group.as_deref().and_then(|g| v.group(g)).and_then(|g| g.consensus.get(*k));
                *k += 1;
                let class = if *reached { "entry consensus reached" } else { "entry consensus not-reached" };
                h.open("div", &[("class", class)]);
                let mut s = consensus_words(check, *reached, rule);
                if let Some(g) = group {
                    s = format!("group {g}: {s}");
                }
                if let Some(r) = round {
                    s = format!("{s} {}", crate::session::event::after_round(*r));
                }
                h.text(&s);
                if let Some(c) = view.filter(|c| !c.spread.is_empty()) {
                    h.text(" — spread ");
                    score_line(h, c.spread.iter().map(|(k, x)| (k.clone(), score(*x))));
                }
                h.close("div");
            }
            TimelineEntry::Aggregate { group } => {
                let (who, a) = match group {
                    Some(g) => (format!("group {g}"), v.group(g).and_then(|g| g.aggregate.as_ref())),
                    None => ("the panel".to_string(), v.aggregate.as_ref()),
                };
                h.open("div", &[("class", "entry result")]).text(&format!("result of {who}"));
                if let Some(a) = a {
                    let keys = v.score_keys();
                    score_line(h, keys.iter().filter_map(|k| a.score(k).map(|x| (k.clone(), score(x)))));
                }
                h.close("div");
            }
            TimelineEntry::Trimmed(t) => {
                h.elem("div", &[("class", "entry note")], &t.summary());
            }
            TimelineEntry::Steps { dimension, steps } => {
                let human = steps.source == StepsSource::Human;
                h.open("div", &[("class", if human { "entry human steps" } else { "entry steps" })]);
                h.text(&format!("evaluation steps for {dimension} ({})", steps.source.as_str()));
                if let Some(a) = steps.author.as_deref().filter(|_| human) {
                    human_mark(h, a);
                }
                text_block(h, "steps", &steps.steps);
                h.close("div");
            }
            TimelineEntry::Note { text, human } => {
                h.open("div", &[("class", if *human { "entry human note" } else { "entry note" })]).text(text);
                if *human {
                    badge(h, "human");
                }
                h.close("div");
            }
            TimelineEntry::Ended { status, error, reason } => {
                let mut s = format!("session ended: {}", status.as_str());
                if let Some(r) = reason {
                    s.push_str(&format!(" ({r})"));
                }
                h.open("div", &[("class", "entry ended")]).text(&s);
                if let Some(e) = error {
                    h.elem("div", &[("class", "error")], e);
                }
                h.close("div");
            }
        }
    }
    h.close("div");
}

fn target_name(t: &OverrideTarget) -> String {
    match t {
        OverrideTarget::Turn { turn, agent } => format!("{agent} (turn {turn})"),
        OverrideTarget::Agent { agent } => agent.clone(),
        OverrideTarget::Final { group: Some(g) } => format!("group {g}'s result"),
        OverrideTarget::Final { group: None } => "the panel's result".into(),
    }
}

/// Who chose a speaker when a person did: the pick's reason names them
/// (`chosen by ann`, `… (bo vetoed by ann: speaks last this round)`).
fn pick_people(p: &Pick) -> Vec<String> {
    let mut people = Vec::new();
    if p.by == SelectedBy::Human {
        let who = p.reason.strip_prefix("chosen by ").map(|r| r.split(" (").next().unwrap_or(r).trim().to_string());
        people.push(who.filter(|w| !w.is_empty()).unwrap_or_else(|| "a person".into()));
    }
    if let Some((_, rest)) = p.reason.split_once(" vetoed by ") {
        let who = rest.split(':').next().unwrap_or(rest).trim();
        if !who.is_empty() && !people.iter().any(|p| p == who) {
            people.push(who.to_string());
        }
    }
    people
}

fn pick_entry(h: &mut Html, group: &str, p: &Pick) {
    let people = pick_people(p);
    let class = if people.is_empty() { "entry pick" } else { "entry human pick" };
    h.open("div", &[("class", class)]);
    let by = match p.by {
        SelectedBy::Moderator => "the moderator",
        SelectedBy::Policy => "the speaking order",
        SelectedBy::Human => "a person",
    };
    h.text(&format!("{by} chose ")).elem("span", &[("class", "who")], &p.agent).text(&format!(" in group {group}"));
    for who in &people {
        human_mark(h, who);
    }
    h.elem("div", &[("class", "what")], &format!("reason: {}", p.reason));
    if let Some(f) = &p.fallback {
        h.elem("div", &[("class", "what")], &format!("fallback: {f}"));
    }
    h.close("div");
}

fn turn(h: &mut Html, v: &SessionView, t: &TurnView) {
    let id = t.id.to_string();
    h.open("div", &[("class", "entry turn"), ("data-turn", &id), ("data-agent", &t.agent)]);
    h.elem("span", &[("class", "who")], &t.agent);
    if let Some(g) = &t.group {
        badge(h, &format!("group {g}"));
    }
    badge(h, &t.phase.as_str().replace('_', " "));
    if let Some(r) = t.round {
        badge(h, &format!("round {r}"));
    }
    if t.role != Role::Agent {
        badge(h, t.role.as_str());
    }
    match t.kind {
        TurnKind::Repair => badge(h, "repair request"),
        TurnKind::Redraw => badge(h, "asked again"),
        _ => {}
    }
    if let Some(d) = &t.dimension {
        badge(h, d);
    }
    if t.cached {
        badge(h, "cached");
    }
    if t.truncated {
        badge(h, "cut at its token limit");
    }
    if let Some(who) = &t.repeats {
        badge(h, &format!("repeats {who}"));
    }
    for quote in &t.misquotes {
        badge(h, &format!("misquotes “{quote}”"));
    }
    for claim in &t.misstates {
        badge(h, &format!("misstates {claim}"));
    }
    if v.pairwise.hides_turn(t.id) {
        h.elem("div", &[("class", "what")], "blind comparison: hidden until a person labels the pair");
        h.close("div");
        return;
    }
    if let Some(ev) = &t.evaluation {
        let mut pairs: Vec<(String, String)> = with_overall(ev).into_iter().map(|(k, x)| (k, score(x))).collect();
        pairs.extend(ev.labels.iter().map(|(k, l)| (k.clone(), l.clone())));
        if let Some(l) = &ev.label {
            pairs.push(("verdict".into(), l.clone()));
        }
        if let Some(c) = ev.confidence {
            pairs.push(("confidence".into(), format!("{c:.2}")));
        }
        score_line(h, pairs);
        if ev.done {
            h.elem("div", &[("class", "what")], "no more comments");
        }
    }
    if let Some(vd) = v.pairwise.verdict_of(t.id) {
        h.elem("div", &[("class", "what")], &format!("verdict: {}", vd.label.as_str()));
    }
    if let Some(e) = &t.parse_error {
        h.elem("div", &[("class", "error")], &format!("could not read a verdict: {e}"));
    }
    match t.state {
        TurnState::Failed => {
            let e = t.last_error.as_deref().unwrap_or("no reply");
            h.elem("div", &[("class", "error")], &format!("failed after {} attempts: {e}", t.failed_attempts));
        }
        TurnState::Streaming => {
            h.elem("div", &[("class", "what")], "the log ends while this reply streams");
        }
        TurnState::Completed => {}
    }
    if !t.text.is_empty() {
        text_block(h, "reply", &t.text);
    }
    let mut usage = format!("{} in, {} out", t.usage.input_tokens, t.usage.output_tokens);
    if let Some(ms) = t.latency_ms {
        usage.push_str(&format!(", {}", super::duration(ms)));
    }
    h.elem("div", &[("class", "what")], &usage);
    h.close("div");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pick(by: SelectedBy, reason: &str) -> Pick {
        Pick { agent: "Bo".into(), by, reason: reason.into(), fallback: None, t: chrono::Utc::now() }
    }

    #[test]
    fn picks_and_vetoes_name_their_people() {
        assert_eq!(pick_people(&pick(SelectedBy::Human, "chosen by ann")), ["ann"]);
        assert_eq!(
            pick_people(&pick(SelectedBy::Human, "chosen by ann (cy vetoed by dee: speaks last this round)")),
            ["ann", "dee"]
        );
        assert_eq!(
            pick_people(&pick(
                SelectedBy::Policy,
                "round 2: next in the panel's order (cy vetoed by dee: speaks last)"
            )),
            ["dee"]
        );
        assert!(pick_people(&pick(SelectedBy::Moderator, "Bo has not spoken")).is_empty());
    }
}
