//! `score`: every member scores each dimension in its own call, following
//! the dimension's evaluation steps (G-Eval's form filling), with the score
//! weighted by its probabilities when the provider returns them, and
//! otherwise averaged over `samples` replies. The reply gives a sentence or
//! two of reasoning, then the score, or (`reply = "score-first"`) the score
//! alone. `round` numbers a member's draws.

mod form;
pub(super) mod prompts;

use std::collections::BTreeMap;

use futures::future::join_all;

use form::FormScore;

use super::steps::start_scoring;
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::{DimensionScore, Verdict};
use crate::panel::OVERALL;
use crate::panel::composition::Stage;
use crate::provider::ProviderError;
use crate::session::event::{Evaluation, EventKind, Phase, Role, Scores};

/// Score every dimension with the steps, once a person's review is over;
/// each member's evaluation is assembled from its draws. Returns how the
/// scores came about, for the aggregate's account.
pub(super) async fn run(run: &Run, stage: &Stage) -> Option<String> {
    if !run.gate().await {
        return None;
    }
    let steps = start_scoring(run);
    let draws = score(run, stage, &steps).await;
    record(run, stage, draws)
}

/// What one judge's draws on one dimension came to.
#[derive(Debug, Clone, Default)]
struct Draws {
    scores: Vec<f64>,
    weighted: Vec<f64>,
    /// The first readable draw's reasoning.
    reason: Option<String>,
    last_turn: Option<u64>,
}

/// Every judge scores every dimension: one draw, and `samples − 1` more when
/// the first brought no probability-weighted score.
async fn score(run: &Run, stage: &Stage, steps: &BTreeMap<String, String>) -> BTreeMap<usize, BTreeMap<String, Draws>> {
    run.emit(EventKind::PhaseStarted { phase: Phase::Scoring, group: None, round: None });
    let samples = u32::try_from(stage.integer("samples")).unwrap_or(1).max(1);
    let judges = run.state().agents.len();
    let jobs = (0..judges).flat_map(|j| run.panel.dimensions.iter().map(move |d| (j, d)));
    let results = join_all(jobs.map(|(j, d)| async move {
        let mut draws = Draws::default();
        let Some(steps) = steps.get(&d.key) else { return (j, d.key.clone(), draws) };
        draw(run, stage, j, d, steps, 1, &mut draws).await;
        if draws.weighted.is_empty() && samples > 1 && !run.stop.is_cancelled() {
            let mut more: Vec<Draws> = vec![Draws::default(); samples as usize - 1];
            join_all(more.iter_mut().enumerate().map(|(k, m)| draw(run, stage, j, d, steps, k as u32 + 2, m))).await;
            for m in more {
                draws.scores.extend(m.scores);
                draws.weighted.extend(m.weighted);
                draws.reason = draws.reason.or(m.reason);
                draws.last_turn = draws.last_turn.max(m.last_turn);
            }
        }
        (j, d.key.clone(), draws)
    }))
    .await;
    let mut out: BTreeMap<usize, BTreeMap<String, Draws>> = BTreeMap::new();
    for (j, key, draws) in results {
        out.entry(j).or_default().insert(key, draws);
    }
    out
}

/// One scoring turn; a readable score goes into `into`.
async fn draw(
    run: &Run,
    stage: &Stage,
    judge: usize,
    d: &crate::panel::Dimension,
    steps: &str,
    number: u32,
    into: &mut Draws,
) {
    if !run.gate().await {
        return;
    }
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[judge];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let verdict = DimensionScore { dimension: d, scale: run.panel.scale, quoted: run.quoted() };
    let turn = TurnSpec {
        participant: &name,
        group: Some(&group),
        phase: Phase::Scoring,
        round: Some(number),
        role: Role::Agent,
        binding: &binding,
        sampling: (scoring_temperature(run, stage, &spec), reply_tokens(stage)),
        cancel: &run.stop,
        dimension: Some(&d.key),
        pair: None,
    };
    let spoken = if stage.is("reply", "score-first") {
        let verdict = FormScore(verdict);
        let messages = prompts::score_messages(&run.panel, run.item(), &spec, d, steps, &verdict.instructions(), true);
        run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await
    } else {
        let messages = prompts::score_messages(&run.panel, run.item(), &spec, d, steps, &verdict.instructions(), false);
        run.verdict_turn(&verdict, turn, Prompt::fixed(messages), None).await
    };
    match spoken {
        Spoken::Evaluated { evaluation, turn, .. } => {
            if let Some(s) = evaluation.score(&d.key) {
                into.scores.push(s);
            }
            if let Some(w) = evaluation.weighted_scores.as_ref().and_then(|w| w.get(&d.key)) {
                into.weighted.push(*w);
            }
            if into.reason.is_none() && !evaluation.justification.trim().is_empty() {
                into.reason = Some(evaluation.justification.trim().to_string());
            }
            into.last_turn = into.last_turn.max(Some(turn));
        }
        Spoken::Unparsed { .. } | Spoken::Failed(ProviderError::Cancelled) => {}
        Spoken::Failed(e) if !e.is_retryable() => run.fail(format!("{name}: {e}")),
        Spoken::Failed(_) => {}
    }
}

