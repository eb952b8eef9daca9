//! `compare`: pairwise judging with bias controls (after MASA's
//! recommendations): a judge sees two candidates as "Summary A" and
//! "Summary B" and says `A`, `B` or `tie`. The stage runs the comparisons;
//! the `aggregate` stage decides each pair from them ([`decide`]).
//!
//! - [`label`](crate::engine::pairs::label): the label verdict (what a judge's reply must end with, its
//!   JSON schema for the local model, and how a reply is read; a reply that
//!   cannot be read is a parse failure, never a label).
//! - [`combine`](crate::engine::pairs::combine): how verdicts combine. Votes are combined per order first
//!   (a label needs more than half of the `k` votes asked, otherwise the
//!   order says tie), then the two orders by the swap rule (a candidate wins
//!   only when both orders prefer it, otherwise tie, and a disagreement is a
//!   flip). Several judges' decisions go through the same majority rule.
//!   Which pairs are compared: each system against one reference system
//!   (n−1 comparisons) or all pairs (n(n−1)/2), with a ranking from win
//!   rates.
//! - [`prompts`]: one judge's request for one order of one pair, under the
//!   baseline or the enhanced instructions (the stage's `prompt`). With
//!   `sampling = "paper"` the judges sample as the paper's evaluators
//!   (temperature 0, top_p 0.1), whatever the panel's `[generation]` says.
//!
//! - [`human`]: a person's part, through commands: settle a tie or a flip,
//!   cast an extra vote, abstain, and (blind runs) give their own label
//!   first.
//!
//! Phases: `comparison` (every judge, pair, order and vote at once; `round`
//! numbers the vote), then `aggregation` (`pair_decided` per judge and for
//! the panel, and the ranking). A blind run first records the screen order
//! it drew (`blind_order`). A person's change after aggregation (the live
//! screen keeps the session open) re-emits the panel's decision on the pair
//! when it changed (a vote) and the result with its ranking.

pub mod human;
pub mod prompts;

use futures::future::join_all;
use rand::Rng;

use crate::engine::pairs::combine::{Flip, Pairing, Preference, majority, plan, rank, swap_rule};
use crate::engine::pairs::label::{Label, LabelVerdict, PairVerdict};
use crate::engine::pairs::{PairState, PairwiseState, winner};
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::Verdict;
use crate::item::Candidate;
use crate::panel::composition::Stage;
use crate::provider::ProviderError;
use crate::session::event::{EventKind, Phase, Role};
use crate::session::pairwise::{PairRef, RankEntry};

/// The judges' temperature and top_p under `sampling = "paper"`: MASA's
/// evaluators (GPT-4 and the open models it compared, its Table 1).
pub const PAPER_SAMPLING: (f32, f32) = (0.0, 0.1);

/// One turn to take: a judge, a pair, an order and a vote.
#[derive(Clone, Copy, Debug)]
struct Job {
    judge: usize,
    pair: usize,
    swapped: bool,
    vote: u32,
}

/// The comparisons of an item's pairs, for the aggregate to decide.
pub(crate) struct Compared {
    cands: Vec<Candidate>,
    pairs: Vec<(usize, usize)>,
    jobs: Vec<Job>,
    labels: Vec<Option<Label>>,
    votes: u32,
    swap: bool,
}

/// Every judge compares every pair, in each order and vote, all at once.
/// `None` when the item has no pairs to compare (the run has failed).
pub(crate) async fn run(run: &Run, stage: &Stage) -> Option<Compared> {
    let cands = run.item().candidates.clone()?;
    let pairs = pairs_of(run, stage, &cands)?;
    let votes = u32::try_from(stage.integer("votes")).unwrap_or(1).max(1);
    let swap = stage.flag("swap");
    let judges = run.state().agents.len();

    let blind = run.config.blind;
    let shown: Vec<bool> = {
        let mut rng = run.rng("blind order");
        pairs.iter().map(|_| blind && rng.random_bool(0.5)).collect()
    };
    {
        let mut st = run.state();
        st.pairwise = PairwiseState {
            cands: cands.iter().map(|c| c.id.clone()).collect(),
            pairs: pairs
                .iter()
                .zip(&shown)
                .map(|(&pair, &shown_swapped)| PairState { pair, shown_swapped, ..Default::default() })
                .collect(),
            blind,
            aggregated: false,
            method: None,
            notes: Vec::new(),
        };
    }
    if blind {
        let pairs = pairs
            .iter()
            .zip(&shown)
            .map(|(&(i, k), &swapped)| PairRef { first: cands[i].id.clone(), second: cands[k].id.clone(), swapped })
            .collect();
        run.emit(EventKind::BlindOrder { pairs });
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Comparison, group: None, round: None });
    let orders: &[bool] = if swap { &[false, true] } else { &[false] };
    let jobs: Vec<Job> = (0..judges)
        .flat_map(|judge| {
            (0..pairs.len()).flat_map(move |pair| {
                orders.iter().flat_map(move |&swapped| (1..=votes).map(move |vote| Job { judge, pair, swapped, vote }))
            })
        })
        .collect();
    let keys: Vec<String> = if stage.flag("per_criterion") {
        run.panel.dimensions.iter().map(|d| d.key.clone()).collect()
    } else {
        Vec::new()
    };
    let verdict = LabelVerdict::new(&keys);
    let labels = join_all(jobs.iter().map(|&job| judge_one(run, stage, &verdict, &cands, pairs[job.pair], job))).await;
    Some(Compared { cands, pairs, jobs, labels, votes, swap })
}

