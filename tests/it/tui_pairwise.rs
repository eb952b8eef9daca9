//! The pairwise screen on a test backend: the two candidates side by side,
//! verdicts as they stream, a flip marked in words, settling with the keys,
//! moving between pairs, and a blind run that hides names and verdicts until
//! the person's own verdict. The events come from the engine run on the
//! bundled pairwise panel with a scripted judge.

use crate::support::{self, Session};

use moot::engine::{Command, EngineHandle};
use moot::item::ItemsFile;
use moot::panel::Panel;
use moot::provider::ChatRequest;
use moot::session::{Event, EventKind};
use moot::testkit::scripted::ScriptedReply;
use moot::tui::app::{App, Env};
use moot::tui::screens::live;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

const SHORT: &str = "A bakery reopens.";

/// Prefers any summary to the three-word one; between the two good ones it
/// always says A (a position bias: their pair flips).
fn judge(req: &ChatRequest, _: usize) -> ScriptedReply {
    let text: String = req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n");
    let a = text.split("--- SUMMARY A ---\n").nth(1).and_then(|s| s.split('\n').next()).unwrap_or("");
    // Against the short one, the other; otherwise whichever is shown first.
    let label = if a == SHORT { "B" } else { "A" };
    ScriptedReply::Text(format!(
        "Weighing both against the source. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"Closer to the source.\"}}"
    ))
}

fn config(blind: bool) -> moot::engine::EngineConfig {
    let panel = Panel::resolve("pairwise-summaries").unwrap();
    let mut c = support::config(panel, support::scripted(judge));
    c.item = ItemsFile::bundled("pairwise-summaries").unwrap().get("pair-03").unwrap().clone();
    c.session_id = "pairwise-test".into();
    c.seed = 7;
    c.linger = true;
    c.blind = blind;
    c
}

/// The events of a run, with `commands` sent once the result is in.
async fn events(blind: bool, commands: Vec<Command>) -> Vec<Event> {
    let mut s = Session::start(config(blind), None);
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    let n = commands.len();
    for c in commands {
        s.send(c);
    }
    for _ in 0..n {
        s.wait_for(|e| {
            matches!(
                e.kind,
                EventKind::PairSettled { .. }
                    | EventKind::PairLabelled { .. }
                    | EventKind::PairVoted { .. }
                    | EventKind::PairAbstained { .. }
                    | EventKind::CommandRejected { .. }
            )
        })
        .await;
    }
    s.send(Command::Quit { author: support::author() });
    let (events, _) = s.finish().await;
    // Fixed times: the header's clock must not change the snapshots.
    let t0 = events[0].t;
    events
        .into_iter()
        .map(|mut e| {
            e.t = t0;
            e
        })
        .collect()
}

fn live_app(events: &[Event]) -> (App, tokio::sync::mpsc::UnboundedReceiver<Command>) {
    let (h, rx) = EngineHandle::channel();
    let mut app = App::live(Env::test(), h);
    app.now = None;
    for e in events {
        app.on_session_event(e);
    }
    (app, rx)
}

fn screen(app: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| live::draw(f, app)).unwrap();
    t.backend().to_string()
}

fn snap(name: &str, app: &mut App) {
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("{name}_{w}x{h}"), screen(app, w, h));
    }
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

/// Events before the end of the session (the screen as it was while open).
fn open(events: &[Event]) -> &[Event] {
    let end = events.iter().rposition(|e| matches!(e.kind, EventKind::SessionEnded { .. })).unwrap();
    &events[..end]
}

