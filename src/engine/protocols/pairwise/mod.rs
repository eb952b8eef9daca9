//! Pairwise judging with bias controls (after MASA's recommendations): a
//! judge sees two candidates as "Summary A" and "Summary B" and says `A`,
//! `B` or `tie`.
//!
//! - [`label`]: the label verdict (what a judge's reply must end with, its
//!   JSON schema for the local model, and how a reply is read; a reply that
//!   cannot be read is a parse failure, never a label).
//! - [`combine`]: how verdicts combine. Votes are combined per order first
//!   (a label needs more than half of the `k` votes asked, otherwise the
//!   order says tie), then the two orders by the swap rule (a candidate wins
//!   only when both orders prefer it, otherwise tie, and a disagreement is a
//!   flip). Several judges' decisions go through the same majority rule.
//!   Which pairs are compared: each system against one reference system
//!   (n−1 comparisons) or all pairs (n(n−1)/2), with a ranking from win
//!   rates.
//! - [`prompts`]: one judge's request for one order of one pair.
//!
//! Phases: `comparison` (every judge, pair, order and vote at once; `round`
//! numbers the vote), then `aggregation` (`pair_decided` per judge and for
//! the panel, and the ranking).

pub mod combine;
pub mod label;
pub mod prompts;

use futures::future::join_all;

use self::combine::{Pairing, Preference, majority, plan, rank, swap_rule};
use self::label::{Label, LabelVerdict, PairVerdict};
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::item::Candidate;
use crate::provider::ProviderError;
use crate::session::event::{EventKind, Phase, Role};
use crate::session::pairwise::{PairRef, RankEntry};

/// One turn to take: a judge, a pair, an order and a vote.
#[derive(Clone, Copy, Debug)]
struct Job {
    judge: usize,
    pair: usize,
    swapped: bool,
    vote: u32,
}

pub(crate) async fn run(run: &Run) {
    let Some(cands) = run.item().candidates.clone() else { return };
    let Some(pairs) = pairs_of(run, &cands) else { return };
    let votes = u32::try_from(run.panel.protocol.integer("votes")).unwrap_or(1).max(1);
    let swap = run.panel.protocol.flag("swap");
    let judges = run.state().agents.len();

    run.emit(EventKind::PhaseStarted { phase: Phase::Comparison, group: None, round: None });
    let orders: &[bool] = if swap { &[false, true] } else { &[false] };
    let jobs: Vec<Job> = (0..judges)
        .flat_map(|judge| {
            (0..pairs.len()).flat_map(move |pair| {
                orders.iter().flat_map(move |&swapped| (1..=votes).map(move |vote| Job { judge, pair, swapped, vote }))
            })
        })
        .collect();
    let labels = join_all(jobs.iter().map(|&job| judge_one(run, &cands, pairs[job.pair], job))).await;
    if run.quit.is_cancelled() {
        return;
    }

    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let names: Vec<String> = run.state().agents.iter().map(|a| a.name.clone()).collect();
    let votes_of = |judge: usize, pair: usize, swapped: bool| -> Vec<Option<Label>> {
        jobs.iter()
            .zip(&labels)
            .filter(|(j, _)| j.judge == judge && j.pair == pair && j.swapped == swapped)
            .map(|(_, l)| *l)
            .collect()
    };
    let mut decided = Vec::new();
    let mut undecided = Vec::new();
    for (p, &(i, k)) in pairs.iter().enumerate() {
        let (first, second) = (&cands[i].id, &cands[k].id);
        let mut prefs = Vec::with_capacity(judges);
        for (j, name) in names.iter().enumerate() {
            let first_order = majority(&votes_of(j, p, false), votes as usize, Label::Tie);
            let swapped_order = if swap { majority(&votes_of(j, p, true), votes as usize, Label::Tie) } else { None };
            let (pref, flip, no_result) = match (first_order, swapped_order, swap) {
                (Some(f), Some(s), true) => {
                    let (p, flip) = swap_rule(f, s);
                    (Some(p), Some(flip), None)
                }
                (Some(f), None, false) => (Some(Preference::from_label(f, false)), None, None),
                (None, _, _) => (None, None, Some(format!("{name} gave no readable verdict with {first} shown first"))),
                (Some(_), None, true) => {
                    (None, None, Some(format!("{name} gave no readable verdict with {second} shown first")))
                }
                (Some(_), Some(_), false) => unreachable!("the swapped order runs only with swap"),
            };
            run.emit(EventKind::PairDecided {
                judge: Some(name.clone()),
                first: first.clone(),
                second: second.clone(),
                first_order,
                swapped_order,
                winner: pref.and_then(|p| winner(p, first, second)),
                flip,
                no_result,
            });
            prefs.push(pref);
        }
        // The panel: one judge's decision as it is, several by majority.
        let panel = majority(&prefs, judges, Preference::Tie);
        let single = (judges == 1).then(|| (majority(&votes_of(0, p, false), votes as usize, Label::Tie), swap));
        let (first_order, swapped_order, flip) = match single {
            Some((f, true)) => {
                let s = majority(&votes_of(0, p, true), votes as usize, Label::Tie);
                (f, s, f.zip(s).map(|(f, s)| swap_rule(f, s).1))
            }
            Some((f, false)) => (f, None, None),
            None => (None, None, None),
        };
        let no_result = panel.is_none().then(|| format!("no judge decided {first} against {second}"));
        run.emit(EventKind::PairDecided {
            judge: None,
            first: first.clone(),
            second: second.clone(),
            first_order,
            swapped_order,
            winner: panel.and_then(|p| winner(p, first, second)),
            flip,
            no_result: no_result.clone(),
        });
        match panel {
            Some(pref) => decided.push(((i, k), pref)),
            None => undecided.push(no_result.unwrap_or_default()),
        }
    }
    finish(run, &cands, &pairs, &decided, &undecided, ("pairwise", &[]));
}

