//! G-Eval: each judge scores every dimension on its own, following evaluation
//! steps written once per panel (or given in the panel), with the score
//! weighted by its probabilities when the provider returns them, and
//! otherwise averaged over `samples` replies. The reply gives a sentence or
//! two of reasoning, then the score, or (`reply = "score-first"`, the
//! paper's form) the score alone.
//!
//! Phases: `steps` (one turn per dimension without steps, by the first
//! judge; kept in the steps cache), an optional pause for a person to edit
//! them (`review_steps`), `scoring` (one turn per judge, dimension and
//! draw; `round` numbers the draws), then `aggregation` (means).

mod cache;
mod form;
mod prompts;

use std::collections::BTreeMap;

use futures::future::join_all;

pub use cache::{CachedSteps, StepsCache};
use form::FormScore;
pub(crate) use prompts::judge_line;

use crate::engine::command::Command;
use crate::engine::runtime::{Run, Spoken, TurnSpec};
use crate::engine::trim::Prompt;
use crate::engine::verdict::{DimensionScore, Text, Verdict};
use crate::panel::OVERALL;
use crate::provider::ProviderError;
use crate::session::event::{Evaluation, EventKind, Phase, Role, Scores, StepsSource};

/// The author of the pause that `review_steps` asks for.
pub const REVIEW_AUTHOR: &str = "g-eval (review_steps)";

/// Reply length of a steps turn at most.
const STEPS_TOKENS: u32 = 320;

pub(crate) async fn run(run: &Run) {
    write_steps(run).await;
    if run.stop.is_cancelled() {
        finish(run, BTreeMap::new());
        return;
    }
    if run.panel.protocol.flag("review_steps") && run.config.linger {
        run.apply_command(Command::Pause { author: REVIEW_AUTHOR.into() });
    }
    if !run.gate().await {
        finish(run, BTreeMap::new());
        return;
    }
    let steps = start_scoring(run);
    let draws = score(run, &steps).await;
    finish(run, draws);
}

/// Steps for every dimension: the panel's, the cache's, or a judge's.
pub(crate) async fn write_steps(run: &Run) {
    run.emit(EventKind::PhaseStarted { phase: Phase::Steps, group: None, round: None });
    let (name, group, spec) = {
        let st = run.state();
        let a = &st.agents[0];
        (a.name.clone(), a.group.clone(), a.spec.clone())
    };
    let binding = run.config.bindings.for_agent(&name).clone();
    let model = steps_model(run);
    let cache = run.config.steps_cache.as_deref().map(StepsCache::new);
    let (temperature, max_tokens) = run.agent_sampling(&spec);
    let text = Text { what: "the numbered evaluation steps" };
    let calls = run.panel.dimensions.iter().map(|d| {
        let (name, group, binding, cache, model, text) = (&name, &group, &binding, &cache, &model, &text);
        async move {
            if let Some(steps) = &d.steps {
                return Ok((steps.trim().to_string(), StepsSource::Panel, None, None));
            }
            let _held = match cache {
                Some(c) => Some(c.lock(&run.panel, d, model).await),
                None => None,
            };
            if let Some(hit) = cache.as_ref().and_then(|c| c.get(&run.panel, d, model)) {
                return Ok((hit.steps, StepsSource::Cache, hit.author, None));
            }
            if !run.gate().await {
                return Err(None);
            }
            let turn = TurnSpec {
                participant: name,
                group: Some(group),
                phase: Phase::Steps,
                round: None,
                role: Role::Agent,
                binding,
                sampling: (temperature, max_tokens.min(STEPS_TOKENS)),
                cancel: &run.stop,
                dimension: Some(&d.key),
                pair: None,
            };
            let messages = Prompt::fixed(prompts::steps_messages(&run.panel, d));
            match run.verdict_turn(text, turn, messages, None).await {
                Spoken::Evaluated { evaluation: steps, turn, .. } => {
                    if let Some(c) = cache {
                        c.put(&run.panel, d, model, &CachedSteps { steps: steps.clone(), author: None });
                    }
                    Ok((steps, StepsSource::Generated, None, Some(turn)))
                }
                Spoken::Unparsed { .. } => Err(Some(format!("{name} wrote no evaluation steps for {}", d.key))),
                Spoken::Failed(ProviderError::Cancelled) => Err(None),
                Spoken::Failed(e) => Err(Some(format!("{name}: evaluation steps for {}: {e}", d.key))),
            }
        }
    });
    let results = join_all(calls).await;
    for (d, result) in run.panel.dimensions.iter().zip(results) {
        match result {
            Ok((steps, source, author, turn)) => {
                run.state().steps.insert(d.key.clone(), steps.clone());
                run.emit(EventKind::EvaluationSteps { dimension: d.key.clone(), steps, source, author, turn });
            }
            Err(Some(why)) => run.fail(why),
            Err(None) => {}
        }
    }
}

/// The model that writes the steps, the first judge's: part of the key
/// they are kept under.
fn steps_model(run: &Run) -> crate::session::event::ModelRef {
    let name = run.state().agents[0].name.clone();
    run.config.bindings.for_agent(&name).model_ref()
}

