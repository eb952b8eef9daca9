//! SAGEval runs: an evaluator's values, the meta-evaluator's rectifications
//! and proposals, a person's decisions and adoptions, and the log they leave.

use crate::support;

use std::sync::Arc;

use moot::engine::Command;
use moot::panel::{Dimension, Panel, Protocol};
use moot::provider::ChatRequest;
use moot::session::event::{AspectValue, EndStatus, Phase, ProposalKind};
use moot::session::{Event, EventKind, SessionView};
use moot::testkit::scripted::{ScriptedProvider, ScriptedReply};
use support::*;

fn sage_panel() -> Panel {
    let mut p = panel(Protocol::SageEval, &[("Evaluator", &["Ann"])]);
    p.dimensions.push(Dimension {
        key: "tone".into(),
        name: "Tone".into(),
        description: "Which tone does it take?".into(),
        steps: None,
        labels: vec!["formal".into(), "friendly".into(), "playful".into()],
    });
    p
}

fn is_steps(req: &ChatRequest) -> bool {
    req.messages.len() == 2 && req.messages[1].content.contains("evaluation steps")
}

fn is_review(req: &ChatRequest) -> bool {
    req.messages[0].content.contains("You are the meta-evaluator")
}

const EVALUATOR: &str = "Clear enough.\n{\"grammar\": {\"reason\": \"No errors.\", \"score\": 4}, \
     \"relevance\": {\"reason\": \"It answers.\", \"score\": 5}, \"tone\": {\"reason\": \"Warm.\", \"label\": \"friendly\"}}";

const REVIEW: &str = "Relevance is too generous.\n{\"review\": {\
     \"grammar\": {\"verdict\": \"keep\", \"score\": 4, \"reason\": \"\"},\
     \"relevance\": {\"verdict\": \"rectify\", \"score\": 3, \"reason\": \"It names the storm but not the fear.\"},\
     \"tone\": {\"verdict\": \"rectify\", \"label\": \"formal\", \"reason\": \"No warmth at all.\"}},\
     \"definitions\": [{\"aspect\": \"relevance\", \"definition\": \"Does it answer the question asked, with its why?\", \"reason\": \"Too vague.\"}],\
     \"new_aspects\": [{\"key\": \"brevity\", \"name\": \"Brevity\", \"definition\": \"Is it as short as it can be?\", \"score\": 5, \"reason\": \"Short answers suit children.\"}]}";

fn script(evaluator: &'static str, review: &'static str) -> Arc<ScriptedProvider> {
    scripted(move |req, _| {
        if is_steps(req) {
            ScriptedReply::Text("1. Read it.\n2. Judge it.".into())
        } else if is_review(req) {
            ScriptedReply::Text(review.into())
        } else {
            ScriptedReply::Text(evaluator.into())
        }
    })
}

