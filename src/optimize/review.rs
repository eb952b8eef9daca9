//! A person's part in the loop: the commands they send while it runs, and
//! the review points where it waits for them (the feedback, the rewrite).
//! Resuming, the actions the log holds come first, and a review point the log
//! went past is not waited at.

use super::log::{Decision, OptKind};
use super::prompt::JudgePrompt;
use super::{HUMAN, Loop, Next, OptCommand};

impl Loop {
    /// The next action of a person that the log holds, released by the
    /// event it followed.
    pub(super) fn replayed(&self) -> Option<OptCommand> {
        self.journal.as_ref().and_then(|j| j.next_command())
    }

    /// Whether the log went on past the review point the loop is at (where
    /// a person went on without a recorded action).
    pub(super) fn log_went_on(&self) -> bool {
        self.journal.as_ref().is_some_and(|j| j.ahead())
    }

    /// Apply a command that is not an answer to a review point.
    pub(super) fn apply(&mut self, cmd: Option<OptCommand>) {
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
                if let Some(j) = &self.journal {
                    j.stopped();
                }
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

    /// Apply the commands waiting now (the log's first).
    pub(super) fn drain(&mut self) {
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
    pub(super) async fn next_command(&mut self) -> Option<OptCommand> {
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

    pub(super) async fn review_feedback(&mut self, iteration: u32, feedback: &mut String) -> Next {
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

    pub(super) async fn review_rewrite(
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
}