/// From here on the steps are fixed: a person's edits are kept for the next runs.
pub(crate) fn start_scoring(run: &Run) -> BTreeMap<String, String> {
    let (steps, edited) = {
        let mut st = run.state();
        st.scoring = true;
        (st.steps.clone(), std::mem::take(&mut st.steps_edited))
    };
    if let Some(cache) = run.config.steps_cache.as_deref().map(StepsCache::new) {
        let model = steps_model(run);
        for (key, author) in edited {
            if let (Some(d), Some(s)) = (run.panel.dimensions.iter().find(|d| d.key == key), steps.get(&key)) {
                cache.put(&run.panel, d, &model, &CachedSteps { steps: s.clone(), author: Some(author) });
            }
        }
    }
    steps
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
async fn score(run: &Run, steps: &BTreeMap<String, String>) -> BTreeMap<usize, BTreeMap<String, Draws>> {
    run.emit(EventKind::PhaseStarted { phase: Phase::Scoring, group: None, round: None });
    let samples = u32::try_from(run.panel.protocol.integer("samples")).unwrap_or(1).max(1);
    let judges = run.state().agents.len();
    let jobs = (0..judges).flat_map(|j| run.panel.dimensions.iter().map(move |d| (j, d)));
    let results = join_all(jobs.map(|(j, d)| async move {
        let mut draws = Draws::default();
        let Some(steps) = steps.get(&d.key) else { return (j, d.key.clone(), draws) };
        draw(run, j, d, steps, 1, &mut draws).await;
        if draws.weighted.is_empty() && samples > 1 && !run.stop.is_cancelled() {
            let mut more: Vec<Draws> = vec![Draws::default(); samples as usize - 1];
            join_all(more.iter_mut().enumerate().map(|(k, m)| draw(run, j, d, steps, k as u32 + 2, m))).await;
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
async fn draw(run: &Run, judge: usize, d: &crate::panel::Dimension, steps: &str, number: u32, into: &mut Draws) {
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
        sampling: (scoring_temperature(run, &spec), reply_tokens(run)),
        cancel: &run.stop,
        dimension: Some(&d.key),
        pair: None,
    };
    let spoken = if score_first(run) {
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

/// Whether a scoring reply is the score alone (`reply = "score-first"`).
fn score_first(run: &Run) -> bool {
    run.panel.protocol.is("reply", "score-first")
}

/// The temperature of a scoring draw: the judge's own, or 1 with
/// `sample_temperature = "1"`.
fn scoring_temperature(run: &Run, judge: &crate::panel::AgentSpec) -> Option<f32> {
    if run.panel.protocol.is("sample_temperature", "1") { Some(1.0) } else { run.agent_sampling(judge).0 }
}

/// The reply length of a scoring turn (`reply_tokens`).
fn reply_tokens(run: &Run) -> u32 {
    u32::try_from(run.panel.protocol.integer("reply_tokens")).unwrap_or(96)
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// A judge's evaluation from its draws: per dimension the mean of the sampled
/// scores and of the weighted ones; `overall` the mean of the dimensions when
/// every dimension has a score, none with `overall = false`, and the
/// dimension's own where one is keyed `overall`.
fn assemble(run: &Run, draws: &BTreeMap<String, Draws>) -> Option<Evaluation> {
    let mut scores = Scores::new();
    let mut weighted = Scores::new();
    let mut reasons = Vec::new();
    // The paper's score is the probability-weighted one; the draws' mean
    // stands in where the provider returned no log-probabilities.
    let weighted_result = run.panel.protocol.is("score", "weighted");
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

/// Judges' evaluations, each group's mean and the panel's.
fn finish(run: &Run, draws: BTreeMap<usize, BTreeMap<String, Draws>>) {
    if run.quit.is_cancelled() {
        return;
    }
    let mut drawn = 0;
    let mut weighted = 0;
    for (&j, by_dim) in &draws {
        drawn += by_dim.values().map(|d| d.scores.len()).sum::<usize>();
        weighted += by_dim.values().filter(|d| !d.weighted.is_empty()).count();
        let ev = assemble(run, by_dim);
        let last = by_dim.values().filter_map(|d| d.last_turn).max();
        let mut st = run.state();
        let a = &mut st.agents[j];
        a.own = ev.clone();
        a.progress.latest = ev;
        a.progress.latest_turn = last;
    }
    for g in &run.panel.groups {
        run.emit_finals(&g.name);
    }
    run.emit(EventKind::PhaseStarted { phase: Phase::Aggregation, group: None, round: None });
    let judged = draws.len() * run.panel.dimensions.len();
    let how = if weighted > 0 {
        format!("probability-weighted scores for {weighted} of {judged} judge–dimension pairs; {drawn} replies read")
    } else {
        format!("no log-probabilities: mean of {drawn} sampled replies")
    };
    let mut notes = Vec::new();
    for g in &run.panel.groups {
        let empty = run.base_result(&run.state(), Some(&g.name)).is_empty();
        let note = if empty {
            format!("{}: no result: no readable score.", g.name)
        } else {
            format!("{}: G-Eval, {how}.", g.name)
        };
        run.emit_aggregate(Some(&g.name), note.clone(), "mean");
        notes.push(note);
    }
    run.emit_aggregate(None, notes.join("\n"), "mean");
    run.state().finished = true;
}
