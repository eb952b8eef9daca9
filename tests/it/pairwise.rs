//! Pairwise judging end to end: the swap rule and votes as the engine
//! applies them, several judges, reference and all-pairs planning, a judge
//! with a position bias, blind prompts (checked on the requests a local HTTP
//! server receives), and items or panels that cannot be judged.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use moot::engine::{Binding, Bindings, Command, EngineConfig};
use moot::item::{Candidate, Item};
use moot::panel::{Panel, Protocol, SettingValue};
use moot::provider::ChatRequest;
use moot::provider::openai::{OpenAiConfig, OpenAiProvider};
use moot::session::event::{EndStatus, Event, Phase};
use moot::session::pairwise::{Flip, Label};
use moot::session::{EventKind, SessionView};
use moot::stats::pairwise::Preference as Pos;
use moot::stats::position::position_bias;
use moot::testkit::scripted::ScriptedReply;
use moot::testkit::server::{RecordedRequest, Reply, TestServer, openai};
use support::*;

const GOOD: &str = "The council voted 7-2 to close the Elm Street branch in March after a 12% budget cut.";
const POOR: &str = "A library is closing.";
const MID: &str = "The council will close a library branch because of budget cuts.";

fn pair_item(cands: &[(&str, &str)]) -> Item {
    let mut it = item();
    it.id = "pair-x".into();
    it.content = String::new();
    it.context = Some("The town council voted 7 to 2 on Tuesday to close the Elm Street branch.".into());
    it.candidates = Some(cands.iter().map(|(id, text)| Candidate { id: (*id).into(), text: (*text).into() }).collect());
    it
}

fn pair_panel(judges: &[&str], settings: &[(&str, SettingValue)]) -> Panel {
    let mut p = panel(Protocol::Pairwise, &[("Judges", judges)]);
    for (k, v) in settings {
        p.protocol.settings.insert((*k).into(), v.clone());
    }
    p
}

fn scripted_config(
    p: Panel,
    it: Item,
    f: impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static,
) -> EngineConfig {
    let mut c = config(p, scripted(f));
    c.item = it;
    c
}

fn verdict(label: &str) -> String {
    format!(
        "The two differ on the facts. {{\"verdict\": \"{label}\", \"confidence\": \"high\", \"reasoning\": \"As said.\"}}"
    )
}

/// The text shown as A in a comparison request.
fn shown_a(text: &str) -> &str {
    text.split("--- SUMMARY A ---\n").nth(1).and_then(|s| s.split('\n').next()).unwrap_or("")
}

fn request_text(req: &ChatRequest) -> String {
    req.messages.iter().map(|m| m.content.as_str()).collect::<Vec<_>>().join("\n")
}

/// Prefers the better text in either position (the council's vote beats the rest).
fn fair(req: &ChatRequest, _: usize) -> ScriptedReply {
    let text = request_text(req);
    let rank = |t: &str| {
        if t == GOOD {
            2
        } else if t == MID {
            1
        } else {
            0
        }
    };
    let a = shown_a(&text).to_string();
    let b = text.split("--- SUMMARY B ---\n").nth(1).and_then(|s| s.split('\n').next()).unwrap_or("").to_string();
    let label = match rank(&a).cmp(&rank(&b)) {
        std::cmp::Ordering::Greater => "A",
        std::cmp::Ordering::Less => "B",
        std::cmp::Ordering::Equal => "tie",
    };
    ScriptedReply::Text(verdict(label))
}

fn always_a(_: &ChatRequest, _: usize) -> ScriptedReply {
    ScriptedReply::Text(verdict("A"))
}

/// A `pair_decided`: judge, first, second, winner, flip.
type Decision = (Option<String>, String, String, Option<String>, Option<Flip>);

fn decisions(events: &[Event]) -> Vec<Decision> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PairDecided { judge, first, second, winner, flip, .. } => {
                Some((judge.clone(), first.clone(), second.clone(), winner.clone(), *flip))
            }
            _ => None,
        })
        .collect()
}

