//! ChatEval's strategies and the round-table: who sees what (checked on the
//! requests a local HTTP server receives), the summarizer, stopping on
//! agreement, and the confidence-weighted result.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use moot::engine::{Binding, Bindings, Command, EngineConfig};
use moot::panel::{Panel, Protocol, SettingValue};
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::session::event::{EndStatus, Phase, Role};
use moot::session::{EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use support::*;

const GROUP: &[(&str, &[&str])] = &[("Readers", &["Ann", "Bea", "Cal"])];

fn chat_panel(strategy: &str, turns: i64) -> Panel {
    let mut p = panel(Protocol::ChatEval, GROUP);
    p.protocol.settings.insert("strategy".into(), SettingValue::Text(strategy.into()));
    p.protocol.settings.insert("turns".into(), SettingValue::Integer(turns));
    p
}

fn verdict(grammar: u32, relevance: u32, confidence: f64) -> String {
    format!(
        "{{\"grammar\": {grammar}, \"relevance\": {relevance}, \"overall\": {grammar}, \"confidence\": {confidence}, \"justification\": \"As scored.\"}}"
    )
}

fn text_of(body: &serde_json::Value, i: usize) -> String {
    body["messages"][i]["content"].as_str().unwrap_or_default().to_string()
}

fn last_of(body: &serde_json::Value) -> String {
    body["messages"].as_array().and_then(|m| m.last()).and_then(|m| m["content"].as_str()).unwrap_or_default().into()
}

/// `Discussion round N.` in a request's last message.
fn round_of(last: &str) -> Option<u32> {
    last.split("Discussion round ").nth(1)?.split('.').next()?.parse().ok()
}

/// Agents answer with a marker naming them and the round (`R2-Bea`); the
/// summarizer with `SUMMARY-<round>`.
fn marked_judge(r: &RecordedRequest) -> Reply {
    let body = r.body_json().unwrap_or_default();
    let system = text_of(&body, 0);
    let last = last_of(&body);
    let text = if system.starts_with("You keep the minutes") {
        let round = last.split(" said in round ").nth(1).and_then(|s| s.split(':').next()).unwrap_or("?");
        format!("SUMMARY-{round}: the members mostly agree on grammar.")
    } else {
        let name = moot::engine::prompts::agent_named_in(&text_of(&body, 1)).unwrap_or("?").to_string();
        match round_of(&last) {
            Some(n) => format!("R{n}-{name} speaks. {}", verdict(4, 3, 0.7)),
            None => format!("INIT-{name}. {}", verdict(4, 3, 0.7)),
        }
    };
    Reply::sse().event(&openai::content_chunk(&text)).event(&openai::finish_chunk("stop")).event("[DONE]")
}

fn http_config(panel: Panel, server: &TestServer) -> EngineConfig {
    let provider =
        OpenAiProvider::new(OpenAiConfig { base_url: server.base_url(), ..OpenAiConfig::default() }).unwrap();
    let mut c = EngineConfig::new(Arc::new(panel), item(), Bindings::uniform(Binding::new(Arc::new(provider), "m")));
    c.retry.max_attempts = 1;
    c
}

/// Each agent request of a discussion round: (agent, round, everything it was shown).
fn discussion_requests(server: &TestServer) -> Vec<(String, u32, String)> {
    server
        .requests()
        .iter()
        .filter_map(|r| {
            let body = r.body_json().ok()?;
            let last = last_of(&body);
            let round = round_of(&last)?;
            let name = moot::engine::prompts::agent_named_in(&text_of(&body, 1))?.to_string();
            Some((name, round, r.body_text()))
        })
        .collect()
}

#[tokio::test]
async fn in_a_simultaneous_round_nobody_sees_a_reply_of_the_same_round() {
    let server = TestServer::with_handler(marked_judge).await.unwrap();
    let (events, outcome) = Session::start(http_config(chat_panel("simultaneous", 2), &server), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let seen = discussion_requests(&server);
    assert_eq!(seen.len(), 6, "three agents, two rounds");
    for (agent, round, shown) in &seen {
        for other in ["Ann", "Bea", "Cal"].iter().filter(|o| *o != agent) {
            assert!(!shown.contains(&format!("R{round}-{other}")), "{agent} saw {other}'s round-{round} reply");
            if *round > 1 {
                assert!(
                    shown.contains(&format!("R{}-{other}", round - 1)),
                    "{agent} sees round {} of {other}",
                    round - 1
                );
            }
        }
    }
    // Each round is announced as everyone at once, and a round marker opens it.
    let rounds: Vec<Option<u32>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase: Phase::Discussion, round, .. } => Some(*round),
            _ => None,
        })
        .collect();
    assert_eq!(rounds, [Some(1), Some(2)]);
    let view = SessionView::from_events(&events);
    assert!(view.aggregate.as_ref().is_some_and(|a| a.scores["grammar"] == 4.0));
}

