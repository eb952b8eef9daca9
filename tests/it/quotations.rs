//! A speech's quotations are checked against what the speaker was shown: a
//! quotation of four words or more that neither the item, nor the request,
//! nor an earlier contribution of the group contains is recorded
//! (`turn_completed.misquotes`) and shown; exact quotations are not.

use crate::support;

use moot::cli::headless::{Paint, Transcript};
use moot::panel::Protocol;
use moot::session::event::{EndStatus, Phase, Role};
use moot::session::{EventKind, SessionView};
use support::*;

const JSON: &str =
    "{\"grammar\": 4, \"relevance\": 4, \"overall\": 4, \"confidence\": 0.8, \"justification\": \"Fine.\"}";

/// Ann quotes the item exactly, Bea rewords its question in quotation
/// marks, Cal quotes what Bea said.
fn speeches()
-> impl Fn(&moot::provider::ChatRequest, usize) -> moot::testkit::scripted::ScriptedReply + Send + Sync + 'static {
    |req, _| {
        let who = speaker(req);
        if who == "aggregator" {
            return "They agree.".into();
        }
        if !is_debate(req) {
            return evaluation(4, 4, 4).into();
        }
        let words = match who.as_str() {
            "Ann" => r#"Bea, the answer says "it was scared of the storm", which the story backs."#,
            "Bea" => r#"Ann, but the question "How did the fox run so fast?" asks for a manner, not a reason."#,
            _ => r#"Bea, you said "asks for a manner, not a reason" and I disagree."#,
        };
        format!("{words}\n{JSON}").into()
    }
}

#[tokio::test]
async fn a_reworded_quotation_is_recorded_and_shown_and_exact_ones_are_not() {
    let mut p = panel(Protocol::MajEval, &[("Parents", &["Ann", "Bea", "Cal"])]);
    p.moderator.max_turns = 3;
    p.moderator.policy = moot::panel::ModeratorPolicy::RoundRobin;
    let provider = scripted(speeches());
    let (events, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let mut debate: Vec<(String, Vec<String>)> = Vec::new();
    let mut started = std::collections::HashMap::new();
    for e in &events {
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
    let marked: Vec<(&str, &[String])> = debate.iter().map(|(a, m)| (a.as_str(), m.as_slice())).collect();
    assert_eq!(
        marked,
        [("Ann", &[][..]), ("Bea", &["How did the fox run so fast?".to_string()][..]), ("Cal", &[][..]),],
        "only Bea's reworded question is marked; Cal quotes Bea"
    );
    let view = SessionView::from_events(&events);
    assert_eq!(view.turns.iter().filter(|t| !t.misquotes.is_empty()).count(), 1);
    // Bea's pane marks the turn on its heading (cut at the pane's width;
    // the transcript below shows the quotation whole).
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
    assert!(screen.contains("misquotes “How did the fox run so fast?”"), "the transcript: {screen}");
    let page = moot::report::html::session_page(&view);
    assert_eq!(page.matches("misquotes “How did the fox run so fast?”").count(), 1, "the HTML session page");
    let mut out = Transcript::new(Vec::new(), Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert_eq!(text.matches("misquotes “How did the fox run so fast?”").count(), 1, "{text}");
}
