//! Writes the demo sessions in `sessions/examples/` by running the engine with
//! a scripted provider. Run it again after a change to the event schema:
//! `cargo test --test it tui_examples:: -- --ignored`.

use crate::support;

use std::time::Duration;

use moot::engine::Command;
use moot::panel::Protocol;
use moot::session::event::{OverrideTarget, Phase};
use moot::session::{EventKind, SessionWriter};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
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
        Protocol::ChatEval => "Summary chat (demo)".into(),
        Protocol::RoundTable => "Summary round-table (demo)".into(),
        Protocol::Pairwise => "Summary pairs (demo)".into(),
        Protocol::Composition => "Composition (demo)".into(),
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

/// G-Eval's judge: steps for each dimension, then a short reasoning and a score.
fn g_eval_reply(req: &moot::provider::ChatRequest, call: usize) -> ScriptedReply {
    let last = &req.messages.last().unwrap().content;
    let grammar = last.contains("Quality to judge — Grammar");
    if req.messages.len() == 2 {
        return if grammar {
            "1. Read the question and the answer aloud.\n2. Mark every spelling, agreement or punctuation error.\n3. \
             Start from 5 and take off a point for each error that a child would notice."
        } else {
            "1. Restate what the question asks.\n2. Check whether the answer gives that, not something near it.\n3. \
             Score 5 for a direct answer, 3 for a partial one, 1 for an answer to another question."
        }
        .into();
    }
    let text = if grammar {
        format!("Both sentences are well formed and the punctuation is right.\n{{\"grammar\": {}}}", 4 + call % 2)
    } else {
        "The answer names the storm but only implies why the fox was afraid.\n{\"relevance\": 3}".to_string()
    };
    ScriptedReply::Text(text)
}

#[tokio::test]
#[ignore = "rewrites sessions/examples/g-eval.jsonl"]
async fn write_g_eval_example() {
    let provider =
        std::sync::Arc::new(ScriptedProvider::new(g_eval_reply).with_delay(Duration::from_millis(60)).with_chunk(32));
    let mut p = panel(Protocol::GEval, &[("Judge", &["Ann"])]);
    p.name = "Storybook QA, one G-Eval judge (demo)".into();
    p.protocol.settings.insert("samples".into(), moot::panel::SettingValue::Integer(3));
    p.protocol.settings.insert("review_steps".into(), moot::panel::SettingValue::Bool(true));
    let mut c = config(p, provider);
    c.session_id = "g-eval".into();
    c.linger = true;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/g-eval.jsonl");
    let _ = std::fs::remove_file(&path);
    let mut s = Session::start(c, Some(SessionWriter::create(&path).unwrap()));
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { .. })).await;
    s.send(Command::EditSteps {
        dimension: "relevance".into(),
        steps: "1. Restate what the question asks.\n2. Check that the answer says why, not only what happened.\n3. \
                Score 5 for a direct why, 3 when the reason is only implied, 1 for another question's answer."
            .into(),
        author: "demo".into(),
    });
    s.send(Command::Resume { author: "demo".into() });
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Quit { author: "demo".into() });
    s.finish().await;
}