/// The pairs to compare, by the panel's `pairing` and `reference`; fails the
/// run (and returns `None`) when the reference names no candidate.
fn pairs_of(run: &Run, cands: &[Candidate]) -> Option<Vec<(usize, usize)>> {
    let pairing = match run.panel.protocol.choice("pairing") {
        "all-pairs" => Pairing::AllPairs,
        _ => {
            let reference = run.panel.protocol.text("reference").trim();
            if reference.is_empty() {
                Pairing::Reference(0)
            } else if let Some(r) = cands.iter().position(|c| c.id == reference) {
                Pairing::Reference(r)
            } else {
                let ids: Vec<&str> = cands.iter().map(|c| c.id.as_str()).collect();
                run.fail(format!(
                    "item \"{}\": the panel's reference \"{reference}\" is not one of its candidates ({})",
                    run.item().id,
                    ids.join(", ")
                ));
                return None;
            }
        }
    };
    Some(plan(cands.len(), pairing))
}

pub(crate) fn winner(p: Preference, first: &str, second: &str) -> Option<String> {
    match p {
        Preference::First => Some(first.to_string()),
        Preference::Second => Some(second.to_string()),
        Preference::Tie => None,
    }
}

/// One judge's verdict on one order of a pair: `None` when it could not be read.
async fn judge_one(run: &Run, cands: &[Candidate], (i, k): (usize, usize), job: Job) -> Option<Label> {
    if !run.gate().await {
        return None;
    }
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[job.judge];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let noun = run.panel.protocol.text("candidate_name").trim().to_string();
    let noun = if noun.is_empty() { "Summary".to_string() } else { noun };
    let keys: Vec<String> = if run.panel.protocol.flag("per_criterion") {
        run.panel.dimensions.iter().map(|d| d.key.clone()).collect()
    } else {
        Vec::new()
    };
    let verdict = LabelVerdict { criteria: &keys };
    let (a, b) = if job.swapped { (&cands[k], &cands[i]) } else { (&cands[i], &cands[k]) };
    let messages = prompts::compare_messages(
        &run.panel,
        run.item(),
        &spec,
        &noun,
        (&a.text, &b.text),
        &verdict.instructions(),
    );
    let reply_tokens = u32::try_from(run.panel.protocol.integer("reply_tokens")).unwrap_or(256);
    let pair = PairRef { first: cands[i].id.clone(), second: cands[k].id.clone(), swapped: job.swapped };
    let turn = TurnSpec {
        participant: &name,
        group: Some(&group),
        phase: Phase::Comparison,
        round: Some(job.vote),
        role: Role::Agent,
        binding: &binding,
        sampling: (run.agent_sampling(&spec).0, reply_tokens),
        cancel: &run.stop,
        dimension: None,
        pair: Some(&pair),
    };
    match run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await {
        Spoken::Evaluated { evaluation: v, turn, .. } => {
            record(run, &name, (&cands[i].id, &cands[k].id), job, turn, &v);
            Some(v.label)
        }
        Spoken::Unparsed { .. } | Spoken::Failed(ProviderError::Cancelled) => None,
        Spoken::Failed(e) if !e.is_retryable() => {
            run.fail(format!("{name}: {e}"));
            None
        }
        Spoken::Failed(_) => None,
    }
}

