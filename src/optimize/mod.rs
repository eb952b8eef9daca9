//! `moot optimize`: the judge-prompt optimisation loop (PROTOCOLS.md §4).
//!
//! Each iteration draws examples per cluster from the training split, runs
//! the panel's judge with the current prompt on them and on the held-out
//! split, scores the agreement with the human labels (S, on both), stops at
//! the threshold or the iteration limit, and otherwise asks for feedback on
//! the picked examples and for a rewrite of the prompt. With `review` on, a
//! person edits the feedback, accepts, edits or rejects each rewrite, rolls
//! back, pins or drops examples, and stops with any iteration's prompt. The
//! result is the prompt of the best held-out S (or the one a person chose).
//! With a test split (set apart before the loop and judged only after it),
//! the chosen prompt, the initial prompt and (with `few_shot`) the paper's
//! few-shot prompt are scored on it: that is the score to report, since the
//! held-out S chose the prompt. Every step is an [`OptKind`] event in the
//! run's log.

pub mod fields;
pub mod log;
pub mod prompt;
pub mod requests;
pub mod sample;
pub mod score;
pub mod view;

mod conditions;
mod journal;
mod judge;
pub mod output;
pub mod resume;
mod review;
mod start;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::engine::Bindings;
use crate::item::Item;
use crate::panel::Panel;
use crate::provider::retry::RetryPolicy;
use crate::session::event::Role;
pub use log::{Condition, Decision, OptEvent, OptKind, OptRecorder, OptStatus, Split};
pub use prompt::JudgePrompt;
pub use score::Objective;
pub use start::opening;
use start::{failed_start, prepare, started_kind};

/// A labelled example: the item the judge sees and the human label.
#[derive(Debug, Clone)]
pub struct Example {
    pub item: Item,
    pub label: f64,
}

/// Everything a loop needs.
#[derive(Clone, Debug)]
pub struct OptimizeConfig {
    pub run_id: String,
    /// The input panel; its judge text is the first prompt.
    pub panel: Arc<Panel>,
    /// How the panel was named on the command line (for the log).
    pub panel_arg: String,
    pub data: String,
    pub examples: Vec<Example>,
    /// The dimension (or `overall`) whose label is compared.
    pub dimension: String,
    pub objective: Objective,
    pub threshold: f64,
    pub max_iter: u32,
    /// Share of the examples held out (never shown to feedback or rewrite).
    pub holdout: f64,
    pub clusters: usize,
    pub per_cluster: usize,
    pub seed: u64,
    pub bindings: Bindings,
    pub retry: RetryPolicy,
    /// Judge runs at once.
    pub concurrency: usize,
    /// Wait for a person at each feedback and rewrite.
    pub review: bool,
    /// The name put on a person's decisions.
    pub author: String,
    /// Where the best prompt's panel is written (`None`: not written).
    pub output: Option<PathBuf>,
    /// The test split, clusters by an item field, the few-shot baseline.
    pub design: Design,
}

/// The parts of the paper's experiments beside the loop itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Design {
    /// Share of the examples set apart as the test split (0: none).
    pub test: f64,
    /// Cluster the training examples by an item field's value instead of by
    /// their text.
    pub cluster_by: Option<ClusterBy>,
    /// Score the few-shot baseline: the initial prompt with the first
    /// iteration's picked examples and their labels.
    pub few_shot: bool,
    /// `paper` when the run took the paper's settings.
    pub preset: Option<String>,
    /// The command line's options, recorded so that the run can be resumed.
    pub options: Option<resume::RunOptions>,
}

/// An item field and each example's value of it (in the order of the examples).
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterBy {
    pub field: String,
    pub values: Vec<String>,
}