fn comparison_turns(events: &[Event]) -> usize {
    events.iter().filter(|e| matches!(&e.kind, EventKind::TurnStarted { phase: Phase::Comparison, .. })).count()
}

#[tokio::test]
async fn a_fair_judge_prefers_the_better_candidate_in_both_orders() {
    let c = scripted_config(pair_panel(&["Ann"], &[]), pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), fair);
    let (events, outcome) = Session::start(c, None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(comparison_turns(&events), 2, "one pair, two orders");
    let d = decisions(&events);
    assert_eq!(d.len(), 2, "the judge's decision and the panel's");
    for (_, first, second, winner, flip) in &d {
        assert_eq!((first.as_str(), second.as_str()), ("sys-short", "sys-lead"));
        assert_eq!(winner.as_deref(), Some("sys-lead"));
        assert_eq!(*flip, Some(Flip::None));
    }
    let view = SessionView::from_events(&events);
    let ranking = &view.aggregate.as_ref().unwrap().ranking;
    assert_eq!(ranking[0].candidate, "sys-lead");
    assert_eq!((ranking[0].wins, ranking[1].losses), (1, 1));
    // The fold keeps both orders' verdicts, as position labels.
    let c = &view.pairwise.comparisons[0];
    assert_eq!(c.order(false).map(|v| v.label).collect::<Vec<_>>(), [Label::B]);
    assert_eq!(c.order(true).map(|v| v.label).collect::<Vec<_>>(), [Label::A]);
    assert_eq!(c.winner(), Some("sys-lead"));
}

#[tokio::test]
async fn a_judge_that_always_says_a_gives_position_bias_one_and_only_ties() {
    let it = pair_item(&[("sys-short", POOR), ("sys-lead", GOOD), ("sys-mid", MID)]);
    let p = pair_panel(&["Ann"], &[("pairing", SettingValue::Text("all-pairs".into()))]);
    let (events, outcome) = Session::start(scripted_config(p, it, always_a), None).finish().await;
    // Ties are a result: the run completes.
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let d = decisions(&events);
    assert!(d.iter().all(|(_, _, _, winner, flip)| winner.is_none() && *flip == Some(Flip::Opposite)), "{d:?}");
    // Position bias from the log's verdicts: every comparison flips, A↔B.
    let view = SessionView::from_events(&events);
    let pos = |l: Label| match l {
        Label::A => Pos::A,
        Label::B => Pos::B,
        Label::Tie => Pos::Tie,
    };
    let first: Vec<Pos> = view.pairwise.comparisons.iter().map(|c| pos(c.order(false).next().unwrap().label)).collect();
    let second: Vec<Pos> = view.pairwise.comparisons.iter().map(|c| pos(c.order(true).next().unwrap().label)).collect();
    let bias = position_bias(&first, &second).unwrap();
    assert_eq!(bias.rate().unwrap(), 1.0);
    assert_eq!(bias.opposite_flips, 3);
    assert!(view.aggregate.unwrap().ranking.iter().all(|r| r.wins == 0 && r.ties == 2));
}

