//! What the overlays' answers do: the pickers and prompts of overrides,
//! speaker choices and ratings, and the keys an open overlay takes (each
//! overlay reads them through its keymap table; see `overlays`).

use ratatui::crossterm::event::KeyEvent;

use super::app::{App, Focus, Overlay, Pick, Picker, Prompt, PromptPurpose, by_label, fmt_score};
use super::command_line;
use super::keymap::Mode;
use super::overlays::picker::Choose;
use super::overlays::{Edit, confirm_quit};
use crate::engine::Command;
use crate::session::event::{OverrideTarget, Scores};

impl App {
    /// The panel's dimensions and `overall` (where asked for beside them),
    /// each chosen as `pick`.
    pub(super) fn dimension_items(&self, pick: impl Fn(String) -> Pick) -> Vec<(String, Pick)> {
        let mut items: Vec<(String, Pick)> = match &self.view().panel {
            Some(p) => p.dimensions.iter().map(|d| (d.label().to_string(), pick(d.key.clone()))).collect(),
            None => Vec::new(),
        };
        if self.view().panel.as_ref().is_none_or(|p| p.asks_overall()) {
            items.push(("Overall".into(), pick("overall".into())));
        }
        items
    }

    pub(super) fn open_picker(&mut self, title: &str, items: Vec<(String, Pick)>) {
        match Picker::new(title, items) {
            Some(p) => self.overlay = Some(Overlay::Picker(p)),
            None => self.error("nothing to choose from yet"),
        }
    }

    pub(super) fn open_override(&mut self) {
        let mut items: Vec<(String, Pick)> = Vec::new();
        for a in &self.view().agents {
            if a.progress.latest.is_some() {
                let target = OverrideTarget::Agent { agent: a.info.name.clone() };
                items.push((format!("{} — latest evaluation", a.info.name), Pick::OverrideTarget(target)));
            }
        }
        if self.view().aggregate.is_some() {
            items.push(("final result".into(), Pick::OverrideTarget(OverrideTarget::Final { group: None })));
        }
        let Some(mut picker) = Picker::new("Override: whose score?", items) else {
            return self.error("no evaluation to override yet");
        };
        // Preselect the focused agent.
        if let Focus::Agent(i) = self.focus
            && let Some(a) = self.view().agents.get(i)
        {
            picker.selected = picker.items.iter().position(|(_, v)| *v == *a.info.name).unwrap_or(0);
        } else if self.focus == Focus::Aggregator {
            picker.selected = picker.items.len() - 1;
        }
        self.overlay = Some(Overlay::Picker(picker));
    }

    pub(super) fn open_speaker(&mut self) {
        let v = self.view();
        let group = v.groups.iter().rev().find(|g| g.phase.is_some() && !g.picks.is_empty()).or(v.groups.first());
        let Some(group) = group else {
            self.error("no group is debating yet");
            return;
        };
        let mut items: Vec<(String, Pick)> = group
            .agents
            .iter()
            .filter(|n| v.agent(n).is_some_and(|a| !a.progress.finished))
            .map(|n| (format!("{n} speaks next"), Pick::Speaker(n.clone())))
            .collect();
        if let Some(p) = group.picks.last() {
            items.push((format!("veto the pick of {} ({})", p.agent, by_label(p.by)), Pick::Veto(p.agent.clone())));
        }
        let title = format!("Next speaker in {}", group.name);
        self.open_picker(&title, items);
    }

    pub(super) fn prompt(&mut self, title: String, purpose: PromptPurpose, placeholder: &str) {
        self.overlay = Some(Overlay::Prompt(Prompt::new(title, purpose, placeholder)));
    }

    /// A key while an overlay is open: the overlay reads it, then what it
    /// answered is carried out here.
    pub(super) fn on_overlay_key(&mut self, k: KeyEvent) {
        let Some(overlay) = self.overlay.take() else { return };
        let km = &self.env.config.keymap;
        match overlay {
            Overlay::Help(mut h) => {
                if h.on_key(k, km) {
                    self.overlay = Some(Overlay::Help(h));
                }
            }
            Overlay::ConfirmQuit => {
                if confirm_quit::on_key(k, km) {
                    self.confirm_quit();
                } else {
                    self.info("still running");
                }
            }
            Overlay::Composer(mut e) => match e.on_key(k, km, Mode::Composer) {
                Edit::Keep => self.overlay = Some(Overlay::Composer(e)),
                Edit::Cancel => self.info("comment cancelled"),
                Edit::Submit(text) if text.is_empty() => {
                    self.overlay = Some(Overlay::Composer(e));
                    self.error("the comment is empty (Esc cancels)");
                }
                Edit::Submit(text) => {
                    self.send(Command::Comment { text, author: self.env.author.clone(), group: None });
                    if self.is_live() {
                        self.info("comment sent: every agent sees it from its next turn on");
                    }
                }
            },
            Overlay::CommandLine(mut c) => match c.on_key(k, km, self.view()) {
                Edit::Keep => self.overlay = Some(Overlay::CommandLine(c)),
                Edit::Cancel => {}
                Edit::Submit(line) => match command_line::parse(&line, self.view(), &self.env.author) {
                    Ok(p) => self.run_parsed(p),
                    Err(e) => {
                        c.refused(e);
                        self.overlay = Some(Overlay::CommandLine(c));
                    }
                },
            },
            Overlay::Steps { dimension, mut editor } => match editor.on_key(k, km, Mode::Steps) {
                Edit::Keep => self.overlay = Some(Overlay::Steps { dimension, editor }),
                Edit::Cancel => self.info("steps unchanged"),
                Edit::Submit(steps) => self.send_steps(dimension, editor, steps),
            },
            Overlay::Search(mut s) => match s.on_key(k, km) {
                Edit::Keep => self.overlay = Some(Overlay::Search(s)),
                Edit::Cancel => {}
                Edit::Submit(q) => self.run_search(&q),
            },
            Overlay::Picker(mut p) => match p.on_key(k, km) {
                Choose::Keep => self.overlay = Some(Overlay::Picker(p)),
                Choose::Cancel => {}
                Choose::Chosen(pick) => self.picked(pick),
            },
            Overlay::Prompt(mut p) => match p.on_key(k, km) {
                Edit::Keep => self.overlay = Some(Overlay::Prompt(p)),
                Edit::Cancel => {}
                Edit::Submit(text) => {
                    if let Err(e) = self.prompted(p.purpose.clone(), &text) {
                        p.error = Some(e);
                        self.overlay = Some(Overlay::Prompt(p));
                    }
                }
            },
        }
    }

