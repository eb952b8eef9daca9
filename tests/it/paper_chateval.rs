//! ChatEval and the round-table as papers 000 and 004 ran them: ChatEval
//! without a separate first round, both in a pairwise mode (A, B or tie),
//! and the round-table starting in sequence, keeping one order per item and
//! ending with a majority vote. Each test names the setting it checks and
//! the paper preset that sets it.

use crate::support;

use std::sync::{Arc, Mutex};

use moot::item::{Candidate, Item};
use moot::panel::{Panel, Protocol, ProtocolSection, SettingValue};
use moot::provider::ChatRequest;
use moot::session::event::{EndStatus, Event, Phase};
use moot::session::pairwise::Label;
use moot::session::{EventKind, SessionView};
use moot::testkit::scripted::ScriptedReply;
use support::*;

use super::collab_pairwise::panel_decision;

const THREE: &[(&str, &[&str])] = &[("Readers", &["Ann", "Bea", "Cal"])];

fn text(req: &ChatRequest) -> String {
    req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

/// The speaker's own part of a request (its last message).
fn own_part(req: &ChatRequest) -> String {
    req.messages.last().map(|m| m.content.clone()).unwrap_or_default()
}

fn scores(grammar: u32, confidence: f64) -> String {
    format!(
        "{{\"grammar\": {grammar}, \"relevance\": {grammar}, \"overall\": {grammar}, \"confidence\": {confidence}, \"justification\": \"As scored.\"}}"
    )
}

fn with(mut p: Panel, settings: &[(&str, &str)]) -> Panel {
    for (k, v) in settings {
        p.protocol.settings.insert((*k).into(), SettingValue::Text((*v).into()));
    }
    p
}

fn paper(protocol: Protocol) -> Panel {
    let mut p = panel(protocol, THREE);
    p.protocol = ProtocolSection::paper(protocol);
    p
}

/// Runs `p` with a judge that records every request's text and own part.
async fn run_recorded(
    p: Panel,
    it: Option<Item>,
    reply: impl Fn(&ChatRequest) -> ScriptedReply + Send + Sync + 'static,
) -> (Vec<Event>, moot::engine::RunOutcome, Vec<(String, String, String)>) {
    let seen: Arc<Mutex<Vec<(String, String, String)>>> = Arc::default();
    let log = seen.clone();
    let mut c = config(
        p,
        scripted(move |req, _| {
            log.lock().unwrap().push((speaker(req), text(req), own_part(req)));
            reply(req)
        }),
    );
    if let Some(it) = it {
        c.item = it;
    }
    let (events, outcome) = Session::start(c, None).finish().await;
    let seen = seen.lock().unwrap().clone();
    (events, outcome, seen)
}

fn phases(events: &[Event]) -> Vec<(Phase, Option<u32>)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PhaseStarted { phase, round, .. } => Some((*phase, *round)),
            _ => None,
        })
        .collect()
}

fn result_method(events: &[Event]) -> String {
    let view = SessionView::from_events(events);
    view.aggregate.and_then(|a| a.method).unwrap_or_default()
}

// ---------------------------------------------------------------------------
// ChatEval: no separate first round (point 13)
// ---------------------------------------------------------------------------