fn phases(events: &[Event]) -> Vec<Phase> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase, .. } => Some(*phase),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn the_evaluator_then_the_meta_evaluator_then_the_rectified_result() {
    let provider = script(EVALUATOR, REVIEW);
    let (events, outcome) = Session::start(config(sage_panel(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(phases(&events), [Phase::Steps, Phase::Initial, Phase::Critique, Phase::Aggregation]);
    // Three steps turns, one evaluator turn, one review: nothing repaired.
    assert_eq!(provider.calls(), 5);
    let revised: Vec<(String, Option<AspectValue>, AspectValue, Option<u64>)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::EvaluationRevised { by, agent, dimension, from, to, agent_turn, .. } => {
                assert_eq!((by.as_str(), agent.as_str()), ("meta-evaluator", "Ann"));
                Some((dimension.clone(), from.clone(), to.clone(), *agent_turn))
            }
            _ => None,
        })
        .collect();
    assert_eq!(revised.len(), 2, "a kept value is no revision: {revised:?}");
    assert_eq!(revised[0].0, "relevance");
    assert_eq!((revised[0].1.clone(), revised[0].2.clone()), (Some(AspectValue::Score(5.0)), AspectValue::Score(3.0)));
    assert_eq!(revised[1].2, AspectValue::Label("formal".into()));
    assert!(revised[0].3.is_some(), "the evaluator's turn is named");

    let view = SessionView::from_events(&events);
    let finals = &view.group("Evaluator").unwrap().finals["Ann"];
    assert_eq!(finals.scores["relevance"], 3.0, "the rectified value stands");
    assert_eq!(finals.labels["tone"], "formal");
    assert_eq!(view.aggregate.as_ref().unwrap().scores["relevance"], 3.0);
    assert_eq!(view.aggregate.as_ref().unwrap().overall, Some(3.5));
    // A categorical aspect's result is a label, counted, never averaged.
    assert_eq!(view.aggregate.as_ref().unwrap().labels["tone"], "formal");
    assert!(!view.aggregate.as_ref().unwrap().scores.contains_key("tone"));
    assert_eq!(view.stages.panel.aggregate_labels["tone"], "formal");
    let ann = view.stages.agent("Ann").unwrap();
    assert_eq!(ann.initial.as_ref().unwrap().scores["relevance"], 5.0, "the evaluator's own value is its stage");
    assert_eq!(ann.final_.as_ref().unwrap().scores["relevance"], 3.0);
    assert!(ann.set_by.is_empty(), "no person decided anything");
    // The proposals are recorded, not applied.
    assert_eq!(view.sage.proposals.len(), 2);
    let brevity = view.sage.proposal(ProposalKind::Aspect, "brevity").unwrap();
    assert_eq!((brevity.score, brevity.definition.as_str()), (Some(5.0), "Is it as short as it can be?"));
    assert!(view.sage.proposal(ProposalKind::Definition, "relevance").is_some());
    assert!(!view.aggregate.as_ref().unwrap().scores.contains_key("brevity"));
    // The review request showed the evaluator's values and reasons.
    let review = provider.requests().into_iter().find(is_review).unwrap();
    let asked = &review.messages.last().unwrap().content;
    assert!(asked.contains("Ann's value: 5") && asked.contains("Ann's reason: It answers."), "{asked}");
}

#[tokio::test]
async fn a_rejected_revision_puts_the_evaluators_value_back_with_its_author() {
    let mut c = config(sage_panel(), script(EVALUATOR, REVIEW));
    c.linger = true;
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { author } if author == "sage-eval (review)")).await;
    s.send(Command::Decide { dimension: "relevance".into(), agent: None, accept: false, author: author() });
    s.send(Command::Decide { dimension: "tone".into(), agent: None, accept: true, author: author() });
    s.send(Command::Decide { dimension: "grammar".into(), agent: None, accept: true, author: author() });
    s.send(Command::Resume { author: author() });
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    let decided: Vec<(String, bool, Option<AspectValue>, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::RevisionDecided { dimension, accepted, value, author, .. } => {
                Some((dimension.clone(), *accepted, value.clone(), author.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(decided.len(), 2);
    assert_eq!(decided[0], ("relevance".into(), false, Some(AspectValue::Score(5.0)), author()));
    assert_eq!(decided[1].2, Some(AspectValue::Label("formal".into())));
    assert!(
        events.iter().any(|e| matches!(&e.kind, EventKind::CommandRejected { reason, .. } if reason.contains("no revision of \"grammar\""))),
        "a kept value has nothing to decide"
    );
    let view = SessionView::from_events(&events);
    let finals = &view.group("Evaluator").unwrap().finals["Ann"];
    assert_eq!(finals.scores["relevance"], 5.0, "the evaluator's value is back");
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.scores["relevance"], 5.0);
    assert_eq!(agg.original["relevance"], 3.0, "the protocol's own result stays in the record");
    let ann = view.stages.agent("Ann").unwrap();
    assert_eq!(ann.set_by["relevance"], author(), "the value a person set is marked as theirs");
    assert_eq!(ann.final_.as_ref().unwrap().scores["relevance"], 3.0);
    assert_eq!(ann.human_adjusted.as_ref().unwrap().scores["relevance"], 5.0);
    assert_eq!(view.stages.panel.set_by["relevance"], author());
    assert_eq!(ann.final_.as_ref().unwrap().overall, Some(3.5), "the rectified overall, as SAGE left it");
    assert_eq!(ann.human_adjusted.as_ref().unwrap().overall, Some(4.5));
    assert_eq!(ann.set_by["overall"], author(), "the overall moved with the person's decision");
    assert_eq!(view.stages.panel.set_by["overall"], author());
    let r = view.sage.revision("Ann", "relevance").unwrap();
    assert_eq!(r.decision.as_ref().map(|d| (d.accepted, d.author.as_str())), Some((false, "tester")));
    assert_eq!(r.standing(), Some(&AspectValue::Score(5.0)));
}

#[tokio::test]
async fn a_rejected_relabel_puts_the_evaluators_label_back_in_the_result() {
    let mut c = config(sage_panel(), script(EVALUATOR, REVIEW));
    c.linger = true;
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { author } if author == "sage-eval (review)")).await;
    s.send(Command::Decide { dimension: "tone".into(), agent: None, accept: false, author: author() });
    s.send(Command::Resume { author: author() });
    s.wait_for(|e| {
        matches!(&e.kind, EventKind::AggregationCompleted { group: None, labels, .. } if labels.get("tone").map(String::as_str) == Some("friendly"))
    })
    .await;
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    let view = SessionView::from_events(&events);
    assert_eq!(view.stages.panel.labels["tone"], "friendly", "the evaluator's label, restored by a person");
    assert_eq!(view.stages.panel.aggregate_labels["tone"], "formal", "the protocol's own result stays in the record");
}

