//! `overall` is never mandatory: a panel with `overall = false` asks for no
//! overall score and records none, and a panel may rate overall directly as
//! a dimension keyed `overall`, asked once and recorded as the evaluation's
//! overall.

use crate::support;

use moot::panel::{Dimension, Panel, Preset, Protocol, ProtocolSection};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Evaluation, Phase};
use moot::session::{Event, EventKind, SessionView, parse_log};
use moot::testkit::scripted::ScriptedReply;
use serde_json::Value;
use support::*;

/// A reply with a fenced JSON evaluation on exactly the keys given.
fn reply(scores: &[(&str, u32)]) -> String {
    let fields: Vec<String> = scores.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    format!(
        "My view, briefly.\n```json\n{{{}, \"confidence\": 0.8, \"justification\": \"Scores as given.\"}}\n```",
        fields.join(", ")
    )
}

/// Each agent keeps its own scores on grammar and relevance, and no overall.
fn without_overall(req: &ChatRequest, _: usize) -> ScriptedReply {
    match speaker(req).as_str() {
        "aggregator" => "Agreement: grammar.\nDisagreement: relevance.\nOverall: fair.".into(),
        "moderator" => "{\"next\": \"Bea\", \"reason\": \"Bea disagrees most.\"}".into(),
        "Ann" | "Cal" => reply(&[("grammar", 4), ("relevance", 4)]).into(),
        _ => reply(&[("grammar", 2), ("relevance", 3)]).into(),
    }
}

/// Everything a judge's request says: its messages and its schema.
fn request_text(req: &ChatRequest) -> String {
    let mut text: String = req.messages.iter().map(|m| format!("{}\n", m.content)).collect();
    if let Some(schema) = &req.response_schema {
        text.push_str(&schema.to_string());
    }
    text
}

/// Every `overall` in the events, as a path and value, besides the panel's
/// own `overall = false` in `session_started`.
fn overalls(events: &[Event]) -> Vec<String> {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, x) in map {
                    let at = format!("{path}.{k}");
                    if k == "overall" && !x.is_null() && at != ".session_started.panel.overall" {
                        out.push(format!("{at} = {x}"));
                    }
                    walk(x, &at, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|x| walk(x, path, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for e in events {
        let json = serde_json::to_value(&e.kind).expect("an event serialises");
        walk(&json, &format!(".{}", e.kind.type_name()), &mut out);
    }
    out
}

/// Every key a consensus check covered.
fn consensus_keys(events: &[Event]) -> Vec<String> {
    let mut keys: Vec<String> = events
        .iter()
        .flat_map(|e| match &e.kind {
            EventKind::ConsensusChecked { scores, spread, .. } => {
                spread.keys().chain(scores.values().flat_map(|s| s.keys())).cloned().collect()
            }
            _ => Vec::new(),
        })
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

fn evaluations(events: &[Event]) -> Vec<&Evaluation> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnCompleted { evaluation: Some(ev), .. } => Some(ev),
            _ => None,
        })
        .collect()
}

/// A run of `p` against [`without_overall`]: it completes, no judge's
/// request mentions overall, no event carries one and consensus never
/// checks one; the log reads back with the panel's `overall = false`.
async fn runs_without_overall(p: Panel) {
    assert!(!p.has_overall());
    let provider = scripted(without_overall);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    for r in provider.requests() {
        // The aggregator's synthesis ends with a paragraph of its own named so.
        if speaker(&r) != "aggregator" {
            let text = request_text(&r);
            assert!(!text.to_lowercase().contains("overall"), "a request mentions overall:\n{text}");
        }
    }
    assert_eq!(overalls(&events), Vec::<String>::new());
    let keys = consensus_keys(&events);
    assert!(!keys.is_empty(), "consensus was checked");
    assert!(!keys.contains(&"overall".to_string()), "{keys:?}");
    let evs = evaluations(&events);
    assert!(!evs.is_empty() && evs.iter().all(|e| e.overall.is_none() && !e.scores.is_empty()), "{evs:?}");
    let view = SessionView::from_events(&events);
    let result = view.aggregate.as_ref().expect("a result");
    assert_eq!((result.overall, result.scores.len()), (None, 2));
    // The log carries the setting, and reads back with it.
    let log: String = events.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    let back = parse_log(log.as_bytes());
    assert_eq!(back.events.len(), events.len(), "the log reads back whole");
    let back = SessionView::from_events(&back.events);
    assert!(!back.panel.expect("the panel").overall);
}

#[tokio::test]
async fn a_maj_eval_panel_without_overall_never_asks_for_or_records_one() {
    let mut p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"]), ("Parents", &["Cal", "Dee"])]);
    p.overall = false;
    runs_without_overall(p.clone()).await;
    p.protocol = ProtocolSection::paper(Protocol::MajEval);
    runs_without_overall(p).await;
}

#[tokio::test]
async fn a_collab_eval_panel_without_overall_never_asks_for_or_records_one() {
    for preset in [Preset::Moot, Preset::Paper] {
        let mut p = panel(Protocol::CollabEval, &[("Evaluators", &["Ann", "Bea", "Cal"])]);
        p.protocol = ProtocolSection { preset, ..ProtocolSection::new(Protocol::CollabEval) };
        p.overall = false;
        runs_without_overall(p).await;
    }
}

