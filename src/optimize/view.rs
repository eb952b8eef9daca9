//! The view of an optimisation run, built only by applying its events: the
//! live screen, replays and the headless printer all read this.

use std::collections::BTreeSet;

use super::log::{Condition, Decision, ExampleRef, OptEvent, OptKind, OptStatus, Pick, Split};
use super::prompt::JudgePrompt;
use crate::panel::Scale;

/// One example's judgement in an iteration.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub split: Split,
    pub id: String,
    pub judge: Option<f64>,
    pub human: f64,
    pub error: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct IterView {
    pub iteration: u32,
    pub prompt: JudgePrompt,
    pub from: Option<u32>,
    pub picks: Vec<Pick>,
    pub rows: Vec<Row>,
    pub picked: Option<f64>,
    pub holdout: Option<f64>,
    pub score_errors: Vec<String>,
    pub scored: bool,
    pub feedback: Option<String>,
    /// Who wrote the feedback in use: `None` the model, `Some(author)` a person.
    pub feedback_by: Option<String>,
    pub proposed: Option<JudgePrompt>,
    pub rewrite_error: Option<String>,
    pub decision: Option<(Decision, String)>,
}

/// What the loop waits for from a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Waiting {
    #[default]
    Nothing,
    Feedback(u32),
    Rewrite(u32),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Ended {
    pub status: OptStatus,
    pub reason: String,
    pub best: Option<u32>,
    pub best_holdout: Option<f64>,
    pub chosen_by: String,
    pub output: Option<String>,
    pub error: Option<String>,
    /// The chosen prompt's S on the test split.
    pub test: Option<f64>,
}