#[tokio::test]
async fn a_label_outside_the_set_is_a_parse_failure_not_a_value() {
    const BAD: &str = "{\"grammar\": {\"reason\": \"ok\", \"score\": 4}, \"relevance\": {\"reason\": \"ok\", \"score\": 4}, \
                       \"tone\": {\"reason\": \"odd\", \"label\": \"sarcastic\"}}";
    let provider = script(BAD, REVIEW);
    let (events, outcome) = Session::start(config(sage_panel(), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    let errors: Vec<&String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnCompleted { parse_error: Some(p), evaluation, .. } => {
                assert!(evaluation.is_none());
                Some(p)
            }
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 2, "the reply and its repair");
    assert!(errors[0].contains("\"sarcastic\" is not one of the labels formal, friendly, playful"), "{}", errors[0]);
    assert!(!phases(&events).contains(&Phase::Critique), "nothing to review");
    let view = SessionView::from_events(&events);
    assert!(view.aggregate.as_ref().unwrap().no_result.is_some());
    // The grammar of a constrained model allows only the labels.
    let req = provider.requests().into_iter().find(|r| !is_steps(r)).unwrap();
    let schema = req.response_schema.unwrap();
    let schema = schema.as_ref();
    assert_eq!(
        schema["properties"]["tone"]["properties"]["label"]["enum"],
        serde_json::json!(["formal", "friendly", "playful"])
    );
}

#[tokio::test]
async fn an_unreadable_review_leaves_the_evaluators_values() {
    let (events, outcome) =
        Session::start(config(sage_panel(), script(EVALUATOR, "I agree with all of it.")), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    let view = SessionView::from_events(&events);
    assert_eq!(view.aggregate.as_ref().unwrap().scores["relevance"], 5.0);
    assert!(view.aggregate.as_ref().unwrap().feedback.contains("could not be read"));
    assert!(view.sage.is_empty());
}

#[tokio::test]
async fn adopting_proposals_writes_a_new_panel_file_that_loads() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("answers.toml");
    let mut p = sage_panel();
    std::fs::write(&source, moot::panel::adopt::to_toml(&p, "original").unwrap()).unwrap();
    // A file of that name exists already: it is never overwritten.
    std::fs::write(dir.path().join("answers.v2.toml"), "# someone else's\n").unwrap();
    p.source = Some(source.clone());
    let mut c = config(p, script(EVALUATOR, REVIEW));
    c.linger = true;
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { .. })).await;
    s.send(Command::Adopt { key: "brevity".into(), author: author() });
    s.send(Command::Adopt { key: "relevance".into(), author: author() });
    s.send(Command::Adopt { key: "brevity".into(), author: author() });
    s.send(Command::Adopt { key: "nothing".into(), author: author() });
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    let adopted: Vec<(ProposalKind, String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ProposalAdopted { proposal, key, path, .. } => Some((*proposal, key.clone(), path.clone())),
            _ => None,
        })
        .collect();
    let v3 = dir.path().join("answers.v3.toml");
    assert_eq!(adopted.len(), 2);
    assert_eq!((adopted[0].0, adopted[0].1.as_str()), (ProposalKind::Aspect, "brevity"));
    assert_eq!(adopted[1].0, ProposalKind::Definition);
    assert!(adopted.iter().all(|a| a.2 == v3.display().to_string()));
    let rejected = events.iter().filter(|e| matches!(e.kind, EventKind::CommandRejected { .. })).count();
    assert_eq!(rejected, 2, "adopting twice and an unknown key are refused");
    assert_eq!(std::fs::read_to_string(dir.path().join("answers.v2.toml")).unwrap(), "# someone else's\n");
    let written = Panel::load(&v3).unwrap();
    assert_eq!(written.dimensions.len(), 4);
    assert_eq!(written.dimensions[3].key, "brevity");
    assert_eq!(written.dimensions[1].description, "Does it answer the question asked, with its why?");
    assert_eq!(written.dimensions[2].labels.len(), 3);
    assert_eq!(written.protocol.integer("max_new_aspects"), 3);
    let original = Panel::load(&source).unwrap();
    assert_eq!(original.dimensions.len(), 3, "the panel's own file is untouched");
}

