//! What a turn shows people, on every screen and in every printout: the
//! live screen's panes and transcript, replays, `moot run --headless` and
//! `moot sessions show` all take it from here. A reply's words come without
//! the JSON verdict it ends with, and the verdict shows as one line of its
//! own, whatever its kind: scores (with categorical labels, weighted scores
//! and what moved), a label verdict, a pairwise verdict on a pair, a
//! moderator's pick, evaluation steps.

use std::collections::BTreeMap;

use crate::engine::prompts::{justification_streaming, reply_words, streaming_evaluation};
use crate::panel::Panel;
use crate::session::event::{Evaluation, Phase, Role, SelectedBy, StepsSource, TurnKind};
use crate::session::fold::{SessionView, TurnState, TurnView};
use crate::session::pairwise::{Confidence, Label, PairRef};
use crate::tui::app::{by_label, fmt_score};

/// Whether a turn's reply ends with a verdict read from it (a JSON object):
/// a judge's turn (an agent, a final judge, a meta-evaluator, a verifier),
/// but not a moderator's choice (the pick says it) nor evaluation steps,
/// which are free text.
pub fn asks_verdict(role: Role, kind: TurnKind, phase: Phase) -> bool {
    matches!(role, Role::Agent | Role::FinalJudge | Role::MetaEvaluator | Role::Verifier)
        && kind != TurnKind::Select
        && phase != Phase::Steps
}

/// The words a reply shows. One that asks for a verdict shows its prose,
/// without the verdict's JSON (also while it streams); once the verdict was
/// read (`read`), a reply that was nothing but the verdict shows what
/// `read` holds (an evaluation's justification, a pairwise verdict's
/// reasoning), and while it streams the justification as it is written. A
/// reply whose verdict could not be read shows as it came. Other replies
/// (a synthesis, a summary, evaluation steps) show their text.
pub fn reply_shown<'a>(text: &'a str, asks: bool, complete: bool, read: Option<&'a str>) -> &'a str {
    if !asks {
        return text;
    }
    let words = reply_words(text, complete, read.is_some());
    match read {
        Some(fallback) if words.is_empty() && complete => fallback.trim(),
        None if words.is_empty() && !complete => justification_streaming(text).unwrap_or_default().trim(),
        _ => words,
    }
}

/// What was read from a completed turn's reply, for [`reply_shown`]: the
/// evaluation's justification or the pairwise verdict's reasoning (empty
/// while a pair's verdict is on its way); `None` while the turn streams, or
/// when it failed or its reply could not be read.
fn read_of(turn: &TurnView) -> Option<&str> {
    if turn.state != TurnState::Completed || turn.parse_error.is_some() {
        return None;
    }
    match (&turn.evaluation, &turn.pair_verdict) {
        (Some(ev), _) => Some(&ev.justification),
        (None, Some(v)) => Some(&v.reasoning),
        (None, None) if turn.pair.is_some() => Some(""),
        (None, None) => None,
    }
}

/// The text a turn shows ([`reply_shown`]). A moderator's choice shows
/// nothing: the pick that follows it says who and why.
pub fn shown(turn: &TurnView) -> &str {
    if turn.kind == TurnKind::Select {
        return "";
    }
    let asks = asks_verdict(turn.role, turn.kind, turn.phase);
    reply_shown(&turn.text, asks, turn.state != TurnState::Streaming, read_of(turn))
}

/// The scores a turn shows on their line: its evaluation once it is
/// complete; while it streams, the scores written so far (a first
/// evaluation gives them before anything else).
pub fn shown_scores<'t>(turn: &'t TurnView, panel: Option<&Panel>) -> Option<std::borrow::Cow<'t, Evaluation>> {
    match (turn.state, &turn.evaluation) {
        (TurnState::Completed, Some(ev)) => Some(as_shown(ev, panel.is_none_or(Panel::shows_weighted))),
        (TurnState::Streaming, _) if asks_verdict(turn.role, turn.kind, turn.phase) && turn.pair.is_none() => {
            streaming_evaluation(panel?, &turn.text).map(std::borrow::Cow::Owned)
        }
        _ => None,
    }
}

/// An evaluation as screens show it: without its probability-weighted
/// values unless `weighted` (the panel's method is built on them,
/// [`Panel::shows_weighted`]).
pub fn as_shown(ev: &Evaluation, weighted: bool) -> std::borrow::Cow<'_, Evaluation> {
    if weighted || ev.weighted_scores.is_none() {
        return std::borrow::Cow::Borrowed(ev);
    }
    std::borrow::Cow::Owned(Evaluation { weighted_scores: None, ..ev.clone() })
}