#[tokio::test]
async fn chat_eval_under_the_paper_preset_has_no_round_before_the_debate() {
    let p = paper(Protocol::ChatEval);
    assert_eq!(p.protocol.choice("first_round"), "debate");
    let (events, outcome, seen) =
        run_recorded(p, None, |_| ScriptedReply::Text(format!("Fine. {}", scores(4, 0.7)))).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(!phases(&events).iter().any(|(p, _)| *p == Phase::Initial), "{:?}", phases(&events));
    assert!(turn_agents(&events, Phase::Initial).is_empty());
    // Two rounds, one-by-one in the panel's order: each agent speaks twice, and nobody else.
    assert_eq!(turn_agents(&events, Phase::Discussion), ["Ann", "Bea", "Cal", "Ann", "Bea", "Cal"]);
    // Ann opens with nothing said; Bea answers Ann's first words, which are no "first evaluation".
    assert!(seen[0].2.contains("you speak first"), "{}", seen[0].2);
    assert!(seen[0].1.contains("(nothing yet)"), "{}", seen[0].1);
    assert!(!seen[1].2.contains("you speak first") && seen[1].1.contains("[Ann, round 1]"), "{}", seen[1].1);
    assert!(seen.iter().all(|(_, t, _)| !t.contains("first evaluation")));
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.unwrap();
    assert_eq!((agg.scores["grammar"], agg.method.as_deref()), (4.0, Some("mean")));
}

#[tokio::test]
async fn chat_eval_keeps_its_independent_round_under_moot_and_says_it_departs() {
    let p = panel(Protocol::ChatEval, THREE);
    let departures: Vec<String> = p.protocol.departures().iter().map(|d| d.to_string()).collect();
    assert!(departures.contains(&"first_round = \"independent\" (paper: \"debate\")".to_string()), "{departures:?}");
    let (events, outcome, _) =
        run_recorded(p, None, |_| ScriptedReply::Text(format!("Fine. {}", scores(4, 0.7)))).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(turn_agents(&events, Phase::Initial).len(), 3);
}

#[tokio::test]
async fn a_simultaneous_first_round_opens_for_everyone_and_the_summarizer_reads_no_first_evaluations() {
    let p = with(paper(Protocol::ChatEval), &[("strategy", "simultaneous-summarizer")]);
    let (events, outcome, seen) = run_recorded(p, None, |req| {
        if req.messages[0].content.starts_with("You keep the minutes") {
            ScriptedReply::Text("All three find the answer clear.".into())
        } else {
            ScriptedReply::Text(format!("Clear. {}", scores(4, 0.7)))
        }
    })
    .await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(turn_agents(&events, Phase::Initial).is_empty());
    let agents: Vec<_> = seen.iter().filter(|(s, _, _)| ["Ann", "Bea", "Cal"].contains(&s.as_str())).collect();
    assert_eq!(agents.len(), 6);
    assert!(agents[..3].iter().all(|(_, _, own)| own.contains("you speak first")), "round 1 opens for all");
    assert!(
        agents[3..].iter().all(|(_, t, _)| t.contains("All three find the answer clear.")),
        "round 2 sees the summary"
    );
    let minutes: Vec<_> = seen.iter().filter(|(_, t, _)| t.contains("You keep the minutes")).collect();
    assert_eq!(minutes.len(), 2);
    assert!(!minutes[0].1.contains("first evaluations"), "{}", minutes[0].1);
}

// ---------------------------------------------------------------------------
// Pairwise modes (point 14)
// ---------------------------------------------------------------------------

const GOOD: &str = "The council voted 7-2 to close the Elm Street branch in March after a 12% budget cut.";
const POOR: &str = "A library is closing.";

fn pair_item() -> Item {
    let mut it = item();
    it.id = "pair-c".into();
    it.content = String::new();
    it.context = Some("The town council voted 7 to 2 on Tuesday to close the Elm Street branch.".into());
    it.candidates = Some(vec![
        Candidate { id: "sys-lead".into(), text: GOOD.into() },
        Candidate { id: "sys-short".into(), text: POOR.into() },
    ]);
    it
}

fn verdict(label: &str, confidence: &str) -> ScriptedReply {
    ScriptedReply::Text(format!(
        "Summary A keeps the vote. {{\"verdict\": \"{label}\", \"confidence\": \"{confidence}\", \"reasoning\": \"The facts.\"}}"
    ))
}

