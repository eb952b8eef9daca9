//! G-Eval runs: evaluation steps (written, given, cached, edited by a
//! person), per-dimension scoring with draws or probability weights, parse
//! failures, and the session log they leave.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use moot::engine::{Binding, Bindings, Command, EngineConfig};
use moot::panel::{Protocol, SettingValue};
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::session::event::{EndStatus, Phase, StepsSource};
use moot::session::{Event, EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{Reply, TestServer, openai};
use support::*;

fn g_panel(samples: i64) -> moot::panel::Panel {
    let mut p = panel(Protocol::GEval, &[("Judge", &["Ann"])]);
    p.protocol.settings.insert("samples".into(), SettingValue::Integer(samples));
    p
}

fn is_steps(req: &moot::provider::ChatRequest) -> bool {
    req.messages.len() == 2 && req.messages[1].content.contains("evaluation steps")
}

/// The dimension a scoring request asks about.
fn dimension_of(req: &moot::provider::ChatRequest) -> &'static str {
    let last = &req.messages.last().unwrap().content;
    if last.contains("Quality to judge — Grammar") { "grammar" } else { "relevance" }
}

/// Steps per dimension; grammar scores cycle 3, 4, 5 over the draws; relevance is 2.
fn judge(req: &moot::provider::ChatRequest, call: usize) -> ScriptedReply {
    if is_steps(req) {
        return "1. Read the answer.\n2. Check each sentence.\n3. Score.".into();
    }
    match dimension_of(req) {
        "grammar" => format!("The sentences are clear.\n{{\"grammar\": {}}}", 3 + call % 3).into(),
        _ => "It answers the question.\n{\"relevance\": 2}".into(),
    }
}

fn steps_events(events: &[Event]) -> Vec<(String, String, StepsSource, Option<String>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::EvaluationSteps { dimension, steps, source, author, .. } => {
                Some((dimension.clone(), steps.clone(), *source, author.clone()))
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn steps_then_draws_per_dimension_then_means() {
    let provider = scripted(judge);
    let (events, outcome) = Session::start(config(g_panel(3), provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let phases: Vec<Phase> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase, .. } => Some(*phase),
            _ => None,
        })
        .collect();
    assert_eq!(phases, [Phase::Steps, Phase::Scoring, Phase::Aggregation]);
    let steps = steps_events(&events);
    assert_eq!(steps.len(), 2);
    assert!(steps.iter().all(|s| s.2 == StepsSource::Generated && s.1.starts_with("1. Read")));
    // Two steps turns, then three draws for each of two dimensions (no log-probabilities).
    assert_eq!(provider.calls(), 2 + 6);
    let scoring: Vec<u32> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { phase: Phase::Scoring, round, .. } => *round,
            _ => None,
        })
        .collect();
    let mut draws = scoring.clone();
    draws.sort_unstable();
    assert_eq!(draws, [1, 1, 2, 2, 3, 3], "draws are numbered per dimension");
    // Every scoring request carried the steps and asked for log-probabilities.
    for r in provider.requests().iter().filter(|r| !is_steps(r)) {
        assert!(r.messages.last().unwrap().content.contains("2. Check each sentence."));
        assert!(r.top_logprobs.is_some());
    }
    let view = SessionView::from_events(&events);
    let finals = &view.group("Judge").unwrap().finals["Ann"];
    // Grammar's three draws are 3, 4 and 5 in some order: their mean is 4.
    assert_eq!(finals.scores["grammar"], 4.0);
    assert_eq!(finals.scores["relevance"], 2.0);
    assert_eq!(finals.overall, Some(3.0), "overall is the mean of the dimensions");
    assert_eq!(finals.weighted_scores, None, "no log-probabilities, no weighted scores");
    assert!(finals.justification.contains("Grammar: The sentences are clear."));
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.scores["grammar"], 4.0);
    assert!(agg.feedback.contains("mean of 6 sampled replies"), "{}", agg.feedback);
    assert_eq!(view.steps["grammar"].source, StepsSource::Generated);
}

