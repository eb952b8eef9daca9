//! SAGEval's screen: the evaluator and SAGE side by side, the table of
//! changes with its keys, snapshots at 80×24 and 160×48 of a live review and
//! of the recorded session `sessions/examples/sage-eval.jsonl` (written by the
//! ignored test below: `cargo test --test it tui_sage:: -- --ignored`).

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use moot::engine::{Command, EngineHandle};
use moot::item::ItemsFile;
use moot::panel::Panel;
use moot::provider::ChatRequest;
use moot::session::{Event, EventKind, SessionWriter, read_log};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use moot::tui::app::{App, Env};
use moot::tui::screens::live;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use support::*;

const EXAMPLE: &str = "sage-eval";

fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions/examples").join(format!("{EXAMPLE}.jsonl"))
}

fn reply(req: &ChatRequest, _: usize) -> ScriptedReply {
    let last = &req.messages.last().unwrap().content;
    if req.messages.len() == 2 {
        return "1. Read each question against the prompt.\n2. Note what fails the aspect.\n3. Score.".into();
    }
    if req.messages[0].content.contains("You are the meta-evaluator") {
        return "Question 2 leads the parent and offers only agreement, so fairness and accuracy are too high. \
                The form reads as a school letter, not a chat.\n\
                {\"review\": {\"accuracy\": {\"verdict\": \"rectify\", \"score\": 3, \"reason\": \"Question 6 is cut off.\"},\
                 \"fairness\": {\"verdict\": \"rectify\", \"score\": 2, \"reason\": \"Question 2 is leading, with no way to disagree.\"},\
                 \"audience_engagement\": {\"verdict\": \"rectify\", \"score\": 4, \"reason\": \"Short and about the child.\"},\
                 \"tone\": {\"verdict\": \"rectify\", \"label\": \"formal\", \"reason\": \"It reads like a school letter.\"}},\
                 \"definitions\": [{\"aspect\": \"relevancy\", \"definition\": \"Does every question help the school plan the next trip?\", \"reason\": \"Names the purpose.\"}],\
                 \"new_aspects\": [{\"key\": \"completeness\", \"name\": \"Completeness\", \"definition\": \"Is every question and option finished?\", \"score\": 2, \"reason\": \"Question 6 stops mid-option.\"}]}"
            .into();
    }
    assert!(last.contains("Judge the item above"), "unexpected request: {last}");
    "The form is short and mostly clear.\n{\"accuracy\": {\"reason\": \"Fits the prompt.\", \"score\": 4}, \
     \"semantic_diversity\": {\"reason\": \"Each question asks something new.\", \"score\": 4}, \
     \"coherence\": {\"reason\": \"Well ordered.\", \"score\": 4}, \
     \"relevancy\": {\"reason\": \"All about the trip.\", \"score\": 5}, \
     \"audience_understandability\": {\"reason\": \"Plain words for parents.\", \"score\": 5}, \
     \"audience_engagement\": {\"reason\": \"A little dry.\", \"score\": 3}, \
     \"fairness\": {\"reason\": \"Neutral enough.\", \"score\": 4}, \
     \"tone\": {\"reason\": \"Warm.\", \"label\": \"friendly\"}}"
        .into()
}

#[tokio::test]
#[ignore = "rewrites sessions/examples/sage-eval.jsonl"]
async fn write_sage_example() {
    let provider = Arc::new(ScriptedProvider::new(reply).with_delay(Duration::from_millis(60)).with_chunk(64));
    let panel = Panel::bundled("survey-sage").unwrap();
    let mut c = config(panel, provider);
    c.item = ItemsFile::bundled("survey-sage").unwrap().items[1].clone();
    c.session_id = EXAMPLE.into();
    c.linger = true;
    let _ = std::fs::remove_file(example_path());
    let mut s = Session::start(c, Some(SessionWriter::create(example_path()).unwrap()));
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { .. })).await;
    let author = "demo".to_string();
    s.send(Command::Decide {
        dimension: "audience_engagement".into(),
        agent: None,
        accept: false,
        author: author.clone(),
    });
    s.send(Command::Decide { dimension: "fairness".into(), agent: None, accept: true, author: author.clone() });
    s.send(Command::Resume { author: author.clone() });
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Quit { author });
    s.finish().await;
}

fn example() -> Vec<Event> {
    read_log(&example_path()).unwrap().events
}

fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| live::draw(f, app)).unwrap();
    t.backend().to_string()
}

fn snap(name: &str, app: &mut App) {
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), render(app, w, h));
    }
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

#[test]
fn a_live_review_shows_the_changes_and_the_keys_decide_them() {
    let events = example();
    let paused = events.iter().position(|e| matches!(e.kind, EventKind::Paused { .. })).unwrap();
    let (h, mut rx) = EngineHandle::channel();
    let mut app = App::live(Env::test(), h);
    app.now = None;
    for e in &events[..=paused] {
        app.on_session_event(e);
    }
    snap("sage_review_live", &mut app);
    let wide = render(&mut app, 160, 48);
    for want in ["SAGE (meta-evaluator)", "Survey reviewer", "fairness", "4 → 2", "proposed", "completeness"] {
        assert!(wide.contains(want), "{want} missing:\n{wide}");
    }
    // The first change is selected; `.` moves on, `d` rejects, `a` accepts.
    app.on_key(key('.'));
    app.on_key(key('d'));
    let Ok(Command::Decide { dimension, accept, author, agent }) = rx.try_recv() else { panic!("a decision") };
    let second = app.view().sage.revisions[1].dimension.clone();
    assert_eq!((dimension, accept, author.as_str(), agent), (second, false, "tester", None));
    app.on_key(key(','));
    app.on_key(key('a'));
    assert!(matches!(rx.try_recv(), Ok(Command::Decide { accept: true, .. })));
    // The command line names revised dimensions and proposals only.
    app.on_key(key(':'));
    for c in "reject coherence".chars() {
        app.on_key(key(c));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(rx.try_recv().is_err(), "coherence was not revised");
    app.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    app.on_key(key(':'));
    for c in "adopt completeness".chars() {
        app.on_key(key(c));
    }
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert!(matches!(rx.try_recv(), Ok(Command::Adopt { key, .. }) if key == "completeness"));
    // The help lists this screen's keys and commands.
    app.on_key(key('?'));
    let help = render(&mut app, 160, 48);
    assert!(help.contains("accept the selected SAGE change") && help.contains("adopt KEY"), "{help}");
}

#[test]
fn a_finished_review_looks_the_same_loaded_and_replayed() {
    let events = example();
    let mut loaded = App::loaded(Env::test(), &events);
    snap("sage_finished", &mut loaded);
    let text = render(&mut loaded, 160, 48);
    assert!(text.contains("rejected·demo") && text.contains("accepted·demo"), "{text}");
    let mut replayed = App::replay(Env::test(), events.clone(), 1.0);
    replayed.act(moot::tui::action::Action::JumpEnd);
    assert_eq!(
        render(&mut replayed, 160, 48).lines().skip(2).collect::<Vec<_>>(),
        text.lines().skip(2).collect::<Vec<_>>()
    );
}
