//! Running the panel's judge, with an iteration's prompt, on the picked and
//! held-out examples (one engine run per example, nothing written to disk),
//! and scoring the agreement.

use std::sync::Arc;

use futures::StreamExt;

use super::log::{OptKind, Split};
use super::prompt::JudgePrompt;
use super::{IterationResult, Loop, OptimizeConfig, score};
use crate::engine::{self, EngineConfig, EngineHandle, Recorder};
use crate::panel::Panel;
use crate::session::EventKind;
use crate::session::event::EndStatus;

/// The judge on one example: its value or why there is none, and its own
/// words on the example (shown to the feedback model for picked examples).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Judgement {
    pub value: Option<f64>,
    pub error: Option<String>,
    pub reason: Option<String>,
}

/// Longest judge reason kept, in characters.
const REASON_CHARS: usize = 400;

/// What the judge said about the item: the last readable evaluation's
/// justification, else the prose of its last reply.
fn judge_reason(events: &mut tokio::sync::mpsc::UnboundedReceiver<crate::session::Event>) -> Option<String> {
    let mut last = None;
    while let Ok(e) = events.try_recv() {
        if let EventKind::TurnCompleted { text, evaluation, .. } = e.kind {
            let words = match evaluation {
                Some(ev) if !ev.justification.trim().is_empty() => ev.justification,
                _ => crate::engine::prompts::reply_words(&text, true, true).to_string(),
            };
            let words = words.trim();
            if !words.is_empty() {
                last = Some(words.chars().take(REASON_CHARS).collect());
            }
        }
    }
    last
}

/// Run the panel on one example and read the compared dimension from its result.
pub(crate) async fn judge_one(config: &OptimizeConfig, panel: Arc<Panel>, index: usize) -> Judgement {
    let example = &config.examples[index];
    let mut ec = EngineConfig::new(panel, example.item.clone(), config.bindings.clone());
    ec.session_id = format!("{}-{}", config.run_id, example.item.id);
    ec.seed = config.seed;
    ec.retry = config.retry;
    let (_handle, rx) = EngineHandle::channel();
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let outcome = engine::run(ec, Recorder::new(None, Some(tx)), rx).await;
    let reason = judge_reason(&mut events);
    if outcome.status != EndStatus::Completed {
        let why = outcome.error.or(outcome.reason).unwrap_or_else(|| format!("the run ended {:?}", outcome.status));
        return Judgement { value: None, error: Some(why), reason };
    }
    let value = outcome.result.as_ref().and_then(|r| r.get(&config.dimension).copied());
    match value {
        Some(v) if v.is_finite() => Judgement { value: Some(v), error: None, reason },
        _ => Judgement { value: None, error: Some(format!("the judge gave no `{}` score", config.dimension)), reason },
    }
}

impl Loop {
    /// Judge the picked and the held-out examples; `None` when a stop came first.
    pub(super) async fn judge_all(
        &mut self,
        iteration: u32,
        prompt: &JudgePrompt,
        picks: &[usize],
    ) -> Option<(Vec<usize>, Vec<Judgement>)> {
        let panel = Arc::new(prompt.apply(&self.config.panel));
        let jobs: Vec<(Split, usize)> = picks
            .iter()
            .map(|&i| (Split::Picked, i))
            .chain(self.holdout.iter().map(|&i| (Split::Holdout, i)))
            .collect();
        let rec = self.rec.clone();
        let config = self.config.clone();
        let results = self
            .judge_jobs(panel, Some(iteration), &jobs, |(split, i), j| {
                rec.emit(OptKind::Judged {
                    iteration,
                    split,
                    id: config.examples[i].item.id.clone(),
                    judge: j.value,
                    human: config.examples[i].label,
                    error: j.error.clone(),
                    reason: j.reason.clone(),
                });
            })
            .await?;
        let (picked, held): (Vec<_>, Vec<_>) =
            jobs.iter().zip(results).partition(|((split, _), _)| *split == Split::Picked);
        let picked_results: Vec<Judgement> = picked.into_iter().map(|(_, r)| r).collect();
        self.held_results = held.into_iter().map(|(_, r)| r).collect();
        Some((picks.to_vec(), picked_results))
    }