/// Each judge's decision on each pair (votes per order by majority, then
/// the swap rule), the panel's, and the result with its ranking.
pub(crate) fn decide(run: &Run, compared: &Compared) {
    let Compared { cands, pairs, jobs, labels, votes, swap } = compared;
    let (votes, swap) = (*votes, *swap);
    let judges = run.state().agents.len();
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let names: Vec<String> = run.state().agents.iter().map(|a| a.name.clone()).collect();
    let votes_of = |judge: usize, pair: usize, swapped: bool| -> Vec<Option<Label>> {
        jobs.iter()
            .zip(labels)
            .filter(|(j, _)| j.judge == judge && j.pair == pair && j.swapped == swapped)
            .map(|(_, l)| *l)
            .collect()
    };
    for (p, &(i, k)) in pairs.iter().enumerate() {
        let (first, second) = (&cands[i].id, &cands[k].id);
        let mut prefs = Vec::with_capacity(judges);
        let mut flipped = false;
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
            flipped |= flip.is_some_and(Flip::is_flip);
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
        // The panel repeats the orders of a single judge.
        let single = (judges == 1).then(|| (majority(&votes_of(0, p, false), votes as usize, Label::Tie), swap));
        let orders = match single {
            Some((f, true)) => {
                let s = majority(&votes_of(0, p, true), votes as usize, Label::Tie);
                (f, s, f.zip(s).map(|(f, s)| swap_rule(f, s).1))
            }
            Some((f, false)) => (f, None, None),
            None => (None, None, None),
        };
        let event = {
            let mut st = run.state();
            let ps = &mut st.pairwise.pairs[p];
            ps.judged = Some(prefs);
            ps.orders = orders;
            ps.flipped = flipped;
            panel_event(&st.pairwise, p)
        };
        run.emit(event);
    }
    publish(run);
}

/// The panel's `pair_decided` for pair `p`: its judges' decisions and
/// people's extra votes by majority.
fn panel_event(pw: &PairwiseState, p: usize) -> EventKind {
    let ps = &pw.pairs[p];
    let (first, second) = (&pw.cands[ps.pair.0], &pw.cands[ps.pair.1]);
    let panel = ps.panel();
    EventKind::PairDecided {
        judge: None,
        first: first.clone(),
        second: second.clone(),
        first_order: ps.orders.0,
        swapped_order: ps.orders.1,
        winner: panel.and_then(|p| winner(p, first, second)),
        flip: ps.orders.2,
        no_result: panel.is_none().then(|| format!("no judge decided {first} against {second}")),
    }
}