#[tokio::test]
async fn chat_eval_compares_two_candidates_and_takes_the_majority_of_the_last_verdicts() {
    let p = with(paper(Protocol::ChatEval), &[("mode", "pairwise")]);
    assert!(p.protocol.compares_pairs());
    // Cal holds out for B; Ann and Bea say A throughout.
    let (events, outcome, seen) = run_recorded(p, Some(pair_item()), |req| {
        if speaker(req) == "Cal" { verdict("B", "low") } else { verdict("A", "high") }
    })
    .await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(turn_agents(&events, Phase::Initial).is_empty(), "no separate first round");
    assert_eq!(turn_agents(&events, Phase::Discussion).len(), 6, "all the rounds, agreement or not");
    assert_eq!(panel_decision(&events), (Some(Label::A), Some("sys-lead".into())));
    assert_eq!(result_method(&events), "majority");
    for (_, t, _) in &seen {
        assert!(!t.contains("sys-lead") && !t.contains("sys-short"), "a candidate id reached an agent:\n{t}");
        assert!(t.contains("--- SUMMARY A ---\n") && t.contains("\"verdict\""), "{t}");
    }
    assert!(seen[0].2.contains("you speak first: nobody has given a verdict yet"), "{}", seen[0].2);
    // Every agent's last label is recorded as its decision.
    let members = events.iter().filter(|e| matches!(&e.kind, EventKind::PairDecided { judge: Some(_), .. })).count();
    assert_eq!(members, 3);
}

#[tokio::test]
async fn chat_eval_pairwise_without_more_than_half_is_a_tie() {
    let two: &[(&str, &[&str])] = &[("Readers", &["Ann", "Bea"])];
    let mut p = with(panel(Protocol::ChatEval, two), &[("mode", "pairwise"), ("strategy", "simultaneous")]);
    p.protocol.settings.insert("turns".into(), SettingValue::Integer(1));
    let mut c =
        config(p, scripted(|req, _| if speaker(req) == "Bea" { verdict("B", "high") } else { verdict("A", "high") }));
    c.item = pair_item();
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(turn_agents(&events, Phase::Initial).len(), 2, "moot's preset keeps the first round");
    assert_eq!(panel_decision(&events), (Some(Label::Tie), None));
}

#[tokio::test]
async fn the_round_table_compares_two_candidates_in_sequence_and_stops_once_all_agree() {
    let p = with(paper(Protocol::RoundTable), &[("mode", "pairwise")]);
    assert!(p.protocol.compares_pairs());
    // Whoever reviews a verdict takes it over: everyone agrees after round 1.
    let (events, outcome, seen) = run_recorded(p, Some(pair_item()), |req| {
        if own_part(req).contains("you speak first") { verdict("B", "medium") } else { verdict("B", "high") }
    })
    .await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(turn_agents(&events, Phase::Initial).is_empty());
    let order = turn_agents(&events, Phase::Discussion);
    assert_eq!(order.len(), 3, "one round: {order:?}");
    assert!(seen[0].2.contains("you speak first"), "{}", seen[0].2);
    for (i, (_, _, own)) in seen.iter().enumerate().skip(1) {
        assert!(own.contains(&format!("{} gave the verdict just before yours", order[i - 1])), "{own}");
    }
    let checks: Vec<(Option<u32>, bool)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ConsensusChecked { round, reached, .. } => Some((*round, *reached)),
            _ => None,
        })
        .collect();
    assert_eq!(checks, [(Some(1), true)], "no check before the first round: there is none");
    assert_eq!(panel_decision(&events), (Some(Label::B), Some("sys-short".into())));
    assert_eq!(result_method(&events), "majority");
}