#[tokio::test]
async fn other_protocols_refuse_decisions_and_adoptions() {
    let p = panel(Protocol::MajEval, &[("G", &["Ann"])]);
    let provider = scripted(|_, _| ScriptedReply::Text(evaluation(3, 3, 3)));
    let mut c = config(p, provider);
    c.linger = true;
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Decide { dimension: "grammar".into(), agent: None, accept: false, author: author() });
    s.send(Command::Adopt { key: "grammar".into(), author: author() });
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    let reasons: Vec<&String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CommandRejected { reason, .. } => Some(reason),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons[0].contains("maj-eval has no meta-evaluator"));
}

#[test]
fn the_bundled_survey_panel_validates_and_has_items() {
    let p = Panel::bundled("survey-sage").expect("bundled");
    assert_eq!(p.protocol.kind, Protocol::SageEval);
    assert!(p.dimensions.iter().any(|d| d.key == "tone" && !d.labels.is_empty()));
    assert_eq!(moot::item::ItemsFile::bundled("survey-sage").unwrap().items.len(), 10);
}

#[test]
fn the_report_counts_sages_changes_and_names_its_stages() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/sage-eval.jsonl");
    let loaded = moot::report::load_records(&[path], 1);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let opts = moot::report::ReportOptions { bootstrap: 10, ..Default::default() };
    let report = moot::report::build_report(loaded.records, None, &opts);
    let get = |d: &str, m: &str| {
        report.rows.iter().find(|r| r.dimension.as_deref() == Some(d) && r.metric == m).and_then(|r| r.value)
    };
    assert_eq!(get("accuracy", "sage_lowered"), Some(1.0));
    assert_eq!(get("audience_engagement", "sage_raised"), Some(1.0));
    assert_eq!(get("audience_engagement", "sage_rejected"), Some(1.0), "the person's rejection is counted");
    assert_eq!(get("tone", "sage_relabelled"), Some(1.0));
    assert_eq!(get("coherence", "sage_lowered"), Some(0.0));
    assert_eq!(get("completeness", "sage_new_aspect"), Some(1.0));
    let mut table = Vec::new();
    moot::report::format::write_table(&report, &mut table, moot::cli::headless::Paint::for_stream(false)).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(table.contains("SAGE's changes (1 items reviewed)"), "{table}");
    assert!(table.contains("new aspects proposed (items): completeness (1)"), "{table}");
    assert_eq!(moot::report::sage::stage_label("sage-eval", moot::report::Stage::Initial), "evaluator");
    assert_eq!(moot::report::sage::stage_label("sage-eval", moot::report::Stage::Final), "rectified");
}