/// A condition's S after the loop (on the test split, or the few-shot
/// prompt's on the held-out split when there is none).
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionView {
    pub condition: Condition,
    pub iteration: Option<u32>,
    pub split: Split,
    pub score: Option<f64>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct OptView {
    pub run_id: String,
    pub panel: String,
    pub data: String,
    pub dimension: String,
    pub objective: String,
    pub threshold: f64,
    pub max_iter: u32,
    pub review: bool,
    pub scale: Scale,
    pub train: Vec<ExampleRef>,
    pub holdout: Vec<String>,
    /// Test split ids (judged after the loop only).
    pub test: Vec<String>,
    pub cluster_by: Option<String>,
    pub conditions: Vec<ConditionView>,
    pub models: Vec<(String, String)>,
    pub iterations: Vec<IterView>,
    pub pinned: BTreeSet<String>,
    pub dropped: BTreeSet<String>,
    pub waiting: Waiting,
    /// People's actions and failures, in order, for the screen's log line.
    pub notes: Vec<String>,
    pub ended: Option<Ended>,
    pub events: usize,
}

impl OptView {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a OptEvent>) -> Self {
        let mut v = Self::default();
        for e in events {
            v.apply(e);
        }
        v
    }

    pub fn iteration(&self, n: u32) -> Option<&IterView> {
        self.iterations.iter().find(|i| i.iteration == n)
    }

    fn iter_mut(&mut self, n: u32) -> Option<&mut IterView> {
        self.iterations.iter_mut().find(|i| i.iteration == n)
    }

    /// The best iteration by held-out S so far (the earliest of equals).
    pub fn best(&self) -> Option<u32> {
        let mut best: Option<&IterView> = None;
        for it in self.iterations.iter().filter(|i| i.holdout.is_some()) {
            if best.is_none_or(|b| it.holdout > b.holdout) {
                best = Some(it);
            }
        }
        best.map(|b| b.iteration)
    }

    /// The prompt before an iteration's rewrite, and what it became (the
    /// proposal, or the decided prompt when a person edited it).
    pub fn rewrite_pair(&self, n: u32) -> Option<(&JudgePrompt, &JudgePrompt)> {
        let it = self.iteration(n)?;
        let next = self.iteration(n + 1).filter(|next| next.from == Some(n) && it.decision.is_some());
        let after = match (&it.decision, next) {
            (Some((Decision::Edited, _)), Some(next)) => &next.prompt,
            _ => it.proposed.as_ref()?,
        };
        Some((&it.prompt, after))
    }

    pub fn apply(&mut self, e: &OptEvent) {
        self.events += 1;
        match &e.kind {
            OptKind::OptimizeStarted {
                run_id,
                panel,
                data,
                dimension,
                scale_min,
                scale_max,
                objective,
                threshold,
                max_iter,
                train,
                holdout,
                models,
                review,
                test,
                cluster_by,
                ..
            } => {
                self.test = test.clone();
                self.cluster_by = cluster_by.clone();
                self.run_id = run_id.clone();
                self.panel = panel.clone();
                self.data = data.clone();
                self.dimension = dimension.clone();
                self.scale = Scale { min: *scale_min, max: *scale_max };
                self.objective = objective.clone();
                self.threshold = *threshold;
                self.max_iter = *max_iter;
                self.train = train.clone();
                self.holdout = holdout.clone();
                self.review = *review;
                self.models = models.iter().map(|(k, m)| (k.clone(), format!("{}/{}", m.provider, m.model))).collect();
            }
            OptKind::IterationStarted { iteration, prompt, from } => {
                self.waiting = Waiting::Nothing;
                self.iterations.push(IterView {
                    iteration: *iteration,
                    prompt: prompt.clone(),
                    from: *from,
                    ..IterView::default()
                });
            }
            OptKind::ExamplesPicked { iteration, picks } => {
                if let Some(it) = self.iter_mut(*iteration) {
                    it.picks = picks.clone();
                }
            }
            OptKind::Judged { iteration, split, id, judge, human, error, reason } => {
                if let Some(it) = self.iter_mut(*iteration) {
                    it.rows.push(Row {
                        split: *split,
                        id: id.clone(),
                        judge: *judge,
                        human: *human,
                        error: error.clone(),
                        reason: reason.clone(),
                    });
                }
            }
            OptKind::Scored { iteration, picked, holdout, picked_error, holdout_error, .. } => {
                if let Some(it) = self.iter_mut(*iteration) {
                    it.picked = *picked;
                    it.holdout = *holdout;
                    it.scored = true;
                    it.score_errors = [picked_error, holdout_error].into_iter().flatten().cloned().collect();
                }
            }
            OptKind::FeedbackWritten { iteration, text, by, author } => {
                let review = self.review;
                if let Some(it) = self.iter_mut(*iteration) {
                    it.feedback = Some(text.clone());
                    it.feedback_by = (by == "human").then(|| author.clone().unwrap_or_else(|| "human".into()));
                }
                self.waiting = if by == "human" || !review { Waiting::Nothing } else { Waiting::Feedback(*iteration) };
                if by == "human" {
                    self.notes.push(format!(
                        "iteration {iteration}: feedback edited by {}",
                        author.as_deref().unwrap_or("human")
                    ));
                }
            }
            OptKind::RewriteProposed { iteration, prompt } => {
                if let Some(it) = self.iter_mut(*iteration) {
                    it.proposed = Some(prompt.clone());
                }
                self.waiting = if self.review { Waiting::Rewrite(*iteration) } else { Waiting::Nothing };
            }
            OptKind::RewriteFailed { iteration, error, .. } => {
                if let Some(it) = self.iter_mut(*iteration) {
                    it.rewrite_error = Some(error.clone());
                }
                self.waiting = Waiting::Nothing;
                self.notes.push(format!("iteration {iteration}: the rewrite could not be read: {error}"));
            }
            OptKind::RewriteDecided { iteration, decision, author, .. } => {
                if let Some(it) = self.iter_mut(*iteration) {
                    it.decision = Some((*decision, author.clone()));
                }
                self.waiting = Waiting::Nothing;
                if author != "auto" {
                    let what = match decision {
                        Decision::Accepted => "accepted",
                        Decision::Edited => "edited and accepted",
                        Decision::Rejected => "rejected",
                    };
                    self.notes.push(format!("iteration {iteration}: rewrite {what} by {author}"));
                }
            }
            OptKind::RolledBack { to, author } => {
                self.waiting = Waiting::Nothing;
                self.notes.push(format!("rolled back to iteration {to} by {author}"));
            }
            OptKind::ExamplePinned { id, author } => {
                self.pinned.insert(id.clone());
                self.dropped.remove(id);
                self.notes.push(format!("{id} pinned by {author}"));
            }
            OptKind::ExampleUnpinned { id, author } => {
                self.pinned.remove(id);
                self.notes.push(format!("{id} unpinned by {author}"));
            }
            OptKind::ExampleDropped { id, author } => {
                self.pinned.remove(id);
                self.dropped.insert(id.clone());
                self.notes.push(format!("{id} replaced by {author}"));
            }
            OptKind::StopRequested { author, choose } => {
                self.notes.push(match choose {
                    Some(i) => format!("stop requested by {author}, choosing iteration {i}"),
                    None => format!("stop requested by {author}"),
                });
            }
            OptKind::CallFailed { iteration, role, error } => {
                self.notes.push(format!("iteration {iteration}: the {role} call failed: {error}"));
            }
            OptKind::ConditionScored { condition, iteration, split, score, error, .. } => {
                self.conditions.push(ConditionView {
                    condition: *condition,
                    iteration: *iteration,
                    split: *split,
                    score: *score,
                    error: error.clone(),
                });
            }
            OptKind::OptimizeEnded { status, reason, best, best_holdout, chosen_by, output, error, test } => {
                self.waiting = Waiting::Nothing;
                self.ended = Some(Ended {
                    status: *status,
                    reason: reason.clone(),
                    best: *best,
                    best_holdout: *best_holdout,
                    chosen_by: chosen_by.clone(),
                    output: output.clone(),
                    error: error.clone(),
                    test: *test,
                });
            }
        }
    }
}
