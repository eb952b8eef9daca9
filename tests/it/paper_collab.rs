//! CollabEval under its paper preset: consensus is the same score from
//! every evaluator, checked per criterion; each criterion is discussed to its
//! own consensus, in its own rounds, with its own final judgment; the final
//! judge runs on its own binding (the paper's stronger model).

use crate::support;

use std::collections::BTreeMap;
use std::sync::Arc;

use moot::config::registry::Registry;
use moot::engine::bindings;
use moot::engine::{Bindings, EngineConfig};
use moot::panel::{
    ConsensusRule, ConsensusSettings, Dimension, Panel, Preset, Protocol, ProtocolSection, SettingValue,
};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Phase, Role, TurnKind};
use moot::session::fold::TimelineEntry;
use moot::session::{EventKind, SessionView, parse_log};
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use support::*;

const GROUP: &[(&str, &[&str])] = &[("Evaluators", &["Ann", "Bea", "Cal"])];

/// A reply with scores on every key given (`overall` included when given).
fn reply(scores: &[(&str, u32)]) -> String {
    let fields: Vec<String> = scores.iter().map(|(k, v)| format!("\"{k}\": {v}")).collect();
    format!(
        "My view, briefly.\n```json\n{{{}, \"confidence\": 0.8, \"justification\": \"Scores as given.\"}}\n```",
        fields.join(", ")
    )
}

/// The round of a discussion request (`Discussion round N.`), if it is one.
fn round_of(req: &ChatRequest) -> Option<u32> {
    let last = &req.messages.last()?.content;
    last.split("Discussion round ").nth(1)?.split('.').next()?.parse().ok()
}

/// The test kit's panel with a third dimension, `clarity`.
fn three_criteria(preset: Preset) -> Panel {
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.dimensions.push(Dimension {
        key: "clarity".into(),
        name: "Clarity".into(),
        description: "Is it easy to follow?".into(),
        steps: None,
        labels: Vec::new(),
    });
    p.protocol = ProtocolSection { preset, ..ProtocolSection::new(Protocol::CollabEval) };
    p
}

/// One `criteria_checked`: round, checked, agreed, open, left to the judge.
type Check = (u32, Vec<String>, BTreeMap<String, f64>, Vec<String>, Vec<String>);

fn criteria_checks(events: &[moot::session::Event]) -> Vec<Check> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::CriteriaChecked { round, checked, agreed, open, to_judge, .. } => {
                Some((*round, checked.clone(), agreed.clone(), open.clone(), to_judge.keys().cloned().collect()))
            }
            _ => None,
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Final-judge turns: the criterion each one is about.
fn judged_criteria(events: &[moot::session::Event]) -> Vec<Option<String>> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnStarted { role: Role::FinalJudge, kind: TurnKind::Speak, dimension, .. } => {
                Some(dimension.clone())
            }
            _ => None,
        })
        .collect()
}

fn rounds(events: &[moot::session::Event]) -> usize {
    events.iter().filter(|e| matches!(&e.kind, EventKind::PhaseStarted { phase: Phase::Discussion, .. })).count()
}

#[test]
fn the_paper_preset_sets_same_score_per_criterion_and_moot_lists_them_as_departures() {
    let moot = ProtocolSection::new(Protocol::CollabEval);
    let listed: Vec<String> = moot.departures().iter().map(ToString::to_string).collect();
    assert_eq!(
        listed,
        [
            "consensus = \"panel\" (paper: \"same\")",
            "scope = \"all\" (paper: \"per-criterion\")",
            "history = \"window\" (paper: \"whole\")",
            "repeats = \"redraw\" (paper: \"keep\")",
            "quotes = \"redraw\" (paper: \"keep\")",
        ]
    );
    let paper = ProtocolSection::paper(Protocol::CollabEval);
    assert!(paper.is("consensus", "same") && paper.is("scope", "per-criterion"));
    assert!(paper.departures().is_empty(), "{:?}", paper.departures());
    // The bundled paper panel runs the preset, with the paper's three rounds.
    let bundled = Panel::bundled("summary-collab-paper").expect("bundled paper panel");
    assert_eq!(bundled.protocol.kind, Protocol::CollabEval);
    assert_eq!(bundled.protocol.preset, Preset::Paper);
    assert!(bundled.departures().is_empty(), "{:?}", bundled.departures());
    assert_eq!(bundled.consensus.max_rounds, 3);
    assert!(moot::item::ItemsFile::bundled("summary-collab-paper").is_some(), "the paper panel has its items");
}

