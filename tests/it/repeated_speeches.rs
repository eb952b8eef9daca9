//! A debate speech that repeats an earlier one is asked for once more, with
//! a note and another seed; a second reply that still repeats is kept and
//! marked (`turn_completed.repeats`), and a distinct speech is never asked
//! for again.

use crate::support;

use moot::cli::headless::{Paint, Transcript};
use moot::panel::{Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Role, TurnKind};
use moot::session::{Event, EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use support::*;

/// The words every debate speech says unless it is asked again.
const PARROT: &str = "I think the answer names the wall where Pebble hid, and that fits the story.";

fn asked_again(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| m.content.contains("Your draft of this turn repeated"))
}

/// Debate speeches say [`PARROT`] after the member they answer; asked
/// again, a speech says something of its own when `learns`.
fn parrot(learns: bool) -> impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static {
    move |req, _| {
        let who = speaker(req);
        if who == "aggregator" {
            return "They agree.".into();
        }
        let again = asked_again(req);
        if !again && !is_debate(req) {
            return evaluation(4, 4, 4).into();
        }
        let words = if again && learns { own_words(&who) } else { PARROT };
        format!("Ann, {words}\n{JSON}").into()
    }
}

const JSON: &str =
    "{\"grammar\": 4, \"relevance\": 4, \"overall\": 4, \"confidence\": 0.8, \"justification\": \"Fine.\"}";

/// What each member says when it speaks for itself.
fn own_words(who: &str) -> &'static str {
    match who {
        "Ann" => "I would add that a four-year-old can say this back in one word.",
        "Bea" => "I worry that the question gives its own answer away to the child.",
        _ => "I find bedtime no place for a question about getting lost in the dark.",
    }
}

/// (turn, agent, kind) of the agents' debate turns, and each turn's `repeats`.
fn debate_turns(events: &[Event]) -> Vec<(u64, String, TurnKind, Option<String>)> {
    let mut out: Vec<(u64, String, TurnKind, Option<String>)> = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::TurnStarted { turn, agent, role: Role::Agent, kind, phase, .. }
                if *phase == moot::session::event::Phase::Debate =>
            {
                out.push((*turn, agent.clone(), *kind, None));
            }
            EventKind::TurnCompleted { turn, repeats, .. } => {
                if let Some(t) = out.iter_mut().find(|t| t.0 == *turn) {
                    t.3 = repeats.clone();
                }
            }
            _ => {}
        }
    }
    out
}