/// How a piece of a verdict's line stands out where the output has styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stress {
    Plain,
    /// The decision: a verdict, the overall score.
    Decision,
    /// A notice beside it (the speaker has nothing more to add).
    Notice,
}

/// One piece of a verdict's line.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub text: String,
    pub stress: Stress,
}

impl Part {
    fn new(text: String, stress: Stress) -> Self {
        Self { text, stress }
    }
}

/// A verdict's line as it reads: its pieces joined with ` · `, each styled
/// by `style` (plain output passes them through).
pub fn joined(parts: &[Part], style: impl Fn(&Part) -> String) -> String {
    parts.iter().map(style).collect::<Vec<_>>().join(" · ")
}

/// A verdict's line without styles.
pub fn plain(parts: &[Part]) -> String {
    joined(parts, |p| p.text.clone())
}

/// An evaluation's pieces, dimensions in `keys` order (then any the panel
/// does not name), each a score or a categorical aspect's label: a label
/// verdict first, then the scores (a probability-weighted score beside its
/// sampled one), `overall`, the confidence, and whether the speaker has
/// nothing more to add. A value that differs from `before` (the speaker's
/// previous evaluation) shows where it moved from: `relevance 2→3`.
/// `short` (the agent panes) abbreviates the dimensions and leaves out the
/// speaker's being done (the pane's badge says it).
pub fn evaluation_parts(keys: &[String], ev: &Evaluation, before: Option<&Evaluation>, short: bool) -> Vec<Part> {
    let label = |k: &str| if short { super::components::abbrev(k) } else { k.to_string() };
    let value = |now: f64, was: Option<f64>| match was {
        Some(w) if w != now => format!("{}→{}", fmt_score(w), fmt_score(now)),
        _ => fmt_score(now),
    };
    let named = |now: &str, was: Option<&String>| match was {
        Some(w) if w != now => format!("{w}→{now}"),
        _ => now.to_string(),
    };
    let weighted = |k: &str| {
        let w = ev.weighted_scores.as_ref().and_then(|w| w.get(k))?;
        Some(format!(" ({} {w:.2})", if short { "w" } else { "weighted" }))
    };
    let dimension = |k: &str| -> Option<String> {
        match (ev.scores.get(k), ev.labels.get(k)) {
            (Some(v), _) => {
                let was = before.and_then(|b| b.score(k));
                Some(format!("{} {}{}", label(k), value(*v, was), weighted(k).unwrap_or_default()))
            }
            (None, Some(l)) => Some(format!("{} {}", label(k), named(l, before.and_then(|b| b.labels.get(k))))),
            (None, None) => None,
        }
    };
    let mut parts = Vec::new();
    if let Some(l) = &ev.label {
        let text = format!("verdict {}", named(l, before.and_then(|b| b.label.as_ref())));
        parts.push(Part::new(text, Stress::Decision));
    }
    // Dimensions the panel does not name (older logs), in their own order.
    let others = ev.scores.keys().chain(ev.labels.keys().filter(|k| !ev.scores.contains_key(*k)));
    for k in keys.iter().chain(others.filter(|k| !keys.contains(k))) {
        if let Some(text) = dimension(k) {
            parts.push(Part::new(text, Stress::Plain));
        }
    }
    if let Some(o) = ev.overall {
        parts.push(Part::new(
            format!("{} {}", label("overall"), value(o, before.and_then(|b| b.overall))),
            Stress::Decision,
        ));
    }
    if let Some(c) = ev.confidence {
        parts.push(Part::new(format!("{} {}", if short { "conf" } else { "confidence" }, fmt_score(c)), Stress::Plain));
    }
    if ev.done && !short {
        parts.push(Part::new("NO MORE COMMENTS".into(), Stress::Notice));
    }
    parts
}

/// An evaluation as one line ([`evaluation_parts`] without styles):
/// `grammar 4 · relevance 2→3 · overall 3 · confidence 0.8`.
pub fn score_line(keys: &[String], ev: &Evaluation, before: Option<&Evaluation>, short: bool) -> String {
    plain(&evaluation_parts(keys, ev, before, short))
}