#[tokio::test]
async fn steps_given_in_the_panel_are_used_and_cached_steps_are_not_written_again() {
    let cache = tempfile::tempdir().unwrap();
    let mut p = g_panel(1);
    p.dimensions[0].steps = Some("1. Count the errors.".into());
    let provider = scripted(judge);
    let mut c = config(p.clone(), provider.clone());
    c.steps_cache = Some(cache.path().to_path_buf());
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    let steps = steps_events(&events);
    assert_eq!(steps[0], ("grammar".into(), "1. Count the errors.".into(), StepsSource::Panel, None));
    assert_eq!(steps[1].2, StepsSource::Generated);
    assert_eq!(provider.requests().iter().filter(|r| is_steps(r)).count(), 1);

    // The next run of the same panel reads relevance's steps from the cache.
    let again = scripted(judge);
    let mut c = config(p, again.clone());
    c.steps_cache = Some(cache.path().to_path_buf());
    let (events, _) = Session::start(c, None).finish().await;
    assert_eq!(steps_events(&events)[1].2, StepsSource::Cache);
    assert_eq!(again.requests().iter().filter(|r| is_steps(r)).count(), 0);
}

#[tokio::test]
async fn a_person_edits_steps_during_the_review_pause_and_not_after_scoring_starts() {
    let cache = tempfile::tempdir().unwrap();
    let mut p = g_panel(1);
    p.protocol.settings.insert("review_steps".into(), SettingValue::Bool(true));
    let provider = scripted(judge);
    let mut c = config(p.clone(), provider.clone());
    c.linger = true;
    c.steps_cache = Some(cache.path().to_path_buf());
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::Paused { .. })).await;
    s.send(Command::EditSteps {
        dimension: "grammar".into(),
        steps: "1. Look for spelling mistakes only.".into(),
        author: author(),
    });
    s.send(Command::EditSteps { dimension: "tone".into(), steps: "x".into(), author: author() });
    s.send(Command::Resume { author: author() });
    s.wait_for(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Scoring, .. })).await;
    s.send(Command::EditSteps { dimension: "grammar".into(), steps: "too late".into(), author: author() });
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    let grammar: Vec<_> = steps_events(&events).into_iter().filter(|s| s.0 == "grammar").collect();
    assert_eq!(grammar.last().unwrap().2, StepsSource::Human);
    assert_eq!(grammar.last().unwrap().3.as_deref(), Some("tester"));
    let rejected: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CommandRejected { command, reason, .. } if command == "steps" => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(rejected.len(), 2, "{rejected:?}");
    assert!(rejected[0].contains("unknown dimension \"tone\""));
    assert!(rejected[1].contains("scoring has started"));
    let asked: Vec<_> =
        provider.requests().into_iter().filter(|r| dimension_of(r) == "grammar" && !is_steps(r)).collect();
    assert!(asked[0].messages.last().unwrap().content.contains("Look for spelling mistakes only."));

    // The edited steps are kept for the next run, with their author.
    let again = scripted(judge);
    let mut c = config(p, again.clone());
    c.steps_cache = Some(cache.path().to_path_buf());
    let (events, _) = Session::start(c, None).finish().await;
    let grammar = steps_events(&events).into_iter().find(|s| s.0 == "grammar").unwrap();
    assert_eq!(
        (grammar.1.as_str(), grammar.2, grammar.3.as_deref()),
        ("1. Look for spelling mistakes only.", StepsSource::Cache, Some("tester"))
    );
}

