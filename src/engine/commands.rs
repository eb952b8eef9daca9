//! Applying human commands to a running session.

use super::command::Command;
use super::prompts::{HistoryEntry, fmt_num};
use super::runtime::{FinalOverride, Run};
use crate::panel::SpeakingOrder;
use crate::session::event::{EventKind, OverrideTarget, StepsSource};
use crate::session::overrides::override_latest;

/// Why a score cannot be set in a run that compares candidates.
const LABELS_NOT_SCORES: &str = "this panel compares two candidates: its results are labels (A, B or tie), not scores";

impl Run {
    pub(crate) fn reject(&self, command: &str, reason: String, author: &str) {
        self.emit(EventKind::CommandRejected { command: command.to_string(), reason, author: author.to_string() });
    }

    fn agent_names(&self) -> String {
        self.state().agents.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
    }

    /// Check a dimension key and a value against the panel.
    fn check_score(&self, dimension: &str, value: f64) -> Result<(), String> {
        if !self.keys.iter().any(|k| k == dimension) {
            return Err(format!("unknown dimension \"{dimension}\"; valid: {}", self.keys.join(", ")));
        }
        if let Some(d) = self.panel.dimensions.iter().find(|d| d.key == dimension && !d.labels.is_empty()) {
            return Err(format!(
                "{dimension} is categorical: it takes one of the labels {}, not a score",
                d.labels.join(", ")
            ));
        }
        let s = self.panel.scale;
        if !value.is_finite() || !s.contains(value) {
            return Err(format!("{} is outside the scale {}–{}", fmt_num(value), fmt_num(s.min), fmt_num(s.max)));
        }
        Ok(())
    }

    /// Apply one command now; effects on the protocol happen at its next safe point.
    pub fn apply_command(&self, cmd: Command) {
        match cmd {
            Command::Comment { text, author, group } => {
                let text = text.trim().to_string();
                if text.is_empty() {
                    return self.reject("comment", "the comment is empty".into(), &author);
                }
                if let Some(g) = &group
                    && !self.panel.groups.iter().any(|x| &x.name == g)
                {
                    return self.reject("comment", format!("no group named \"{g}\""), &author);
                }
                self.emit(EventKind::HumanComment { text: text.clone(), author: author.clone(), group: group.clone() });
                let mut st = self.state();
                for (name, history) in st.histories.iter_mut() {
                    if group.as_ref().is_none_or(|g| g == name) {
                        history.push(HistoryEntry::Comment { author: author.clone(), text: text.clone() });
                    }
                }
            }
            Command::PickSpeaker { agent, author } | Command::VetoSpeaker { agent, author }
                if self.panel.protocol.speaking_order() == SpeakingOrder::Independent =>
            {
                let protocol = self.panel.protocol.kind.as_str();
                let why =
                    format!("{protocol} has no debate: nobody takes the floor, so {agent} cannot be picked or vetoed");
                self.reject("speaker", why, &author);
            }
            Command::EditSteps { dimension, steps, author } => self.edit_steps(dimension, steps, author),
            Command::Decide { dimension, agent, accept, author } => {
                self.decide_revision(dimension, agent, accept, author)
            }
            Command::Adopt { key, author } => self.adopt_proposal(key, author),
            Command::SettlePair { first, second, winner, author } => self.settle_pair(first, second, winner, author),
            Command::VotePair { first, second, winner, author } => self.vote_pair(first, second, winner, author),
            Command::AbstainPair { first, second, author } => self.abstain_pair(first, second, author),
            Command::LabelPair { first, second, winner, author } => self.label_pair(first, second, winner, author),
            Command::PickSpeaker { agent, author } => {
                let mut st = self.state();
                let Some(i) = st.agent_index(&agent) else {
                    drop(st);
                    let names = self.agent_names();
                    return self.reject("speaker", format!("no agent named \"{agent}\"; agents: {names}"), &author);
                };
                if st.agents[i].progress.finished {
                    drop(st);
                    return self.reject("speaker", format!("{agent} has finished and will not speak again"), &author);
                }
                let group = st.agents[i].group.clone();
                st.pending_pick.insert(group.clone(), (agent.clone(), author.clone()));
                drop(st);
                self.emit(EventKind::SpeakerRequested { group, agent, veto: false, author });
            }
            Command::VetoSpeaker { agent, author } => {
                let mut st = self.state();
                let Some(i) = st.agent_index(&agent) else {
                    drop(st);
                    let names = self.agent_names();
                    return self.reject("veto", format!("no agent named \"{agent}\"; agents: {names}"), &author);
                };
                let group = st.agents[i].group.clone();
                st.veto.insert(group.clone(), (agent.clone(), author.clone()));
                drop(st);
                self.emit(EventKind::SpeakerRequested { group, agent, veto: true, author });
            }
            Command::Override { author, .. } if self.panel.protocol.compares_pairs() => {
                self.reject("override", LABELS_NOT_SCORES.into(), &author)
            }
            Command::Rate { author, .. } if self.panel.protocol.compares_pairs() => {
                self.reject("rate", LABELS_NOT_SCORES.into(), &author)
            }
            Command::Override { target, dimension, value, reason, author } => {
                if let Err(e) = self.check_score(&dimension, value) {
                    return self.reject("override", e, &author);
                }
                self.apply_override(target, dimension, value, reason, author);
            }
            Command::Rate { scores, author } => {
                for (k, v) in &scores {
                    if let Err(e) = self.check_score(k, *v) {
                        return self.reject("rate", e, &author);
                    }
                }
                if scores.is_empty() {
                    return self.reject("rate", "no scores given".into(), &author);
                }
                self.emit(EventKind::HumanRating { scores, author });
            }
            Command::Pause { author } => {
                if self.stop.is_cancelled() {
                    return self.reject("pause", "the debate is already stopping".into(), &author);
                }
                if self.control.send_if_modified(|c| !std::mem::replace(&mut c.paused, true)) {
                    self.emit(EventKind::Paused { author });
                }
            }
            Command::Resume { author } => {
                if self.control.send_if_modified(|c| {
                    c.step_credits = 0;
                    std::mem::replace(&mut c.paused, false)
                }) {
                    self.emit(EventKind::Resumed { author });
                }
            }
            Command::Step { author } => {
                if !self.control.borrow().paused {
                    return self.reject("step", "stepping works while paused; pause first".into(), &author);
                }
                self.emit(EventKind::Stepped { author });
                self.control.send_modify(|c| c.step_credits += 1);
            }
            Command::Stop { author } => {
                let already = {
                    let mut st = self.state();
                    let already = st.stopped;
                    st.stopped = true;
                    if st.stop_reason.is_none() {
                        st.stop_reason = Some(format!("stopped by {author}"));
                    }
                    already
                };
                if already {
                    // A second stop also skips aggregation.
                    self.quit.cancel();
                    return;
                }
                self.emit(EventKind::StopRequested { author });
                self.stop.cancel();
                self.control.send_modify(|c| c.paused = false);
            }
            Command::Quit { author } => {
                let emit = {
                    let mut st = self.state();
                    let emit = !st.stopped && !st.finished;
                    if emit {
                        st.stopped = true;
                        st.stop_reason = Some(format!("quit by {author}"));
                    }
                    emit
                };
                if emit {
                    self.emit(EventKind::StopRequested { author });
                }
                self.stop.cancel();
                self.quit.cancel();
            }
        }
    }