#[tokio::test]
async fn the_round_table_pairwise_vote_is_a_majority_under_the_paper_and_by_confidence_under_moot() {
    // Ann says A with high confidence, Bea and Cal B with low, round after round.
    let judge = |req: &ChatRequest| if speaker(req) == "Ann" { verdict("A", "high") } else { verdict("B", "low") };
    let mut p = with(paper(Protocol::RoundTable), &[("mode", "pairwise")]);
    p.protocol.settings.insert("max_rounds".into(), SettingValue::Integer(1));
    let (events, outcome, _) = run_recorded(p, Some(pair_item()), judge).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(panel_decision(&events).0, Some(Label::B), "two of three");

    let mut p = with(panel(Protocol::RoundTable, THREE), &[("mode", "pairwise")]);
    p.protocol.settings.insert("max_rounds".into(), SettingValue::Integer(1));
    let (events, outcome, _) = run_recorded(p, Some(pair_item()), judge).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // high 1 against low 1/3 + 1/3.
    assert_eq!(panel_decision(&events).0, Some(Label::A));
    assert_eq!(result_method(&events), "confidence_weighted");
}

// ---------------------------------------------------------------------------
// The round-table: in sequence, one order, a majority vote (point 15)
// ---------------------------------------------------------------------------

/// A round-table scoring the item (the paper ran it on pairs: `mode` is set).
fn table(p: Panel, max_rounds: i64) -> Panel {
    let mut p = with(p, &[("mode", "scores")]);
    p.protocol.settings.insert("max_rounds".into(), SettingValue::Integer(max_rounds));
    p.consensus.tolerance = 0.0;
    p
}

#[tokio::test]
async fn the_round_table_starts_in_sequence_each_reviewing_the_one_before() {
    let p = table(paper(Protocol::RoundTable), 3);
    assert_eq!(p.protocol.choice("start"), "sequential");
    // Everyone takes over the scores of the one before: agreement after round 1.
    let (events, outcome, seen) =
        run_recorded(p, None, |_| ScriptedReply::Text(format!("Agreed. {}", scores(3, 0.6)))).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert!(!phases(&events).iter().any(|(p, _)| *p == Phase::Initial));
    let order = turn_agents(&events, Phase::Discussion);
    assert_eq!(order.len(), 3, "{order:?}");
    assert!(seen[0].2.contains("you speak first: nobody has given an evaluation yet"), "{}", seen[0].2);
    assert!(seen[1].2.contains(&format!("{} gave the evaluation just before yours", order[0])), "{}", seen[1].2);
    assert!(seen[2].2.contains(&format!("{} gave the evaluation just before yours", order[1])), "{}", seen[2].2);
    assert!(seen[2].1.contains(&format!("[{}, round 1]", order[0])), "the third sees both before it");
    let checks: Vec<Option<u32>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ConsensusChecked { round, .. } => Some(*round),
            _ => None,
        })
        .collect();
    assert_eq!(checks, [Some(1)]);
}

#[tokio::test]
async fn the_round_table_keeps_one_shuffled_order_per_item_under_the_paper() {
    // Nobody ever agrees: three full rounds.
    let reply = |req: &ChatRequest| {
        let g = match speaker(req).as_str() {
            "Ann" => 5,
            "Bea" => 1,
            _ => 3,
        };
        ScriptedReply::Text(format!("Mine. {}", scores(g, 0.5)))
    };
    let (events, outcome, _) = run_recorded(table(paper(Protocol::RoundTable), 3), None, reply).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let order = turn_agents(&events, Phase::Discussion);
    assert_eq!(order.len(), 9);
    assert_eq!(order[0..3], order[3..6]);
    assert_eq!(order[0..3], order[6..9]);
    // moot's default draws a new order each round: over several seeds, some round differs.
    let mut differs = false;
    for seed in 1..6 {
        let mut c = config(table(panel(Protocol::RoundTable, THREE), 3), scripted(move |req, _| reply(req)));
        c.seed = seed;
        let (events, _) = Session::start(c, None).finish().await;
        let order = turn_agents(&events, Phase::Discussion);
        differs |= order[0..3] != order[3..6] || order[3..6] != order[6..9];
    }
    assert!(differs, "each-round shuffles every round");
}