    pub(super) fn picked(&mut self, pick: Pick) {
        let author = self.env.author.clone();
        match pick {
            Pick::OverrideTarget(target) => {
                let title = match &target {
                    OverrideTarget::Agent { agent } => format!("Override {agent}: which dimension?"),
                    _ => "Override the final result: which dimension?".into(),
                };
                let items =
                    self.dimension_items(|dimension| Pick::OverrideDimension { target: target.clone(), dimension });
                self.open_picker(&title, items);
            }
            Pick::OverrideDimension { target, dimension } => {
                let current = self.current_value(&target, &dimension);
                let scale = self.scale_text();
                let title = format!(
                    "New value for {dimension}{} {scale}",
                    current.map(|c| format!(" (now {})", fmt_score(c))).unwrap_or_default()
                );
                self.prompt(title, PromptPurpose::OverrideValue { target, dimension }, "a number on the scale");
            }
            Pick::Speaker(agent) => {
                self.send(Command::PickSpeaker { agent: agent.clone(), author });
                self.info(format!("{agent} speaks next"));
            }
            Pick::Veto(agent) => {
                self.send(Command::VetoSpeaker { agent: agent.clone(), author });
                self.info(format!("vetoed {agent}"));
            }
            Pick::StepsDimension(dimension) => self.open_steps_editor(dimension),
            Pick::PairVote { first, second, winner } => {
                self.send(Command::VotePair { first, second, winner, author });
                self.info("extra vote sent");
            }
            Pick::RateDimension(dimension) => {
                let scale = self.scale_text();
                self.prompt(
                    format!("Your rating for {dimension} {scale}"),
                    PromptPurpose::RateValue { dimension },
                    "a number on the scale",
                );
            }
        }
    }

    pub(super) fn prompted(&mut self, purpose: PromptPurpose, text: &str) -> Result<(), String> {
        match purpose {
            PromptPurpose::OverrideValue { target, dimension } => {
                let value = command_line::check_value(self.view(), text)?;
                self.prompt(
                    format!("Why {dimension} = {}? (optional, Enter to skip)", fmt_score(value)),
                    PromptPurpose::OverrideReason { target, dimension, value },
                    "reason",
                );
            }
            PromptPurpose::OverrideReason { target, dimension, value } => {
                let reason = Some(text.to_string()).filter(|r| !r.is_empty());
                self.send(Command::Override {
                    target,
                    dimension: dimension.clone(),
                    value,
                    reason,
                    author: self.env.author.clone(),
                });
                self.info(format!("{dimension} overridden to {}", fmt_score(value)));
            }
            PromptPurpose::RateValue { dimension } => {
                let value = command_line::check_value(self.view(), text)?;
                let mut scores = Scores::new();
                scores.insert(dimension.clone(), value);
                self.send(Command::Rate { scores, author: self.env.author.clone() });
                self.info(format!("your rating: {dimension} {}", fmt_score(value)));
            }
        }
        Ok(())
    }

    pub(super) fn current_value(&self, target: &OverrideTarget, dim: &str) -> Option<f64> {
        match target {
            OverrideTarget::Agent { agent } => self.view().agent(agent)?.progress.latest.as_ref()?.score(dim),
            OverrideTarget::Final { .. } => self.view().aggregate.as_ref()?.score(dim),
            OverrideTarget::Turn { turn, .. } => self.view().turn(*turn)?.evaluation.as_ref()?.score(dim),
        }
    }

    pub(super) fn scale_text(&self) -> String {
        self.view()
            .panel
            .as_ref()
            .map(|p| format!("[{}–{}]", fmt_score(p.scale.min), fmt_score(p.scale.max)))
            .unwrap_or_default()
    }
}
