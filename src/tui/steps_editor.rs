//! Editing G-Eval's evaluation steps: pick a dimension, edit its steps in a
//! text box pre-filled with the current ones, send them before scoring starts.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::TextArea;

use super::app::{App, Overlay, PickPurpose, textarea};
use crate::engine::Command;
use crate::session::event::Phase;

impl App {
    pub(super) fn open_steps_picker(&mut self) {
        let v = self.view();
        let uses_steps = v.panel.as_ref().is_some_and(|p| p.protocol.spec().uses_steps);
        if !uses_steps {
            self.error("this protocol has no evaluation steps");
            return;
        }
        if v.phase.is_some_and(|p| p != Phase::Steps) {
            self.error("scoring has started; steps can be edited until it does");
            return;
        }
        let items = v
            .panel
            .iter()
            .flat_map(|p| p.dimensions.iter())
            .map(|d| {
                (
                    format!("{} ({})", d.label(), if v.steps.contains_key(&d.key) { "written" } else { "not yet" }),
                    d.key.clone(),
                )
            })
            .collect();
        self.open_picker("Edit the evaluation steps of", items, PickPurpose::StepsDimension);
    }

    pub(super) fn open_steps_editor(&mut self, dimension: String) {
        let mut input = textarea("the steps, one per line — Enter sends, Alt-Enter new line, Esc cancels");
        if let Some(s) = self.view().steps.get(&dimension) {
            input = TextArea::from(s.steps.lines().map(str::to_string).collect::<Vec<_>>());
            input.set_cursor_line_style(ratatui::style::Style::default());
            input.move_cursor(ratatui_textarea::CursorMove::Bottom);
            input.move_cursor(ratatui_textarea::CursorMove::End);
        }
        self.overlay = Some(Overlay::Steps { dimension, input });
    }

    pub(super) fn on_steps_key(&mut self, k: KeyEvent, dimension: String, mut input: TextArea<'static>) {
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        if k.code == KeyCode::Esc || ctrl_c {
            self.info("steps unchanged");
            return;
        }
        if k.code == KeyCode::Enter && !k.modifiers.contains(KeyModifiers::ALT) {
            let steps = input.lines().join("\n").trim().to_string();
            if steps.is_empty() {
                self.overlay = Some(Overlay::Steps { dimension, input });
                self.error("the steps are empty (Esc cancels)");
                return;
            }
            self.send(Command::EditSteps { dimension: dimension.clone(), steps, author: self.env.author.clone() });
            if self.is_live() {
                self.info(format!("steps for {dimension} sent; space resumes scoring when paused"));
            }
            return;
        }
        if k.code == KeyCode::Enter {
            input.insert_newline();
        } else {
            input.input(k);
        }
        self.overlay = Some(Overlay::Steps { dimension, input });
    }
}