#[tokio::test]
async fn scores_one_point_apart_are_no_consensus_under_the_paper_preset() {
    // Within one point on every key: the bundled moot panel's rule (range ≤ 1) agrees at once.
    let stubborn = |req: &ChatRequest, _: usize| -> ScriptedReply {
        match speaker(req).as_str() {
            "final judge" => reply(&[("grammar", 4), ("relevance", 1), ("overall", 4)]).into(),
            "Ann" => reply(&[("grammar", 4), ("relevance", 3), ("overall", 3)]).into(),
            "Bea" => reply(&[("grammar", 5), ("relevance", 3), ("overall", 4)]).into(),
            _ => reply(&[("grammar", 4), ("relevance", 3), ("overall", 4)]).into(),
        }
    };
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.consensus = ConsensusSettings { rule: ConsensusRule::Range, tolerance: 1.0, max_rounds: 3 };

    let (events, _) = Session::start(config(p.clone(), scripted(stubborn)), None).finish().await;
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.method.as_deref(), Some("consensus"), "moot's rule: within one point");
    assert!((agg.scores["grammar"] - 13.0 / 3.0).abs() < 1e-9, "moot's result is the mean: {:?}", agg.scores);

    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    let (events, outcome) = Session::start(config(p, scripted(stubborn)), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let first = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ConsensusChecked { round: Some(0), reached, rule, spread, .. } => {
                Some((*reached, rule.clone(), spread.keys().cloned().collect::<Vec<_>>()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(first, (false, "same score, per criterion".to_string(), s(&["grammar", "relevance"])));
    // Relevance is the same from everyone: agreed, on 3 itself. Grammar is
    // one point apart: discussed; nobody moves, so the final judge decides it.
    assert_eq!(rounds(&events), 1);
    assert_eq!(judged_criteria(&events), [Some("grammar".to_string())]);
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.method.as_deref(), Some("per_criterion"));
    assert_eq!(agg.scores.get("relevance"), Some(&3.0), "the agreed score itself, not the judge's 1");
    assert_eq!(agg.scores.get("grammar"), Some(&4.0), "the judge's score");
    assert_eq!(agg.overall, None, "overall is no criterion: the evaluators' overall scores differ and need not agree");
}

#[tokio::test]
async fn each_criterion_is_discussed_to_its_own_consensus_and_judged_on_its_own() {
    // grammar: the same at once. relevance: apart, agreed in round 1.
    // clarity: apart, and nobody moves in round 1: the final judge decides it.
    let provider = scripted(|req, _| {
        let r = round_of(req);
        match (speaker(req).as_str(), r) {
            ("final judge", _) => reply(&[("clarity", 3), ("overall", 3)]).into(),
            ("Ann", None) => reply(&[("grammar", 4), ("relevance", 3), ("clarity", 2), ("overall", 1)]).into(),
            ("Bea", None) => reply(&[("grammar", 4), ("relevance", 2), ("clarity", 3), ("overall", 3)]).into(),
            ("Cal", None) => reply(&[("grammar", 4), ("relevance", 5), ("clarity", 3), ("overall", 5)]).into(),
            ("Ann", Some(_)) => reply(&[("grammar", 4), ("relevance", 2), ("clarity", 2), ("overall", 2)]).into(),
            ("Bea", Some(_)) => reply(&[("grammar", 4), ("relevance", 2), ("clarity", 3), ("overall", 3)]).into(),
            _ => reply(&[("grammar", 4), ("relevance", 2), ("clarity", 3), ("overall", 4)]).into(),
        }
    });
    let p = three_criteria(Preset::Paper);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);

    // Where the criteria stand after each check, as the log says it.
    let checks = criteria_checks(&events);
    let grammar = BTreeMap::from([("grammar".to_string(), 4.0)]);
    let both = BTreeMap::from([("grammar".to_string(), 4.0), ("relevance".to_string(), 2.0)]);
    assert_eq!(
        checks,
        [
            (0, s(&["grammar", "relevance", "clarity"]), grammar, s(&["relevance", "clarity"]), vec![]),
            (1, s(&["relevance", "clarity"]), both, vec![], s(&["clarity"])),
        ]
    );
    assert_eq!(rounds(&events), 1, "nothing is left open after round 1");
    // Round 1 discusses the open criteria only, and says what is agreed.
    let discussed: Vec<ChatRequest> = provider.requests().into_iter().filter(|r| round_of(r) == Some(1)).collect();
    assert_eq!(discussed.len(), 3);
    for r in &discussed {
        let last = &r.messages.last().unwrap().content;
        assert!(last.contains("This round discusses only relevance, clarity."), "{last}");
        assert!(last.contains("already agree on grammar 4"), "{last}");
    }
    // One final judgment, for clarity alone, shown clarity's rubric only.
    assert_eq!(judged_criteria(&events), [Some("clarity".to_string())]);
    let judge: Vec<ChatRequest> = provider.requests().into_iter().filter(|r| speaker(r) == "final judge").collect();
    assert_eq!(judge.len(), 1);
    let shown: String = judge[0].messages.iter().map(|m| m.content.as_str()).collect();
    assert!(shown.contains("Is it easy to follow?"), "{shown}");
    assert!(!shown.contains("Does it answer?") && !shown.contains("Is it well formed?"), "{shown}");

    let view = SessionView::from_events(&events);
    let agg = view.group("Evaluators").unwrap().aggregate.as_ref().unwrap();
    assert_eq!(
        agg.scores,
        BTreeMap::from([("grammar".into(), 4.0), ("relevance".into(), 2.0), ("clarity".into(), 3.0)])
    );
    assert_eq!(agg.method.as_deref(), Some("per_criterion"));
    assert!(agg.feedback.contains("grammar 4: agreed in the first evaluations"), "{}", agg.feedback);
    assert!(agg.feedback.contains("relevance 2: agreed in round 1"), "{}", agg.feedback);
    assert!(
        agg.feedback.contains("clarity 3: the final judge decided (nobody changed their score in round 1)"),
        "{}",
        agg.feedback
    );
    // The screens' transcript says where the criteria stand.
    let notes: Vec<&str> = view
        .timeline
        .iter()
        .filter_map(|t| match t {
            TimelineEntry::Note { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        notes.contains(&"Evaluators after round 1: agreed grammar 4, relevance 2; to the final judge: clarity (nobody changed their score in round 1)"),
        "{notes:?}"
    );
}

#[tokio::test]
async fn a_criterion_agreed_in_round_two_leaves_round_three_to_the_others() {
    // relevance: Ann changes her mind every round, never agreeing; grammar:
    // Cal moves closer in round 1 and agrees in round 2.
    let provider = scripted(|req, _| {
        let r = round_of(req).unwrap_or(0);
        match speaker(req).as_str() {
            "final judge" => reply(&[("relevance", 3), ("overall", 3)]).into(),
            "Ann" => reply(&[("grammar", 4), ("relevance", 1 + r % 2), ("overall", 3)]).into(),
            "Bea" => reply(&[("grammar", 4), ("relevance", 3), ("overall", 3)]).into(),
            _ => reply(&[("grammar", (2 + r).min(4)), ("relevance", 3), ("overall", 3)]).into(),
        }
    });
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(rounds(&events), 3, "relevance is discussed to the round limit");
    let open: Vec<(u32, Vec<String>)> =
        criteria_checks(&events).into_iter().map(|(r, _, _, open, _)| (r, open)).collect();
    assert_eq!(
        open,
        [(0, s(&["grammar", "relevance"])), (1, s(&["grammar", "relevance"])), (2, s(&["relevance"])), (3, vec![])]
    );
    let third: Vec<ChatRequest> = provider.requests().into_iter().filter(|r| round_of(r) == Some(3)).collect();
    assert!(third.iter().all(|r| r.messages.last().unwrap().content.contains("This round discusses only relevance.")));
    assert_eq!(judged_criteria(&events), [Some("relevance".to_string())]);
    let last = events.iter().rev().find_map(|e| match &e.kind {
        EventKind::CriteriaChecked { to_judge, .. } => Some(to_judge.clone()),
        _ => None,
    });
    assert_eq!(last.unwrap()["relevance"], "no consensus after 3 rounds, the limit");
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!((agg.scores["grammar"], agg.scores["relevance"]), (4.0, 3.0));
}

#[tokio::test]
async fn the_paper_preset_with_every_criterion_agreed_needs_no_discussion() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "Ann" => reply(&[("grammar", 4), ("relevance", 3), ("overall", 2)]).into(),
        _ => reply(&[("grammar", 4), ("relevance", 3), ("overall", 5)]).into(),
    });
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(provider.calls(), 3, "three first evaluations: overall need not agree");
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.method.as_deref(), Some("consensus"));
    assert_eq!(agg.scores, BTreeMap::from([("grammar".into(), 4.0), ("relevance".into(), 3.0)]));
}