#[tokio::test]
async fn candidates_side_by_side_with_verdicts_streaming_then_a_flip() {
    let events = events(false, Vec::new()).await;
    // While the first reply streams.
    let delta = events.iter().position(|e| matches!(e.kind, EventKind::TurnDelta { .. })).unwrap();
    let (mut app, _rx) = live_app(&events[..=delta]);
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Pair 1 of 2"), "{s}");
    assert!(s.contains("A sys-lead") && s.contains("B sys-para"), "{s}");
    assert!(s.contains("streaming"), "{s}");
    snap("pairwise_streaming", &mut app);

    // After the result: the lead/para pair flipped for both judges.
    let (mut app, _rx) = live_app(open(&events));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("FLIP"), "a flip is marked in words:\n{s}");
    assert!(s.contains("PANEL: tie"), "{s}");
    assert!(s.contains("Summary A = sys-para"), "the swapped order says who was A:\n{s}");
    snap("pairwise_flip", &mut app);

    // `]` moves to the second pair (the short one loses in both orders).
    app.on_key(key(']'));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("Pair 2 of 2") && s.contains("sys-short"), "{s}");
    assert!(s.contains("PANEL: sys-lead preferred"), "{s}");
    snap("pairwise_second_pair", &mut app);

    // The help lists the pair keys.
    app.on_key(key('?'));
    let s = screen(&mut app, 160, 48);
    assert!(s.contains("next pair") && s.contains("an extra vote on the pair"), "{s}");
}

#[tokio::test]
async fn settling_the_flip_with_a_key_sends_the_command_and_shows_it_as_human() {
    let events = events(false, Vec::new()).await;
    let (mut app, mut rx) = live_app(open(&events));
    // B is the right-hand candidate: sys-para.
    app.on_key(key('B'));
    let sent = rx.try_recv().unwrap();
    assert_eq!(
        sent,
        Command::SettlePair {
            first: "sys-lead".into(),
            second: "sys-para".into(),
            winner: Some("sys-para".into()),
            author: "tester".into()
        }
    );
    // What the engine makes of it, folded into the screen.
    let settled = self::events(
        false,
        vec![Command::SettlePair {
            first: "sys-lead".into(),
            second: "sys-para".into(),
            winner: Some("sys-para".into()),
            author: "tester".into(),
        }],
    )
    .await;
    let (mut app, _rx) = live_app(open(&settled));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("SETTLED by tester (human)"), "{s}");
    assert!(s.contains("(human)"), "{s}");
    snap("pairwise_settled", &mut app);
}

#[tokio::test]
async fn a_blind_run_hides_names_and_verdicts_until_your_own_verdict() {
    let events = events(true, Vec::new()).await;
    let (mut app, mut rx) = live_app(open(&events));
    let s = screen(&mut app, 80, 24);
    for id in ["sys-lead", "sys-para", "sys-short"] {
        assert!(!s.contains(id), "{id} shown in a blind run:\n{s}");
    }
    assert!(s.contains("System 1") && s.contains("hidden"), "{s}");
    assert!(!s.contains("FLIP"), "{s}");
    snap("pairwise_blind_hidden", &mut app);
    // The transcript hides the judges' words too.
    app.on_key(key('t'));
    let s = screen(&mut app, 80, 24);
    assert!(!s.contains("Weighing") && s.contains("hidden until you give your own verdict"), "{s}");
    app.on_key(key('t'));

    // A: the left candidate, whichever system the seed put there.
    app.on_key(key('A'));
    let Command::LabelPair { first, second, winner, .. } = rx.try_recv().unwrap() else { panic!("not a label") };
    let c = &app.view().pairwise.comparisons[0];
    assert_eq!((first.as_str(), second.as_str()), (c.first.as_str(), c.second.as_str()));
    assert_eq!(winner.as_deref(), Some(c.on_screen().0));

    let labelled =
        self::events(true, vec![Command::LabelPair { first, second, winner, author: "tester".into() }]).await;
    let (mut app, _rx) = live_app(open(&labelled));
    let s = screen(&mut app, 80, 24);
    assert!(s.contains("sys-lead") && s.contains("FLIP"), "revealed after the label:\n{s}");
    assert!(s.contains("your blind verdict (tester, human)"), "{s}");
    snap("pairwise_blind_revealed", &mut app);
}