/// What a person can tell a running loop.
#[derive(Debug, Clone, PartialEq)]
pub enum OptCommand {
    /// Go on at a review point with what is shown (the feedback as written).
    Continue,
    /// Replace the feedback before the rewrite.
    EditFeedback(String),
    /// Take the proposed rewrite.
    Accept,
    /// Take this prompt instead of the proposed rewrite.
    AcceptEdited(JudgePrompt),
    /// Keep the current prompt.
    Reject,
    /// Continue from an earlier iteration's prompt.
    RollBack(u32),
    Pin(String),
    Unpin(String),
    /// Leave an example out of later draws (another from its cluster replaces it).
    Drop(String),
    /// End now with the best prompt, or with this iteration's.
    Stop {
        choose: Option<u32>,
    },
}

/// One finished iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct IterationResult {
    pub iteration: u32,
    pub prompt: JudgePrompt,
    pub picked: Option<f64>,
    pub holdout: Option<f64>,
}

/// How a loop ended.
#[derive(Debug, Clone, PartialEq)]
pub struct OptOutcome {
    pub status: OptStatus,
    pub reason: String,
    pub iterations: Vec<IterationResult>,
    /// The chosen iteration and its prompt.
    pub best: Option<u32>,
    pub prompt: Option<JudgePrompt>,
    pub output: Option<PathBuf>,
    pub error: Option<String>,
    /// The first error met writing the log, if any.
    pub write_error: Option<String>,
    /// The chosen prompt's S on the test split (none without one).
    pub test: Option<f64>,
}

/// The best iteration by held-out S (the earliest of equals).
pub fn best_of(iterations: &[IterationResult]) -> Option<&IterationResult> {
    iterations.iter().filter(|r| r.holdout.is_some()).fold(None, |best: Option<&IterationResult>, r| match best {
        Some(b) if b.holdout >= r.holdout => Some(b),
        _ => Some(r),
    })
}

/// Where a review point leads.
enum Next {
    /// Go on (with the feedback or decision taken).
    Go,
    /// Next iteration from this iteration's prompt.
    RollBack(u32),
    Stop(Option<u32>),
}

struct Loop {
    config: OptimizeConfig,
    rec: OptRecorder,
    commands: UnboundedReceiver<OptCommand>,
    commands_open: bool,
    /// Training and held-out example indices; cluster of each training example.
    train: Vec<usize>,
    holdout: Vec<usize>,
    /// Judged only after the loop.
    test: Vec<usize>,
    clusters: Vec<usize>,
    /// The first iteration's drawn examples (the few-shot prompt's).
    first_picks: Vec<usize>,
    /// Stop commands received (one during the test phase ends it).
    stops: u32,
    /// Positions in `train`.
    pinned: BTreeSet<usize>,
    dropped: BTreeSet<usize>,
    results: Vec<IterationResult>,
    /// The current iteration's held-out judgements.
    held_results: Vec<judge::Judgement>,
    cancel: CancellationToken,
    stop: Option<Option<u32>>,
    rollback: Option<u32>,
    /// Resuming: the log that answers what it holds.
    journal: Option<journal::Journal>,
}

const HUMAN: &str = "human";

/// Run the loop to its end, recording every step.
pub async fn optimize(config: OptimizeConfig, rec: OptRecorder, commands: UnboundedReceiver<OptCommand>) -> OptOutcome {
    run_loop(config, rec, None, commands).await
}

/// Go on with an interrupted run: `rec` and `journal` come from
/// [`OptRecorder::resume`] on its log, and `config` is the run's own (see
/// [`resume::check`]). What the log holds is not asked again.
pub async fn optimize_resumed(
    config: OptimizeConfig,
    (rec, journal): (OptRecorder, journal::Journal),
    commands: UnboundedReceiver<OptCommand>,
) -> OptOutcome {
    run_loop(config, rec, Some(journal), commands).await
}

