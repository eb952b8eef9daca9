//! The optimisation screen on a test backend: a finished run (replayed to
//! its end) at 80×24 and 160×48, a replay from the log folder that looks the
//! same as the live fold, and review keys that send the loop's commands.

use crate::support::optimize as support;

use moot::optimize::log::{OptRecorder, find_log, read_log};
use moot::optimize::view::{OptView, Waiting};
use moot::optimize::{OptCommand, optimize};
use moot::tui::action::Action;
use moot::tui::app::Env;
use moot::tui::optimize::{OptScreen, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use support::*;

fn render(screen: &OptScreen, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| draw(f, screen)).unwrap();
    t.backend().to_string()
}

/// A finished three-iteration run, its log in `dir`.
async fn finished_run(dir: &std::path::Path) -> Vec<moot::optimize::OptEvent> {
    let mut c = config(provider(&examples()), 3, false);
    c.concurrency = 1;
    let log = dir.join("optimize.jsonl");
    let (_tx, rx) = tokio::sync::mpsc::unbounded_channel();
    optimize(c, OptRecorder::new(Some(&log), None).unwrap(), rx).await;
    read_log(&log).unwrap()
}

#[tokio::test]
async fn a_finished_run_on_screen() {
    let dir = tempfile::tempdir().unwrap();
    let events = finished_run(dir.path()).await;
    let mut screen = OptScreen::replay(Env::test(), events.clone(), 1.0);
    screen.act(Action::JumpEnd);
    assert_eq!(screen.view, OptView::from_events(&events), "the replay folds every event");
    // The second iteration (the best) selected.
    screen.act(Action::ScrollUp);
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("optimize_best_{w}x{h}"), render(&screen, w, h));
    }
    let text = render(&screen, 160, 48);
    assert!(text.contains("★2"), "the best iteration is marked");
    assert!(text.contains("Rewrite of iteration 2"));
}

#[tokio::test]
async fn a_replay_cannot_steer_and_opens_from_the_folder() {
    let dir = tempfile::tempdir().unwrap();
    finished_run(dir.path()).await;
    let log = find_log(dir.path()).expect("the folder holds an optimisation log");
    let events = read_log(&log).unwrap();
    let mut screen = OptScreen::replay(Env::test(), events, 1.0);
    screen.act(Action::RejectRewrite);
    assert!(render(&screen, 80, 24).contains("a replay cannot steer the loop"));
    assert!(find_log(&dir.path().join("missing")).is_none());
}

#[tokio::test]
async fn review_keys_send_the_loops_commands() {
    let c = config(provider(&examples()), 3, true);
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (cmd, rx) = tokio::sync::mpsc::unbounded_channel();
    let (screen_cmd, mut sent) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(optimize(c, OptRecorder::new(None, Some(tx)).unwrap(), rx));
    let mut screen = OptScreen::live(Env::test(), screen_cmd);
    // Forward what the screen sends to the loop, and check each command.
    let mut expect = vec![OptCommand::Continue, OptCommand::Reject, OptCommand::Stop { choose: Some(1) }];
    expect.reverse();
    while let Some(e) = events.recv().await {
        screen.on_event(&e);
        match screen.view.waiting {
            Waiting::Feedback(1) if expect.len() == 3 => screen.act(Action::ContinueLoop),
            Waiting::Rewrite(1) if expect.len() == 2 => {
                assert!(render(&screen, 80, 24).contains("decide on the rewrite"));
                screen.act(Action::RejectRewrite);
            }
            Waiting::Feedback(2) if expect.len() == 1 => {
                screen.act(Action::ScrollUp);
                screen.act(Action::ChoosePrompt);
            }
            _ => continue,
        }
        let got = sent.recv().await.unwrap();
        assert_eq!(Some(got.clone()), expect.pop());
        cmd.send(got).unwrap();
    }
    assert!(expect.is_empty());
    let outcome = task.await.unwrap();
    assert_eq!(outcome.best, Some(1));
}

#[tokio::test]
async fn a_training_example_is_added_by_id_and_a_held_out_one_is_refused() {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let dir = tempfile::tempdir().unwrap();
    let events = finished_run(dir.path()).await;
    let (tx, mut sent) = tokio::sync::mpsc::unbounded_channel();
    let mut screen = OptScreen::live(Env::test(), tx);
    // Only the start: the loop is running.
    screen.on_event(&events[0]);
    let type_id = |screen: &mut OptScreen, id: &str| {
        screen.on_key(KeyEvent::new(KeyCode::Char('+'), KeyModifiers::NONE));
        for c in id.chars() {
            screen.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        screen.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    };
    let held = screen.view.holdout[0].clone();
    type_id(&mut screen, &held);
    assert!(render(&screen, 160, 48).contains("is held out"));
    assert!(sent.try_recv().is_err(), "nothing sent for a held-out id");
    screen.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    let train = screen.view.train[0].id.clone();
    type_id(&mut screen, &train);
    assert_eq!(sent.try_recv().unwrap(), OptCommand::Pin(train));
}
