//! Input in overlays: the pickers and prompts of overrides, speaker
//! choices and ratings, and the keys an open overlay takes.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::app::{
    App, Focus, Overlay, PickPurpose, Picker, Prompt, PromptPurpose, by_label, fmt_score, plain_key, textarea,
};
use super::command_line;
use crate::engine::Command;
use crate::session::event::{OverrideTarget, Scores};

impl App {
    pub(super) fn dimension_items(&self) -> Vec<(String, String)> {
        let mut items: Vec<(String, String)> = match &self.view().panel {
            Some(p) => p.dimensions.iter().map(|d| (d.label().to_string(), d.key.clone())).collect(),
            None => Vec::new(),
        };
        items.push(("Overall".into(), "overall".into()));
        items
    }

    pub(super) fn open_picker(&mut self, title: &str, items: Vec<(String, String)>, purpose: PickPurpose) {
        if items.is_empty() {
            self.error("nothing to choose from yet");
            return;
        }
        self.overlay = Some(Overlay::Picker(Picker { title: title.into(), items, selected: 0, purpose }));
    }

    pub(super) fn open_override(&mut self) {
        let mut items: Vec<(String, String)> = Vec::new();
        for a in &self.view().agents {
            if a.progress.latest.is_some() {
                items.push((format!("{} — latest evaluation", a.info.name), a.info.name.clone()));
            }
        }
        if self.view().aggregate.is_some() {
            items.push(("final result".into(), "final".into()));
        }
        if items.is_empty() {
            self.error("no evaluation to override yet");
            return;
        }
        // Preselect the focused agent.
        let mut selected = 0;
        if let Focus::Agent(i) = self.focus
            && let Some(a) = self.view().agents.get(i)
        {
            selected = items.iter().position(|(_, v)| *v == a.info.name).unwrap_or(0);
        } else if self.focus == Focus::Aggregator {
            selected = items.len() - 1;
        }
        self.overlay = Some(Overlay::Picker(Picker {
            title: "Override: whose score?".into(),
            items,
            selected,
            purpose: PickPurpose::OverrideTarget,
        }));
    }

    pub(super) fn open_speaker(&mut self) {
        let v = self.view();
        let group = v.groups.iter().rev().find(|g| g.phase.is_some() && !g.picks.is_empty()).or(v.groups.first());
        let Some(group) = group else {
            self.error("no group is debating yet");
            return;
        };
        let mut items: Vec<(String, String)> = group
            .agents
            .iter()
            .filter(|n| v.agent(n).is_some_and(|a| !a.progress.finished))
            .map(|n| (format!("{n} speaks next"), format!("pick:{n}")))
            .collect();
        if let Some(p) = group.picks.last() {
            items.push((format!("veto the pick of {} ({})", p.agent, by_label(p.by)), format!("veto:{}", p.agent)));
        }
        self.open_picker(&format!("Next speaker in {}", group.name), items, PickPurpose::Speaker);
    }

    pub(super) fn prompt(&mut self, title: String, purpose: PromptPurpose, placeholder: &str) {
        self.overlay = Some(Overlay::Prompt(Prompt { title, input: textarea(placeholder), purpose, error: None }));
    }

