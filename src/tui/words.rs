//! What a turn shows people: an evaluated reply's words without the JSON
//! evaluation it ends with, and its scores as one line of their own.

use crate::engine::prompts::{justification_streaming, reply_words, streaming_evaluation};
use crate::panel::Panel;
use crate::session::event::{Evaluation, Role, TurnKind};
use crate::session::fold::{SessionView, TurnState, TurnView};
use crate::tui::app::fmt_score;

/// Whether a turn's reply ends with an evaluation (agents, final judges, meta-evaluators).
fn evaluates(turn: &TurnView) -> bool {
    matches!(turn.role, Role::Agent | Role::FinalJudge | Role::MetaEvaluator) && turn.kind != TurnKind::Select
}

/// The text a turn shows. An evaluated reply shows its prose, without its
/// JSON (also while it streams); one that was only the evaluation shows its
/// justification (as it streams, too). A moderator's choice shows nothing:
/// the pick that follows it says who and why. Other turns (the aggregator's
/// synthesis) show their text.
pub fn shown(turn: &TurnView) -> &str {
    if turn.kind == TurnKind::Select {
        return "";
    }
    if !evaluates(turn) {
        return &turn.text;
    }
    let complete = turn.state != TurnState::Streaming;
    let words = reply_words(&turn.text, complete, turn.evaluation.is_some());
    match &turn.evaluation {
        Some(ev) if words.is_empty() && complete => ev.justification.trim(),
        None if words.is_empty() && !complete => justification_streaming(&turn.text).unwrap_or_default().trim(),
        _ => words,
    }
}

/// The scores a turn shows on their line: its evaluation once it is
/// complete; while it streams, the scores written so far (a first
/// evaluation gives them before anything else).
pub fn shown_scores<'t>(turn: &'t TurnView, panel: Option<&Panel>) -> Option<std::borrow::Cow<'t, Evaluation>> {
    match (turn.state, &turn.evaluation) {
        (TurnState::Completed, Some(ev)) => Some(std::borrow::Cow::Borrowed(ev)),
        (TurnState::Streaming, _) if evaluates(turn) => {
            streaming_evaluation(panel?, &turn.text).map(std::borrow::Cow::Owned)
        }
        _ => None,
    }
}

/// A turn's scores as one line, dimensions in `keys` order, then overall and
/// confidence: `grammar 4 · relevance 2→3 · overall 3 · conf 0.8`. A score
/// that differs from `before` (the agent's previous evaluation) shows where it
/// moved from. `short` uses the dimensions' abbreviations.
pub fn score_line(keys: &[String], ev: &Evaluation, before: Option<&Evaluation>, short: bool) -> String {
    let label = |k: &str| if short { super::components::abbrev(k) } else { k.to_string() };
    let value = |now: f64, was: Option<f64>| match was {
        Some(w) if w != now => format!("{}→{}", fmt_score(w), fmt_score(now)),
        _ => fmt_score(now),
    };
    // A probability-weighted score follows the sampled one: `grammar 4 (weighted 4.31)`.
    let weighted = |k: &str| {
        let w = ev.weighted_scores.as_ref().and_then(|w| w.get(k))?;
        Some(format!(" ({} {w:.2})", if short { "w" } else { "weighted" }))
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(l) = &ev.label {
        match before.and_then(|b| b.label.as_ref()) {
            Some(was) if was != l => parts.push(format!("verdict {was}→{l}")),
            _ => parts.push(format!("verdict {l}")),
        }
    }
    parts.extend(keys.iter().filter_map(|k| {
        ev.scores.get(k).map(|v| {
            let w = weighted(k).unwrap_or_default();
            format!("{} {}{w}", label(k), value(*v, before.and_then(|b| b.score(k))))
        })
    }));
    // Dimensions the panel does not name (older logs), in their own order.
    parts.extend(
        ev.scores.iter().filter(|(k, _)| !keys.contains(k)).map(|(k, v)| format!("{} {}", label(k), fmt_score(*v))),
    );
    if let Some(o) = ev.overall {
        parts.push(format!("{} {}", label("overall"), value(o, before.and_then(|b| b.overall))));
    }
    if let Some(c) = ev.confidence {
        parts.push(format!("conf {}", fmt_score(c)));
    }
    parts.join(" · ")
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
            started: chrono::Utc::now(),
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
        assert_eq!(score_line(&keys, &ev(4.0, 3.0), None, false), "grammar 4 · relevance 3 · overall 3 · conf 0.8");
        assert_eq!(
            score_line(&keys, &ev(4.0, 4.0), Some(&ev(2.0, 3.0)), true),
            "gram 2→4 · rele 3 · ovr 3→4 · conf 0.8"
        );
    }
}