fn one_group() -> moot::panel::Panel {
    let mut p = panel(Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cal"])]);
    p.moderator.max_turns = 3;
    p
}

#[tokio::test]
async fn a_repeated_speech_is_asked_for_once_more_and_the_new_words_are_kept() {
    let provider = scripted(parrot(true));
    let (events, outcome) = Session::start(config(one_group(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let turns = debate_turns(&events);
    let kinds: Vec<TurnKind> = turns.iter().map(|t| t.2).collect();
    // The first speech repeats nothing; each later one repeats it, and is asked again once.
    use TurnKind::{Redraw, Speak};
    assert_eq!(kinds, [Speak, Speak, Redraw, Speak, Redraw], "{turns:?}");
    let first = &turns[0].1;
    assert_eq!(turns[0].3, None, "a distinct speech is not marked");
    assert_eq!(turns[1].3.as_deref(), Some(first.as_str()), "the draft names who said it first");
    assert_eq!(turns[2].3, None, "the speech asked for again is new");
    // The note went with the request, and another seed than the run's.
    let requests = provider.requests();
    let again: Vec<&ChatRequest> = requests.iter().filter(|r| asked_again(r)).collect();
    assert_eq!(again.len(), 2);
    assert!(again[0].messages.last().unwrap().content.contains(&format!("repeated what {first} said")));
    let seed = requests[0].seed;
    assert!(again.iter().all(|r| r.seed.is_some() && r.seed != seed));
    // The new words are what the group hears next, not the draft.
    let next = requests.iter().rev().find(|r| is_debate(r) && !asked_again(r)).unwrap();
    let history = &next.messages[1].content;
    assert!(history.contains(own_words(&turns[1].1)), "{history}");
    assert_eq!(history.matches(PARROT).count(), 1, "the draft is not in the discussion: {history}");
    // A speech asked for again is part of its turn: three turns, each member once.
    let view = SessionView::from_events(&events);
    assert_eq!(view.groups[0].debate_turns, 3);
    for a in &view.agents {
        assert_eq!(a.progress.turns_spoken, 2, "{}: a first evaluation and one speech", a.info.name);
    }
    let usage = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::SessionEnded { usage, .. } => Some(usage.clone()),
        _ => None,
    });
    assert!(usage.unwrap().by_role.contains_key("redraw"), "the cost of asking again is counted apart");
}

#[tokio::test]
async fn a_speech_that_still_repeats_is_kept_and_marked_after_one_more_try() {
    let provider = scripted(parrot(false));
    let (events, outcome) = Session::start(config(one_group(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let turns = debate_turns(&events);
    let kinds: Vec<TurnKind> = turns.iter().map(|t| t.2).collect();
    use TurnKind::{Redraw, Speak};
    assert_eq!(kinds, [Speak, Speak, Redraw, Speak, Redraw], "asked again once per speech, no more: {turns:?}");
    let first = turns[0].1.clone();
    for t in &turns[1..] {
        assert_eq!(t.3.as_deref(), Some(first.as_str()), "{t:?}");
    }
    // The kept speech is marked in the view, and the transcript says so.
    let view = SessionView::from_events(&events);
    let kept = view.turns.iter().filter(|t| t.kind == Redraw && t.repeats.is_some()).count();
    assert_eq!(kept, 2);
    let mut out = Transcript::new(Vec::new(), Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert_eq!(text.matches(&format!("asked again: the draft repeated {first}'s speech")).count(), 2, "{text}");
    assert_eq!(text.matches(&format!(", repeats {first}]")).count(), 4, "{text}");
}

#[tokio::test]
async fn with_repeats_keep_a_repeated_speech_is_marked_but_not_asked_again() {
    let provider = scripted(parrot(true));
    let mut p = one_group();
    p.protocol.settings.insert("repeats".into(), SettingValue::Text("keep".into()));
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let turns = debate_turns(&events);
    assert!(turns.iter().all(|t| t.2 == TurnKind::Speak), "{turns:?}");
    assert_eq!(turns.iter().filter(|t| t.3.is_some()).count(), 2);
    assert!(!provider.requests().iter().any(asked_again));
}

#[tokio::test]
async fn distinct_speeches_are_never_asked_again() {
    // Every speech says something of its own.
    let provider = scripted(|req, _| {
        let who = speaker(req);
        if who == "aggregator" {
            return "They agree.".into();
        }
        if !is_debate(req) {
            return evaluation(4, 4, 4).into();
        }
        format!("Ann, {}\n{JSON}", own_words(&who)).into()
    });
    let (events, outcome) = Session::start(config(one_group(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let turns = debate_turns(&events);
    assert_eq!(turns.len(), 3);
    assert!(turns.iter().all(|t| t.2 == TurnKind::Speak && t.3.is_none()), "{turns:?}");
}

/// A debate speech's request says what it may not copy (the group's earlier
/// contributions and its own instructions), what it may quote (the item)
/// and the names it may repeat; asked for again, also the speech its draft
/// repeated, strictly; a first evaluation's says nothing, nor does any
/// request under `repeats = "keep"`. The aggregator's guards nothing but its
/// own words, and it too may quote the item (whose names stay free).
#[tokio::test]
async fn a_speech_request_says_what_it_may_not_copy() {
    let provider = scripted(parrot(true));
    let (_, outcome) = Session::start(config(one_group(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let requests = provider.requests();
    for r in requests.iter().filter(|r| !is_debate(r) && !asked_again(r)) {
        if speaker(r) == "aggregator" {
            let own = r.no_copy.as_ref().expect("the synthesis may not repeat itself");
            assert!(own.avoid.is_empty(), "{own:?}");
            assert!(own.quotable.contains(&support::item().content), "the item may be quoted: {own:?}");
            assert!(own.names.iter().any(|n| n == "Ann") && own.names.iter().any(|n| n == "grammar"), "{own:?}");
        } else {
            assert!(r.no_copy.is_none(), "only speeches are guarded");
        }
    }
    let speeches: Vec<&ChatRequest> = requests.iter().filter(|r| is_debate(r) && !asked_again(r)).collect();
    assert_eq!(speeches.len(), 3);
    let last = speeches[2].no_copy.as_ref().expect("a speech's request is guarded");
    assert!(last.avoid.iter().any(|t| t.contains("names the wall where pebble hid")), "an earlier speech: {last:?}");
    assert!(last.avoid.iter().any(|t| t == &speeches[2].messages[0].content), "its instructions (the system prompt)");
    assert!(!last.avoid.iter().any(|t| t == &speeches[2].messages[1].content), "not the item and discussion");
    let item = support::item();
    assert!(last.quotable.contains(&item.content));
    for name in ["Ann", "Bea", "Cal", "grammar"] {
        assert!(last.names.iter().any(|n| n == name), "{name}: {:?}", last.names);
    }
    assert!(speeches.iter().all(|r| r.no_copy.as_ref().unwrap().strict.is_empty()), "a first draft: nothing strict");
    // A speech asked for again may not copy the speech its draft repeated,
    // not even where that one quotes the item.
    let again: Vec<&ChatRequest> = requests.iter().filter(|r| asked_again(r)).collect();
    assert_eq!(again.len(), 2);
    for r in again {
        let strict = &r.no_copy.as_ref().expect("a speech asked again is guarded").strict;
        assert_eq!(strict.len(), 1, "{strict:?}");
        assert!(strict[0].contains("names the wall where pebble hid"), "the repeated speech: {strict:?}");
    }
    // Under "keep", nothing is guarded.
    let provider = scripted(parrot(true));
    let mut p = one_group();
    p.protocol.settings.insert("repeats".into(), SettingValue::Text("keep".into()));
    Session::start(config(p, provider.clone()), None).finish().await;
    assert!(provider.requests().iter().all(|r| r.no_copy.is_none()));
}