/// The test kit's panel with a third dimension keyed `overall`.
fn rates_overall(protocol: Protocol, groups: &[(&str, &[&str])]) -> Panel {
    let mut p = panel(protocol, groups);
    p.dimensions.push(Dimension {
        key: "overall".into(),
        name: "Overall quality".into(),
        description: "Overall quality: how well the answer serves its reader, all told.".into(),
        steps: None,
        labels: Vec::new(),
    });
    p
}

#[tokio::test]
async fn a_dimension_keyed_overall_is_asked_once_and_is_the_evaluations_overall() {
    let p = rates_overall(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    assert_eq!(p.score_keys(), ["grammar", "relevance", "overall"]);
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "aggregator" => "Agreement: all.".into(),
        "moderator" => "{\"next\": \"Bea\", \"reason\": \"Bea has not answered Ann.\"}".into(),
        "Ann" => reply(&[("grammar", 4), ("relevance", 4), ("overall", 2)]).into(),
        _ => reply(&[("grammar", 2), ("relevance", 2), ("overall", 5)]).into(),
    });
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let first = provider.requests().into_iter().find(|r| speaker(r) == "Ann").expect("Ann's request");
    let text = request_text(&first);
    assert_eq!(text.matches("\"overall\": <score>").count(), 1, "the output form asks once:\n{text}");
    assert!(text.contains("- overall (Overall quality): Overall quality: how well"), "{text}");
    assert!(!text.contains("your overall judgment"), "no second overall is asked for:\n{text}");
    if let Some(schema) = &first.response_schema {
        let required = schema["required"].as_array().unwrap();
        assert_eq!(required.iter().filter(|k| *k == "overall").count(), 1, "{schema}");
    }
    for ev in evaluations(&events) {
        assert!(!ev.scores.contains_key("overall"), "the overall is not among the scores too: {ev:?}");
        assert!(ev.overall == Some(2.0) || ev.overall == Some(5.0), "the dimension's own score: {ev:?}");
    }
    assert!(consensus_keys(&events).contains(&"overall".to_string()));
    let view = SessionView::from_events(&events);
    let ann = &view.group("Teachers").unwrap().finals["Ann"];
    assert_eq!(ann.overall, Some(2.0), "not the mean of the dimensions");
    assert_eq!(view.aggregate.as_ref().unwrap().overall, Some(3.5));
}

#[tokio::test]
async fn a_g_eval_panel_may_rate_overall_alone() {
    let mut p = rates_overall(Protocol::GEval, &[("Judge", &["Ann"])]);
    p.dimensions.retain(|d| d.key == "overall");
    p.overall = false;
    let provider = scripted(|req, _| {
        let last = &req.messages.last().unwrap().content;
        if req.messages.len() == 2 && last.contains("evaluation steps") {
            "1. Read the answer.\n2. Judge it as a whole.".into()
        } else {
            assert!(last.contains("Quality to judge — Overall quality"), "{last}");
            "Fine.\n{\"overall\": 4}".into()
        }
    });
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(
        events.iter().any(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Scoring, .. })),
        "the dimension was scored"
    );
    let view = SessionView::from_events(&events);
    let ann = &view.group("Judge").unwrap().finals["Ann"];
    assert_eq!((ann.overall, ann.scores.is_empty()), (Some(4.0), true));
    assert_eq!(view.aggregate.as_ref().unwrap().overall, Some(4.0));
}

const PANEL: &str = r#"name = "No overall"
protocol = "maj-eval"
task = "Judge the text."
overall = false

[[dimensions]]
key = "clarity"
description = "Is it clear?"

[[groups]]
name = "Readers"

[[groups.agents]]
name = "Ana"
"#;

#[test]
fn the_panel_checker_accepts_no_overall_and_an_overall_dimension() {
    let p = Panel::from_toml_str(PANEL, "panel.toml").expect("overall = false loads");
    assert!(!p.overall && !p.has_overall());
    assert_eq!(p.score_keys(), ["clarity"]);
    let rated = PANEL.replace("key = \"clarity\"", "key = \"overall\"\nname = \"Overall quality\"");
    let p = Panel::from_toml_str(&rated, "panel.toml").expect("a dimension keyed overall loads");
    assert!(p.rates_overall() && p.has_overall() && !p.asks_overall());
    assert_eq!(p.score_keys(), ["overall"]);
    let default = Panel::from_toml_str(&PANEL.replace("overall = false\n", ""), "panel.toml").expect("loads");
    assert!(default.overall && default.asks_overall());
    let err = Panel::from_toml_str(&PANEL.replace("overall = false", "overall = \"no\""), "panel.toml");
    assert!(err.is_err(), "overall is true or false");
}

#[test]
fn a_panel_records_its_overall_only_when_it_has_none() {
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann"])]);
    let json = serde_json::to_value(&p).unwrap();
    assert!(json.get("overall").is_none(), "the default is not written: logs stay as they were");
    let old: Panel = serde_json::from_value(json).expect("a log's panel without the field loads");
    assert!(old.overall);
    let none = Panel { overall: false, ..p };
    let json = serde_json::to_value(&none).unwrap();
    assert_eq!(json["overall"], false);
    assert!(!serde_json::from_value::<Panel>(json).unwrap().overall);
}