async fn run_loop(
    config: OptimizeConfig,
    rec: OptRecorder,
    journal: Option<journal::Journal>,
    commands: UnboundedReceiver<OptCommand>,
) -> OptOutcome {
    let (train, holdout, test, clusters) = match prepare(&config) {
        Ok(parts) => parts,
        Err(e) => return failed_start(&config, &rec, e),
    };
    let mut lp = Loop {
        config,
        rec,
        commands,
        commands_open: true,
        train,
        holdout,
        test,
        clusters,
        first_picks: Vec::new(),
        stops: 0,
        pinned: BTreeSet::new(),
        dropped: BTreeSet::new(),
        results: Vec::new(),
        held_results: Vec::new(),
        cancel: CancellationToken::new(),
        stop: None,
        rollback: None,
        journal,
    };
    lp.started();
    let (status, reason, error) = lp.run().await;
    let (chosen, chosen_by) = lp.chosen();
    let test = lp.conditions(chosen.as_ref()).await;
    lp.finish(status, reason, error, (chosen, chosen_by), test)
}

/// The text an example is clustered by: its context, reference and content.
pub fn example_text(item: &Item) -> String {
    [item.context.as_deref(), item.reference.as_deref(), Some(item.content.as_str())]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join("\n")
}

impl Loop {
    fn started(&self) {
        self.rec.emit(started_kind(&self.config, &self.train, &self.holdout, &self.test, &self.clusters));
    }

    async fn run(&mut self) -> (OptStatus, String, Option<String>) {
        let mut prompt = JudgePrompt::of(&self.config.panel);
        let mut from: Option<u32> = None;
        for iteration in 1..=self.config.max_iter {
            self.drain();
            if let Some(stop) = self.stop {
                return self.stopped(stop);
            }
            self.rec.emit(OptKind::IterationStarted { iteration, prompt: prompt.clone(), from });
            let picks = self.pick(iteration);
            let Some((picked, picked_results)) = self.judge_all(iteration, &prompt, &picks).await else {
                return self.stopped(self.stop.unwrap_or(None));
            };
            let scored = self.score(iteration, &prompt, &picked_results, &picked);
            self.drain();
            if let Some(stop) = self.stop {
                return self.stopped(stop);
            }
            if scored.is_some_and(|s| s >= self.config.threshold) {
                return (
                    OptStatus::Completed,
                    format!("held-out S reached the threshold {}", self.config.threshold),
                    None,
                );
            }
            if iteration == self.config.max_iter {
                break;
            }
            // Feedback on the picked examples only.
            let judged: Vec<requests::Judged<'_>> = picked
                .iter()
                .zip(&picked_results)
                .map(|(&i, r)| requests::Judged {
                    item: &self.config.examples[i].item,
                    judge: r.value,
                    human: self.config.examples[i].label,
                    error: r.error.as_deref(),
                    reason: r.reason.as_deref(),
                })
                .collect();
            let messages = requests::feedback_messages(&self.config.panel, &prompt, &self.config.dimension, &judged);
            let mut feedback = match self.ask(iteration, Role::Feedback, messages).await {
                Ok(text) => text,
                Err(e) => return self.call_failed(iteration, Role::Feedback, e),
            };
            self.rec.emit(OptKind::FeedbackWritten {
                iteration,
                text: feedback.clone(),
                by: "feedback".into(),
                author: None,
            });
            if self.config.review {
                match self.review_feedback(iteration, &mut feedback).await {
                    Next::Go => {}
                    Next::RollBack(to) => {
                        (prompt, from) = (self.prompt_of(to), Some(to));
                        continue;
                    }
                    Next::Stop(choose) => return self.stopped(choose),
                }
            }
            let reply = match self.ask(iteration, Role::Rewriter, requests::rewrite_messages(&prompt, &feedback)).await
            {
                Ok(text) => text,
                Err(e) => return self.call_failed(iteration, Role::Rewriter, e),
            };
            let proposed = match JudgePrompt::parse(&reply) {
                Ok(p) => p,
                Err(error) => {
                    self.rec.emit(OptKind::RewriteFailed { iteration, error, reply: Some(reply) });
                    from = Some(iteration);
                    if let Some(to) = self.rollback.take() {
                        (prompt, from) = (self.prompt_of(to), Some(to));
                    }
                    continue;
                }
            };
            self.rec.emit(OptKind::RewriteProposed { iteration, prompt: proposed.clone() });
            let (next, decision) = if self.config.review {
                match self.review_rewrite(iteration, &proposed).await {
                    Ok(p) => p,
                    Err(Next::RollBack(to)) => {
                        (prompt, from) = (self.prompt_of(to), Some(to));
                        continue;
                    }
                    Err(Next::Stop(choose)) => return self.stopped(choose),
                    Err(Next::Go) => (proposed, Decision::Accepted),
                }
            } else {
                self.rec.emit(OptKind::RewriteDecided {
                    iteration,
                    decision: Decision::Accepted,
                    prompt: Some(proposed.clone()),
                    author: "auto".into(),
                });
                (proposed, Decision::Accepted)
            };
            let _ = decision;
            (prompt, from) = (next, Some(iteration));
        }
        (OptStatus::Completed, format!("iteration limit {} reached", self.config.max_iter), None)
    }