    fn edit_steps(&self, dimension: String, steps: String, author: String) {
        let steps = steps.trim().to_string();
        let refuse = |why: String| self.reject("steps", why, &author);
        if !self.panel.protocol.uses_steps() {
            return refuse(format!("{} has no evaluation steps", self.panel.protocol.kind.as_str()));
        }
        if !self.panel.dimensions.iter().any(|d| d.key == dimension) {
            return refuse(format!(
                "unknown dimension \"{dimension}\"; valid: {}",
                self.panel.dimension_keys().join(", ")
            ));
        }
        if steps.is_empty() {
            return refuse("the steps are empty".into());
        }
        {
            let mut st = self.state();
            if st.scoring {
                drop(st);
                return refuse("scoring has started; steps can be edited until it does".into());
            }
            st.steps.insert(dimension.clone(), steps.clone());
            st.steps_edited.insert(dimension.clone(), author.clone());
        }
        self.emit(EventKind::EvaluationSteps {
            dimension,
            steps,
            source: StepsSource::Human,
            author: Some(author),
            turn: None,
        });
    }

    fn apply_override(
        &self,
        target: OverrideTarget,
        dimension: String,
        value: f64,
        reason: Option<String>,
        author: String,
    ) {
        let (from, history_agent) = {
            let mut st = self.state();
            match &target {
                OverrideTarget::Agent { agent } | OverrideTarget::Turn { agent, .. } => {
                    let Some(i) = st.agent_index(agent) else {
                        drop(st);
                        let names = self.agent_names();
                        return self.reject(
                            "override",
                            format!("no agent named \"{agent}\"; agents: {names}"),
                            &author,
                        );
                    };
                    let a = &mut st.agents[i];
                    match override_latest(
                        a.progress.latest.as_mut(),
                        a.progress.latest_turn,
                        &target,
                        &dimension,
                        value,
                    ) {
                        Ok(from) => (from, Some((a.group.clone(), agent.clone()))),
                        Err(refused) => {
                            drop(st);
                            return self.reject("override", refused.reason(agent), &author);
                        }
                    }
                }
                OverrideTarget::Final { group } => {
                    if let Some(g) = group
                        && !self.panel.groups.iter().any(|x| &x.name == g)
                    {
                        drop(st);
                        return self.reject("override", format!("no group named \"{g}\""), &author);
                    }
                    let from = st
                        .aggregates
                        .contains_key(group)
                        .then(|| self.result_scores(&st, group.as_deref()).get(&dimension).copied())
                        .flatten();
                    st.final_overrides.retain(|o| !(o.group == *group && o.dimension == dimension));
                    st.final_overrides.push(FinalOverride {
                        group: group.clone(),
                        dimension: dimension.clone(),
                        value,
                    });
                    (from, None)
                }
            }
        };
        self.emit(EventKind::ScoreOverridden {
            target,
            dimension: dimension.clone(),
            from,
            to: value,
            reason: reason.clone(),
            author: author.clone(),
        });
        if let Some((group, agent)) = history_agent {
            self.push_history(&group, HistoryEntry::Override { author, agent, dimension, from, to: value, reason });
        }
        let published = !self.state().aggregates.is_empty();
        if published {
            self.reemit_aggregates();
        }
    }
}