    /// Judge `idx` with `panel`, nothing recorded per example; `None` when a
    /// stop comes meanwhile.
    pub(super) async fn judge_many(&mut self, panel: Arc<Panel>, idx: &[usize]) -> Option<Vec<Judgement>> {
        let jobs: Vec<(Split, usize)> = idx.iter().map(|&i| (Split::Test, i)).collect();
        self.judge_jobs(panel, None, &jobs, |_, _| {}).await
    }

    /// Judge each job's example with `panel` (`concurrency` at once), calling
    /// `each` as each is judged, while applying people's commands; `None`
    /// when a stop comes meanwhile.
    async fn judge_jobs(
        &mut self,
        panel: Arc<Panel>,
        iteration: Option<u32>,
        jobs: &[(Split, usize)],
        each: impl Fn((Split, usize), &Judgement),
    ) -> Option<Vec<Judgement>> {
        let config = self.config.clone();
        let concurrency = config.concurrency.max(1);
        let each = &each;
        let journal = self.journal.clone();
        let work = async {
            let (config, journal) = (&config, &journal);
            let results: Vec<Judgement> = futures::stream::iter(jobs.iter().copied())
                .map(|(split, i)| {
                    let panel = panel.clone();
                    async move {
                        let id = &config.examples[i].item.id;
                        let logged = journal.as_ref().and_then(|j| Some(j.judged(iteration?, split, id)).flatten());
                        let j = match logged {
                            Some(j) => j,
                            // A stop the log holds ends this judging: what it did not judge is not asked.
                            None if journal.as_ref().is_some_and(|j| j.stopping()) => return Judgement::default(),
                            None => judge_one(config, panel, i).await,
                        };
                        each((split, i), &j);
                        j
                    }
                })
                .buffered(concurrency)
                .collect()
                .await;
            results
        };
        tokio::pin!(work);
        let stops = self.stops;
        loop {
            tokio::select! {
                r = &mut work => {
                    // A stop the log holds after one of these judgements.
                    self.drain();
                    return (self.stops == stops).then_some(r);
                }
                // Look again once the log is used up.
                () = tokio::time::sleep(std::time::Duration::from_millis(200)), if self.log_went_on() => {}
                cmd = self.commands.recv(), if self.commands_open && !self.log_went_on() => {
                    self.apply(cmd);
                    if self.stops > stops {
                        return None;
                    }
                }
            }
        }
    }

    /// S on the picked and held-out examples; records the iteration. Returns held-out S.
    pub(super) fn score(
        &mut self,
        iteration: u32,
        prompt: &JudgePrompt,
        picked_results: &[Judgement],
        picked: &[usize],
    ) -> Option<f64> {
        let c = &self.config;
        let pairs = |idx: &[usize], res: &[Judgement]| -> Vec<(Option<f64>, f64)> {
            idx.iter().zip(res).map(|(&i, r)| (r.value, c.examples[i].label)).collect()
        };
        let p = score::score(c.objective, &pairs(picked, picked_results), &c.panel.scale);
        let h = score::score(c.objective, &pairs(&self.holdout, &self.held_results), &c.panel.scale);
        let failures = picked_results.iter().chain(&self.held_results).filter(|r| r.value.is_none()).count();
        self.rec.emit(OptKind::Scored {
            iteration,
            objective: c.objective.as_str().into(),
            picked: p.as_ref().ok().copied(),
            holdout: h.as_ref().ok().copied(),
            picked_error: p.as_ref().err().cloned(),
            holdout_error: h.as_ref().err().cloned(),
            failures,
        });
        let holdout = h.ok();
        self.results.push(IterationResult { iteration, prompt: prompt.clone(), picked: p.ok(), holdout });
        holdout
    }
}
