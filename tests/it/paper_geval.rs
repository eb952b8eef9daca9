//! G-Eval under its paper preset: the judge fills in a form with the score
//! alone, the draws are sampled at temperature 1, twenty of them when the
//! provider returns no log-probabilities; a setting the panel gives still
//! wins; the bundled `summary-geval-paper` panel runs the preset.

use crate::support;

use std::sync::Arc;

use moot::engine::{Binding, Bindings, EngineConfig};
use moot::panel::{Panel, Protocol, ProtocolSection, SettingValue};
use moot::provider::ChatRequest;
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::session::event::{EndStatus, Phase};
use moot::session::{EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{Reply, TestServer, openai};
use support::*;

fn paper_panel() -> Panel {
    let mut p = panel(Protocol::GEval, &[("Judge", &["Ann"])]);
    p.protocol = ProtocolSection::paper(Protocol::GEval);
    p
}

fn is_steps(req: &ChatRequest) -> bool {
    req.messages.len() == 2 && req.messages[1].content.contains("evaluation steps")
}

/// The dimension a request is about.
fn key_of(req: &ChatRequest, panel: &Panel) -> String {
    let last = &req.messages.last().unwrap().content;
    let d = panel.dimensions.iter().find(|d| last.contains(&format!("Quality to judge — {}", d.label())));
    d.expect("a request about one dimension").key.clone()
}

/// Steps, then the score alone, as the form asks.
fn form_filler(panel: Panel) -> impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static {
    move |req, call| {
        if is_steps(req) {
            return "1. Read the text.\n2. Judge the quality.".into();
        }
        format!("{{\"{}\": {}}}", key_of(req, &panel), 3 + call % 2).into()
    }
}

#[tokio::test]
async fn the_paper_preset_fills_in_the_form_score_first_with_twenty_draws_at_temperature_one() {
    let p = paper_panel();
    assert!(p.departures().is_empty(), "{:?}", p.departures());
    let provider = scripted(form_filler(p.clone()));
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // Two steps turns, then twenty draws for each of two dimensions (no log-probabilities).
    assert_eq!(provider.calls(), 2 + 40);
    let requests = provider.requests();
    let (steps, scoring): (Vec<_>, Vec<_>) = requests.iter().partition(|r| is_steps(r));
    for r in &steps {
        assert_eq!(r.temperature, Some(0.0), "the steps keep the judge's own temperature");
    }
    for r in &scoring {
        assert_eq!(r.temperature, Some(1.0), "the draws sample at temperature 1");
        assert!(!r.prose_first, "the score comes first: nothing is written before it");
        let asked = &r.messages.last().unwrap().content;
        assert!(asked.contains("Fill in the form") && asked.contains("nothing before or after it"), "{asked}");
        assert!(!asked.contains("sentences of plain prose"), "no reasoning is asked for: {asked}");
        assert!(r.top_logprobs.is_some(), "the score token's probabilities are asked for");
    }
    let view = SessionView::from_events(&events);
    let ann = &view.group("Judge").unwrap().finals["Ann"];
    assert_eq!(ann.scores["grammar"], 3.5, "the mean of twenty draws of 3 and 4");
    assert!(view.aggregate.as_ref().unwrap().feedback.contains("mean of 40 sampled replies"));
    let started = events.iter().find_map(|e| match &e.kind {
        EventKind::SessionStarted { departures, .. } => Some(departures.clone()),
        _ => None,
    });
    assert_eq!(started, Some(Vec::new()), "the log says the run departs from the paper nowhere");
}

#[tokio::test]
async fn settings_the_panel_gives_win_over_the_paper_preset_and_are_listed_as_departures() {
    let mut p = paper_panel();
    for (key, value) in [
        ("samples", SettingValue::Integer(2)),
        ("reply", SettingValue::Text("reason-first".into())),
        ("sample_temperature", SettingValue::Text("judge".into())),
    ] {
        p.protocol.settings.insert(key.into(), value);
    }
    let departures: Vec<String> = p.departures().iter().map(ToString::to_string).collect();
    assert_eq!(
        departures,
        [
            "samples = 2 (paper: 20)",
            "reply = \"reason-first\" (paper: \"score-first\")",
            "sample_temperature = \"judge\" (paper: \"1\")"
        ]
    );
    let provider = scripted(|req, _| {
        if is_steps(req) { "1. Read.".into() } else { "It reads well.\n{\"grammar\": 4, \"relevance\": 4}".into() }
    });
    let (_, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(provider.calls(), 2 + 4, "two draws per dimension, as the panel says");
    for r in provider.requests().iter().filter(|r| !is_steps(r)) {
        assert_eq!(r.temperature, Some(0.0), "the judge's own temperature, as the panel says");
        assert!(r.prose_first);
        assert!(r.messages.last().unwrap().content.contains("sentences of plain prose"));
    }
    // moot's own preset departs from the paper in all three, and in the score its result takes.
    let moot = ProtocolSection::new(Protocol::GEval);
    let keys: Vec<String> = moot.departures().into_iter().map(|d| d.setting).collect();
    assert_eq!(keys, ["samples", "reply", "sample_temperature", "score"]);
}

/// A score-first reply whose score token carries `top_logprobs`.
fn form_reply(key: &str) -> Reply {
    let chunk = |content: &str, top: serde_json::Value, logprob: f64| {
        serde_json::json!({
            "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null,
                         "logprobs": {"content": [{"token": content, "logprob": logprob, "top_logprobs": top}]}}],
        })
        .to_string()
    };
    let top = serde_json::json!([
        {"token": "4", "logprob": 0.5f64.ln()},
        {"token": "5", "logprob": 0.25f64.ln()},
        {"token": "2", "logprob": 0.25f64.ln()}
    ]);
    Reply::sse()
        .event(&openai::role_chunk())
        .event(&chunk(&format!("{{\"{key}\": "), serde_json::json!([]), -0.01))
        .event(&chunk("4", top, 0.5f64.ln()))
        .event(&chunk("}", serde_json::json!([]), -0.01))
        .event(&openai::finish_chunk("stop"))
        .event("[DONE]")
}

