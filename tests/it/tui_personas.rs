//! The persona review screen on a test backend: snapshots at 80×24 and
//! 160×48 after a scripted build of the bundled sample, and decisions made
//! with its keys reaching the builder's log and the fold.

use std::sync::Arc;

use moot::panel::Protocol;
use moot::personas::log::{BuildEvent, BuildLog};
use moot::personas::panel::PanelOptions;
use moot::personas::state::Decision;
use moot::personas::{Ctx, Model, Options, build};
use moot::testkit::scripted::ScriptedProvider;
use moot::tui::app::Env;
use moot::tui::personas::{Review, Row, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use tokio::sync::mpsc::UnboundedReceiver;

async fn built(out: std::path::PathBuf) -> (Review, UnboundedReceiver<BuildEvent>) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let log = Arc::new(BuildLog::new(None, Some(tx)).unwrap());
    let provider = Arc::new(ScriptedProvider::new(|r, _| moot::testkit::builder_reply(r).into()));
    let ctx = Arc::new(Ctx::new(moot::cli::personas::SAMPLE_TASK.trim(), Model::new(provider, "scripted"), log));
    let docs = moot::cli::personas::sample_documents();
    build(&ctx, &docs, &Options::default()).await.unwrap();
    let panel =
        PanelOptions { name: "Reading".into(), protocol: Protocol::MajEval, template: None, simple_roles: false };
    let mut review = Review::new(Env::test(), ctx, docs, panel, out);
    while let Ok(e) = rx.try_recv() {
        review.on_build_event(&e);
    }
    (review, rx)
}

fn drain(review: &mut Review, rx: &mut UnboundedReceiver<BuildEvent>) {
    while let Ok(e) = rx.try_recv() {
        review.on_build_event(&e);
    }
}

fn press(review: &mut Review, code: KeyCode) {
    review.on_terminal_event(TermEvent::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn type_str(review: &mut Review, s: &str) {
    s.chars().for_each(|c| press(review, KeyCode::Char(c)));
}

fn select(review: &mut Review, row: &Row) {
    review.selected = review.rows().iter().position(|r| r == row).expect("row present");
}

fn screen(review: &Review, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, review)).unwrap();
    t.backend().to_string()
}

#[tokio::test]
async fn the_review_screen_shows_the_tree_and_the_evidence_in_context() {
    let (mut review, _rx) = built("panels/reading.toml".into()).await;
    select(&mut review, &Row::Perspective("D1.S1.P1".into()));
    for (w, h) in [(80, 24), (160, 48)] {
        let text = screen(&review, w, h);
        assert!(text.contains("· review ·"), "{text}");
        assert!(text.contains("found in the document"), "{text}");
        insta::assert_snapshot!(format!("personas_review_{w}x{h}"), text);
    }
    press(&mut review, KeyCode::Char('?'));
    let help = screen(&review, 80, 24);
    assert!(help.contains("reject: leave it out of the panel"), "{help}");
    assert!(help.contains("save the panel"), "{help}");
}

#[tokio::test]
async fn keys_make_decisions_that_reach_the_log_and_the_saved_panel() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("reading.toml");
    let (mut review, mut rx) = built(out.clone()).await;
    let teachers = review.state.groups.iter().find(|g| g.name == "Teachers").unwrap().id.clone();
    // Rename a group through its prompt.
    select(&mut review, &Row::Group(teachers.clone()));
    press(&mut review, KeyCode::Char('r'));
    assert!(review.prompt.is_some());
    for _ in 0..20 {
        press(&mut review, KeyCode::Backspace);
    }
    type_str(&mut review, "Classroom teachers");
    press(&mut review, KeyCode::Enter);
    // Cap it at one persona; a bad number is refused with a message.
    press(&mut review, KeyCode::Char('c'));
    type_str(&mut review, "x");
    press(&mut review, KeyCode::Enter);
    assert_eq!(review.message.as_ref().map(|m| m.1), Some(true));
    press(&mut review, KeyCode::Char('c'));
    type_str(&mut review, "1");
    press(&mut review, KeyCode::Enter);
    // Edit a persona's traits.
    let first = review.state.groups.iter().find(|g| g.id == teachers).unwrap().perspectives[0].id.clone();
    select(&mut review, &Row::GroupPerspective(first.clone()));
    press(&mut review, KeyCode::Char('p'));
    type_str(&mut review, "traits: Calm and exact.");
    press(&mut review, KeyCode::Enter);
    drain(&mut review, &mut rx);
    let decisions: Vec<&Decision> = review.state.decisions.iter().map(|(d, _)| d).collect();
    assert_eq!(
        decisions,
        [
            &Decision::RenameGroup { group: teachers.clone(), name: "Classroom teachers".into() },
            &Decision::CapGroup { group: teachers.clone(), max: Some(1) },
            &Decision::EditPersona {
                perspective: first.clone(),
                field: "traits".into(),
                value: "Calm and exact.".into()
            },
        ]
    );
    assert!(review.state.decisions.iter().all(|(_, a)| a == "tester"));
    // Save: the panel has the new name, one teacher, the edited traits marked as the person's.
    press(&mut review, KeyCode::Char('w'));
    drain(&mut review, &mut rx);
    assert_eq!(review.state.panels, std::slice::from_ref(&out));
    let panel = moot::panel::Panel::load(&out).unwrap();
    let g = panel.groups.iter().find(|g| g.name == "Classroom teachers").unwrap();
    assert_eq!(g.agents.len(), 1);
    assert_eq!(g.agents[0].traits, "Calm and exact.");
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(text.contains("# traits edited by tester"), "{text}");
    assert!(text.contains("# Group name set by tester"), "{text}");
    let shown = screen(&review, 160, 48);
    assert!(shown.contains("(edited by tester)"), "{shown}");
}