#[tokio::test]
async fn votes_are_combined_per_order_before_the_swap_rule() {
    // First order (sys-short as A): A, A, B → A; swapped: B, B, tie → B.
    // Both name sys-short: it wins although a third of the votes disagreed.
    let seen: Arc<Mutex<HashMap<bool, usize>>> = Arc::default();
    let judge = move |req: &ChatRequest, _: usize| {
        let swapped = shown_a(&request_text(req)) == GOOD;
        let mut seen = seen.lock().unwrap();
        let n = seen.entry(swapped).or_default();
        let label = if swapped { ["B", "B", "tie"][*n % 3] } else { ["A", "A", "B"][*n % 3] };
        *n += 1;
        ScriptedReply::Text(verdict(label))
    };
    let p = pair_panel(&["Ann"], &[("votes", SettingValue::Integer(3))]);
    let (events, outcome) =
        Session::start(scripted_config(p, pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), judge), None)
            .finish()
            .await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(comparison_turns(&events), 6, "three votes in each of two orders");
    let panel = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PairDecided { judge: None, first_order, swapped_order, winner, .. } => {
                Some((*first_order, *swapped_order, winner.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(panel, (Some(Label::A), Some(Label::B), Some("sys-short".to_string())));
}

#[tokio::test]
async fn several_judges_are_reported_apart_and_combined_by_majority() {
    // Ann and Bea judge fairly; Cal always says A (a tie after the swap).
    let judge = |req: &ChatRequest, n: usize| {
        if request_text(req).contains("You are Cal") { always_a(req, n) } else { fair(req, n) }
    };
    let p = pair_panel(&["Ann", "Bea", "Cal"], &[]);
    let (events, outcome) =
        Session::start(scripted_config(p, pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), judge), None)
            .finish()
            .await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let d = decisions(&events);
    let of = |who: Option<&str>| d.iter().find(|x| x.0.as_deref() == who).map(|x| x.3.clone()).unwrap();
    assert_eq!(of(Some("Ann")), Some("sys-lead".into()));
    assert_eq!(of(Some("Bea")), Some("sys-lead".into()));
    assert_eq!(of(Some("Cal")), None, "Cal's flip is a tie");
    assert_eq!(of(None), Some("sys-lead".into()), "two of three judges");
}

#[tokio::test]
async fn reference_pairing_compares_n_minus_one_pairs_and_all_pairs_every_pair() {
    let cands = [("sys-a", GOOD), ("sys-b", POOR), ("sys-c", MID), ("sys-d", "Something else entirely.")];
    for (pairing, reference, pairs) in [("reference", "sys-c", 3), ("all-pairs", "", 6)] {
        let p = pair_panel(
            &["Ann"],
            &[("pairing", SettingValue::Text(pairing.into())), ("reference", SettingValue::Text(reference.into()))],
        );
        let (events, outcome) = Session::start(scripted_config(p, pair_item(&cands), fair), None).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
        assert_eq!(comparison_turns(&events), 2 * pairs, "{pairing}");
        let view = SessionView::from_events(&events);
        assert_eq!(view.pairwise.comparisons.len(), pairs, "{pairing}");
        if pairing == "reference" {
            assert!(view.pairwise.comparisons.iter().all(|c| c.first == "sys-c"), "the reference is each pair's first");
        }
        assert_eq!(view.aggregate.unwrap().ranking[0].candidate, "sys-a", "{pairing}");
    }
}

#[tokio::test]
async fn without_swap_each_pair_is_judged_once() {
    let p = pair_panel(&["Ann"], &[("swap", SettingValue::Bool(false))]);
    let (events, outcome) =
        Session::start(scripted_config(p, pair_item(&[("x", GOOD), ("y", POOR)]), always_a), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    assert_eq!(comparison_turns(&events), 1);
    // Without the control, the position-A habit decides the pair.
    assert_eq!(decisions(&events)[1].3.as_deref(), Some("x"));
}

#[tokio::test]
async fn unreadable_verdicts_are_parse_failures_and_no_decision_fails_the_run() {
    let mumble = |_: &ChatRequest, _: usize| ScriptedReply::Text("Both are fine, I suppose.".into());
    let (events, outcome) = Session::start(
        scripted_config(pair_panel(&["Ann"], &[]), pair_item(&[("x", GOOD), ("y", POOR)]), mumble),
        None,
    )
    .finish()
    .await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert!(outcome.error.as_deref().unwrap().contains("could be decided"), "{:?}", outcome.error);
    assert!(!events.iter().any(|e| matches!(e.kind, EventKind::PairVerdict { .. })), "no label was invented");
    assert!(events.iter().any(|e| matches!(&e.kind, EventKind::TurnCompleted { parse_error: Some(_), .. })));
}

#[tokio::test]
async fn items_and_panels_that_cannot_be_compared_fail_with_their_reason() {
    let (_, outcome) =
        Session::start(scripted_config(pair_panel(&["Ann"], &[]), pair_item(&[("only", GOOD)]), fair), None)
            .finish()
            .await;
    assert_eq!(outcome.status, EndStatus::Failed);
    assert!(outcome.error.as_deref().unwrap().contains("1 candidate(s)"), "{:?}", outcome.error);

    let p = pair_panel(&["Ann"], &[("reference", SettingValue::Text("sys-zz".into()))]);
    let (_, outcome) =
        Session::start(scripted_config(p, pair_item(&[("x", GOOD), ("y", POOR)]), fair), None).finish().await;
    assert_eq!(outcome.status, EndStatus::Failed);
    let error = outcome.error.unwrap();
    assert!(error.contains("\"sys-zz\"") && error.contains("x, y"), "{error}");
}

/// Over real HTTP: judges see positions, never the systems' names; in a
/// blind run too (which draws and records the screen's order of each pair).
#[tokio::test]
async fn no_candidate_id_reaches_a_judge() {
    fn judge(_: &RecordedRequest) -> Reply {
        Reply::sse().event(&openai::content_chunk(&verdict("tie"))).event(&openai::finish_chunk("stop")).event("[DONE]")
    }
    for blind in [false, true] {
        let server = TestServer::with_handler(judge).await.unwrap();
        let provider =
            OpenAiProvider::new(OpenAiConfig { base_url: server.base_url(), ..OpenAiConfig::default() }).unwrap();
        let p = pair_panel(&["Ann", "Bea"], &[("pairing", SettingValue::Text("all-pairs".into()))]);
        let mut c = EngineConfig::new(
            Arc::new(p),
            pair_item(&[("sys-lead", GOOD), ("sys-short", POOR), ("sys-mid", MID)]),
            Bindings::uniform(Binding::new(Arc::new(provider), "m")),
        );
        c.retry.max_attempts = 1;
        c.blind = blind;
        let (events, outcome) = Session::start(c, None).finish().await;
        assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
        let order = events.iter().find_map(|e| match &e.kind {
            EventKind::BlindOrder { pairs } => Some(pairs.len()),
            _ => None,
        });
        assert_eq!(order, blind.then_some(3), "a blind run records the screen order of its three pairs");
        let requests = server.requests();
        assert_eq!(requests.len(), 2 * 3 * 2, "two judges, three pairs, two orders");
        for r in &requests {
            let body = r.body_text();
            assert!(!body.contains("sys-"), "a candidate id reached a judge (blind: {blind}): {body}");
            assert!(body.contains("SUMMARY A") && body.contains("SUMMARY B"));
        }
    }
}

fn lingering(p: Panel, it: Item, f: impl Fn(&ChatRequest, usize) -> ScriptedReply + Send + Sync + 'static) -> Session {
    let mut c = scripted_config(p, it, f);
    c.linger = true;
    Session::start(c, None)
}

fn is_result(e: &Event) -> bool {
    matches!(&e.kind, EventKind::AggregationCompleted { group: None, .. })
}

fn rejected(e: &Event) -> Option<(String, String)> {
    match &e.kind {
        EventKind::CommandRejected { command, reason, .. } => Some((command.clone(), reason.clone())),
        _ => None,
    }
}

fn settle(first: &str, second: &str, winner: Option<&str>) -> Command {
    Command::SettlePair {
        first: first.into(),
        second: second.into(),
        winner: winner.map(str::to_string),
        author: author(),
    }
}

#[tokio::test]
async fn settling_a_flip_after_the_result_publishes_the_result_again_marked_human() {
    let mut s = lingering(pair_panel(&["Ann"], &[]), pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), always_a);
    s.wait_for(is_result).await;
    // Abstaining is recorded and changes nothing; settling afterwards still works.
    s.send(Command::AbstainPair { first: "sys-short".into(), second: "sys-lead".into(), author: author() });
    s.wait_for(|e| matches!(e.kind, EventKind::PairAbstained { .. })).await;
    // The pair may be named in either order; the winner must be one of it.
    s.send(settle("sys-lead", "sys-short", Some("sys-zz")));
    let (cmd, why) = rejected(&s.wait_for(|e| rejected(e).is_some()).await).unwrap();
    assert_eq!(cmd, "settle");
    assert!(why.contains("sys-zz is not in the pair"), "{why}");
    s.send(settle("sys-lead", "sys-short", Some("sys-lead")));
    s.wait_for(|e| matches!(&e.kind, EventKind::PairSettled { winner: Some(w), .. } if w == "sys-lead")).await;
    let again = s.wait_for(is_result).await;
    let EventKind::AggregationCompleted { ranking, feedback, .. } = &again.kind else { unreachable!() };
    assert_eq!(ranking[0].candidate, "sys-lead");
    assert!(ranking.iter().all(|r| r.human), "{ranking:?}");
    assert!(feedback.contains("settled by"), "{feedback}");
    s.send(Command::Quit { author: author() });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    // The log folds to the settled result (what replay and `sessions show` read).
    let view = SessionView::from_events(&events);
    let c = &view.pairwise.comparisons[0];
    assert_eq!(c.winner(), Some("sys-lead"));
    assert_eq!(c.settled.as_ref().unwrap().author, author());
    assert!(c.flipped() && c.abstained.is_some());
    assert_eq!(view.aggregate.unwrap().ranking[0].candidate, "sys-lead");
}

#[tokio::test]
async fn a_clear_pair_cannot_be_settled_but_takes_an_extra_vote() {
    let mut s = lingering(pair_panel(&["Ann"], &[]), pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), fair);
    s.wait_for(is_result).await;
    s.send(settle("sys-short", "sys-lead", None));
    let (_, why) = rejected(&s.wait_for(|e| rejected(e).is_some()).await).unwrap();
    assert!(why.contains("nothing to settle"), "{why}");
    s.send(Command::AbstainPair { first: "sys-short".into(), second: "sys-lead".into(), author: author() });
    let (cmd, why) = rejected(&s.wait_for(|e| rejected(e).is_some()).await).unwrap();
    assert_eq!(cmd, "abstain");
    assert!(why.contains("nothing to abstain"), "{why}");
    s.send(Command::LabelPair { first: "sys-short".into(), second: "sys-lead".into(), winner: None, author: author() });
    let (_, why) = rejected(&s.wait_for(|e| rejected(e).is_some()).await).unwrap();
    assert!(why.contains("--blind"), "labels belong to blind runs: {why}");
    // One judge for sys-lead, one human vote for a tie: no majority, a tie.
    s.send(Command::VotePair { first: "sys-short".into(), second: "sys-lead".into(), winner: None, author: author() });
    s.wait_for(|e| matches!(e.kind, EventKind::PairVoted { .. })).await;
    let panel = s.wait_for(|e| matches!(e.kind, EventKind::PairDecided { judge: None, .. })).await;
    assert!(matches!(&panel.kind, EventKind::PairDecided { winner: None, no_result: None, .. }), "{panel:?}");
    let again = s.wait_for(is_result).await;
    let EventKind::AggregationCompleted { ranking, .. } = &again.kind else { unreachable!() };
    assert!(ranking.iter().all(|r| r.ties == 1 && r.human), "{ranking:?}");
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    let view = SessionView::from_events(&events);
    assert_eq!(view.pairwise.comparisons[0].votes.len(), 1);
    assert_eq!(view.pairwise.comparisons[0].winner(), None);
}