#[tokio::test]
async fn with_the_summarizer_agents_see_the_summary_not_the_raw_round() {
    let server = TestServer::with_handler(marked_judge).await.unwrap();
    let (events, outcome) =
        Session::start(http_config(chat_panel("simultaneous-summarizer", 2), &server), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    for (agent, round, shown) in discussion_requests(&server) {
        if round == 2 {
            assert!(shown.contains("SUMMARY-1"), "{agent} sees the summary of round 1");
            assert!(!shown.contains("R1-"), "{agent} does not see round 1's raw words");
        }
    }
    let summaries: Vec<String> =
        server.requests().iter().map(|r| r.body_text()).filter(|b| b.contains("You keep the minutes")).collect();
    assert_eq!(summaries.len(), 2, "one summary a round");
    for name in ["Ann", "Bea", "Cal"] {
        assert!(summaries[0].contains(&format!("R1-{name}")), "the summarizer reads round 1 whole");
    }
    assert!(summaries[1].contains("SUMMARY-1"), "and rewrites its running summary");
    let roles: Vec<Role> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { role, phase: Phase::Summary, .. } => Some(*role),
            _ => None,
        })
        .collect();
    assert_eq!(roles, [Role::Summarizer, Role::Summarizer]);
}

#[tokio::test]
async fn one_by_one_agents_see_everything_said_before_them() {
    let server = TestServer::with_handler(marked_judge).await.unwrap();
    let (_, outcome) = Session::start(http_config(chat_panel("one-by-one", 1), &server), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let seen = discussion_requests(&server);
    let order: Vec<&str> = seen.iter().map(|(a, _, _)| a.as_str()).collect();
    assert_eq!(order, ["Ann", "Bea", "Cal"], "the panel's order");
    assert!(seen[1].2.contains("R1-Ann") && seen[2].2.contains("R1-Ann") && seen[2].2.contains("R1-Bea"));
}

#[tokio::test]
async fn a_pick_in_a_simultaneous_round_is_refused_with_its_reason() {
    let server = TestServer::with_handler(marked_judge).await.unwrap();
    let mut c = http_config(chat_panel("simultaneous", 1), &server);
    c.linger = true;
    let mut s = Session::start(c, None);
    s.send(Command::Pause { author: author() });
    s.send(Command::PickSpeaker { agent: "Bea".into(), author: author() });
    s.send(Command::Resume { author: author() });
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::CommandRejected { reason, .. } if reason.contains("everyone speaks at once"))));
}

fn table_panel(max_rounds: i64) -> Panel {
    let mut p = panel(Protocol::RoundTable, GROUP);
    p.protocol.settings.insert("max_rounds".into(), SettingValue::Integer(max_rounds));
    p.consensus.tolerance = 1.0;
    p
}

