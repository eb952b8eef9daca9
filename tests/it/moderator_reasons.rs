//! An LLM moderator's reason is checked against the scores table it was
//! shown: a reason that claims what the table does not show is sent back
//! once with the correction; if the second still does, the disagreement
//! policy chooses and the log records that the reason was replaced.

use crate::support;

use moot::panel::{ModeratorPolicy, Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, SelectedBy};
use moot::session::{Event, EventKind};
use moot::testkit::scripted::ScriptedReply;
use support::*;

fn corrected(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| m.content.contains("does not match the scores table"))
}

/// Everyone gives the same scores; the moderator claims Bea's differ, and
/// when corrected says `then`.
fn moderated(then: &'static str) -> impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static {
    move |req, _| match speaker(req).as_str() {
        "aggregator" => "They agree.".into(),
        "moderator" if corrected(req) => then.into(),
        "moderator" => "{\"next\": \"Bea\", \"reason\": \"Bea is the agent whose scores differ most.\"}".into(),
        _ => evaluation(4, 4, 4).into(),
    }
}

fn panel_of_three() -> moot::panel::Panel {
    let mut p = panel(Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cal"])]);
    p.moderator.policy = ModeratorPolicy::Llm;
    p.moderator.max_turns = 1;
    p
}

/// (by, reason, fallback, reason_replaced) of each pick.
fn picks(events: &[Event]) -> Vec<(SelectedBy, String, Option<String>, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SpeakerSelected { by, reason, fallback, reason_replaced, .. } => {
                Some((*by, reason.clone(), fallback.clone(), reason_replaced.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_reason_the_table_contradicts_is_sent_back_once_with_the_correction() {
    let provider = scripted(moderated("{\"next\": \"Bea\", \"reason\": \"Bea has not answered anyone yet.\"}"));
    let (events, outcome) = Session::start(config(panel_of_three(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let picks = picks(&events);
    assert_eq!(picks.len(), 1);
    assert_eq!(picks[0].0, SelectedBy::Moderator);
    assert_eq!(picks[0].1, "Bea has not answered anyone yet.");
    assert_eq!((picks[0].2.as_ref(), picks[0].3.as_ref()), (None, None));
    // The correction said what the table shows.
    let requests = provider.requests();
    let again = requests.iter().find(|r| corrected(r)).expect("the moderator was asked again");
    let correction = &again.messages.last().unwrap().content;
    assert!(correction.contains("nobody's scores differ"), "{:?}", again.messages);
    // It says again, right before the answer form, where each member who
    // may speak stands.
    assert!(
        correction.contains(
            ".\nWhat the table shows about those who may speak:\n- Ann's scores are the same as the others'.\n"
        ) && correction.ends_with(
            "Answer only with {\"next\": \"<name>\", \"reason\": \"<one sentence that begins with that name>\"}."
        ),
        "{correction}"
    );
    // Under `checked` the request says where each member who may speak
    // stands, the facts a reason can give.
    let first = requests.iter().find(|r| speaker(r) == "moderator").expect("a moderator request");
    let turn = &first.messages.last().unwrap().content;
    assert!(
        turn.contains("What the table shows about those who may speak:\n- Ann's scores are the same as the others'.\n"),
        "{turn}"
    );
    // The first reply is recorded with why it was not used.
    let unused = events.iter().any(|e| {
        matches!(&e.kind, EventKind::TurnCompleted { agent, parse_error: Some(err), .. }
            if agent == "moderator" && err.contains("nobody's scores differ"))
    });
    assert!(unused);
}

#[tokio::test]
async fn a_reason_still_contradicted_is_replaced_by_the_policys_choice() {
    let provider = scripted(moderated("{\"next\": \"Cal\", \"reason\": \"Cal spoke last, so he should go on.\"}"));
    let (events, outcome) = Session::start(config(panel_of_three(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let picks = picks(&events);
    let (by, reason, fallback, replaced) = &picks[0];
    assert_eq!(*by, SelectedBy::Policy);
    assert_eq!(fallback.as_deref(), Some("disagreement"));
    assert_eq!(replaced.as_deref(), Some("it says Cal spoke last, but nobody has spoken yet"));
    assert!(reason.starts_with("the moderator's reason did not match its scores table ("), "{reason}");
    assert!(reason.contains("turn 1:"), "the policy's own reason follows: {reason}");
    assert_eq!(provider.requests().iter().filter(|r| corrected(r)).count(), 1, "asked again once");
}

#[tokio::test]
async fn with_reasons_as_given_the_moderators_choice_stands() {
    let provider = scripted(moderated("unused"));
    let mut p = panel_of_three();
    p.protocol.settings.insert("reasons".into(), SettingValue::Text("as-given".into()));
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let picks = picks(&events);
    assert_eq!(picks[0].0, SelectedBy::Moderator);
    assert_eq!(picks[0].1, "Bea is the agent whose scores differ most.");
    let requests = provider.requests();
    assert!(!requests.iter().any(corrected));
    let first = requests.iter().find(|r| speaker(r) == "moderator").expect("a moderator request");
    assert!(!first.messages.last().unwrap().content.contains("What the table shows about"));
}