#[tokio::test]
async fn an_extra_vote_breaks_a_tie_between_judges() {
    // Ann prefers sys-lead; Cal flips (a tie): no majority of two. A human
    // vote for sys-lead makes two of three.
    let judge = |req: &ChatRequest, n: usize| {
        if request_text(req).contains("You are Cal") { always_a(req, n) } else { fair(req, n) }
    };
    let mut s =
        lingering(pair_panel(&["Ann", "Cal"], &[]), pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), judge);
    let first = s.wait_for(|e| matches!(e.kind, EventKind::PairDecided { judge: None, .. })).await;
    assert!(matches!(&first.kind, EventKind::PairDecided { winner: None, .. }), "one of two is no majority: {first:?}");
    s.wait_for(is_result).await;
    s.send(Command::VotePair {
        first: "sys-short".into(),
        second: "sys-lead".into(),
        winner: Some("sys-lead".into()),
        author: author(),
    });
    let panel = s.wait_for(|e| matches!(e.kind, EventKind::PairDecided { judge: None, .. })).await;
    assert!(matches!(&panel.kind, EventKind::PairDecided { winner: Some(w), .. } if w == "sys-lead"), "{panel:?}");
    let result = s.wait_for(is_result).await;
    let EventKind::AggregationCompleted { ranking, .. } = &result.kind else { unreachable!() };
    assert_eq!(ranking[0].candidate, "sys-lead");
    assert!(ranking[0].human, "a human vote counted");
    s.send(Command::Quit { author: author() });
    let (events, _) = s.finish().await;
    assert_eq!(SessionView::from_events(&events).pairwise.comparisons[0].winner(), Some("sys-lead"));
}

