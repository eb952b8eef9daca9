//! Writes the demo sessions in `sessions/examples/` by running the engine with
//! a scripted provider. Run it again after a change to the event schema:
//! `cargo test --test tui_examples -- --ignored`.

mod support;

use std::time::Duration;

use moot::engine::Command;
use moot::panel::Protocol;
use moot::provider::scripted::{ScriptedProvider, ScriptedReply};
use moot::session::event::{OverrideTarget, Phase};
use moot::session::{EventKind, SessionWriter};
use support::*;

fn reply(req: &moot::provider::ChatRequest, _: usize) -> ScriptedReply {
    let debate = is_debate(req);
    let text = match (speaker(req).as_str(), debate) {
        ("aggregator", _) => "Grammar is clean everywhere. The groups split on relevance: teachers find the answer \
                              too thin for a why-question, parents accept it."
            .to_string(),
        ("final judge", _) => evaluation(4, 3, 3),
        ("Ann", false) => evaluation(4, 3, 3),
        ("Ann", true) => format!("The answer names the storm but not why the fox was afraid. {}", evaluation(4, 3, 3)),
        ("Bea", false) => evaluation(5, 2, 3),
        ("Bea", true) => format!("I agree with Ann now; relevance is a 3. NO MORE COMMENTS {}", evaluation(5, 3, 4)),
        ("Cal", _) => evaluation(4, 4, 4),
        ("Dee", false) => evaluation(3, 4, 3),
        ("Dee", true) => format!("A child would accept it. NO MORE COMMENTS {}", evaluation(4, 4, 4)),
        (_, _) => evaluation(3, 3, 3),
    };
    ScriptedReply::Text(text)
}

async fn record(protocol: Protocol, groups: &[(&str, &[&str])], file: &str, steer: bool) {
    let provider =
        std::sync::Arc::new(ScriptedProvider::new(reply).with_delay(Duration::from_millis(120)).with_chunk(48));
    let mut p = panel(protocol, groups);
    p.name = match protocol {
        Protocol::MajEval => "Storybook QA (demo)".into(),
        Protocol::CollabEval => "Summary review (demo)".into(),
        Protocol::GEval => "Summary judge (demo)".into(),
        Protocol::SageEval => "Answer review (demo)".into(),
    };
    let mut c = config(p, provider);
    c.session_id = file.to_string();
    c.linger = true;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples").join(format!("{file}.jsonl"));
    let _ = std::fs::remove_file(&path);
    let writer = SessionWriter::create(&path).unwrap();
    let mut s = Session::start(c, Some(writer));
    if steer {
        s.wait_for(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Debate, .. })).await;
        s.send(Command::Comment {
            text: "Remember the readers are four to six years old.".into(),
            author: "demo".into(),
            group: None,
        });
    }
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    if steer {
        s.send(Command::Override {
            target: OverrideTarget::Final { group: None },
            dimension: "relevance".into(),
            value: 3.0,
            reason: Some("the why is only implied".into()),
            author: "demo".into(),
        });
        s.send(Command::Rate { scores: [("overall".to_string(), 3.0)].into_iter().collect(), author: "demo".into() });
        s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, method: Some(m), .. } if m == "override")).await;
    }
    s.send(Command::Quit { author: "demo".into() });
    s.finish().await;
}

#[tokio::test]
#[ignore = "rewrites sessions/examples"]
async fn write_example_sessions() {
    record(
        Protocol::MajEval,
        &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])],
        "maj-eval-two-groups",
        true,
    )
    .await;
    record(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])], "collab-eval", false).await;
}
