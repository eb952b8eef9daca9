//! Every kind of verdict reads as a line of its own, never as the JSON it
//! came in, wherever a run is shown: `moot run --headless`, `moot sessions
//! show`, and the screen's transcript and panes (live, replayed or loaded).
//! The replies come from a local server that answers in structured output
//! (the speech, then the verdict's object), through the real binary, and
//! from the same replies scripted in process for the screen's snapshots.

use std::path::{Path, PathBuf};
use std::process::Command;

use moot::session::{Event, EventKind, read_log};
use moot::testkit::server::TestServer;
use moot::testkit::{schema_reply, structured_text};
use moot::tui::app::{App, Env};
use moot::tui::screens::live;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn moot(server: &TestServer, cache: &Path) -> Command {
    crate::support::moot_at(&server.base_url(), cache)
}

async fn output(mut c: Command) -> (String, String) {
    let out = tokio::task::spawn_blocking(move || c.output().unwrap()).await.unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    (stdout, stderr.to_string())
}

/// A bundled panel run headless on its first item; its transcript and its log.
async fn run(server: &TestServer, dir: &Path, panel: &str) -> (String, PathBuf) {
    let out = dir.join(panel);
    let mut c = moot(server, &dir.join("cache"));
    c.args(["run", panel, "--headless", "--provider", "openai", "--model", "judge", "--seed", "5", "--out"]).arg(&out);
    let (stdout, _) = output(c).await;
    let log = std::fs::read_dir(&out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"));
    (stdout, log.unwrap())
}

/// The whole transcript as the screen shows it (`t`, on a screen tall enough for all of it).
fn screen_transcript(events: &[Event]) -> String {
    let mut app = App::loaded(Env::test(), events);
    app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE));
    let mut t = Terminal::new(TestBackend::new(160, 1500)).unwrap();
    t.draw(|f| live::draw(f, &mut app)).unwrap();
    t.backend().to_string()
}

/// The screen with every pane (no zoom).
fn screen(events: &[Event], w: u16, h: u16) -> String {
    let mut app = App::loaded(Env::test(), events);
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| live::draw(f, &mut app)).unwrap();
    t.backend().to_string()
}