#[tokio::test]
async fn the_whole_evaluation_can_still_be_discussed_at_once_under_the_paper_preset() {
    // scope = "all" given in the panel wins over the preset: one consensus over
    // the dimensions (the same score), one final judgment of everything.
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "final judge" => reply(&[("grammar", 3), ("relevance", 2), ("overall", 3)]).into(),
        "Ann" => reply(&[("grammar", 4), ("relevance", 3), ("overall", 2)]).into(),
        _ => reply(&[("grammar", 4), ("relevance", 2), ("overall", 5)]).into(),
    });
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    p.protocol.settings.insert("scope".into(), SettingValue::Text("all".into()));
    let (events, _) = Session::start(config(p, provider), None).finish().await;
    assert!(criteria_checks(&events).is_empty());
    assert_eq!(judged_criteria(&events), [None]);
    let view = SessionView::from_events(&events);
    assert_eq!(view.aggregate.as_ref().unwrap().method.as_deref(), Some("final_judge"));
    assert_eq!(view.aggregate.as_ref().unwrap().scores["relevance"], 2.0);
}

#[tokio::test]
async fn a_paper_run_logs_its_criteria_and_the_log_reads_back() {
    let provider = scripted(|req, _| match speaker(req).as_str() {
        "final judge" => reply(&[("relevance", 2), ("overall", 3)]).into(),
        "Ann" => reply(&[("grammar", 4), ("relevance", 3), ("overall", 3)]).into(),
        _ => reply(&[("grammar", 4), ("relevance", 2), ("overall", 3)]).into(),
    });
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("paper.jsonl");
    let writer = moot::session::SessionWriter::create(&path).unwrap();
    let (events, _) = Session::start(config(p, provider), Some(writer)).finish().await;
    let loaded = parse_log(&std::fs::read(&path).unwrap());
    assert!(loaded.warnings().is_empty(), "{:?}", loaded.warnings());
    assert_eq!(loaded.events, events);
    let line = std::fs::read_to_string(&path).unwrap();
    let checked = line.lines().find(|l| l.contains("\"criteria_checked\"")).expect("criteria_checked is logged");
    assert!(
        checked.contains("\"agreed\":{\"grammar\":4.0}") && checked.contains("\"open\":[\"relevance\"]"),
        "{checked}"
    );
    // The transcript printer says where the criteria stand.
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_moot")).args(["sessions", "show"]).arg(&path).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("≈ Evaluators after the first evaluations: agreed grammar 4; still discussed: relevance"),
        "{text}"
    );
    assert!(text.contains("to the final judge: relevance (nobody changed their score in round 1)"), "{text}");
}