/// A pairwise verdict's pieces: the label with the candidate it prefers
/// (`verdict A (sys-lead)`; the candidates are named on screen and in
/// printouts, never to the judges), each criterion's label, the confidence.
/// `short` (the verdicts pane, whose rows are all verdicts) gives the
/// label and the confidence without their names: `A (sys-lead) · high`.
pub fn pair_parts(
    pair: &PairRef,
    label: Label,
    criteria: &BTreeMap<String, Label>,
    confidence: Option<Confidence>,
    short: bool,
) -> Vec<Part> {
    let (a, b) = pair.shown();
    let named = match label {
        Label::A => format!("A ({a})"),
        Label::B => format!("B ({b})"),
        Label::Tie => "tie".to_string(),
    };
    let verdict = if short { named } else { format!("verdict {named}") };
    let mut parts = vec![Part::new(verdict, Stress::Decision)];
    parts.extend(criteria.iter().map(|(k, l)| Part::new(format!("{k} {}", l.as_str()), Stress::Plain)));
    if let Some(c) = confidence {
        parts.push(Part::new(if short { c.to_string() } else { format!("confidence {c}") }, Stress::Plain));
    }
    parts
}

/// The verdict line of turn `index` of `view`, as the transcript shows it:
/// its scores (while it streams, those written so far) with what moved
/// since the speaker's previous evaluation, or its pairwise verdict.
pub fn turn_verdict(view: &SessionView, index: usize) -> Option<Vec<Part>> {
    let t = view.turns.get(index)?;
    if let Some(ev) = shown_scores(t, view.panel.as_ref()) {
        return Some(evaluation_parts(&view.dimension_keys(), &ev, previous_evaluation(view, index), false));
    }
    let (pair, v) = (t.pair.as_ref()?, t.pair_verdict.as_ref()?);
    Some(pair_parts(pair, v.label, &v.criteria, v.confidence, false))
}

/// A choice of the next speaker: `Teachers: Ann picked by moderator: she
/// has not spoken yet`, and the fallback that made it when the moderator's
/// own could not be used.
pub fn pick_line(group: &str, agent: &str, by: SelectedBy, reason: &str, fallback: Option<&str>) -> String {
    let reason = if reason.is_empty() { String::new() } else { format!(": {reason}") };
    let fallback = fallback.map(|f| format!(" [fallback: {f}]")).unwrap_or_default();
    format!("{group}: {agent} picked by {}{reason}{fallback}", by_label(by))
}

/// Where a dimension's evaluation steps came from.
pub fn steps_origin(source: StepsSource, author: Option<&str>, turn: Option<u64>) -> String {
    match (source, author, turn) {
        (StepsSource::Human, Some(a), _) => format!("edited by {a}"),
        (StepsSource::Cache, Some(a), _) => format!("kept from an earlier run, edited by {a}"),
        (StepsSource::Cache, None, _) => "kept from an earlier run".into(),
        (StepsSource::Generated, _, Some(t)) => format!("written by the judge, turn {t}"),
        (StepsSource::Panel, _, _) => "from the panel".into(),
        (source, _, _) => source.as_str().into(),
    }
}

/// A dimension's evaluation steps as the transcript shows them: a heading
/// that says where they came from, then the steps, one a line.
pub fn steps_lines(
    dimension: &str,
    steps: &str,
    source: StepsSource,
    author: Option<&str>,
    turn: Option<u64>,
) -> Vec<String> {
    let mut lines = vec![format!("Evaluation steps · {dimension} ({})", steps_origin(source, author, turn))];
    lines.extend(steps.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("  {}", l.trim())));
    lines
}

/// The evaluation of the same agent's turn before turn `index` (the one its
/// scores moved from), if any.
pub fn previous_evaluation(view: &SessionView, index: usize) -> Option<&Evaluation> {
    let turn = view.turns.get(index)?;
    // Draws of a score are independent: one does not move from another.
    if turn.phase == crate::session::event::Phase::Scoring {
        return None;
    }
    view.turns[..index]
        .iter()
        .rev()
        .filter(|t| t.agent == turn.agent && t.role == turn.role && t.group == turn.group)
        .find_map(|t| t.evaluation.as_ref())
}