#[tokio::test]
async fn a_categorical_dimension_takes_no_score_from_a_person() {
    let mut c = config(sage_panel(), script(EVALUATOR, REVIEW));
    c.linger = true;
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { .. })).await;
    let scores = [("tone".to_string(), 3.0)].into_iter().collect();
    s.send(Command::Rate { scores, author: author() });
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    assert!(events.iter().any(
        |e| matches!(&e.kind, EventKind::CommandRejected { reason, .. } if reason.contains("tone is categorical"))
    ));
    assert!(!events.iter().any(|e| matches!(e.kind, EventKind::HumanRating { .. })));
}

#[tokio::test]
async fn the_meta_evaluators_scores_are_weighted_and_the_weighted_stage_keeps_what_it_rectified() {
    use moot::engine::{Binding, Bindings, EngineConfig};
    use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
    use moot::testkit::server::{Reply, TestServer};
    // Item w-N has human relevance N; the evaluator gives relevance 5, the
    // meta-evaluator rectifies it to N with probability 0.75 (N + 1: 0.25).
    let server = TestServer::start().await.expect("bind 127.0.0.1");
    server.set_handler(|r| {
        let body = r.body_text();
        if body.contains("write the evaluation steps") {
            return Reply::openai_stream(&["1. Read."], None);
        }
        assert_eq!(r.body_json().unwrap()["top_logprobs"], 10, "both agents ask for log-probabilities");
        if !body.contains("You are the meta-evaluator") {
            return moot::testkit::server::openai::logprob_reply(&[
                ("{\"grammar\": {\"reason\": \"ok\", \"score\": ", &[]),
                ("4", &[("4", 0.5), ("3", 0.5)]),
                ("}, \"relevance\": {\"reason\": \"ok\", \"score\": ", &[]),
                ("5", &[("5", 0.9), ("4", 0.1)]),
                ("}}", &[]),
            ]);
        }
        let n: u32 = body.split("(sample w-").nth(1).and_then(|s| s.get(..1)).and_then(|d| d.parse().ok()).unwrap_or(3);
        let (n, above) = (n.to_string(), (n + 1).to_string());
        moot::testkit::server::openai::logprob_reply(&[
            ("{\"review\": {\"grammar\": {\"verdict\": \"keep\", \"score\": ", &[]),
            ("4", &[("4", 0.6), ("5", 0.4)]),
            (", \"reason\": \"fine\"}, \"relevance\": {\"verdict\": \"rectify\", \"score\": ", &[]),
            (&n, &[(&n, 0.75), (&above, 0.25)]),
            (
                ", \"reason\": \"too generous\"}}, \"definitions\": [{\"aspect\": \"relevance\", \"definition\": \
              \"Does it say why?\", \"reason\": \"vague\"}], \"new_aspects\": [{\"key\": \"brevity\", \"name\": \
              \"Brevity\", \"definition\": \"Is it short?\", \"score\": ",
                &[],
            ),
            ("1", &[("1", 0.5), ("2", 0.5)]),
            (", \"reason\": \"long\"}]}", &[]),
        ])
    });
    let dir = tempfile::tempdir().unwrap();
    for n in 1..=4u32 {
        let config = OpenAiConfig {
            name: "test".into(),
            base_url: server.base_url(),
            model: "m".into(),
            ..OpenAiConfig::default()
        };
        let provider = Arc::new(OpenAiProvider::new(config).unwrap());
        let mut it = item();
        it.id = format!("w-{n}");
        // The judges never see an id: the content says which sample it is.
        it.content = format!("{}\n(sample w-{n})", it.content);
        it.human = Some([("relevance".to_string(), f64::from(n))].into_iter().collect());
        let p = panel(Protocol::SageEval, &[("Evaluator", &["Ann"])]);
        let mut c = EngineConfig::new(Arc::new(p), it, Bindings::uniform(Binding::new(provider, "m")));
        c.retry.max_attempts = 1;
        let writer = moot::session::SessionWriter::create(dir.path().join(format!("w-{n}.jsonl"))).unwrap();
        let (events, outcome) = Session::start(c, Some(writer)).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
        let view = SessionView::from_events(&events);
        let ann = view.stages.agent("Ann").unwrap();
        let evaluator = ann.initial.as_ref().unwrap().weighted_scores.clone().unwrap();
        assert!((evaluator["relevance"] - 4.9).abs() < 1e-9, "{evaluator:?}");
        let final_ = ann.final_.as_ref().unwrap();
        assert_eq!(final_.scores["relevance"], f64::from(n), "the rectified score stands");
        let w = final_.weighted_scores.as_ref().expect("weighted");
        // The meta-evaluator's own Σ p(s)·s on its rectified score, not the
        // evaluator's, nor the new aspect's score further on in the reply.
        assert!((w["relevance"] - (f64::from(n) + 0.25)).abs() < 1e-9, "{w:?}");
        assert!((w["grammar"] - 3.5).abs() < 1e-9, "a kept score keeps the evaluator's weight: {w:?}");
    }
    let files = moot::report::collect_logs(&[dir.path().to_path_buf()]).unwrap();
    let loaded = moot::report::load_records(&files, 1);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let report = moot::report::build_report(loaded.records, None, &moot::report::ReportOptions::default());
    let weighted = report
        .rows
        .iter()
        .find(|r| {
            r.stage == Some(moot::report::Stage::Weighted)
                && r.metric == "pearson"
                && r.dimension.as_deref() == Some("relevance")
                && r.group.is_none()
                && r.agent.is_none()
        })
        .expect("a weighted row for relevance");
    assert_eq!(weighted.n, Some(4), "every rectified item stays in the weighted stage: {weighted:?}");
    assert!((weighted.value.unwrap() - 1.0).abs() < 1e-9, "{weighted:?}");
}