#[tokio::test]
async fn the_round_table_ends_with_a_majority_vote_under_the_paper() {
    // Ann 5 (confidence 0.9), Bea and Cal 2 (0.3), never moving.
    let reply = |req: &ChatRequest| {
        let (g, c) = if speaker(req) == "Ann" { (5, 0.9) } else { (2, 0.3) };
        ScriptedReply::Text(format!("Mine. {}", scores(g, c)))
    };
    let (events, outcome, _) = run_recorded(table(paper(Protocol::RoundTable), 1), None, reply).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let view = SessionView::from_events(&events);
    let agg = view.aggregate.unwrap();
    assert_eq!((agg.scores["grammar"], agg.method.as_deref()), (2.0, Some("majority")));
    assert!(agg.feedback.contains("no agreement within the rounds; majority"), "{}", agg.feedback);
    // moot's default: (5·0.9 + 2·0.3 + 2·0.3) / 1.5 = 3.8.
    let (events, _, _) = run_recorded(table(panel(Protocol::RoundTable, THREE), 1), None, reply).await;
    let agg = SessionView::from_events(&events).aggregate.unwrap();
    assert!((agg.scores["grammar"] - 5.7 / 1.5).abs() < 1e-9, "{:?}", agg.scores);
    assert_eq!(agg.method.as_deref(), Some("confidence_weighted"));
}

#[tokio::test]
async fn a_majority_without_a_most_given_score_takes_the_median() {
    let four: &[(&str, &[&str])] = &[("Readers", &["Ann", "Bea", "Cal", "Dee"])];
    let mut p = table(panel(Protocol::RoundTable, four), 1);
    p.protocol.settings.insert("result".into(), SettingValue::Text("majority".into()));
    let reply = |req: &ChatRequest| {
        let g = if ["Ann", "Bea"].contains(&speaker(req).as_str()) { 2 } else { 5 };
        ScriptedReply::Text(format!("Mine. {}", scores(g, 0.5)))
    };
    let (events, outcome, _) = run_recorded(p, None, reply).await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let agg = SessionView::from_events(&events).aggregate.unwrap();
    assert_eq!(agg.scores["grammar"], 3.5, "2, 2, 5, 5: a shared most, the median");
}

// ---------------------------------------------------------------------------
// The bundled paper panels
// ---------------------------------------------------------------------------

#[tokio::test]
async fn the_bundled_paper_panels_run_the_paper_preset() {
    for name in ["summary-chateval-paper", "summary-roundtable-paper", "pairwise-chateval", "pairwise-roundtable"] {
        let p = Panel::bundled(name).unwrap_or_else(|| panic!("{name} loads"));
        let departures: Vec<String> = p.protocol.departures().iter().map(|d| d.to_string()).collect();
        // The papers ran both on scores (000) and on pairs (004): either mode is the paper's.
        assert!(departures.is_empty(), "{name}: {departures:?}");
        let items = moot::item::ItemsFile::bundled(name).unwrap_or_else(|| panic!("{name} has items"));
        let pairwise = p.protocol.compares_pairs();
        let it =
            items.items.iter().find(|i| i.candidates.as_ref().map_or(!pairwise, |c| c.len() == 2)).unwrap().clone();
        let mut c = config(
            p,
            scripted(move |req, _| {
                if req.messages[0].content.starts_with("You keep the minutes") {
                    ScriptedReply::Text("They agree.".into())
                } else if pairwise {
                    verdict("A", "high")
                } else {
                    ScriptedReply::Text(
                        "Fine. {\"coherence\": 4, \"consistency\": 4, \"fluency\": 4, \"relevance\": 4, \"overall\": 4, \"confidence\": 0.7, \"justification\": \"Clear.\"}".into(),
                    )
                }
            }),
        );
        c.item = it;
        let (events, outcome) = Session::start(c, None).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{name}: {:?}", outcome.error);
        assert!(turn_agents(&events, Phase::Initial).is_empty(), "{name}: no separate first round");
    }
}