    pub(super) fn on_overlay_key(&mut self, k: KeyEvent) {
        let Some(overlay) = self.overlay.take() else { return };
        let esc = k.code == KeyCode::Esc;
        let enter = k.code == KeyCode::Enter;
        let alt = k.modifiers.contains(KeyModifiers::ALT);
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        match overlay {
            Overlay::Help => {
                if !(esc || enter || matches!(k.code, KeyCode::Char('q' | '?')) || ctrl_c) {
                    self.overlay = Some(Overlay::Help);
                }
            }
            Overlay::ConfirmQuit => match k.code {
                KeyCode::Char('y' | 'Y' | 'q') | KeyCode::Enter => self.confirm_quit(),
                _ => self.info("still running"),
            },
            Overlay::Composer(mut t) => {
                if esc || ctrl_c {
                    self.info("comment cancelled");
                } else if enter && !alt {
                    let text = t.lines().join("\n").trim().to_string();
                    if text.is_empty() {
                        self.overlay = Some(Overlay::Composer(t));
                        self.error("the comment is empty (Esc cancels)");
                    } else {
                        self.send(Command::Comment { text, author: self.env.author.clone(), group: None });
                        if self.is_live() {
                            self.info("comment sent: every agent sees it from its next turn on");
                        }
                    }
                } else if enter {
                    t.insert_newline();
                    self.overlay = Some(Overlay::Composer(t));
                } else {
                    t.input(k);
                    self.overlay = Some(Overlay::Composer(t));
                }
            }
            Overlay::CommandLine { mut input, candidates, error } => {
                if esc || ctrl_c {
                    return;
                }
                if enter {
                    let line = input.lines().join(" ");
                    match command_line::parse(&line, self.view(), &self.env.author) {
                        Ok(p) => self.run_parsed(p),
                        Err(e) => {
                            self.overlay = Some(Overlay::CommandLine { input, candidates: Vec::new(), error: Some(e) });
                        }
                    }
                } else if k.code == KeyCode::Tab {
                    let line = input.lines().join(" ");
                    let (done, cands) = command_line::complete(&line, self.view());
                    let mut t = textarea("");
                    t.insert_str(&done);
                    self.overlay = Some(Overlay::CommandLine { input: t, candidates: cands, error: None });
                } else {
                    if k.code == KeyCode::Backspace && input.is_empty() {
                        return;
                    }
                    input.input(k);
                    let _ = (candidates, error);
                    self.overlay = Some(Overlay::CommandLine { input, candidates: Vec::new(), error: None });
                }
            }
            Overlay::Steps { dimension, input } => self.on_steps_key(k, dimension, input),
            Overlay::Search(mut t) => {
                if esc || ctrl_c {
                    return;
                }
                if enter {
                    let q = t.lines().join(" ");
                    self.run_search(&q);
                } else {
                    t.input(k);
                    self.overlay = Some(Overlay::Search(t));
                }
            }
            Overlay::Picker(mut p) => match k.code {
                KeyCode::Esc => {}
                KeyCode::Up | KeyCode::Char('k') => {
                    p.selected = p.selected.checked_sub(1).unwrap_or(p.items.len() - 1);
                    self.overlay = Some(Overlay::Picker(p));
                }
                KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => {
                    p.selected = (p.selected + 1) % p.items.len();
                    self.overlay = Some(Overlay::Picker(p));
                }
                KeyCode::Enter => {
                    let value = p.items[p.selected].1.clone();
                    self.picked(p.purpose, value);
                }
                KeyCode::Char(c) if plain_key(&k) && c.is_ascii_digit() => {
                    let i = c.to_digit(10).unwrap_or(0) as usize;
                    if i >= 1 && i <= p.items.len() {
                        let value = p.items[i - 1].1.clone();
                        self.picked(p.purpose, value);
                    } else {
                        self.overlay = Some(Overlay::Picker(p));
                    }
                }
                _ => self.overlay = Some(Overlay::Picker(p)),
            },
            Overlay::Prompt(mut p) => {
                if esc || ctrl_c {
                    return;
                }
                if enter {
                    let text = p.input.lines().join(" ");
                    if let Err(e) = self.prompted(p.purpose.clone(), text.trim()) {
                        p.error = Some(e);
                        self.overlay = Some(Overlay::Prompt(p));
                    }
                } else {
                    p.input.input(k);
                    p.error = None;
                    self.overlay = Some(Overlay::Prompt(p));
                }
            }
        }
    }

    pub(super) fn picked(&mut self, purpose: PickPurpose, value: String) {
        match purpose {
            PickPurpose::OverrideTarget => {
                let target = if value == "final" {
                    OverrideTarget::Final { group: None }
                } else {
                    OverrideTarget::Agent { agent: value }
                };
                let title = match &target {
                    OverrideTarget::Agent { agent } => format!("Override {agent}: which dimension?"),
                    _ => "Override the final result: which dimension?".into(),
                };
                self.open_picker(&title, self.dimension_items(), PickPurpose::OverrideDimension(target));
            }
            PickPurpose::OverrideDimension(target) => {
                let current = self.current_value(&target, &value);
                let scale = self.scale_text();
                let title = format!(
                    "New value for {value}{} {scale}",
                    current.map(|c| format!(" (now {})", fmt_score(c))).unwrap_or_default()
                );
                self.prompt(title, PromptPurpose::OverrideValue { target, dimension: value }, "a number on the scale");
            }
            PickPurpose::Speaker => {
                let author = self.env.author.clone();
                if let Some(agent) = value.strip_prefix("pick:") {
                    self.send(Command::PickSpeaker { agent: agent.to_string(), author });
                    self.info(format!("{agent} speaks next"));
                } else if let Some(agent) = value.strip_prefix("veto:") {
                    self.send(Command::VetoSpeaker { agent: agent.to_string(), author });
                    self.info(format!("vetoed {agent}"));
                }
            }
            PickPurpose::StepsDimension => self.open_steps_editor(value),
            PickPurpose::PairVote { first, second } => {
                let winner = (!value.is_empty()).then_some(value);
                let author = self.env.author.clone();
                self.send(Command::VotePair { first, second, winner, author });
                self.info("extra vote sent");
            }
            PickPurpose::RateDimension => {
                let scale = self.scale_text();
                self.prompt(
                    format!("Your rating for {value} {scale}"),
                    PromptPurpose::RateValue { dimension: value },
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
