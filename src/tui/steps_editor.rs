//! Editing G-Eval's evaluation steps: pick a dimension, edit its steps in a
//! text box pre-filled with the current ones, send them before scoring starts.

use super::app::{App, Overlay, Pick};
use super::keymap::Mode;
use super::overlays::Editor;
use super::overlays::editor::hint;
use crate::engine::Command;
use crate::session::event::Phase;

impl App {
    pub(super) fn open_steps_picker(&mut self) {
        let v = self.view();
        let uses_steps = v.panel.as_ref().is_some_and(|p| p.protocol.uses_steps());
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
                    Pick::StepsDimension(d.key.clone()),
                )
            })
            .collect();
        self.open_picker("Edit the evaluation steps of", items);
    }

    pub(super) fn open_steps_editor(&mut self, dimension: String) {
        let editor = match self.view().steps.get(&dimension) {
            Some(s) => Editor::with_lines(s.steps.lines().map(str::to_string).collect()),
            None => {
                let keys = hint(&self.env.config.keymap, Mode::Steps);
                Editor::new(&format!("the steps, one per line — {keys}"))
            }
        };
        self.overlay = Some(Overlay::Steps { dimension, editor });
    }

    /// The steps editor's text was confirmed: send it, unless it is empty.
    pub(super) fn send_steps(&mut self, dimension: String, editor: Editor, steps: String) {
        if steps.is_empty() {
            self.overlay = Some(Overlay::Steps { dimension, editor });
            self.error("the steps are empty (Esc cancels)");
            return;
        }
        self.send(Command::EditSteps { dimension: dimension.clone(), steps, author: self.env.author.clone() });
        if self.is_live() {
            self.info(format!("steps for {dimension} sent; space resumes scoring when paused"));
        }
    }
}
