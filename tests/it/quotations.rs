//! A speech's quotations are checked against what the speaker was shown: a
//! quotation of four words or more that neither the item, nor the request,
//! nor an earlier contribution of the group contains is recorded
//! (`turn_completed.misquotes`), shown, and (`quotes = "redraw"`, moot's
//! default) asked for once more with a note; exact quotations are not.

use crate::support;

use moot::cli::headless::{Paint, Transcript};
use moot::panel::{Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Phase, Role};
use moot::session::{EventKind, SessionView};
use support::*;

const JSON: &str =
    "{\"grammar\": 4, \"relevance\": 4, \"overall\": 4, \"confidence\": 0.8, \"justification\": \"Fine.\"}";

fn asked_again(req: &ChatRequest) -> bool {
    req.messages.last().is_some_and(|m| m.content.contains("In your draft of this turn, \""))
}

/// Ann quotes the item exactly, Bea rewords its question in quotation
/// marks (and, asked again, says it without them when she `learns`), Cal
/// quotes what Bea said (both times).
fn speeches(
    learns: bool,
) -> impl Fn(&moot::provider::ChatRequest, usize) -> moot::testkit::scripted::ScriptedReply + Send + Sync + 'static {
    move |req, _| {
        let who = speaker(req);
        if who == "aggregator" {
            return "They agree.".into();
        }
        if !is_debate(req) && !asked_again(req) {
            return evaluation(4, 4, 4).into();
        }
        let words = match who.as_str() {
            "Ann" => r#"Bea, the answer says "it was scared of the storm", which the story backs."#,
            "Bea" if learns && asked_again(req) => "Ann, but a child may hear the question as asking how, not why.",
            "Bea" => r#"Ann, but a child may hear the question "How did the fox run so fast?" and look for a manner."#,
            _ => r#"Bea, you said "a child may hear the question" and I disagree."#,
        };
        format!("{words}\n{JSON}").into()
    }
}

fn one_group() -> moot::panel::Panel {
    let mut p = panel(Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cal"])]);
    p.moderator.max_turns = 3;
    p.moderator.policy = moot::panel::ModeratorPolicy::RoundRobin;
    p
}

/// (speaker, misquotes) of each debate turn, drafts asked again included.
fn debate_marks(events: &[moot::session::Event]) -> Vec<(String, Vec<String>)> {
    let mut debate: Vec<(String, Vec<String>)> = Vec::new();
    let mut started = std::collections::HashMap::new();
    for e in events {
        match &e.kind {
            EventKind::TurnStarted { turn, agent, role: Role::Agent, phase: Phase::Debate, .. } => {
                started.insert(*turn, agent.clone());
            }
            EventKind::TurnCompleted { turn, misquotes, .. } if started.contains_key(turn) => {
                debate.push((started[turn].clone(), misquotes.clone()));
            }
            EventKind::TurnCompleted { misquotes, .. } => assert!(misquotes.is_empty(), "{misquotes:?}"),
            _ => {}
        }
    }
    debate
}

const BAD: &str = "How did the fox run so fast?";

#[tokio::test]
async fn a_misquoting_speech_is_asked_for_once_more_with_a_note_naming_the_quotation() {
    let provider = scripted(speeches(true));
    let (events, outcome) = Session::start(config(one_group(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let marks = debate_marks(&events);
    let expected: Vec<(String, Vec<String>)> =
        vec![("Ann".into(), vec![]), ("Bea".into(), vec![BAD.into()]), ("Bea".into(), vec![]), ("Cal".into(), vec![])];
    assert_eq!(marks, expected, "Bea's draft is marked and asked again; her second reply quotes nothing");
    let requests = provider.requests();
    let again: Vec<&ChatRequest> = requests.iter().filter(|r| asked_again(r)).collect();
    assert_eq!(again.len(), 1);
    let note = &again[0].messages.last().unwrap().content;
    assert!(
        note.contains(&format!(
            "\"{BAD}\" is not in the item or the discussion (the nearest words there: \"Why did the fox run?\")"
        )),
        "{note}"
    );
    // The group hears the second reply, not the draft.
    let last = requests.iter().rev().find(|r| is_debate(r) && !asked_again(r)).unwrap();
    let heard = &last.messages[1].content;
    assert!(!heard.contains("run so fast") && heard.contains("asking how, not why"), "{heard}");
    // The transcript says why the speech was asked for again.
    let mut out = Transcript::new(Vec::new(), Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert_eq!(text.matches("▸ Bea (Parents) — asked again: the draft misquoted\n").count(), 1, "{text}");
    assert!(!text.contains("the draft repeated"), "{text}");
}

#[tokio::test]
async fn with_quotes_keep_a_misquote_is_recorded_and_shown_and_exact_quotations_are_not() {
    let mut p = one_group();
    p.protocol.settings.insert("quotes".into(), SettingValue::Text("keep".into()));
    let provider = scripted(speeches(true));
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(!provider.requests().iter().any(asked_again));
    let expected: Vec<(String, Vec<String>)> =
        vec![("Ann".into(), vec![]), ("Bea".into(), vec![BAD.into()]), ("Cal".into(), vec![])];
    assert_eq!(debate_marks(&events), expected, "only Bea's reworded question is marked; Cal quotes Bea");
    let view = SessionView::from_events(&events);
    assert_eq!(view.turns.iter().filter(|t| !t.misquotes.is_empty()).count(), 1);
    // Bea's pane marks the turn on its heading (cut at the pane's width).
    let mut app = moot::tui::app::App::loaded(moot::tui::app::Env::test(), &events);
    app.focus = moot::tui::app::Focus::Agent(1);
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 40)).unwrap();
    term.draw(|f| moot::tui::screens::live::draw(f, &mut app)).unwrap();
    let screen = term.backend().to_string();
    assert_eq!(screen.matches("── debate · misquotes").count(), 1, "{screen}");
    // The transcript, zoomed, shows the quotation whole.
    app.focus = moot::tui::app::Focus::Transcript;
    app.zoom = true;
    term.draw(|f| moot::tui::screens::live::draw(f, &mut app)).unwrap();
    let screen = term.backend().to_string();
    let shown = format!("misquotes “{BAD}”");
    assert!(screen.contains(&shown), "the transcript: {screen}");
    let page = moot::report::html::session_page(&view);
    assert_eq!(page.matches(&shown).count(), 1, "the HTML session page");
    let mut out = Transcript::new(Vec::new(), Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert_eq!(text.matches(&shown).count(), 1, "{text}");
}

#[tokio::test]
async fn a_second_draft_that_misquotes_again_is_kept_and_marked_though_the_note_quoted_it() {
    let provider = scripted(speeches(false));
    let (events, outcome) = Session::start(config(one_group(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let bea: Vec<Vec<String>> = debate_marks(&events).into_iter().filter(|(a, _)| a == "Bea").map(|(_, m)| m).collect();
    assert_eq!(bea, [vec![BAD.to_string()], vec![BAD.to_string()]], "asked once more, no more");
    assert_eq!(provider.requests().iter().filter(|r| asked_again(r) && speaker(r) == "Bea").count(), 1);
}