#[tokio::test]
async fn an_unreadable_score_stays_a_parse_failure_and_no_score_at_all_fails_the_session() {
    // Relevance never gets a score: the judge's evaluation has grammar only and no overall.
    let provider = scripted(|req, call| match dimension_of(req) {
        "relevance" if !is_steps(req) => "I would rather not say.".into(),
        _ => judge(req, call),
    });
    let (events, outcome) = Session::start(config(g_panel(1), provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    let failures = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::TurnCompleted { parse_error: Some(_), evaluation: None, .. }))
        .count();
    assert_eq!(failures, 2, "the reply and its repair are both recorded as parse failures");
    let view = SessionView::from_events(&events);
    let ann = &view.group("Judge").unwrap().finals["Ann"];
    assert!(!ann.scores.contains_key("relevance"));
    assert_eq!(ann.overall, None, "no overall from a partial evaluation");

    let provider = scripted(|req, call| if is_steps(req) { judge(req, call) } else { "No idea.".into() });
    let (_, outcome) = Session::start(config(g_panel(1), provider), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert!(outcome.error.unwrap().contains("no agent produced a readable evaluation"));
}

#[tokio::test]
async fn a_speaker_pick_is_refused_because_nobody_debates() {
    let provider =
        Arc::new(moot::testkit::scripted::ScriptedProvider::new(judge).with_delay(Duration::from_millis(30)));
    let mut s = Session::start(config(g_panel(1), provider), None);
    s.wait_for(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Steps, .. })).await;
    s.send(Command::PickSpeaker { agent: "Ann".into(), author: author() });
    let e = s.wait_for(|e| matches!(&e.kind, EventKind::CommandRejected { .. })).await;
    let EventKind::CommandRejected { reason, .. } = e.kind else { unreachable!() };
    assert!(reason.contains("g-eval has no debate"), "{reason}");
    let (_, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
}

/// A streamed reply whose score token carries `top_logprobs`, as an
/// OpenAI-compatible server sends it when asked.
fn weighted_reply(key: &str) -> Reply {
    let head = format!("{{\"{key}\": ");
    openai::logprob_reply(&[
        ("Good enough.\n", &[]),
        (&head, &[]),
        ("4", &[("4", 0.6), ("3", 0.3), ("x", 0.1)]),
        ("}", &[]),
    ])
}

#[tokio::test]
async fn weighted_scores_come_from_a_server_that_returns_top_logprobs() {
    let server = TestServer::start().await.expect("bind 127.0.0.1");
    server.set_handler(|r| {
        let body = r.body_text();
        if body.contains("Write the evaluation steps") || body.contains("write the evaluation steps") {
            return Reply::openai_stream(&["1. Read."], None);
        }
        assert_eq!(r.body_json().unwrap()["top_logprobs"], 10, "scoring asks for log-probabilities");
        weighted_reply(if body.contains("Quality to judge — Grammar") { "grammar" } else { "relevance" })
    });
    let config =
        OpenAiConfig { name: "test".into(), base_url: server.base_url(), model: "m".into(), ..OpenAiConfig::default() };
    let provider = Arc::new(OpenAiProvider::new(config).unwrap());
    let p = g_panel(5);
    let mut c = EngineConfig::new(Arc::new(p), item(), Bindings::uniform(Binding::new(provider, "m")));
    c.retry.max_attempts = 1;
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // With weights, one draw per dimension is enough despite samples = 5.
    assert_eq!(server.request_count(), 2 + 2);
    let view = SessionView::from_events(&events);
    let ann = &view.group("Judge").unwrap().finals["Ann"];
    assert_eq!(ann.scores["grammar"], 4.0, "the sampled score stays");
    // (0.6·4 + 0.3·3) / 0.9: the mass on a token that is no score is left out.
    let w = ann.weighted_scores.as_ref().expect("weighted");
    assert!((w["grammar"] - 3.0 * 0.3 / 0.9 - 4.0 * 0.6 / 0.9).abs() < 1e-9, "{w:?}");
    assert!(w.contains_key("overall"));
    assert!(view.aggregate.as_ref().unwrap().feedback.contains("probability-weighted"));
}