fn record(run: &Run, judge: &str, (first, second): (&str, &str), job: Job, turn: u64, v: &PairVerdict) {
    run.emit(EventKind::PairVerdict {
        turn,
        judge: judge.to_string(),
        first: first.to_string(),
        second: second.to_string(),
        swapped: job.swapped,
        vote: job.vote,
        label: v.label,
        criteria: v.criteria.iter().cloned().collect(),
        confidence: v.confidence,
        reasoning: v.reasoning.clone().unwrap_or_default(),
    });
}

/// The ranking and the result's feedback (`notes`, then which candidate was
/// preferred), recorded with `method`.
pub(crate) fn finish(
    run: &Run,
    cands: &[Candidate],
    pairs: &[(usize, usize)],
    decided: &[((usize, usize), Preference)],
    undecided: &[String],
    (method, notes): (&str, &[String]),
) {
    let (records, order) = rank(cands.len(), decided);
    let ranking: Vec<RankEntry> = if decided.is_empty() {
        Vec::new()
    } else {
        order
            .iter()
            .map(|&c| RankEntry {
                candidate: cands[c].id.clone(),
                wins: records[c].wins,
                losses: records[c].losses,
                ties: records[c].ties,
                human: false,
            })
            .collect()
    };
    let mut lines = notes.to_vec();
    for &((i, k), pref) in decided {
        lines.push(match pref {
            Preference::First => format!("{} is preferred to {}.", cands[i].id, cands[k].id),
            Preference::Second => format!("{} is preferred to {}.", cands[k].id, cands[i].id),
            Preference::Tie => format!("{} and {}: tie.", cands[i].id, cands[k].id),
        });
    }
    lines.extend(undecided.iter().map(|u| format!("No decision: {u}.")));
    let no_result = decided.is_empty().then(|| {
        format!(
            "none of the {} pair(s) could be decided: no judge gave a readable verdict in every order it was asked",
            pairs.len()
        )
    });
    {
        let mut st = run.state();
        st.pair_failure = no_result.clone();
        st.aggregates.insert(
            None,
            crate::engine::runtime::AggregateRecord { feedback: lines.join("\n"), method: method.into() },
        );
        st.finished = true;
    }
    run.emit(EventKind::AggregationCompleted {
        group: None,
        feedback: lines.join("\n"),
        scores: Default::default(),
        overall: None,
        original: Default::default(),
        method: Some(method.into()),
        no_result,
        left_out: Vec::new(),
        labels: Default::default(),
        original_labels: Default::default(),
        ranking,
    });
}
