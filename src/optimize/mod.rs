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

mod journal;
mod judge;
pub mod output;
pub mod resume;

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

/// The training, held-out and test splits (example indices) and the
/// training examples' clusters.
type Parts = (Vec<usize>, Vec<usize>, Vec<usize>, Vec<usize>);

fn prepare(config: &OptimizeConfig) -> Result<Parts, String> {
    let (train, holdout, test) =
        sample::split_three(config.examples.len(), config.holdout, config.design.test, config.seed);
    let clusters = match &config.design.cluster_by {
        Some(by) if by.values.len() != config.examples.len() => {
            Err(format!("{} values of `{}` for {} examples", by.values.len(), by.field, config.examples.len()))
        }
        Some(by) => Ok(sample::cluster_by_value(&train.iter().map(|&i| by.values[i].clone()).collect::<Vec<_>>())),
        None => {
            let texts: Vec<String> = train.iter().map(|&i| example_text(&config.examples[i].item)).collect();
            sample::cluster(&texts, config.clusters, config.seed)
        }
    }?;
    Ok((train, holdout, test, clusters))
}

/// The first event a run with `config` records (splits and clusters
/// computed as the run computes them).
pub fn opening(config: &OptimizeConfig) -> Result<OptKind, String> {
    let (train, holdout, test, clusters) = prepare(config)?;
    Ok(started_kind(config, &train, &holdout, &test, &clusters))
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

fn failed_start(config: &OptimizeConfig, rec: &OptRecorder, error: String) -> OptOutcome {
    rec.emit(OptKind::OptimizeEnded {
        status: OptStatus::Failed,
        reason: "could not start".into(),
        best: None,
        best_holdout: None,
        chosen_by: "best".into(),
        output: None,
        error: Some(error.clone()),
        test: None,
    });
    let _ = config;
    OptOutcome {
        status: OptStatus::Failed,
        reason: "could not start".into(),
        iterations: Vec::new(),
        best: None,
        prompt: None,
        output: None,
        error: Some(error),
        write_error: rec.write_error(),
        test: None,
    }
}

/// The `optimize_started` event of a run with `config`.
fn started_kind(
    config: &OptimizeConfig,
    train: &[usize],
    holdout: &[usize],
    test: &[usize],
    clusters: &[usize],
) -> OptKind {
    let c = config;
    let mut models = std::collections::BTreeMap::new();
    let judge = c.panel.agents().next().map_or(&c.bindings.default, |(_, a)| c.bindings.for_agent(&a.name));
    models.insert("judge".to_string(), judge.model_ref());
    for role in Role::OPTIMIZE {
        models.insert(role.as_str().to_string(), c.bindings.for_role(role).model_ref());
    }
    OptKind::OptimizeStarted {
        run_id: c.run_id.clone(),
        schema_version: log::OPTIMIZE_SCHEMA_VERSION,
        moot_version: env!("CARGO_PKG_VERSION").to_string(),
        panel: c.panel_arg.clone(),
        data: c.data.clone(),
        dimension: c.dimension.clone(),
        scale_min: c.panel.scale.min,
        scale_max: c.panel.scale.max,
        objective: c.objective.as_str().to_string(),
        threshold: c.threshold,
        max_iter: c.max_iter,
        seed: c.seed,
        per_cluster: c.per_cluster,
        train: train
            .iter()
            .zip(clusters)
            .map(|(&i, &cluster)| log::ExampleRef { id: c.examples[i].item.id.clone(), cluster })
            .collect(),
        holdout: holdout.iter().map(|&i| c.examples[i].item.id.clone()).collect(),
        models,
        prompt: JudgePrompt::of(&c.panel),
        review: c.review,
        test: test.iter().map(|&i| c.examples[i].item.id.clone()).collect(),
        cluster_by: c.design.cluster_by.as_ref().map(|b| b.field.clone()),
        few_shot: c.design.few_shot,
        preset: c.design.preset.clone(),
        options: c.design.options.clone(),
    }
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

    /// Apply a command that is not an answer to a review point.
    fn apply(&mut self, cmd: Option<OptCommand>) {
        let Some(cmd) = cmd else {
            self.commands_open = false;
            return;
        };
        let position = |lp: &Self, id: &str| lp.train.iter().position(|&i| lp.config.examples[i].item.id == id);
        match cmd {
            OptCommand::Pin(id) => {
                if let Some(p) = position(self, &id) {
                    self.pinned.insert(p);
                    self.dropped.remove(&p);
                    self.rec.emit(OptKind::ExamplePinned { id, author: self.config.author.clone() });
                }
            }
            OptCommand::Unpin(id) => {
                if let Some(p) = position(self, &id)
                    && self.pinned.remove(&p)
                {
                    self.rec.emit(OptKind::ExampleUnpinned { id, author: self.config.author.clone() });
                }
            }
            OptCommand::Drop(id) => {
                if let Some(p) = position(self, &id) {
                    self.pinned.remove(&p);
                    self.dropped.insert(p);
                    self.rec.emit(OptKind::ExampleDropped { id, author: self.config.author.clone() });
                }
            }
            OptCommand::RollBack(to) => {
                if self.results.iter().any(|r| r.iteration == to) {
                    self.rollback = Some(to);
                    self.rec.emit(OptKind::RolledBack { to, author: self.config.author.clone() });
                }
            }
            OptCommand::Stop { choose } => {
                let choose = choose.filter(|i| self.results.iter().any(|r| r.iteration == *i));
                if self.stop.is_none() {
                    self.rec.emit(OptKind::StopRequested { author: self.config.author.clone(), choose });
                }
                self.stop = Some(choose);
                self.stops += 1;
                self.cancel.cancel();
            }
            // Answers to review points arriving at another time are ignored.
            OptCommand::Continue
            | OptCommand::EditFeedback(_)
            | OptCommand::Accept
            | OptCommand::AcceptEdited(_)
            | OptCommand::Reject => {}
        }
    }

    /// The next action of a person that the log holds, released by the
    /// event it followed.
    fn replayed(&self) -> Option<OptCommand> {
        self.journal.as_ref().and_then(|j| j.next_command())
    }

    /// Whether the log went on past the review point the loop is at (where
    /// a person went on without a recorded action).
    fn log_went_on(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| j.ahead())
    }

    /// Apply the commands waiting now (the log's first).
    fn drain(&mut self) {
        while let Some(cmd) = self.replayed() {
            self.apply(Some(cmd));
        }
        // A person's new commands wait until the log is used up.
        if self.log_went_on() {
            return;
        }
        while let Ok(cmd) = self.commands.try_recv() {
            self.apply(Some(cmd));
        }
    }

    /// Wait for the next command (`None`: nobody can send one any more).
    async fn next_command(&mut self) -> Option<OptCommand> {
        if let Some(cmd) = self.replayed() {
            return Some(cmd);
        }
        if !self.commands_open {
            return None;
        }
        let cmd = self.commands.recv().await;
        if cmd.is_none() {
            self.commands_open = false;
        }
        cmd
    }

    async fn review_feedback(&mut self, iteration: u32, feedback: &mut String) -> Next {
        loop {
            if let Some(stop) = self.stop {
                return Next::Stop(stop);
            }
            if let Some(to) = self.rollback.take() {
                return Next::RollBack(to);
            }
            let cmd = match self.replayed() {
                Some(cmd) => Some(cmd),
                None if self.log_went_on() => return Next::Go,
                None => self.next_command().await,
            };
            match cmd {
                // Nobody can answer any more: end with the best prompt.
                None => return Next::Stop(None),
                Some(OptCommand::Continue) => return Next::Go,
                Some(OptCommand::EditFeedback(text)) => {
                    *feedback = text.clone();
                    self.rec.emit(OptKind::FeedbackWritten {
                        iteration,
                        text,
                        by: HUMAN.into(),
                        author: Some(self.config.author.clone()),
                    });
                    return Next::Go;
                }
                other => self.apply(other),
            }
        }
    }

    async fn review_rewrite(
        &mut self,
        iteration: u32,
        proposed: &JudgePrompt,
    ) -> Result<(JudgePrompt, Decision), Next> {
        let current =
            self.results.last().map(|r| r.prompt.clone()).unwrap_or_else(|| JudgePrompt::of(&self.config.panel));
        loop {
            if let Some(stop) = self.stop {
                return Err(Next::Stop(stop));
            }
            if let Some(to) = self.rollback.take() {
                return Err(Next::RollBack(to));
            }
            let (decision, prompt) = match self.next_command().await {
                None => return Err(Next::Stop(None)),
                Some(OptCommand::Accept) | Some(OptCommand::Continue) => (Decision::Accepted, proposed.clone()),
                Some(OptCommand::AcceptEdited(p)) => (Decision::Edited, p),
                Some(OptCommand::Reject) => (Decision::Rejected, current.clone()),
                other => {
                    self.apply(other);
                    continue;
                }
            };
            let author = self.config.author.clone();
            self.rec.emit(OptKind::RewriteDecided {
                iteration,
                decision,
                prompt: (decision != Decision::Rejected).then(|| prompt.clone()),
                author,
            });
            return Ok((prompt, decision));
        }
    }

    /// The result: the iteration a person chose, else the best held-out S.
    fn chosen(&self) -> (Option<IterationResult>, &'static str) {
        let chosen = match self.stop {
            Some(Some(i)) => self.results.iter().find(|r| r.iteration == i),
            _ => None,
        };
        let chosen_by = if chosen.is_some() { "human" } else { "best" };
        (chosen.or_else(|| best_of(&self.results)).cloned(), chosen_by)
    }

    /// The paper's conditions after the loop: on the test split, the
    /// initial, few-shot and chosen prompts; with no test split, the few-shot
    /// prompt on the held-out split (the others have their held-out S).
    /// Returns the chosen prompt's test S.
    async fn conditions(&mut self, chosen: Option<&IterationResult>) -> Option<f64> {
        let initial = JudgePrompt::of(&self.config.panel);
        let few_shot = (self.config.design.few_shot && !self.first_picks.is_empty()).then(|| {
            let shots: Vec<(&Item, f64)> = self
                .first_picks
                .iter()
                .map(|&i| (&self.config.examples[i].item, self.config.examples[i].label))
                .collect();
            initial.with_examples(&shots, &self.config.dimension)
        });
        if self.test.is_empty() {
            if let Some(p) = few_shot {
                let held = self.holdout.clone();
                self.condition(Condition::FewShot, None, Split::Holdout, p, &held, true).await;
            }
            return None;
        }
        let test = self.test.clone();
        let mut scored: Vec<(JudgePrompt, Option<f64>)> = Vec::new();
        let mut conditions = vec![(Condition::Initial, Some(1), initial, false)];
        conditions.extend(few_shot.map(|p| (Condition::FewShot, None, p, true)));
        conditions.extend(chosen.map(|r| (Condition::Chosen, Some(r.iteration), r.prompt.clone(), false)));
        let mut chosen_test = None;
        for (condition, iteration, prompt, show) in conditions {
            // The same prompt is judged once (the chosen one is often the initial one).
            let score = match scored.iter().find(|(p, _)| *p == prompt) {
                Some((_, s)) => {
                    let s = *s;
                    self.rec.emit(OptKind::ConditionScored {
                        condition,
                        iteration,
                        split: Split::Test,
                        objective: self.config.objective.as_str().into(),
                        score: s,
                        error: s.is_none().then(|| "as the same prompt above".into()),
                        failures: 0,
                        prompt: None,
                        rows: Vec::new(),
                    });
                    Some(s)
                }
                None => self.condition(condition, iteration, Split::Test, prompt.clone(), &test, show).await,
            };
            let Some(score) = score else { break };
            scored.push((prompt, score));
            if condition == Condition::Chosen {
                chosen_test = score;
            }
        }
        chosen_test
    }

    /// Judge `idx` with `prompt` and record the condition's S; `None` when a
    /// stop came first (else the S, itself `None` when there is none).
    async fn condition(
        &mut self,
        condition: Condition,
        iteration: Option<u32>,
        split: Split,
        prompt: JudgePrompt,
        idx: &[usize],
        show: bool,
    ) -> Option<Option<f64>> {
        let results = match self.logged_condition(condition, split, idx) {
            Some(results) => results,
            None => self.judge_many(Arc::new(prompt.apply(&self.config.panel)), idx).await?,
        };
        let c = &self.config;
        let pairs: Vec<(Option<f64>, f64)> =
            idx.iter().zip(&results).map(|(&i, r)| (r.value, c.examples[i].label)).collect();
        let s = score::score(c.objective, &pairs, &c.panel.scale);
        self.rec.emit(OptKind::ConditionScored {
            condition,
            iteration,
            split,
            objective: c.objective.as_str().into(),
            score: s.as_ref().ok().copied(),
            error: s.as_ref().err().cloned(),
            failures: results.iter().filter(|r| r.value.is_none()).count(),
            prompt: show.then_some(prompt),
            rows: idx
                .iter()
                .zip(&results)
                .map(|(&i, r)| log::ConditionRow {
                    id: c.examples[i].item.id.clone(),
                    judge: r.value,
                    human: c.examples[i].label,
                    error: r.error.clone(),
                })
                .collect(),
        });
        Some(s.ok())
    }

    /// A condition's judgements as the log holds them, when it scored it
    /// on these examples.
    fn logged_condition(&self, condition: Condition, split: Split, idx: &[usize]) -> Option<Vec<judge::Judgement>> {
        let rows = self.journal.as_ref()?.condition(condition, split)?;
        let same =
            rows.len() == idx.len() && rows.iter().zip(idx).all(|(r, &i)| r.id == self.config.examples[i].item.id);
        same.then(|| {
            rows.into_iter().map(|r| judge::Judgement { value: r.judge, error: r.error, reason: None }).collect()
        })
    }

    fn finish(
        self,
        status: OptStatus,
        reason: String,
        error: Option<String>,
        (chosen, chosen_by): (Option<IterationResult>, &'static str),
        test: Option<f64>,
    ) -> OptOutcome {
        let mut error = error;
        let mut output = None;
        if let (Some(r), Some(path)) = (&chosen, &self.config.output) {
            match output::write_panel(&self.config, &r.prompt, r.iteration, r.holdout, path) {
                Ok(p) => output = Some(p),
                Err(e) => error = Some(error.map_or(e.clone(), |prev| format!("{prev}; {e}"))),
            }
        }
        let status = if chosen.is_none() && status == OptStatus::Completed { OptStatus::Failed } else { status };
        let error = if chosen.is_none() && error.is_none() {
            Some("no iteration has a held-out score".to_string())
        } else {
            error
        };
        self.rec.emit(OptKind::OptimizeEnded {
            status,
            reason: reason.clone(),
            best: chosen.as_ref().map(|r| r.iteration),
            best_holdout: chosen.as_ref().and_then(|r| r.holdout),
            chosen_by: chosen_by.into(),
            output: output.as_ref().map(|p| p.display().to_string()),
            error: error.clone(),
            test,
        });
        OptOutcome {
            status,
            reason,
            iterations: self.results,
            best: chosen.as_ref().map(|r| r.iteration),
            prompt: chosen.map(|r| r.prompt),
            output,
            error,
            write_error: self.rec.write_error(),
            test,
        }
    }
}