/// The pairs to compare, by the panel's `pairing` and `reference`; fails the
/// run (and returns `None`) when the reference names no candidate.
fn pairs_of(run: &Run, stage: &Stage, cands: &[Candidate]) -> Option<Vec<(usize, usize)>> {
    let pairing = match stage.choice("pairing").as_str() {
        "all-pairs" => Pairing::AllPairs,
        _ => {
            let reference = stage.text("reference");
            let reference = reference.trim();
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

/// One judge's verdict on one order of a pair: `None` when it could not be read.
async fn judge_one(
    run: &Run,
    stage: &Stage,
    verdict: &LabelVerdict<'_>,
    cands: &[Candidate],
    (i, k): (usize, usize),
    job: Job,
) -> Option<Label> {
    if !run.gate().await {
        return None;
    }
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[job.judge];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    // The paper's sampling replaces the panel's temperature and top_p.
    let paper_sampling = stage.is("sampling", "paper");
    let (temperature, top_p) = if paper_sampling {
        (Some(PAPER_SAMPLING.0), Some(PAPER_SAMPLING.1))
    } else {
        (run.agent_sampling(&spec).0, None)
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let binding = if paper_sampling { binding.with_top_p(top_p) } else { binding };
    let noun = stage.text("candidate_name").trim().to_string();
    let noun = if noun.is_empty() { "Summary".to_string() } else { noun };
    let (a, b) = if job.swapped { (&cands[k], &cands[i]) } else { (&cands[i], &cands[k]) };
    let messages = prompts::compare_messages(
        &run.panel,
        run.item(),
        &spec,
        &noun,
        (&a.text, &b.text),
        &verdict.instructions(),
        prompts::Guidance::of(stage.is("prompt", "enhanced")),
    );
    let reply_tokens = u32::try_from(stage.integer("reply_tokens")).unwrap_or(256);
    let pair = PairRef { first: cands[i].id.clone(), second: cands[k].id.clone(), swapped: job.swapped };
    let turn = TurnSpec {
        participant: &name,
        group: Some(&group),
        phase: Phase::Comparison,
        round: Some(job.vote),
        role: Role::Agent,
        binding: &binding,
        sampling: (temperature, reply_tokens),
        cancel: &run.stop,
        dimension: None,
        pair: Some(&pair),
    };
    match run.verdict_turn(verdict, turn, Prompt::fixed(messages), None).await {
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

/// The result: the ranking from every decided pair (a person's settlement
/// over the panel's decision) and the feedback, published as
/// `aggregation_completed`; again after a person's change.
pub(crate) fn publish(run: &Run) {
    let event = {
        let mut st = run.state();
        let pw = &st.pairwise;
        let ids = &pw.cands;
        let mut decided = Vec::new();
        let mut human = vec![false; ids.len()];
        let mut lines = pw.notes.clone();
        let mut undecided = Vec::new();
        for ps in &pw.pairs {
            let (i, k) = ps.pair;
            let by_people = ps.settled.is_some() || !ps.votes.is_empty();
            if by_people {
                human[i] = true;
                human[k] = true;
            }
            let note = match (&ps.settled, ps.votes.len()) {
                (Some((_, author)), _) => format!(" (settled by {author}, human)"),
                (None, 0) => String::new(),
                (None, n) => format!(" (with {n} human vote{})", if n == 1 { "" } else { "s" }),
            };
            match ps.decision() {
                Some(pref) => {
                    decided.push((ps.pair, pref));
                    lines.push(match pref {
                        Preference::First => format!("{} is preferred to {}{note}.", ids[i], ids[k]),
                        Preference::Second => format!("{} is preferred to {}{note}.", ids[k], ids[i]),
                        Preference::Tie => format!("{} and {}: tie{note}.", ids[i], ids[k]),
                    });
                }
                None => undecided.push(format!("No decision: no judge decided {} against {}.", ids[i], ids[k])),
            }
        }
        lines.extend(undecided);
        let (records, order) = rank(ids.len(), &decided);
        let ranking: Vec<RankEntry> = if decided.is_empty() {
            Vec::new()
        } else {
            order
                .iter()
                .map(|&c| RankEntry {
                    candidate: ids[c].clone(),
                    wins: records[c].wins,
                    losses: records[c].losses,
                    ties: records[c].ties,
                    human: human[c],
                })
                .collect()
        };
        let no_result = decided.is_empty().then(|| {
            format!(
                "none of the {} pair(s) could be decided: no judge gave a readable verdict in every order it was asked",
                pw.pairs.len()
            )
        });
        let feedback = lines.join("\n");
        let method = pw.method.clone().unwrap_or_else(|| "pairwise".into());
        st.pair_failure = no_result.clone();
        st.aggregates.insert(None, crate::engine::runtime::AggregateRecord { feedback: feedback.clone() });
        st.finished = true;
        st.pairwise.aggregated = true;
        EventKind::AggregationCompleted {
            group: None,
            feedback,
            scores: Default::default(),
            overall: None,
            original: Default::default(),
            method: Some(method),
            no_result,
            left_out: Vec::new(),
            labels: Default::default(),
            original_labels: Default::default(),
            ranking,
        }
    };
    run.emit(event);
}
