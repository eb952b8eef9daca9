//! CollabEval's pairwise mode: evaluators give label verdicts on two
//! candidates, discuss them in rounds and agree on a label; a final judge
//! decides when they do not; the result is recorded as pairwise decisions.

use crate::support;

use std::sync::{Arc, Mutex};

use moot::engine::Command;
use moot::item::{Candidate, Item};
use moot::panel::{Panel, Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Event, Phase};
use moot::session::pairwise::Label;
use moot::session::{EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use support::*;

const GOOD: &str = "The council voted 7-2 to close the Elm Street branch in March after a 12% budget cut.";
const POOR: &str = "A library is closing.";

fn pair_item(cands: &[(&str, &str)]) -> Item {
    let mut it = item();
    it.id = "pair-c".into();
    it.content = String::new();
    it.context = Some("The town council voted 7 to 2 on Tuesday to close the Elm Street branch.".into());
    it.candidates = Some(cands.iter().map(|(id, text)| Candidate { id: (*id).into(), text: (*text).into() }).collect());
    it
}

fn collab_panel(agents: &[&str], rounds: u32) -> Panel {
    let mut p = panel(Protocol::CollabEval, &[("Readers", agents)]);
    p.protocol.settings.insert("mode".into(), SettingValue::Text("pairwise".into()));
    p.consensus.max_rounds = rounds;
    p
}

fn verdict(label: &str) -> ScriptedReply {
    ScriptedReply::Text(format!(
        "Summary A keeps the vote; B does not. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"The facts.\"}}"
    ))
}

fn text(req: &ChatRequest) -> String {
    req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

fn run_with(p: Panel, it: Item, f: impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static) -> Session {
    let mut c = config(p, scripted(f));
    c.item = it;
    Session::start(c, None)
}

/// The panel's pairwise decision: the label in the first order, and the winner.
pub(crate) fn panel_decision(events: &[Event]) -> (Option<Label>, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PairDecided { judge: None, first_order, winner, .. } => Some((*first_order, winner.clone())),
            _ => None,
        })
        .expect("the panel's decision")
}

fn method(events: &[Event]) -> String {
    events
        .iter()
        .rev()
        .find_map(|e| match &e.kind {
            EventKind::AggregationCompleted { group: None, method, .. } => method.clone(),
            _ => None,
        })
        .expect("the result")
}

#[tokio::test]
async fn evaluators_who_agree_at_once_need_no_discussion() {
    let s =
        run_with(collab_panel(&["Ann", "Bea"], 2), pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]), |_, _| {
            verdict("A")
        });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(turn_agents(&events, Phase::Discussion).is_empty(), "agreement before any round");
    assert_eq!(panel_decision(&events), (Some(Label::A), Some("sys-lead".into())));
    assert_eq!(method(&events), "consensus");
    let view = SessionView::from_events(&events);
    let ranking = &view.aggregate.as_ref().unwrap().ranking;
    assert_eq!((ranking[0].candidate.as_str(), ranking[0].wins), ("sys-lead", 1));
    // Each evaluator's latest label is their decision, recorded apart.
    let members = events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::PairDecided { judge: Some(_), first_order: Some(Label::A), .. }))
        .count();
    assert_eq!(members, 2);
}

#[tokio::test]
async fn a_discussion_brings_the_labels_together_and_the_ids_never_reach_an_evaluator() {
    // Bea says B at first and comes round to A once she has heard Ann.
    let requests: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = requests.clone();
    let judge = move |req: &ChatRequest, _: usize| {
        let t = text(req);
        seen.lock().unwrap().push(t.clone());
        if t.contains("You are Bea") && !t.contains("Discussion round") { verdict("B") } else { verdict("A") }
    };
    let s = run_with(collab_panel(&["Ann", "Bea"], 3), pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]), judge);
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let checks: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ConsensusChecked { round, reached, labels, .. } => Some((*round, *reached, labels.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(checks.len(), 2, "{checks:?}");
    assert_eq!(checks[0].0, Some(0));
    assert!(!checks[0].1);
    assert_eq!(checks[0].2.get("Bea").map(String::as_str), Some("B"));
    assert_eq!((checks[1].0, checks[1].1), (Some(1), true));
    assert_eq!(method(&events), "consensus");
    assert_eq!(panel_decision(&events).1.as_deref(), Some("sys-lead"));

    let requests = requests.lock().unwrap();
    let discussion: Vec<_> = requests.iter().filter(|t| t.contains("Discussion round 1")).collect();
    assert!(!discussion.is_empty());
    // The discussion shows each first verdict, never a system's name.
    assert!(discussion.iter().all(|t| t.contains("[Bea, first evaluation] verdict B")), "{}", discussion[0]);
    for t in requests.iter() {
        assert!(!t.contains("sys-lead") && !t.contains("sys-short"), "a candidate id reached an evaluator:\n{t}");
        assert!(t.contains("--- SUMMARY A ---\n") && t.contains("\"verdict\""), "{t}");
    }
}

#[tokio::test]
async fn without_agreement_the_final_judge_decides_and_its_tie_is_a_result() {
    let judge = |req: &ChatRequest, _: usize| {
        let t = text(req);
        if t.contains("You are the final judge") {
            verdict("tie")
        } else if t.contains("You are Bea") {
            verdict("B")
        } else {
            verdict("A")
        }
    };
    let s = run_with(collab_panel(&["Ann", "Bea"], 2), pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]), judge);
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // Nobody moved in round 1, so the discussion ended before round 2.
    assert_eq!(turn_agents(&events, Phase::Discussion).len(), 2);
    assert_eq!(method(&events), "final_judge");
    assert_eq!(panel_decision(&events), (Some(Label::Tie), None));
    let view = SessionView::from_events(&events);
    assert!(view.aggregate.unwrap().ranking.iter().all(|r| r.ties == 1 && r.wins == 0));
}