/// The bundled paper panel with its final judge bound to a model of its own,
/// through the panel (`[final_judge]`), against an OpenAI-compatible server.
#[tokio::test]
async fn the_final_judge_runs_on_the_model_the_panel_binds_it_to() {
    fn reply_of(r: &RecordedRequest) -> Reply {
        let body = r.body_json().unwrap_or_default();
        let texts: Vec<String> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["content"].as_str().map(str::to_string))
            .collect();
        let judge = texts.first().is_some_and(|t| t.starts_with("You are the final judge"));
        let name = texts.iter().find_map(|t| moot::engine::prompts::agent_named_in(t).map(str::to_string));
        let coherence = match (judge, name.as_deref()) {
            (true, _) => 3,
            (_, Some("Priya")) => 2,
            (_, Some("Tomasz")) => 4,
            _ => 5,
        };
        let text = format!(
            "Briefly.\n{{\"coherence\": {coherence}, \"consistency\": 4, \"fluency\": 5, \"relevance\": 4, \
             \"overall\": 4, \"confidence\": 0.7, \"justification\": \"As scored.\"}}"
        );
        Reply::sse().event(&openai::content_chunk(&text)).event(&openai::finish_chunk("stop")).event("[DONE]")
    }
    let server = TestServer::with_handler(reply_of).await.unwrap();
    let mut p = Panel::bundled("summary-collab-paper").unwrap();
    p.model.provider = Some("openai".into());
    p.model.model = Some("evaluator-model".into());
    p.final_judge.provider = Some("openai".into());
    p.final_judge.model = Some("strong-judge".into());
    let url = server.base_url();
    let mut registry = Registry::with_env(move |k| (k == "OPENAI_BASE_URL").then(|| url.clone()));
    let b: Bindings = bindings::bind(&mut registry, &p, None, None).unwrap();
    assert_eq!(b.for_role(Role::FinalJudge).model, "strong-judge");
    let mut c = EngineConfig::new(Arc::new(p), item(), b);
    c.retry.max_attempts = 1;
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);

    let EventKind::SessionStarted { roles, .. } = &events[0].kind else { panic!("{:?}", events[0]) };
    assert_eq!(roles["final_judge"].model, "strong-judge");
    // Only coherence stays apart, so one judgment: on the judge's model; every other call on the evaluators'.
    assert_eq!(judged_criteria(&events), [Some("coherence".to_string())]);
    let models: Vec<(bool, String)> = server
        .requests()
        .iter()
        .map(|r| {
            let body = r.body_json().unwrap();
            let system = body["messages"][0]["content"].as_str().unwrap_or_default().to_string();
            (system.starts_with("You are the final judge"), body["model"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    assert_eq!(models.iter().filter(|(judge, _)| *judge).count(), 1);
    for (judge, model) in &models {
        assert_eq!(model, if *judge { "strong-judge" } else { "evaluator-model" });
    }
    let view = SessionView::from_events(&events);
    assert_eq!(view.aggregate.as_ref().unwrap().scores["coherence"], 3.0);
}

#[tokio::test]
async fn a_stop_settles_the_open_criteria_by_the_mean_without_a_final_judgment() {
    // grammar is agreed at once; relevance is apart and its round hangs until a person stops it.
    let provider = scripted(|req, _| {
        if round_of(req).is_some() {
            return ScriptedReply::Slow(reply(&[("grammar", 4), ("relevance", 4)]), std::time::Duration::from_secs(30));
        }
        match speaker(req).as_str() {
            "Ann" => reply(&[("grammar", 4), ("relevance", 2), ("overall", 3)]).into(),
            _ => reply(&[("grammar", 4), ("relevance", 3), ("overall", 3)]).into(),
        }
    });
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    let mut session = Session::start(config(p, provider), None);
    session
        .wait_for(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Discussion, role: Role::Agent, .. }))
        .await;
    session.send(moot::engine::Command::Stop { author: author() });
    let (events, outcome) = session.finish().await;
    assert_eq!(outcome.status, EndStatus::Stopped);
    assert!(judged_criteria(&events).is_empty(), "no final judgment after a stop");
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.as_ref().unwrap();
    assert_eq!(agg.method.as_deref(), Some("per_criterion"));
    assert_eq!(agg.scores["grammar"], 4.0);
    assert!((agg.scores["relevance"] - 8.0 / 3.0).abs() < 1e-9, "{:?}", agg.scores);
    assert!(agg.feedback.contains("mean of the latest scores (the discussion was stopped)"), "{}", agg.feedback);
}

#[tokio::test]
async fn under_the_paper_preset_the_final_judge_reads_the_first_evaluations_of_a_long_discussion() {
    // Four evaluators who never agree: three rounds after the first
    // evaluations are sixteen contributions, more than the 14 moot's
    // default window shows.
    let names: &[&str] = &["Ann", "Bea", "Cal", "Dee"];
    let judge_sees_first = |preset: Preset| async move {
        let mut p = panel(Protocol::CollabEval, &[("Readers", names)]);
        p.protocol = ProtocolSection { preset, ..ProtocolSection::new(Protocol::CollabEval) };
        p.protocol.settings.insert("scope".into(), SettingValue::Text("all".into()));
        let provider = scripted(|req, n| {
            let who = speaker(req);
            match who.as_str() {
                "final judge" => evaluation(3, 3, 3).into(),
                "Ann" if !is_debate(req) => format!("ANN-FIRST-WORDS\n{}", evaluation(1, 1, 1)).into(),
                name => evaluation(1 + (name.len() as u32 + n as u32) % 5, 1 + (n as u32 % 5), 3).into(),
            }
        });
        let (_, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
        let requests = provider.requests();
        let judge = requests.iter().find(|r| speaker(r) == "final judge").expect("a final judgment");
        judge.messages.iter().any(|m| m.content.contains("[Ann, first evaluation]"))
    };
    assert!(judge_sees_first(Preset::Paper).await, "the whole history under the paper preset");
    assert!(!judge_sees_first(Preset::Moot).await, "moot's window hides the first evaluations");
}

/// What the collaborative discussion turn asks, and what the debating one asks.
const COLLABORATE: &str = "say briefly where you agree and where you disagree with the others";
const DEBATE: &str = "defend your own evaluation, and point out where the others' scores and reasons are weak or wrong";

/// CollabEval's paper preset with the debate ablation, scores mode.
fn ablation_scores() -> ProtocolSection {
    let mut ablation = ProtocolSection::paper(Protocol::CollabEval);
    ablation.settings.insert("discussion".into(), SettingValue::Text("debate".into()));
    ablation
}

#[test]
fn the_debate_ablation_is_the_one_departure_and_its_bundled_panel_runs_it() {
    let mut ablation = ProtocolSection::paper(Protocol::CollabEval);
    ablation.settings.insert("discussion".into(), SettingValue::Text("debate".into()));
    let listed: Vec<String> = ablation.departures().iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["discussion = \"debate\" (paper: \"collaborate\")"]);
    // The pairwise mode debates too: the setting is listed there as well.
    ablation.settings.insert("mode".into(), SettingValue::Text("pairwise".into()));
    let listed: Vec<String> = ablation.departures().iter().map(ToString::to_string).collect();
    assert_eq!(listed, ["discussion = \"debate\" (paper: \"collaborate\")"]);

    // The bundled ablation is written as the stages of that preset (tests/it/compositions.rs checks they
    // are the same), so it has no paper of its own to depart from.
    let bundled = Panel::bundled("summary-collab-debate").expect("bundled ablation panel");
    assert_eq!(bundled.protocol.kind, Protocol::Composition);
    assert_eq!(bundled.protocol.composition(), ablation_scores().composition());
    assert!(bundled.departures().is_empty());
    assert_eq!(bundled.consensus.max_rounds, 3);
    let paper = Panel::bundled("summary-collab-paper").unwrap();
    assert_eq!(bundled.dimensions, paper.dimensions, "the paper panel's criteria");
    assert_eq!(bundled.groups, paper.groups, "and its evaluators");
    assert!(moot::item::ItemsFile::bundled("summary-collab-debate").is_some(), "the ablation panel has its items");
}

#[tokio::test]
async fn under_the_debate_ablation_the_evaluators_argue_and_the_final_judge_still_decides() {
    // As in the round-three test: Ann's relevance changes every round and
    // nobody ever agrees on it, so the rounds run to the limit.
    let provider = || {
        scripted(|req, _| {
            let r = round_of(req).unwrap_or(0);
            match speaker(req).as_str() {
                "final judge" => reply(&[("grammar", 3), ("relevance", 3), ("overall", 3)]).into(),
                "Ann" => reply(&[("grammar", 4), ("relevance", 1 + r % 2), ("overall", 3)]).into(),
                "Bea" => reply(&[("grammar", 4), ("relevance", 3), ("overall", 3)]).into(),
                _ => reply(&[("grammar", (2 + r).min(4)), ("relevance", 3), ("overall", 3)]).into(),
            }
        })
    };
    let discussion_turns = |requests: Vec<ChatRequest>| -> Vec<String> {
        requests
            .into_iter()
            .filter(|r| round_of(r).is_some())
            .map(|r| r.messages.last().unwrap().content.clone())
            .collect()
    };
    for scope in ["per-criterion", "all"] {
        let mut p = panel(Protocol::CollabEval, GROUP);
        p.protocol = ProtocolSection::paper(Protocol::CollabEval);
        p.protocol.settings.insert("scope".into(), SettingValue::Text(scope.into()));
        p.protocol.settings.insert("discussion".into(), SettingValue::Text("debate".into()));
        let provider = provider();
        let (events, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{scope}: {:?}", outcome.error);
        assert_eq!(rounds(&events), 3, "{scope}: the same rounds and stop rules");
        let turns = discussion_turns(provider.requests());
        assert_eq!(turns.len(), 9, "{scope}: three evaluators, three rounds");
        for t in &turns {
            assert!(t.contains(DEBATE) && !t.contains(COLLABORATE), "{scope}: {t}");
            assert!(t.contains("Change a score only when an argument against it convinces you."), "{t}");
        }
        if scope == "per-criterion" {
            assert!(turns.iter().any(|t| t.contains("This round discusses only relevance.")), "the criteria focus");
            assert_eq!(judged_criteria(&events), [Some("relevance".to_string())]);
        } else {
            assert_eq!(judged_criteria(&events), [None]);
        }
        let view = SessionView::from_events(&events);
        let agg = view.aggregate.as_ref().unwrap();
        assert_eq!(agg.scores["relevance"], 3.0, "{scope}: the final judge's score");
        let EventKind::SessionStarted { departures, .. } = &events[0].kind else { panic!("{:?}", events[0]) };
        let listed: Vec<String> = departures.iter().map(ToString::to_string).collect();
        let debate = "discussion = \"debate\" (paper: \"collaborate\")".to_string();
        let expected = match scope {
            "all" => vec!["scope = \"all\" (paper: \"per-criterion\")".to_string(), debate],
            _ => vec![debate],
        };
        assert_eq!(listed, expected, "{scope}: the run's header");
    }
    // The paper's own discussion, under the same script, collaborates.
    let mut p = panel(Protocol::CollabEval, GROUP);
    p.protocol = ProtocolSection::paper(Protocol::CollabEval);
    let provider = provider();
    let (_, outcome) = Session::start(config(p, provider.clone()), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let turns = discussion_turns(provider.requests());
    assert!(!turns.is_empty() && turns.iter().all(|t| t.contains(COLLABORATE) && !t.contains(DEBATE)), "{turns:?}");
}

/// The report counts rounds as CollabEval does (the first evaluations are
/// round 1, and a group they settle took one round) beside moot's count
/// (discussion rounds of the groups that had any): one group agrees at once,
/// the other after one round of discussion.
#[tokio::test]
async fn the_report_counts_rounds_with_the_first_evaluations_as_collab_eval_does() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    let p = panel(Protocol::CollabEval, &[("Quick", &["Ann", "Bea"]), ("Slow", &["Cal", "Dee"])]);
    let provider = scripted(|req: &ChatRequest, _| {
        let last = req.messages.last().map(|m| m.content.as_str()).unwrap_or("");
        let who = moot::engine::prompts::agent_named_in(last).unwrap_or_default();
        // Cal differs from Dee in the first evaluations and agrees in round 1.
        let text = if who == "Cal" && round_of(req).is_none() { evaluation(2, 2, 2) } else { evaluation(4, 4, 4) };
        ScriptedReply::Text(text)
    });
    let s = Session::start(config(p, provider), Some(moot::session::SessionWriter::create(&path).unwrap()));
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let discussed: Vec<(String, u32)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase: Phase::Discussion, group: Some(g), round: Some(r) } => {
                Some((g.clone(), *r))
            }
            _ => None,
        })
        .collect();
    assert_eq!(discussed, [("Slow".to_string(), 1)], "only the slow group discussed, one round");
    let report = moot::report::load_records(std::slice::from_ref(&path), 1);
    let effort = &report.records[0].effort;
    assert_eq!(effort.rounds, Some(1.0), "moot's count: the one group with rounds had one");
    assert_eq!(effort.rounds_with_first, Some(1.5), "CollabEval's: (1 + 2) / 2");
}
