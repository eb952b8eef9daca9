//! ChatEval's screen: a simultaneous round with every agent streaming at
//! once, round markers, and the summarizer's pane; snapshots at 80×24 and
//! 160×48 of the recorded session `sessions/examples/chat-eval.jsonl`
//! (written by the ignored test below: `cargo test --test it tui_chateval:: -- --ignored`).
//! And the pairwise modes of ChatEval and the round-table, which show their
//! verdicts and the pairwise result pane.

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use moot::engine::EngineHandle;
use moot::item::ItemsFile;
use moot::panel::Panel;
use moot::provider::ChatRequest;
use moot::session::event::{Phase, Role};
use moot::session::{Event, EventKind, SessionWriter, read_log};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use moot::tui::app::{App, Env};
use moot::tui::screens::live;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use support::*;

const EXAMPLE: &str = "chat-eval";

fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions/examples").join(format!("{EXAMPLE}.jsonl"))
}

fn verdict(c: u32, s: u32, f: u32, r: u32) -> String {
    format!(
        "{{\"coherence\": {c}, \"consistency\": {s}, \"fluency\": {f}, \"relevance\": {r}, \"overall\": {}, \"confidence\": 0.7, \"justification\": \"As argued above.\"}}",
        (c + s + f + r) / 4
    )
}

fn reply(req: &ChatRequest, _: usize) -> ScriptedReply {
    let system = req.messages.first().map(|m| m.content.as_str()).unwrap_or("");
    if system.starts_with("You keep the minutes") {
        return ScriptedReply::Text(
            "Priya and Ines find the summary clear and well ordered; Tomasz holds that it adds a cause the article \
             never states, so he scores consistency lower. All agree the fluency is good."
                .into(),
        );
    }
    let round = req.messages.last().is_some_and(|m| m.content.contains("Discussion round"));
    let text = match (speaker(req).as_str(), round) {
        ("Priya", false) => format!("It leads with the decision and the date.\n{}", verdict(4, 4, 5, 4)),
        ("Priya", true) => format!("Tomasz, fair point on the cause; I lower consistency.\n{}", verdict(4, 3, 5, 4)),
        ("Tomasz", false) => format!(
            "The summary says the vote failed because of cost; the article gives no cause. {}",
            verdict(4, 2, 4, 3)
        ),
        ("Tomasz", true) => {
            format!("Ines, the order is fine, but the invented cause stays an error.\n{}", verdict(4, 2, 4, 3))
        }
        ("Ines", false) => format!("Each sentence follows from the one before.\n{}", verdict(5, 4, 5, 4)),
        (_, _) => format!("Priya is right that it reads quickly; I keep my scores.\n{}", verdict(5, 3, 5, 4)),
    };
    ScriptedReply::Text(text)
}

#[tokio::test]
#[ignore = "rewrites sessions/examples/chat-eval.jsonl"]
async fn write_chat_eval_example() {
    let provider = Arc::new(
        ScriptedProvider::new(reply)
            .with_delay(Duration::from_millis(60))
            .with_chunk(12)
            .with_pace(Duration::from_millis(15)),
    );
    let panel = Panel::bundled("summary-chateval").unwrap();
    let mut c = config(panel, provider);
    c.item = ItemsFile::bundled("summary-chateval").unwrap().items[0].clone();
    c.session_id = EXAMPLE.into();
    let _ = std::fs::remove_file(example_path());
    let s = Session::start(c, Some(SessionWriter::create(example_path()).unwrap()));
    let (_, outcome) = s.finish().await;
    assert_eq!(outcome.status, moot::session::event::EndStatus::Completed, "{:?}", outcome.error);
}

fn example() -> Vec<Event> {
    read_log(&example_path()).unwrap().events
}

fn render(app: &mut App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| live::draw(f, app)).unwrap();
    t.backend().to_string()
}

fn app_with(events: &[Event]) -> App {
    let (h, _rx) = EngineHandle::channel();
    let mut app = App::live(Env::test(), h);
    app.now = None;
    for e in events {
        app.on_session_event(e);
    }
    app
}

#[test]
fn a_simultaneous_round_streams_every_agent_at_once_beside_the_summary() {
    let events = example();
    // Just before the first reply of round 2 is complete: all three stream.
    let round2 = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Discussion, round: Some(2), .. }))
        .unwrap();
    let first_done =
        round2 + events[round2..].iter().position(|e| matches!(&e.kind, EventKind::TurnCompleted { .. })).unwrap();
    let started = events[round2..first_done]
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::TurnStarted { role: Role::Agent, .. }))
        .count();
    assert_eq!(started, 3, "every agent of the round started before any finished");
    let mut app = app_with(&events[..first_done]);
    let streaming = app.view().turns.iter().filter(|t| t.state == moot::session::fold::TurnState::Streaming).count();
    assert_eq!(streaming, 3);
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("chat_eval_simultaneous_{w}x{h}"), render(&mut app, w, h));
    }
    let wide = render(&mut app, 160, 48);
    for want in ["Summary", "after round 1", "round 2 of 2", "simultaneous summarizer", "Tomasz holds"] {
        assert!(wide.contains(want), "{want} missing:\n{wide}");
    }
}

#[test]
fn the_finished_session_shows_the_result_and_the_last_summary() {
    let mut app = app_with(&example());
    for (w, h) in [(80, 24), (160, 48)] {
        insta::assert_snapshot!(format!("chat_eval_finished_{w}x{h}"), render(&mut app, w, h));
    }
    let wide = render(&mut app, 160, 48);
    assert!(wide.contains("after round 2"), "{wide}");
}

/// A pairwise run of a bundled panel (ChatEval's or the round-table's) with
/// readers who say A, except the second speaker at first, rendered when done.
async fn pairwise_screen(name: &str) -> String {
    use moot::session::event::EndStatus;
    let panel = Panel::bundled(name).unwrap();
    let mut c = config(
        panel,
        support::scripted(|req, _| {
            let own = req.messages.last().map(|m| m.content.as_str()).unwrap_or("");
            let label = if own.contains("Discussion round 1.") && !own.contains("you speak first") { "B" } else { "A" };
            ScriptedReply::Text(format!(
                "Summary A keeps the vote. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"The facts.\"}}"
            ))
        }),
    );
    let items = ItemsFile::bundled(name).unwrap();
    c.item = items.items.iter().find(|i| i.candidates.as_ref().is_some_and(|c| c.len() == 2)).unwrap().clone();
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let mut app = App::loaded(Env::test(), &events);
    render(&mut app, 160, 48)
}

#[tokio::test]
async fn chat_eval_and_round_table_pairwise_runs_show_verdicts_and_the_pairwise_result() {
    for (name, wants) in [
        ("pairwise-chateval", ["Moderator · one by one", "round 2 of 2", "majority of each agent's last verdict"]),
        ("pairwise-roundtable", ["Moderator · shuffled rounds", "holds (round 2)", "every agent agreed"]),
    ] {
        let screen = pairwise_screen(name).await;
        // The turn lines show each change of verdict; the result pane the winner, ranked.
        assert!(screen.contains("verdict B→A"), "{name}:\n{screen}");
        assert!(screen.contains("1. sys-lead 1W 0L 0T"), "{name}:\n{screen}");
        assert!(!screen.contains("no scores yet"), "{name}:\n{screen}");
        assert!(screen.contains("one order only") && !screen.contains("flips:"), "{name}:\n{screen}");
        for want in wants {
            assert!(screen.contains(want), "{name}: {want} missing:\n{screen}");
        }
    }
}