#[tokio::test]
async fn with_log_probabilities_the_form_is_filled_once_and_its_score_token_weighted() {
    let (ann, result) = weighted_run(paper_panel()).await;
    let w = ann.weighted_scores.as_ref().expect("weighted");
    // 0.5·4 + 0.25·5 + 0.25·2, read from the reply's first score token.
    assert!((w["grammar"] - 3.75).abs() < 1e-9, "{w:?}");
    assert!((ann.scores["grammar"] - 3.75).abs() < 1e-9, "the paper's score is the weighted one: {:?}", ann.scores);
    assert!((result["grammar"] - 3.75).abs() < 1e-9, "and so is the result's: {result:?}");
    assert!(ann.justification.is_empty(), "a filled-in form gives no reasons");

    // `score = "drawn"` (moot's default) keeps the drawn score in the result, the weighted one beside it.
    let mut drawn = paper_panel();
    drawn.protocol.settings.insert("score".into(), moot::panel::SettingValue::Text("drawn".into()));
    let (ann, result) = weighted_run(drawn).await;
    assert_eq!((ann.scores["grammar"], result["grammar"]), (4.0, 4.0));
    assert!((ann.weighted_scores.as_ref().unwrap()["grammar"] - 3.75).abs() < 1e-9);
}

/// A run of `panel` against a server whose form replies carry
/// log-probabilities: Ann's final evaluation and the panel's result.
async fn weighted_run(panel: Panel) -> (moot::session::event::Evaluation, moot::session::event::Scores) {
    let server = TestServer::start().await.expect("bind 127.0.0.1");
    server.set_handler(|r| {
        let body = r.body_text();
        if body.contains("write the evaluation steps") {
            return Reply::openai_stream(&["1. Read."], None);
        }
        let json = r.body_json().unwrap();
        assert_eq!(json["top_logprobs"], 10);
        assert_eq!(json["temperature"], 1.0);
        form_reply(if body.contains("Quality to judge — Grammar") { "grammar" } else { "relevance" })
    });
    let config =
        OpenAiConfig { name: "test".into(), base_url: server.base_url(), model: "m".into(), ..OpenAiConfig::default() };
    let provider = Arc::new(OpenAiProvider::new(config).unwrap());
    let mut c = EngineConfig::new(Arc::new(panel), item(), Bindings::uniform(Binding::new(provider, "m")));
    c.retry.max_attempts = 1;
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(server.request_count(), 2 + 2, "weighted: one draw per dimension, not twenty");
    let view = SessionView::from_events(&events);
    let ann = view.group("Judge").unwrap().finals["Ann"].clone();
    let result = view.aggregate.as_ref().expect("a result").scores.clone();
    (ann, result)
}

#[tokio::test]
async fn the_bundled_paper_panel_runs_the_paper_preset() {
    let p = Panel::bundled("summary-geval-paper").expect("bundled");
    assert_eq!(p.protocol.kind, Protocol::GEval);
    assert!(p.departures().is_empty(), "{:?}", p.departures());
    assert_eq!(p.protocol.integer("samples"), 20);
    let plain = Panel::bundled("summary-geval").expect("bundled");
    assert_eq!(p.dimensions, plain.dimensions, "the same dimensions as summary-geval");
    let items = moot::item::ItemsFile::bundled("summary-geval-paper").expect("bundled items");
    let provider = scripted(form_filler(p.clone()));
    let mut c = config(p, provider.clone());
    c.item = items.items[0].clone();
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(provider.calls(), 4 + 4 * 20);
    let draws =
        events.iter().filter(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Scoring, .. })).count();
    assert_eq!(draws, 80);
    assert!(provider.requests().iter().filter(|r| !is_steps(r)).all(|r| r.temperature == Some(1.0) && !r.prose_first));
}