    fn prompt_of(&self, iteration: u32) -> JudgePrompt {
        self.results
            .iter()
            .find(|r| r.iteration == iteration)
            .map(|r| r.prompt.clone())
            .unwrap_or_else(|| JudgePrompt::of(&self.config.panel))
    }

    fn stopped(&self, choose: Option<u32>) -> (OptStatus, String, Option<String>) {
        let reason = match choose {
            Some(i) => format!("stopped by a person, who chose iteration {i}"),
            None => "stopped by a person".into(),
        };
        (OptStatus::Stopped, reason, None)
    }

    fn call_failed(&self, iteration: u32, role: Role, error: String) -> (OptStatus, String, Option<String>) {
        if self.cancel.is_cancelled() {
            return self.stopped(self.stop.unwrap_or(None));
        }
        self.rec.emit(OptKind::CallFailed { iteration, role: role.as_str().into(), error: error.clone() });
        (OptStatus::Failed, format!("the {} call failed", role.label()), Some(error))
    }

    fn pick(&mut self, iteration: u32) -> Vec<usize> {
        let drawn = sample::draw(
            &self.clusters,
            self.config.per_cluster,
            &self.pinned,
            &self.dropped,
            self.config.seed,
            iteration,
        );
        let picks = drawn
            .iter()
            .map(|&(pos, cluster, by)| log::Pick {
                id: self.config.examples[self.train[pos]].item.id.clone(),
                cluster,
                by,
            })
            .collect();
        self.rec.emit(OptKind::ExamplesPicked { iteration, picks });
        let picked: Vec<usize> = drawn.into_iter().map(|(pos, _, _)| self.train[pos]).collect();
        if self.first_picks.is_empty() {
            self.first_picks = picked.clone();
        }
        picked
    }

    async fn ask(
        &mut self,
        iteration: u32,
        role: Role,
        messages: Vec<crate::provider::ChatMessage>,
    ) -> Result<String, String> {
        if let Some(answer) = self.journal.as_ref().and_then(|j| j.reply(role, iteration)) {
            self.drain();
            if self.stop.is_some() {
                return Err("stopped".into());
            }
            return answer;
        }
        let panel = self.config.panel.clone();
        let binding = self.config.bindings.for_role(role).clone();
        let (retry, cancel) = (self.config.retry, self.cancel.clone());
        let call = requests::ask(&panel, role, &binding, messages, &retry, &cancel);
        tokio::pin!(call);
        loop {
            tokio::select! {
                r = &mut call => return r,
                // Look again once the log is used up.
                () = tokio::time::sleep(std::time::Duration::from_millis(200)), if self.log_went_on() => {}
                cmd = self.commands.recv(), if self.commands_open && !self.log_went_on() => self.apply(cmd),
            }
        }
    }
}