/// The aspect a per-aspect evaluator request asks about.
fn aspect_of<'p>(req: &ChatRequest, panel: &'p Panel) -> Option<&'p Dimension> {
    let last = &req.messages.last()?.content;
    let asked: Vec<&Dimension> =
        panel.dimensions.iter().filter(|d| last.contains(&format!("\"{}\": {{\"reason\"", d.key))).collect();
    match asked.as_slice() {
        [one] => Some(one),
        _ => None,
    }
}

#[test]
fn the_paper_survey_panel_carries_each_aspects_steps_and_the_respondents_view() {
    let p = Panel::bundled("survey-sage-paper").expect("bundled");
    assert_eq!(p.protocol.kind, Protocol::SageEval);
    assert_eq!(p.protocol.preset, moot::panel::Preset::Paper);
    assert!(p.departures().is_empty(), "{:?}", p.departures());
    assert!(p.protocol.flag("per_aspect"));
    let plain = Panel::bundled("survey-sage").expect("bundled");
    let keys = |p: &Panel| p.dimensions.iter().map(|d| d.key.clone()).collect::<Vec<_>>();
    assert_eq!(keys(&p), keys(&plain), "the aspects of survey-sage");
    for d in &p.dimensions {
        let steps = d.steps.as_deref().unwrap_or_else(|| panic!("{} has no steps", d.key));
        assert!(steps.starts_with("1. ") && steps.contains("\n2. "), "{}: {steps}", d.key);
        let respondent = steps.contains("Take the place of a respondent");
        let audience = matches!(d.key.as_str(), "audience_understandability" | "audience_engagement");
        assert_eq!(respondent, audience, "{}: only the audience's aspects are read as a respondent", d.key);
    }
    assert_eq!(moot::item::ItemsFile::bundled("survey-sage-paper").unwrap().items.len(), 10);
}