#[tokio::test]
async fn under_the_debate_ablation_the_evaluators_defend_their_verdicts_and_the_final_judge_decides() {
    let requests: Arc<Mutex<Vec<String>>> = Arc::default();
    let seen = requests.clone();
    let judge = move |req: &ChatRequest, _: usize| {
        let last = req.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let t = text(req);
        if t.contains("You are the final judge") {
            verdict("A")
        } else {
            if last.contains("Discussion round") {
                seen.lock().unwrap().push(last);
            }
            if t.contains("You are Bea") { verdict("B") } else { verdict("A") }
        }
    };
    let mut p = collab_panel(&["Ann", "Bea"], 3);
    p.protocol.settings.insert("discussion".into(), SettingValue::Text("debate".into()));
    let s = run_with(p, pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]), judge);
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // The same stop rule: nobody moved in round 1.
    assert_eq!(turn_agents(&events, Phase::Discussion).len(), 2);
    assert_eq!(method(&events), "final_judge");
    assert_eq!(panel_decision(&events), (Some(Label::A), Some("sys-lead".into())));
    let turns = requests.lock().unwrap().clone();
    assert_eq!(turns.len(), 2);
    for t in &turns {
        assert!(t.contains("defend your own verdict") && t.contains("Change your verdict only when"), "{t}");
        assert!(!t.contains("say briefly where you agree and where you disagree"), "{t}");
    }
}

#[tokio::test]
async fn unreadable_verdicts_are_failures_not_labels() {
    let s =
        run_with(collab_panel(&["Ann", "Bea"], 1), pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]), |_, _| {
            ScriptedReply::Text("Both read well to me.".into())
        });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert!(outcome.error.as_deref().unwrap().contains("could be decided"), "{:?}", outcome.error);
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::TurnCompleted { parse_error: Some(_), .. })));
    assert!(!events.iter().any(|e| matches!(&e.kind, EventKind::PairDecided { first_order: Some(_), .. })));
}

#[tokio::test]
async fn a_score_override_is_refused_with_its_reason() {
    let mut c = config(collab_panel(&["Ann", "Bea"], 1), scripted(|_, _| verdict("B")));
    c.item = pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]);
    c.linger = true;
    let mut s = Session::start(c, None);
    s.wait_for(|e| matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })).await;
    s.send(Command::Override {
        target: moot::session::event::OverrideTarget::Final { group: None },
        dimension: "overall".into(),
        value: 4.0,
        reason: None,
        author: author(),
    });
    let rejected = s.wait_for(|e| matches!(&e.kind, EventKind::CommandRejected { .. })).await;
    let EventKind::CommandRejected { command, reason, .. } = rejected.kind else { unreachable!() };
    assert_eq!(command, "override");
    assert!(reason.contains("labels"), "{reason}");
    s.send(Command::Quit { author: author() });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed);
    assert!(!events.iter().any(|e| matches!(&e.kind, EventKind::ScoreOverridden { .. })));
}

#[tokio::test]
async fn an_item_without_exactly_two_candidates_fails_with_its_reason() {
    let three = pair_item(&[("x", GOOD), ("y", POOR), ("z", POOR)]);
    let (_, outcome) = run_with(collab_panel(&["Ann"], 1), three, |_, _| verdict("A")).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    let error = outcome.error.unwrap();
    assert!(error.contains("3 candidate(s)") && error.contains("exactly two"), "{error}");
}

#[tokio::test]
async fn the_screen_shows_each_verdict_its_change_and_the_pairwise_result() {
    let judge = |req: &ChatRequest, _: usize| {
        let t = text(req);
        if t.contains("You are Bea") && !t.contains("Discussion round") { verdict("B") } else { verdict("A") }
    };
    let s = run_with(collab_panel(&["Ann", "Bea"], 3), pair_item(&[("sys-lead", GOOD), ("sys-short", POOR)]), judge);
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let mut app = moot::tui::app::App::loaded(moot::tui::app::Env::test(), &events);
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 48)).unwrap();
    t.draw(|f| moot::tui::screens::live::draw(f, &mut app)).unwrap();
    let screen = t.backend().to_string();
    // Bea's turn line shows her change of verdict; the consensus pane the labels; the result the winner.
    assert!(screen.contains("verdict B→A"), "{screen}");
    assert!(screen.contains("same verdict") && screen.contains("same"), "{screen}");
    assert!(screen.contains("sys-lead"), "{screen}");
    assert!(!screen.contains("no scores yet"), "{screen}");
    assert!(screen.contains("one order only") && !screen.contains("flips:"), "{screen}");
}