/// What a turn was for, for its heading: the phase, the dimension it is
/// about, the round (a draw, when scoring) and whether it was a repair
/// request or a speech asked for again.
pub fn turn_label(t: &TurnView) -> String {
    let mut s = t.phase.as_str().replace('_', " ");
    if let Some(d) = &t.dimension {
        s.push_str(&format!(" · {d}"));
    }
    match (t.round, t.phase) {
        (Some(r), crate::session::event::Phase::Scoring) => s.push_str(&format!(" · draw {r}")),
        (Some(r), _) => s.push_str(&format!(" r{r}")),
        (None, _) => {}
    }
    match t.kind {
        TurnKind::Repair => s.push_str(" (repair)"),
        TurnKind::Redraw => s.push_str(" (asked again)"),
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(text: &str, state: TurnState, evaluation: Option<Evaluation>) -> TurnView {
        TurnView {
            id: 1,
            agent: "Ann".into(),
            group: Some("Parents".into()),
            phase: crate::session::event::Phase::Debate,
            round: None,
            role: Role::Agent,
            kind: TurnKind::Speak,
            dimension: None,
            text: text.into(),
            state,
            evaluation,
            parse_error: None,
            usage: Default::default(),
            latency_ms: None,
            failed_attempts: 0,
            last_error: None,
            cached: false,
            truncated: false,
            repeats: None,
            misquotes: Vec::new(),
            misstates: Vec::new(),
            started: chrono::Utc::now(),
            pair: None,
            pair_verdict: None,
            revision: 0,
        }
    }

    fn ev(grammar: f64, overall: f64) -> Evaluation {
        Evaluation {
            scores: [("grammar".to_string(), grammar), ("relevance".to_string(), 3.0)].into(),
            overall: Some(overall),
            confidence: Some(0.8),
            justification: "The answer skips the den.".into(),
            ..Evaluation::default()
        }
    }

    #[test]
    fn a_turn_shows_its_words_and_never_its_json() {
        let reply = "Bea, the den matters.\n{\"grammar\": 4, \"justification\": \"The answer skips the den.\"}";
        assert_eq!(shown(&turn(&reply[..30], TurnState::Streaming, None)), "Bea, the den matters.");
        assert_eq!(shown(&turn(reply, TurnState::Completed, Some(ev(4.0, 3.0)))), "Bea, the den matters.");
        let bare = "{\"grammar\": 4, \"justification\": \"The answer skips the den.\"}";
        // A reply that is only its evaluation shows its justification as it streams.
        assert_eq!(shown(&turn(&bare[..20], TurnState::Streaming, None)), "");
        assert_eq!(shown(&turn(&bare[..50], TurnState::Streaming, None)), "The answer skips");
        assert_eq!(shown(&turn(bare, TurnState::Streaming, None)), "The answer skips the den.");
        assert_eq!(shown(&turn(bare, TurnState::Completed, Some(ev(4.0, 3.0)))), "The answer skips the den.");
        let mut select = turn("{\"next\": \"Bea\"}", TurnState::Completed, None);
        select.kind = TurnKind::Select;
        assert_eq!(shown(&select), "");
        let mut synthesis = turn("They agree.\n```\ncode\n```", TurnState::Completed, None);
        synthesis.role = Role::Aggregator;
        assert_eq!(shown(&synthesis), synthesis.text);
    }

    #[test]
    fn the_score_line_shows_what_moved() {
        let keys = vec!["grammar".to_string(), "relevance".to_string()];
        assert_eq!(
            score_line(&keys, &ev(4.0, 3.0), None, false),
            "grammar 4 · relevance 3 · overall 3 · confidence 0.8"
        );
        assert_eq!(
            score_line(&keys, &ev(4.0, 4.0), Some(&ev(2.0, 3.0)), true),
            "gram 2→4 · rele 3 · ovr 3→4 · conf 0.8"
        );
    }

    #[test]
    fn weighted_values_show_only_where_the_method_is_built_on_them() {
        let keys = vec!["grammar".to_string(), "relevance".to_string()];
        let mut weighed = ev(4.0, 3.0);
        weighed.weighted_scores = Some([("grammar".to_string(), 3.62)].into());
        let t = turn("Fine.", TurnState::Completed, Some(weighed));
        let line = |stem: &str| {
            let panel = Panel::bundled(stem).unwrap();
            score_line(&keys, &shown_scores(&t, Some(&panel)).unwrap(), None, false)
        };
        assert_eq!(line("summary-geval"), "grammar 4 (weighted 3.62) · relevance 3 · overall 3 · confidence 0.8");
        assert_eq!(line("storybook-qa"), "grammar 4 · relevance 3 · overall 3 · confidence 0.8");
        // The turn keeps them: the report and exports read them there.
        assert!(t.evaluation.as_ref().unwrap().weighted_scores.is_some());
    }

    /// A reply as a server that answers in structured output returns it: the speech, then the verdict's object.
    const STRUCTURED_PAIR: &str = "Summary A keeps the numbers.\n\n{\"confidence\":\"medium\",\"reasoning\":\"A keeps the facts.\",\"verdict\":\"A\"}";

    fn pair_turn(text: &str) -> TurnView {
        let mut t = turn(text, TurnState::Completed, None);
        t.phase = Phase::Comparison;
        t.pair = Some(PairRef { first: "sys-lead".into(), second: "sys-short".into(), swapped: true });
        t
    }

    fn verdict(reasoning: &str) -> crate::session::pairwise::VerdictView {
        crate::session::pairwise::VerdictView {
            turn: 1,
            judge: "Ann".into(),
            swapped: true,
            vote: 1,
            label: Label::A,
            criteria: [("coherence".to_string(), Label::Tie)].into(),
            confidence: Some(Confidence::Level(crate::session::pairwise::ConfidenceLevel::Medium)),
            reasoning: reasoning.into(),
        }
    }

    #[test]
    fn every_verdict_shows_as_a_line_never_as_its_json() {
        // A pairwise verdict: the words without the object, also before the verdict's event…
        let mut t = pair_turn(STRUCTURED_PAIR);
        assert_eq!(shown(&t), "Summary A keeps the numbers.");
        // …and its line names the candidate it prefers.
        t.pair_verdict = Some(verdict("A keeps the facts."));
        assert_eq!(shown(&t), "Summary A keeps the numbers.");
        let v = t.pair_verdict.as_ref().unwrap();
        let line = plain(&pair_parts(t.pair.as_ref().unwrap(), v.label, &v.criteria, v.confidence, false));
        assert_eq!(line, "verdict A (sys-short) · coherence tie · confidence medium");
        // A verdict that was nothing but its object shows its reasoning.
        let mut bare = pair_turn("{\"confidence\":\"medium\",\"reasoning\":\"A keeps the facts.\",\"verdict\":\"A\"}");
        bare.pair_verdict = Some(verdict("A keeps the facts."));
        assert_eq!(shown(&bare), "A keeps the facts.");
        // One that could not be read shows as it came.
        let mut unread = pair_turn("I prefer A. {\"verdict\": \"C\"}");
        unread.parse_error = Some("verdict \"C\" is not \"A\", \"B\" or \"tie\"".into());
        assert_eq!(shown(&unread), unread.text);
        // A verifier's verdict is scores, read like an agent's.
        let mut verifier = turn(
            "Two scores hold.\n\n{\"grammar\":4,\"justification\":\"ok\"}",
            TurnState::Completed,
            Some(ev(4.0, 4.0)),
        );
        verifier.role = Role::Verifier;
        verifier.phase = Phase::Verification;
        assert_eq!(shown(&verifier), "Two scores hold.");
        // Evaluation steps are free text, braces and all.
        let mut steps = turn("1. Read {the summary}.\n2. Compare.", TurnState::Completed, None);
        steps.phase = Phase::Steps;
        assert_eq!(shown(&steps), steps.text);
        // A categorical aspect's label stands with the scores (SAGEval).
        let mut aspects = ev(4.0, 4.0);
        aspects.labels.insert("tone".into(), "playful".into());
        let keys = vec!["grammar".to_string(), "tone".to_string(), "relevance".to_string()];
        let mut before = ev(4.0, 4.0);
        before.labels.insert("tone".into(), "formal".into());
        assert_eq!(
            score_line(&keys, &aspects, Some(&before), false),
            "grammar 4 · tone formal→playful · relevance 3 · overall 4 · confidence 0.8"
        );
        // A label verdict (CollabEval's pairwise mode, a final judge's pick) leads its line.
        let label = Evaluation { label: Some("B".into()), confidence: Some(0.9), done: true, ..Evaluation::default() };
        let parts = evaluation_parts(&keys, &label, None, false);
        assert_eq!(plain(&parts), "verdict B · confidence 0.9 · NO MORE COMMENTS");
        assert_eq!(parts[0].stress, Stress::Decision);
        assert_eq!(parts[2].stress, Stress::Notice);
    }

    #[test]
    fn picks_and_steps_read_the_same_everywhere() {
        assert_eq!(
            pick_line("Teachers", "Ann", SelectedBy::Moderator, "she has not spoken", Some("unknown name")),
            "Teachers: Ann picked by moderator: she has not spoken [fallback: unknown name]"
        );
        assert_eq!(pick_line("Parents", "Bea", SelectedBy::Human, "", None), "Parents: Bea picked by human");
        assert_eq!(
            steps_lines("coherence", "1. Read.\n\n 2. Compare. ", StepsSource::Generated, None, Some(3)),
            ["Evaluation steps · coherence (written by the judge, turn 3)", "  1. Read.", "  2. Compare."]
        );
    }
}
