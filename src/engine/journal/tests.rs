use super::*;
use crate::session::event::{Role, Usage};
use crate::testkit::evaluation;

fn at(seq: u64, kind: EventKind) -> Event {
    Event { seq, t: chrono::Utc::now(), kind }
}

/// A log's first line: what resuming needs of it here is that it is one.
fn started() -> EventKind {
    serde_json::from_value(serde_json::json!({
        "type": "session_started", "session_id": "s-1", "protocol": "maj-eval", "panel": {},
        "item": {"id": "qa-test", "content": "An answer."}, "agents": [], "seed": 7, "moot_version": "0"
    }))
    .unwrap()
}

fn turn_started(turn: u64, agent: &str) -> EventKind {
    EventKind::TurnStarted {
        turn,
        agent: agent.into(),
        group: Some("Teachers".into()),
        phase: Phase::Initial,
        round: None,
        role: Role::Agent,
        kind: TurnKind::Speak,
        dimension: None,
        pair: None,
    }
}

fn completed(turn: u64, agent: &str, latency_ms: u64) -> EventKind {
    EventKind::TurnCompleted {
        turn,
        agent: agent.into(),
        text: evaluation(4, 4, 4),
        evaluation: None,
        parse_error: None,
        usage: Usage { input_tokens: 10, output_tokens: 5, ..Default::default() },
        latency_ms,
        cached: false,
        done: false,
        truncated: true,
        repeats: None,
        misquotes: Vec::new(),
        misstates: Vec::new(),
        endpoint: None,
    }
}

fn id(agent: &str) -> CallId<'_> {
    CallId {
        agent,
        group: Some("Teachers"),
        phase: Phase::Initial,
        round: None,
        kind: TurnKind::Speak,
        dimension: None,
        pair: None,
    }
}

/// Ann's turn completed, Bea's was streaming, and a person commented
/// while it did.
fn cut_log() -> Vec<Event> {
    vec![
        at(0, started()),
        at(1, turn_started(1, "Ann")),
        at(2, turn_started(2, "Bea")),
        at(3, EventKind::TurnDelta { turn: 2, text: "Half".into() }),
        at(4, completed(1, "Ann", 900)),
        at(5, EventKind::HumanComment { text: "Mind the children".into(), author: "ana".into(), group: None }),
        at(6, EventKind::TurnDelta { turn: 2, text: " a reply".into() }),
    ]
}

#[test]
fn a_completed_turn_is_answered_from_the_log_and_a_streaming_one_is_open() {
    let j = Journal::new(cut_log()).unwrap();
    assert_eq!((j.next_seq(), j.next_turn()), (7, 3));
    let Some(Recorded::Completed { turn, completion, latency_ms, .. }) = j.take_call(&id("Ann")) else {
        panic!("Ann's turn is in the log")
    };
    assert_eq!((turn, latency_ms), (1, 900));
    assert_eq!(completion.text, evaluation(4, 4, 4));
    assert_eq!(completion.usage.output_tokens, 5);
    assert_eq!(completion.finish_reason.as_deref(), Some("length"), "a truncated reply stays truncated");
    assert!(j.take_call(&id("Ann")).is_none(), "one answer per recorded call");
    assert!(matches!(j.take_call(&id("Bea")), Some(Recorded::Open { turn: 2, .. })));
    assert!(j.settle(), "past the log, the comment is released");
}

#[test]
fn an_event_the_log_holds_is_matched_once_and_releases_what_followed_it() {
    let j = Journal::new(cut_log()).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    j.connect(tx);
    assert_eq!(j.claim(&started()), Some(0));
    assert_eq!(j.claim(&turn_started(1, "Ann")), Some(1));
    assert!(rx.try_recv().is_err(), "the comment came after Ann's reply");
    // The time a reply took is no part of its identity.
    assert_eq!(j.claim(&completed(1, "Ann", 5)), Some(4));
    assert_eq!(
        rx.try_recv().unwrap(),
        Command::Comment { text: "Mind the children".into(), author: "ana".into(), group: None }
    );
    assert_eq!(j.claim(&completed(1, "Ann", 900)), None, "matched once");
    assert_eq!(j.claim(&turn_started(3, "Bea")), None, "a new turn is new");
}

#[test]
fn a_session_that_ended_is_not_resumed() {
    let mut log = cut_log();
    log.push(at(
        7,
        EventKind::SessionEnded {
            status: crate::session::event::EndStatus::Stopped,
            error: None,
            reason: None,
            usage: Default::default(),
            duration_ms: 1,
        },
    ));
    let err = Journal::new(log).unwrap_err().to_string();
    assert!(err.contains("ended (stopped)") && err.ends_with("nothing to resume"), "{err}");
    assert_eq!(Journal::new(Vec::new()).unwrap_err(), ResumeError::Empty);
    let not_a_start = vec![at(0, turn_started(1, "Ann"))];
    assert!(matches!(Journal::new(not_a_start), Err(ResumeError::NoStart(t)) if t == "turn_started"));
}

#[test]
fn a_logged_failure_is_read_back_as_the_error_it_was() {
    let errors = [
        ProviderError::Http { status: 503, body: "busy: try later".into(), retry_after: None },
        ProviderError::Http { status: 401, body: "no key".into(), retry_after: None },
        ProviderError::Connect("refused".into()),
        ProviderError::Incomplete("no [DONE]".into()),
        ProviderError::Protocol("not JSON".into()),
        ProviderError::Config("OPENAI_API_KEY is not set".into()),
        ProviderError::Cancelled,
    ];
    for e in errors {
        let back = failure(&e.to_string());
        assert_eq!(back.to_string(), e.to_string());
        assert_eq!(back.is_retryable(), e.is_retryable(), "{e}");
    }
}

#[test]
fn a_person_left_paused_is_resumed_only_when_asked() {
    let mut log = cut_log();
    log.push(at(7, EventKind::Paused { author: "ana".into() }));
    let j = Journal::new(log).unwrap();
    assert!(j.ends_paused());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    j.connect(tx);
    j.unpause_at_end("ana");
    let _ = j.take_call(&id("Ann"));
    assert!(j.settle());
    let got: Vec<Command> = std::iter::from_fn(|| rx.try_recv().ok()).collect();
    assert_eq!(got.last(), Some(&Command::Resume { author: "ana".into() }));
    assert!(got.contains(&Command::Pause { author: "ana".into() }));
}