#[tokio::test]
async fn the_report_compares_weighted_scores_with_human_ratings() {
    // Item w-N has human grammar N; the judge samples N with probability 0.9 and N−1 with 0.1.
    let server = TestServer::start().await.expect("bind 127.0.0.1");
    server.set_handler(|r| {
        let body = r.body_text();
        if body.contains("write the evaluation steps") {
            return Reply::openai_stream(&["1. Read."], None);
        }
        let n: u32 = body.split("(sample w-").nth(1).and_then(|s| s.get(..1)).and_then(|d| d.parse().ok()).unwrap_or(3);
        let key = if body.contains("Quality to judge — Grammar") { "grammar" } else { "relevance" };
        let (score, below) = (n.to_string(), (n - 1).to_string());
        let head = format!("Fine.\n{{\"{key}\": ");
        openai::logprob_reply(&[(&head, &[]), (&score, &[(&score, 0.9), (&below, 0.1)]), ("}", &[])])
    });
    let dir = tempfile::tempdir().unwrap();
    for n in 2..=5u32 {
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
        it.human = Some([("grammar".to_string(), f64::from(n))].into_iter().collect());
        let mut c = EngineConfig::new(Arc::new(g_panel(1)), it, Bindings::uniform(Binding::new(provider, "m")));
        c.retry.max_attempts = 1;
        let writer = moot::session::SessionWriter::create(dir.path().join(format!("w-{n}.jsonl"))).unwrap();
        let (_, outcome) = Session::start(c, Some(writer)).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    }
    let files = moot::report::collect_logs(&[dir.path().to_path_buf()]).unwrap();
    let loaded = moot::report::load_records(&files, 1);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
    let report = moot::report::build_report(loaded.records, None, &moot::report::ReportOptions::default());
    let row = |stage| {
        report
            .rows
            .iter()
            .find(|r| {
                r.stage == Some(stage)
                    && r.metric == "pearson"
                    && r.dimension.as_deref() == Some("grammar")
                    && r.group.is_none()
                    && r.agent.is_none()
            })
            .unwrap_or_else(|| panic!("no {stage:?} row"))
    };
    let weighted = row(moot::report::Stage::Weighted);
    assert_eq!(weighted.n, Some(4));
    assert!((weighted.value.unwrap() - 1.0).abs() < 1e-9, "{weighted:?}");
    assert_eq!(row(moot::report::Stage::Final).n, Some(4));
}

/// A panel reply with every score token carrying `top_logprobs`: 4 with
/// probability 0.6, 3 with 0.3 (and 0.1 on a token that is no score).
fn weighted_panel_reply() -> Reply {
    let top: &[(&str, f64)] = &[("4", 0.6), ("3", 0.3), ("x", 0.1)];
    openai::logprob_reply(&[
        ("Ann, the answer keeps to the story.\n{\"grammar\": ", &[]),
        ("4", top),
        (", \"relevance\": ", &[]),
        ("4", top),
        (", \"overall\": ", &[]),
        ("4", top),
        (", \"confidence\": 0.8, \"justification\": \"Fine.\"}", &[]),
    ])
}

/// A debating panel's evaluations ask for log-probabilities too: each is
/// recorded with its weighted scores, for the report's `weighted` stage,
/// while the transcript shows the scores as before, without them (the
/// method is not built on them).
#[tokio::test]
async fn a_debating_panel_records_weighted_scores_without_showing_them() {
    let server = TestServer::start().await.expect("bind 127.0.0.1");
    server.set_handler(|r| {
        let body = r.body_json().unwrap();
        match body.get("top_logprobs") {
            Some(n) if n == 10 => weighted_panel_reply(),
            _ => Reply::openai_stream(&["They agree."], None),
        }
    });
    let config =
        OpenAiConfig { name: "test".into(), base_url: server.base_url(), model: "m".into(), ..OpenAiConfig::default() };
    let provider = Arc::new(OpenAiProvider::new(config).unwrap());
    let p = panel(Protocol::MajEval, &[("Teachers", &["Ann", "Bea"])]);
    let mut c = EngineConfig::new(Arc::new(p), item(), Bindings::uniform(Binding::new(provider, "m")));
    c.retry.max_attempts = 1;
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let view = SessionView::from_events(&events);
    let bea = &view.group("Teachers").unwrap().finals["Bea"];
    assert_eq!(bea.scores["grammar"], 4.0, "the sampled score stays");
    let w = bea.weighted_scores.as_ref().expect("weighted scores recorded");
    let expected = (4.0 * 0.6 + 3.0 * 0.3) / 0.9;
    for key in ["grammar", "relevance", "overall"] {
        assert!((w[key] - expected).abs() < 1e-9, "{key}: {w:?}");
    }
    let mut out = moot::cli::headless::Transcript::new(Vec::new(), moot::cli::headless::Paint::for_stream(false));
    for e in &events {
        out.event(e).unwrap();
    }
    let text = String::from_utf8(out.into_inner()).unwrap();
    assert!(text.contains("grammar 4 · relevance 4"), "{text}");
    assert!(!text.contains("weighted"), "{text}");
}
