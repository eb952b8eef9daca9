//! Render cost of the session screen: one frame with 12 agents and a
//! 5,000-turn transcript at 200×60 (target: median under 2 ms), a frame while
//! a turn streams, and a key press followed by a frame (target: under 16 ms).

use std::collections::BTreeMap;

use chrono::{Duration, TimeZone, Utc};
use criterion::{Criterion, criterion_group, criterion_main};
use moot::engine::EngineHandle;
use moot::session::event::{AgentInfo, Evaluation, Event, EventKind, Phase, Role, TurnKind, Usage};
use moot::tui::app::{App, Env};
use moot::tui::screens::live;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn events(agents: usize, turns: u64) -> Vec<Event> {
    let t0 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time");
    let mut seq = 0;
    let mut out = Vec::new();
    let mut push = |kind: EventKind| {
        out.push(Event { seq, t: t0 + Duration::milliseconds(seq as i64 * 10), kind });
        seq += 1;
    };
    let mut panel = moot::panel::Panel::bundled("storybook-qa").expect("bundled panel");
    panel.groups.truncate(1);
    let groups = ["Teachers", "Parents", "Researchers"];
    let infos: Vec<AgentInfo> = (0..agents)
        .map(|i| AgentInfo {
            name: format!("Agent {i}"),
            group: groups[i % 3].into(),
            role: "reader".into(),
            provider: "bench".into(),
            model: "m".into(),
        })
        .collect();
    push(EventKind::SessionStarted {
        schema_version: moot::session::event::SCHEMA_VERSION,
        session_id: "bench".into(),
        protocol: "maj-eval".into(),
        panel: panel.to_json(),
        item: moot::item::Item {
            id: "b".into(),
            content: "c".into(),
            context: None,
            reference: None,
            human: None,
            human_raters: Default::default(),
            candidates: None,
            human_labels: Vec::new(),
        },
        agents: infos.clone(),
        roles: BTreeMap::new(),
        seed: 1,
        moot_version: "bench".into(),
        provider_note: None,
        preset: Default::default(),
        departures: Vec::new(),
    });
    push(EventKind::PhaseStarted { phase: Phase::Debate, group: None, round: Some(1) });
    let text = "The answer names the storm but not why the fox was afraid, which is what the question asks; \
                a young reader would need the link spelled out. "
        .repeat(3);
    for turn in 0..turns {
        let a = &infos[(turn as usize) % agents];
        push(EventKind::TurnStarted {
            turn,
            agent: a.name.clone(),
            group: Some(a.group.clone()),
            phase: Phase::Debate,
            round: Some(1),
            role: Role::Agent,
            kind: TurnKind::Speak,
            dimension: None,
            pair: None,
        });
        let mut ev = Evaluation { overall: Some(3.0 + (turn % 3) as f64), confidence: Some(0.7), ..Default::default() };
        ev.scores.insert("grammar".into(), 4.0);
        push(EventKind::TurnCompleted {
            turn,
            agent: a.name.clone(),
            text: text.clone(),
            evaluation: Some(ev),
            parse_error: None,
            usage: Usage { input_tokens: 100, output_tokens: 50, ..Default::default() },
            latency_ms: 10,
            cached: false,
            done: false,
            truncated: false,
            repeats: None,
            misquotes: Vec::new(),
            misstates: Vec::new(),
            endpoint: None,
        });
    }
    out
}

fn bench(c: &mut Criterion) {
    let evs = events(12, 5_000);
    let (h, _rx) = EngineHandle::channel();
    let mut app = App::live(Env::test(), h);
    app.now = None;
    for e in &evs {
        app.on_session_event(e);
    }
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("test backend");
    term.draw(|f| live::draw(f, &mut app)).expect("draw");
    c.bench_function("frame_12_agents_5000_turns_200x60", |b| {
        b.iter(|| {
            term.draw(|f| live::draw(f, &mut app)).expect("draw");
        })
    });
    // A turn streaming: one delta per frame. After `REPLY_WORDS` words the
    // turn completes and the next agent's starts, as replies end at their
    // token limit (450 tokens is about 360 words), so the bench measures
    // frames during replies of a real length.
    const REPLY_WORDS: usize = 360;
    let t = evs.last().map(|e| e.t).expect("events");
    let mut seq = evs.len() as u64;
    let mut turn = 100_000u64;
    let mut words = 0usize;
    let started = |seq: u64, turn: u64| Event {
        seq,
        t,
        kind: EventKind::TurnStarted {
            turn,
            agent: format!("Agent {}", turn % 12),
            group: Some("Teachers".into()),
            phase: Phase::Debate,
            round: Some(1),
            role: Role::Agent,
            kind: TurnKind::Speak,
            dimension: None,
            pair: None,
        },
    };
    app.on_session_event(&started(seq, turn));
    c.bench_function("frame_while_streaming_200x60", |b| {
        b.iter(|| {
            seq += 1;
            if words == REPLY_WORDS {
                let agent = format!("Agent {}", turn % 12);
                let text = "word ".repeat(REPLY_WORDS);
                let usage = Usage { input_tokens: 100, output_tokens: 450, ..Default::default() };
                let kind = EventKind::TurnCompleted {
                    turn,
                    agent,
                    text,
                    evaluation: None,
                    parse_error: Some("the bench's reply has no evaluation".into()),
                    usage,
                    latency_ms: 10,
                    cached: false,
                    done: false,
                    truncated: true,
                    repeats: None,
                    misquotes: Vec::new(),
                    misstates: Vec::new(),
                    endpoint: None,
                };
                app.on_session_event(&Event { seq, t, kind });
                seq += 1;
                turn += 1;
                words = 0;
                app.on_session_event(&started(seq, turn));
                seq += 1;
            }
            words += 1;
            app.on_session_event(&Event { seq, t, kind: EventKind::TurnDelta { turn, text: "word ".into() } });
            term.draw(|f| live::draw(f, &mut app)).expect("draw");
        })
    });
    c.bench_function("key_press_to_frame_200x60", |b| {
        b.iter(|| {
            app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
            term.draw(|f| live::draw(f, &mut app)).expect("draw");
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