#[tokio::test]
async fn under_the_paper_preset_the_evaluator_judges_one_aspect_per_request() {
    let p = Panel::bundled("survey-sage-paper").expect("bundled");
    let script = p.clone();
    let provider = scripted(move |req, _| {
        if is_review(req) {
            return ScriptedReply::Text(
                "{\"review\": {\"audience_engagement\": {\"verdict\": \"rectify\", \"score\": 2, \"reason\": \"dull\"}}, \
                 \"definitions\": [], \"new_aspects\": []}"
                    .into(),
            );
        }
        let d = aspect_of(req, &script).expect("one aspect per evaluator request");
        let value =
            if d.labels.is_empty() { "\"score\": 4".to_string() } else { format!("\"label\": \"{}\"", d.labels[0]) };
        ScriptedReply::Text(format!("Seen.\n{{\"{}\": {{\"reason\": \"Seen as asked.\", {value}}}}}", d.key))
    });
    let mut c = config(p.clone(), provider.clone());
    c.item = moot::item::ItemsFile::bundled("survey-sage-paper").unwrap().items[0].clone();
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // The panel's steps are used as written: no steps turns; eight aspects, one review.
    assert_eq!(provider.calls(), 8 + 1);
    let requests = provider.requests();
    assert!(!requests.iter().any(is_steps));
    let engagement =
        requests.iter().find(|r| aspect_of(r, &p).is_some_and(|d| d.key == "audience_engagement")).unwrap();
    let asked = &engagement.messages.last().unwrap().content;
    assert!(asked.contains("Take the place of a respondent"), "{asked}");
    assert!(!asked.contains("Fairness"), "one aspect per request: {asked}");
    let turns: Vec<(u64, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { turn, phase: Phase::Initial, dimension: Some(d), .. } => Some((*turn, d.clone())),
            _ => None,
        })
        .collect();
    let keys: Vec<&str> = turns.iter().map(|(_, d)| d.as_str()).collect();
    assert_eq!(keys, p.dimensions.iter().map(|d| d.key.as_str()).collect::<Vec<_>>());
    let view = SessionView::from_events(&events);
    let ann = view.stages.agent("Survey reviewer").unwrap();
    let initial = ann.initial.as_ref().unwrap();
    assert_eq!(initial.scores.len(), 7, "the evaluator's stage holds every aspect: {initial:?}");
    assert_eq!(initial.labels["tone"], "formal");
    assert_eq!(initial.overall, Some(4.0));
    assert!(initial.justification.contains("Audience engagement: Seen as asked."));
    let final_ = ann.final_.as_ref().unwrap();
    assert_eq!(final_.scores["audience_engagement"], 2.0);
    // The review saw every aspect's value, and names the turn that gave the one it changed.
    let review = requests.iter().find(|r| is_review(r)).unwrap();
    assert!(review.messages.last().unwrap().content.contains("Survey reviewer's value: formal"));
    let engagement_turn = turns.iter().find(|(_, d)| d == "audience_engagement").map(|(t, _)| *t);
    let revised = events.iter().find_map(|e| match &e.kind {
        EventKind::EvaluationRevised { agent_turn, .. } => Some(*agent_turn),
        _ => None,
    });
    assert_eq!(revised, Some(engagement_turn));
}
