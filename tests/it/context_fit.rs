//! Every request fits the context of the model serving it: long discussions
//! are shortened by the documented rule and recorded as `history_trimmed`.

use crate::support;

use std::sync::Arc;

use moot::cli::headless::{Paint, Transcript};
use moot::engine::{Binding, Bindings};
use moot::panel::Protocol;
use moot::provider::window::WindowedProvider;
use moot::provider::{ChatRequest, conservative_prompt_tokens};
use moot::session::event::{EndStatus, Phase, TurnKind};
use moot::session::fold::TimelineEntry;
use moot::session::{Event, EventKind, SessionView};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use support::*;

/// A long, readable reply: the scores, then a justification of some length.
fn long_evaluation(grammar: u32) -> String {
    let why = "The answer names the storm but never says where the fox went. ".repeat(8);
    format!(
        "{}\n{{\"grammar\": {grammar}, \"relevance\": 3, \"overall\": 3, \"confidence\": 0.7, \"justification\": \"{why}\"}}",
        "I weigh the answer against the context sentence by sentence. ".repeat(8)
    )
}

const UNREADABLE: &str = "I have thought about this at length. ";

/// Ann changes her scores every round (so the discussion goes on); her
/// second-round reply has no evaluation at all, and is long, so it gets a
/// repair request.
fn judge(req: &ChatRequest, _: usize) -> ScriptedReply {
    let last = &req.messages.last().unwrap().content;
    let round = last.split("Discussion round ").nth(1).and_then(|s| s[..1].parse::<u32>().ok());
    let repair = last.contains("could not be read");
    match (speaker(req).as_str(), round) {
        _ if repair => evaluation(2, 3, 3).into(),
        ("Ann", Some(2)) => UNREADABLE.repeat(16).into(),
        ("Ann", Some(r)) => long_evaluation(1 + r % 2).into(),
        ("Bea", _) => long_evaluation(4).into(),
        ("Cal", _) => long_evaluation(5).into(),
        ("final judge", _) => evaluation(3, 3, 3).into(),
        _ => long_evaluation(3).into(),
    }
}

fn run_config(provider: Arc<dyn moot::provider::Provider>) -> moot::engine::EngineConfig {
    let mut p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
    // The scripted speeches repeat each other word for word: kept as said,
    // so that the requests are the ones this test measures.
    p.protocol.settings.insert("repeats".into(), moot::panel::SettingValue::Text("keep".into()));
    let mut c = config(p, Arc::new(ScriptedProvider::new(judge)));
    c.bindings = Bindings::uniform(Binding::new(provider, "scripted"));
    c
}

fn turn_kind(events: &[Event], turn: u64) -> Option<TurnKind> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::TurnStarted { turn: t, kind, .. } if *t == turn => Some(*kind),
        _ => None,
    })
}

#[tokio::test]
async fn an_overflowing_repair_request_is_shortened_and_every_request_fits() {
    // First, with no known context: how long the requests are.
    let open = Arc::new(ScriptedProvider::new(judge));
    let (_, outcome) = Session::start(run_config(open.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let requests = open.requests();
    let is_repair = |r: &ChatRequest| r.messages.last().unwrap().content.contains("could not be read");
    let need = |r: &ChatRequest| conservative_prompt_tokens(&r.messages) + u64::from(r.max_tokens);
    let repair = requests.iter().find(|r| is_repair(r)).expect("Ann's unreadable reply got a repair request");
    let asked = requests.iter().position(is_repair).unwrap() - 1;
    assert!(need(&requests[asked]) + 200 < need(repair), "the request it repairs is shorter");

    // Then with a context the request that was answered fits in whole, and its repair not.
    let context = need(repair) - 100;
    let inner = Arc::new(ScriptedProvider::new(judge));
    let provider = Arc::new(WindowedProvider::new(inner.clone(), context));
    let (events, outcome) = Session::start(run_config(provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);

    for r in inner.requests() {
        assert!(need(&r) <= context, "a request needs {} tokens of {context}", need(&r));
    }
    let trims: Vec<&EventKind> =
        events.iter().map(|e| &e.kind).filter(|k| matches!(k, EventKind::HistoryTrimmed { .. })).collect();
    let repairs: Vec<&&EventKind> = trims
        .iter()
        .filter(|k| matches!(k, EventKind::HistoryTrimmed { turn, .. } if turn_kind(&events, *turn) == Some(TurnKind::Repair)))
        .collect();
    assert_eq!(repairs.len(), 1, "the repair request was shortened: {trims:?}");
    let EventKind::HistoryTrimmed {
        turn,
        agent,
        group,
        left_out,
        condensed,
        tokens_before,
        tokens_after,
        context: c,
        reply_tokens,
        ..
    } = repairs[0]
    else {
        unreachable!()
    };
    assert_eq!((agent.as_str(), group.as_deref(), *c), ("Ann", Some("Evaluators"), context));
    assert!(tokens_after + reply_tokens <= context && tokens_before > tokens_after);
    // Only first evaluations were superseded by then; the oldest go first.
    let shortened: Vec<_> = condensed.iter().chain(left_out).collect();
    assert!(!shortened.is_empty() && shortened.iter().all(|e| e.first), "{shortened:?}");
    assert!(condensed.iter().chain(left_out).any(|e| e.index == 1), "the oldest is among them: {shortened:?}");

    // The repair request keeps the reply it repairs whole, and is parsed.
    let repaired = inner.requests().into_iter().find(|r| is_repair(r)).unwrap();
    let reply = &repaired.messages[repaired.messages.len() - 2].content;
    assert_eq!(reply, &UNREADABLE.repeat(16));
    let completed = events.iter().find_map(|e| match &e.kind {
        EventKind::TurnCompleted { turn: t, evaluation, .. } if t == turn => Some(evaluation.is_some()),
        _ => None,
    });
    assert_eq!(completed, Some(true), "the repair's evaluation was read");

    // The view and the transcripts show it as one line.
    let view = SessionView::from_events(&events);
    let line = view
        .timeline
        .iter()
        .find_map(|t| match t {
            TimelineEntry::Trimmed(v) if v.turn == *turn => Some(v.summary()),
            _ => None,
        })
        .expect("the trim is in the timeline");
    assert!(line.starts_with("history trimmed for Ann: "), "{line}");
    assert!(line.contains(&format!("tokens of {}", moot::session::fold::thousands(context))), "{line}");
    let mut out = Transcript::new(Vec::new(), Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert!(text.contains(&format!("✂ {line}")), "{text}");
}

#[tokio::test]
async fn a_request_that_cannot_fit_fails_with_the_numbers() {
    let inner = Arc::new(ScriptedProvider::new(judge));
    let provider = Arc::new(WindowedProvider::new(inner.clone(), 300));
    let (events, outcome) = Session::start(run_config(provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert_eq!(inner.calls(), 0, "nothing too long was sent");
    let errors: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnFailed { error, .. } => Some(error.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    for name in ["Ann", "Bea", "Cal"] {
        let e = errors.iter().find(|e| e.starts_with(&format!("{name}: "))).expect("each agent is named");
        assert!(e.contains("does not fit") && e.contains("context of 300") && e.contains("context_size"), "{e}");
    }
    assert!(!events.iter().any(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Discussion, .. })));
}