#[tokio::test]
async fn a_blind_run_takes_the_persons_own_verdict_before_settling() {
    let mut c =
        scripted_config(pair_panel(&["Ann"], &[]), pair_item(&[("sys-short", POOR), ("sys-lead", GOOD)]), always_a);
    c.linger = true;
    c.blind = true;
    let mut s = Session::start(c, None);
    let order = s.wait_for(|e| matches!(e.kind, EventKind::BlindOrder { .. })).await;
    let EventKind::BlindOrder { pairs } = &order.kind else { unreachable!() };
    assert_eq!((pairs[0].first.as_str(), pairs[0].second.as_str()), ("sys-short", "sys-lead"));
    s.wait_for(is_result).await;
    // Settling or voting before your own verdict would show the judges' first.
    s.send(settle("sys-short", "sys-lead", Some("sys-lead")));
    let (_, why) = rejected(&s.wait_for(|e| rejected(e).is_some()).await).unwrap();
    assert!(why.contains("blind"), "{why}");
    let label = Command::LabelPair {
        first: "sys-short".into(),
        second: "sys-lead".into(),
        winner: Some("sys-lead".into()),
        author: author(),
    };
    s.send(label.clone());
    let l = s.wait_for(|e| matches!(e.kind, EventKind::PairLabelled { .. })).await;
    assert!(matches!(&l.kind, EventKind::PairLabelled { swapped, .. } if *swapped == pairs[0].swapped));
    s.send(label);
    let (_, why) = rejected(&s.wait_for(|e| rejected(e).is_some()).await).unwrap();
    assert!(why.contains("labelled already"), "{why}");
    s.send(settle("sys-short", "sys-lead", Some("sys-lead")));
    s.wait_for(|e| matches!(e.kind, EventKind::PairSettled { .. })).await;
    s.send(Command::Quit { author: author() });
    let (events, outcome) = s.finish().await;
    assert_eq!(outcome.status, EndStatus::Completed, "{:?}", outcome.error);
    let view = SessionView::from_events(&events);
    assert!(view.pairwise.blind);
    let c = &view.pairwise.comparisons[0];
    assert_eq!(c.label.as_ref().unwrap().winner.as_deref(), Some("sys-lead"));
    assert!(view.pairwise.revealed(c));
}