/// The temperature of a scoring draw: the judge's own, or 1 with
/// `sample_temperature = "1"`.
fn scoring_temperature(run: &Run, stage: &Stage, judge: &crate::panel::AgentSpec) -> Option<f32> {
    if stage.is("sample_temperature", "1") { Some(1.0) } else { run.agent_sampling(judge).0 }
}

/// The reply length of a scoring turn (`reply_tokens`).
fn reply_tokens(stage: &Stage) -> u32 {
    u32::try_from(stage.integer("reply_tokens")).unwrap_or(96)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A judge's evaluation from its draws: per dimension the mean of the sampled
/// scores and of the weighted ones; `overall` the mean of the dimensions when
/// every dimension has a score, none with `overall = false`, and the
/// dimension's own where one is keyed `overall`.
fn assemble(run: &Run, stage: &Stage, draws: &BTreeMap<String, Draws>) -> Option<Evaluation> {
    let mut scores = Scores::new();
    let mut weighted = Scores::new();
    let mut reasons = Vec::new();
    // The paper's score is the probability-weighted one; the draws' mean
    // stands in where the provider returned no log-probabilities.
    let weighted_result = stage.is("score", "weighted");
    for d in &run.panel.dimensions {
        let Some(dr) = draws.get(&d.key) else { continue };
        let w = mean(&dr.weighted);
        if let Some(m) = w.filter(|_| weighted_result).or_else(|| mean(&dr.scores)) {
            scores.insert(d.key.clone(), m);
        }
        if let Some(w) = w {
            weighted.insert(d.key.clone(), w);
        }
        if let Some(r) = &dr.reason {
            reasons.push(format!("{}: {r}", d.label()));
        }
    }
    if scores.is_empty() {
        return None;
    }
    let all = |m: &Scores| run.panel.dimensions.iter().all(|d| m.contains_key(&d.key));
    let overall = if run.panel.rates_overall() {
        // A dimension keyed `overall` is the overall; its weighted score keeps its key.
        scores.remove(OVERALL)
    } else if run.panel.overall {
        let overall = all(&scores).then(|| scores.values().sum::<f64>() / scores.len() as f64);
        if all(&weighted) {
            let o = weighted.values().sum::<f64>() / weighted.len() as f64;
            weighted.insert(OVERALL.into(), o);
        }
        overall
    } else {
        None
    };
    Some(Evaluation {
        scores,
        overall,
        justification: reasons.join("\n"),
        weighted_scores: (!weighted.is_empty()).then_some(weighted),
        ..Default::default()
    })
}

/// Each member's evaluation from its draws; how the scores came about.
fn record(run: &Run, stage: &Stage, draws: BTreeMap<usize, BTreeMap<String, Draws>>) -> Option<String> {
    let mut drawn = 0;
    let mut weighted = 0;
    for (&j, by_dim) in &draws {
        drawn += by_dim.values().map(|d| d.scores.len()).sum::<usize>();
        weighted += by_dim.values().filter(|d| !d.weighted.is_empty()).count();
        let ev = assemble(run, stage, by_dim);
        let last = by_dim.values().filter_map(|d| d.last_turn).max();
        let mut st = run.state();
        let a = &mut st.agents[j];
        a.own = ev.clone();
        a.progress.latest = ev;
        a.progress.latest_turn = last;
    }
    let judged = draws.len() * run.panel.dimensions.len();
    Some(if weighted > 0 {
        format!("probability-weighted scores for {weighted} of {judged} judge–dimension pairs; {drawn} replies read")
    } else {
        format!("no log-probabilities: mean of {drawn} sampled replies")
    })
}
