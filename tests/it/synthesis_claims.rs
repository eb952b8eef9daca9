//! The aggregator's synthesis is checked against the results it was shown:
//! one that gives a member a group's result (or any score the results do
//! not show) is recorded with what it got wrong and written again once; the
//! second stands, marked if it still errs. `claims = "as-given"` (the
//! paper's value) keeps the first as written.

use crate::support;

use moot::cli::headless::{Paint, Transcript};
use moot::panel::{Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Role, TurnKind};
use moot::session::{Event, EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use support::*;

const WRONG: &str = "Agreement: Ann's grammar 3 shows the Teachers are split.\n\nDisagreement: none.\n\nOverall: fair.";
const RIGHT: &str = "Agreement: Ann's grammar 4 stands against Bea's 2.\n\nDisagreement: none.\n\nOverall: fair.";

fn asked_again(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| m.content.starts_with("Your synthesis gives"))
}

/// Ann gives grammar 4 and Bea 2, so the Teachers' result is 3; the
/// aggregator first gives Ann the group's 3, and when asked again `then`.
fn scripted_panel(then: &'static str) -> impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static {
    move |req, _| match speaker(req).as_str() {
        "aggregator" if asked_again(req) => then.into(),
        "aggregator" => WRONG.into(),
        "moderator" => "{\"next\": \"Bea\", \"reason\": \"Bea has not spoken.\"}".into(),
        "Ann" => evaluation(4, 4, 4).into(),
        _ => evaluation(2, 4, 4).into(),
    }
}

fn teachers(claims: Option<&str>) -> moot::panel::Panel {
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    p.moderator.max_turns = 1;
    if let Some(c) = claims {
        p.protocol.settings.insert("claims".into(), SettingValue::Text(c.into()));
    }
    p
}

/// Each aggregator turn: its kind and its marks.
fn syntheses(events: &[Event]) -> Vec<(TurnKind, Vec<String>)> {
    let mut kinds = std::collections::HashMap::new();
    let mut out = Vec::new();
    for e in events {
        match &e.kind {
            EventKind::TurnStarted { turn, role: Role::Aggregator, kind, .. } => {
                kinds.insert(*turn, *kind);
            }
            EventKind::TurnCompleted { turn, misstates, .. } if kinds.contains_key(turn) => {
                out.push((kinds[turn], misstates.clone()));
            }
            _ => {}
        }
    }
    out
}

fn panel_feedback(events: &[Event]) -> String {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group: None, feedback, .. } => Some(feedback.clone()),
            _ => None,
        })
        .expect("the panel's result")
}

#[tokio::test]
async fn a_synthesis_that_gives_a_member_the_groups_result_is_written_again_with_the_correction() {
    let provider = scripted(scripted_panel(RIGHT));
    let (events, outcome) = Session::start(config(teachers(None), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(
        syntheses(&events),
        [
            (TurnKind::Judge, vec!["Ann's grammar 3: it is 4 (3 is the Teachers')".to_string()]),
            (TurnKind::Redraw, Vec::new()),
        ]
    );
    assert_eq!(panel_feedback(&events), RIGHT, "the second synthesis is the panel's");
    // The follow-up said what was wrong, after the draft it answers.
    let requests = provider.requests();
    let again = requests.iter().find(|r| asked_again(r)).expect("asked again");
    let n = again.messages.len();
    assert_eq!(again.messages[n - 2].content, WRONG);
    assert!(
        again.messages[n - 1].content.contains("gives Ann's grammar as 3, but it is 4 (3 is the Teachers')"),
        "{}",
        again.messages[n - 1].content
    );
    // The run's header lists the setting as moot's, not the paper's.
    match &events[0].kind {
        EventKind::SessionStarted { departures, .. } => {
            assert!(departures.iter().any(|d| d.setting == "claims"), "{departures:?}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_second_synthesis_that_still_errs_is_kept_with_its_marks() {
    let provider = scripted(scripted_panel(WRONG));
    let (events, outcome) = Session::start(config(teachers(None), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let marks = syntheses(&events);
    assert_eq!(marks.len(), 2, "asked again once, not more: {marks:?}");
    assert_eq!(marks[1].1, marks[0].1, "the second is marked too");
    assert_eq!(panel_feedback(&events), WRONG);
    // Shown wherever the synthesis is: the transcript pane, the HTML session page, the headless transcript.
    let shown = "misstates Ann's grammar 3: it is 4 (3 is the Teachers')";
    let mut app = moot::tui::app::App::loaded(moot::tui::app::Env::test(), &events);
    app.focus = moot::tui::app::Focus::Transcript;
    app.zoom = true;
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 60)).unwrap();
    term.draw(|f| moot::tui::screens::live::draw(f, &mut app)).unwrap();
    let screen = term.backend().to_string();
    assert_eq!(screen.matches(shown).count(), 2, "both drafts, marked: {screen}");
    // The result pane marks the synthesis it shows.
    app.focus = moot::tui::app::Focus::Aggregator;
    term.draw(|f| moot::tui::screens::live::draw(f, &mut app)).unwrap();
    let screen = term.backend().to_string();
    assert!(screen.contains(WRONG.lines().next().unwrap()), "{screen}");
    assert_eq!(screen.matches(shown).count(), 1, "the result pane: {screen}");
    let page = moot::report::html::session_page(&SessionView::from_events(&events));
    assert_eq!(page.matches(&shown.replace('\'', "&#39;")).count(), 2, "the HTML session page");
    let mut out = Transcript::new(Vec::new(), Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert_eq!(text.matches(shown).count(), 2, "{text}");
    assert_eq!(text.matches("— asked again: the draft gave scores the results do not show").count(), 1, "{text}");
}

#[tokio::test]
async fn under_as_given_the_synthesis_stands_as_written() {
    let provider = scripted(scripted_panel(RIGHT));
    let (events, outcome) = Session::start(config(teachers(Some("as-given")), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(syntheses(&events), [(TurnKind::Judge, Vec::new())]);
    assert_eq!(panel_feedback(&events), WRONG);
}