/// Ann 5 (0.9), Bea 2 (0.3), Cal 4 (0.6) at first; in a discussion round all
/// say 4 when `agree`, else repeat themselves.
fn table_reply(agree: bool) -> impl Fn(&moot::provider::ChatRequest, usize) -> ScriptedReply + Send + Sync {
    move |req, _| {
        let (g, c) = match speaker(req).as_str() {
            "Ann" => (5, 0.9),
            "Bea" => (2, 0.3),
            _ => (4, 0.6),
        };
        let g = if agree && is_debate(req) { 4 } else { g };
        ScriptedReply::Text(format!("My view. {}", verdict(g, g, c)))
    }
}

#[tokio::test]
async fn the_round_table_stops_once_all_agree() {
    let (events, outcome) = Session::start(config(table_panel(3), scripted(table_reply(true))), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let rounds =
        events.iter().filter(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Discussion, .. })).count();
    assert_eq!(rounds, 1, "agreement after the first round ends the rounds");
    assert!(
        events.iter().any(|e| matches!(&e.kind, EventKind::ConsensusChecked { round: Some(1), reached: true, .. }))
    );
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!((agg.scores["grammar"], agg.method.as_deref()), (4.0, Some("confidence_weighted")));
}

#[tokio::test]
async fn without_agreement_the_result_is_the_confidence_weighted_mean() {
    let (events, outcome) = Session::start(config(table_panel(1), scripted(table_reply(false))), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let view = SessionView::from_events(&events);
    let g = view.aggregate.as_ref().unwrap().scores["grammar"];
    // (5·0.9 + 2·0.3 + 4·0.6) / (0.9 + 0.3 + 0.6) = 7.5 / 1.8
    assert!((g - 7.5 / 1.8).abs() < 1e-9, "{g}");
    assert!(g > (5.0 + 2.0 + 4.0) / 3.0, "the confident Ann pulls the result up");
}

#[tokio::test(start_paused = true)]
async fn a_simultaneous_round_takes_about_one_call_whatever_the_agents() {
    // Five agents, calls that take 200 ms: a round runs them at once.
    let five: &[(&str, &[&str])] = &[("Readers", &["Ann", "Bea", "Cal", "Dee", "Eve"])];
    let mut p = panel(Protocol::ChatEval, five);
    p.protocol.settings.insert("strategy".into(), SettingValue::Text("simultaneous".into()));
    p.protocol.settings.insert("turns".into(), SettingValue::Integer(1));
    let provider = std::sync::Arc::new(
        moot::testkit::scripted::ScriptedProvider::new(|_, _| {
            ScriptedReply::Text(format!("Fine. {}", verdict(4, 4, 0.5)))
        })
        .with_delay(Duration::from_millis(200)),
    );
    let started = tokio::time::Instant::now();
    let (_, outcome) = Session::start(config(p, provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    // The first evaluations and the round: two rounds of calls, not ten calls in a row.
    assert!(started.elapsed() < Duration::from_millis(2 * 200 + 200), "{:?}", started.elapsed());
}

#[test]
fn the_bundled_panels_load_with_their_items() {
    for name in ["summary-chateval", "summary-roundtable"] {
        let p = Panel::bundled(name).unwrap_or_else(|| panic!("{name} loads"));
        assert!(moot::item::ItemsFile::bundled(name).is_some_and(|f| !f.items.is_empty()));
        assert!(p.agents().count() >= 2);
    }
    let chat = Panel::bundled("summary-chateval").unwrap();
    assert_eq!(chat.protocol.choice("strategy"), "simultaneous-summarizer");
    let bad = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/panels/summary-chateval.toml"))
        .unwrap()
        .replace("strategy = \"simultaneous-summarizer\"", "strategy = \"all-at-once\"");
    let e = Panel::from_toml_str(&bad, "chat.toml").unwrap_err().to_string();
    assert!(e.contains("protocol.strategy") && e.contains("one-by-one, simultaneous"), "{e}");
}