/// No JSON verdict shows: no object, no quoted key of one.
fn assert_no_json(what: &str, text: &str) {
    for raw in ["{\"", "\"verdict\"", "\"reasoning\"", "\"confidence\"", "\"justification\"", "\"review\"", "\"next\""]
    {
        assert!(!text.contains(raw), "{what} shows {raw}:\n{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn structured_verdicts_read_as_lines_headless_in_sessions_show_and_on_screen() {
    let server = TestServer::with_handler(schema_reply).await.unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // (panel, lines its transcript must have, in the printout and on screen)
    let cases: [(&str, &[&str]); 7] = [
        // Pairwise labels, with the candidate each one names.
        ("pairwise-summaries", &["✓ verdict ", "· confidence "]),
        // Labels discussed, and the final judge's pick when the readers differ.
        ("pairwise-collab", &["✓ verdict ", "I have read the item carefully."]),
        // SAGEval: aspects with a categorical one, then the meta-evaluator's revisions.
        ("survey-sage", &["✓ accuracy ", " · tone ", "meta-evaluator"]),
        // G-Eval: evaluation steps, then scores.
        ("summary-geval", &["Evaluation steps · coherence (written by the judge, turn ", "✓ coherence "]),
        // A verifier's verdicts.
        ("summary-geval-verified", &["▸ verifier (", "✓ coherence "]),
        // A moderator's picks and the members' scores.
        ("storybook-qa", &[" picked by moderator: ", "✓ grammar ", "· confidence "]),
        // A final judge's scores.
        ("summary-collab", &["✓ coherence "]),
    ];
    for (panel, wanted) in cases {
        let (stdout, log) = run(&server, tmp.path(), panel).await;
        assert_no_json(&format!("{panel}, headless"), &stdout);
        for w in wanted {
            assert!(stdout.contains(w), "{panel}: no {w:?} in:\n{stdout}");
        }
        // `sessions show` prints the same transcript from the log.
        let mut show = moot(&server, &tmp.path().join("cache"));
        show.args(["sessions", "show"]).arg(&log);
        let (shown, _) = output(show).await;
        assert_eq!(shown, stdout, "{panel}: sessions show prints what the run printed");
        // The screen's transcript: the same lines, no JSON.
        let events = read_log(&log).unwrap().events;
        let screen = screen_transcript(&events);
        assert_no_json(&format!("{panel}, screen"), &screen);
        assert_no_json(&format!("{panel}, panes"), &screen_of_panes(&events));
        for w in wanted.iter().filter(|w| !w.starts_with('✓')) {
            let w = w.trim_start_matches("▸ ");
            assert!(screen.contains(w), "{panel}: the screen has no {w:?}:\n{screen}");
        }
        let verdicts = events.iter().filter(|e| matches!(e.kind, EventKind::PairVerdict { .. })).count();
        if verdicts > 0 {
            assert!(
                screen.matches("  verdict ").count() >= verdicts,
                "{panel}: every pair verdict has its line:\n{screen}"
            );
        }
    }
}

/// Every pane at two sizes, as one text.
fn screen_of_panes(events: &[Event]) -> String {
    [(80, 24), (160, 48)].iter().map(|&(w, h)| screen(events, w, h)).collect::<Vec<_>>().join("\n")
}

/// The events of `panel` run in process on its first item, every reply as a
/// structured-output server's, at fixed times.
async fn scripted_run(panel: &str) -> Vec<Event> {
    use crate::support::{self, Session};
    let p = moot::panel::Panel::resolve(panel).unwrap();
    let mut c = support::config(
        p,
        support::scripted(|req, _| moot::testkit::scripted::ScriptedReply::Text(structured_text(req))),
    );
    c.item = moot::item::ItemsFile::bundled(panel).unwrap().items[0].clone();
    c.session_id = format!("{panel}-structured");
    c.seed = 7;
    let (events, _) = Session::start(c, None).finish().await;
    let t0 = events[0].t;
    events.into_iter().map(|e| Event { t: t0, ..e }).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_verdicts_on_screen() {
    for panel in ["pairwise-summaries", "survey-sage"] {
        let events = scripted_run(panel).await;
        assert!(
            events.iter().any(|e| matches!(&e.kind, EventKind::TurnCompleted { text, .. } if text.contains("\n\n{\"")))
        );
        let mut app = App::loaded(Env::test(), &events);
        for (w, h) in [(80, 24), (160, 48)] {
            let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
            t.draw(|f| live::draw(f, &mut app)).unwrap();
            insta::assert_snapshot!(format!("structured_{panel}_{w}x{h}"), t.backend().to_string());
        }
        app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE));
        let mut t = Terminal::new(TestBackend::new(120, 60)).unwrap();
        t.draw(|f| live::draw(f, &mut app)).unwrap();
        insta::assert_snapshot!(format!("structured_{panel}_transcript_120x60"), t.backend().to_string());
    }
}

/// The transcript keeps what it drew between frames, and a pair's verdict
/// comes after its turn's end: drawn after every event as a live screen is,
/// it ends as the screen drawn once from the same events, the verdicts'
/// lines in place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_transcript_gets_each_pair_verdict_after_its_turn() {
    let events = scripted_run("pairwise-summaries").await;
    let draw = |app: &mut App| {
        let mut t = Terminal::new(TestBackend::new(120, 60)).unwrap();
        t.draw(|f| live::draw(f, app)).unwrap();
        t.backend().to_string()
    };
    let (h, _rx) = moot::engine::EngineHandle::channel();
    let mut live_app = App::live(Env::test(), h);
    live_app.now = None;
    live_app.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE));
    let mut between = 0;
    for (i, e) in events.iter().enumerate() {
        live_app.on_session_event(e);
        let drawn = draw(&mut live_app);
        // Between a turn's end and its verdict the words show, without the object.
        if matches!(e.kind, EventKind::TurnCompleted { .. })
            && matches!(events.get(i + 1).map(|n| &n.kind), Some(EventKind::PairVerdict { .. }))
        {
            assert_no_json("a live transcript", &drawn);
            between += 1;
        }
    }
    assert!(between > 0, "some turn ended before its verdict was recorded");
    let mut fresh = App::loaded(Env::test(), &events);
    fresh.on_key(KeyEvent::new(KeyCode::Char('t'), KeyModifiers::NONE));
    let (got, want) = (draw(&mut live_app), draw(&mut fresh));
    // The transcript's rows; the header and the footer's keys differ between a live and a loaded session.
    let rows = |s: &str| s.lines().skip(2).filter(|l| l.contains('┃')).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(rows(&got), rows(&want));
    // A pick names the system behind its letter (which one the scripted replies draw from the prompts).
    assert!(got.contains("verdict A (sys-") || got.contains("verdict B (sys-"), "{got}");
}
