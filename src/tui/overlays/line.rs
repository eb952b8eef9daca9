//! Boxes of one line: the command line, the transcript search and the
//! prompts that ask for a value or a reason.

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};
use ratatui_textarea::TextArea;

use super::{Edit, bottom, centered, textarea};
use crate::session::event::OverrideTarget;
use crate::session::fold::SessionView;
use crate::tui::action::Action;
use crate::tui::command_line;
use crate::tui::components::pane;
use crate::tui::keymap::{Keymap, Mode};
use crate::tui::theme::Theme;

/// The command line (`:`), with completion.
#[derive(Debug, Clone)]
pub struct CommandLine {
    pub input: TextArea<'static>,
    /// What Tab found to complete with, shown under the line.
    pub candidates: Vec<String>,
    /// Why the last command was refused.
    pub error: Option<String>,
}

impl Default for CommandLine {
    fn default() -> Self {
        Self {
            input: textarea(
                "comment TEXT · override AGENT|final DIM VALUE · speaker AGENT · pause · stop · rate DIM VALUE · quit",
            ),
            candidates: Vec::new(),
            error: None,
        }
    }
}

impl CommandLine {
    /// A key: the command to run on confirm; completion against `view`;
    /// `cancel_if_empty` (Backspace by default) closes an empty line and
    /// otherwise edits it like any other key.
    pub fn on_key(&mut self, k: KeyEvent, km: &Keymap, view: &SessionView) -> Edit {
        let line = self.input.lines().join(" ");
        match km.action(Mode::CommandLine, &k) {
            Some(Action::Cancel) => Edit::Cancel,
            Some(Action::Confirm) => Edit::Submit(line),
            Some(Action::Complete) => {
                let (done, candidates) = command_line::complete(&line, view);
                self.input = textarea("");
                self.input.insert_str(&done);
                self.candidates = candidates;
                self.error = None;
                Edit::Keep
            }
            Some(Action::CancelIfEmpty) if self.input.is_empty() => Edit::Cancel,
            _ => {
                self.input.input(k);
                self.candidates.clear();
                self.error = None;
                Edit::Keep
            }
        }
    }

    /// The command was refused: say why under the line.
    pub fn refused(&mut self, error: String) {
        self.candidates.clear();
        self.error = Some(error);
    }

    pub fn on_paste(&mut self, text: &str) {
        self.input.insert_str(text.replace('\n', " "));
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let extra = u16::from(self.error.is_some() || !self.candidates.is_empty());
        let r = bottom(area, 3 + extra);
        f.render_widget(Clear, r);
        let mut t = self.input.clone();
        t.set_block(pane(Line::from(Span::styled(" : ", theme.accent())), true, theme));
        f.render_widget(&t, Rect { height: 3, ..r });
        if extra > 0 {
            let line = match &self.error {
                Some(e) => Line::from(Span::styled(e.clone(), theme.error())),
                None => Line::from(Span::styled(self.candidates.join("  "), theme.muted())),
            };
            f.render_widget(Paragraph::new(line), Rect { y: r.y + 3, height: 1, ..r });
        }
    }
}

/// The transcript search box (`/`).
#[derive(Debug, Clone)]
pub struct SearchBox {
    pub input: TextArea<'static>,
}

impl Default for SearchBox {
    fn default() -> Self {
        Self { input: textarea("search the transcript") }
    }
}

impl SearchBox {
    /// A key: the query on confirm.
    pub fn on_key(&mut self, k: KeyEvent, km: &Keymap) -> Edit {
        match km.action(Mode::Search, &k) {
            Some(Action::Cancel) => Edit::Cancel,
            Some(Action::Confirm) => Edit::Submit(self.input.lines().join(" ")),
            _ => {
                self.input.input(k);
                Edit::Keep
            }
        }
    }

    pub fn on_paste(&mut self, text: &str) {
        self.input.insert_str(text);
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let r = bottom(area, 3);
        f.render_widget(Clear, r);
        let mut t = self.input.clone();
        t.set_block(pane(Line::from(Span::styled(" / search ", theme.accent())), true, theme));
        f.render_widget(&t, r);
    }
}

/// What a prompt's answer is for.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptPurpose {
    OverrideValue { target: OverrideTarget, dimension: String },
    OverrideReason { target: OverrideTarget, dimension: String, value: f64 },
    RateValue { dimension: String },
}

/// One line of input with a purpose.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub title: String,
    pub input: TextArea<'static>,
    pub purpose: PromptPurpose,
    /// Why the last answer was refused.
    pub error: Option<String>,
}

impl Prompt {
    pub fn new(title: String, purpose: PromptPurpose, placeholder: &str) -> Self {
        Self { title, input: textarea(placeholder), purpose, error: None }
    }

    /// A key: the answer, trimmed, on confirm.
    pub fn on_key(&mut self, k: KeyEvent, km: &Keymap) -> Edit {
        match km.action(Mode::Prompt, &k) {
            Some(Action::Cancel) => Edit::Cancel,
            Some(Action::Confirm) => Edit::Submit(self.input.lines().join(" ").trim().to_string()),
            _ => {
                self.input.input(k);
                self.error = None;
                Edit::Keep
            }
        }
    }

    pub fn on_paste(&mut self, text: &str) {
        self.input.insert_str(text.replace('\n', " "));
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let h = if self.error.is_some() { 4 } else { 3 };
        let r = centered(area, 64, h);
        f.render_widget(Clear, r);
        let mut t = self.input.clone();
        t.set_block(pane(Line::from(Span::styled(format!(" {} ", self.title), theme.accent())), true, theme));
        f.render_widget(&t, Rect { height: 3, ..r });
        if let Some(e) = &self.error {
            f.render_widget(
                Paragraph::new(Span::styled(e.clone(), theme.error())),
                Rect { y: r.y + 3, height: 1, ..r },
            );
        }
    }
}
