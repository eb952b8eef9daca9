//! A text box of several lines at the bottom of the screen: the comment
//! composer and the evaluation steps editor.

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Clear;
use ratatui_textarea::TextArea;

use super::{Edit, bottom, key_name, textarea};
use crate::tui::action::Action;
use crate::tui::components::pane;
use crate::tui::keymap::{Keymap, Mode};
use crate::tui::theme::Theme;

/// Lines of text, sent with the confirm key.
#[derive(Debug, Clone)]
pub struct Editor {
    pub input: TextArea<'static>,
}

/// "Enter sends, Alt-Enter new line, Esc cancels", with the keys bound in `mode`.
pub fn hint(km: &Keymap, mode: Mode) -> String {
    let parts = [(Action::Confirm, "sends"), (Action::NewLine, "new line"), (Action::Cancel, "cancels")];
    parts
        .iter()
        .filter_map(|(a, d)| km.key_for(mode, *a).map(|k| format!("{} {d}", key_name(k))))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Editor {
    /// An empty box showing `placeholder`.
    pub fn new(placeholder: &str) -> Self {
        Self { input: textarea(placeholder) }
    }

    /// A box holding these lines, the cursor at the end.
    pub fn with_lines(lines: Vec<String>) -> Self {
        let mut input = TextArea::from(lines);
        input.set_cursor_line_style(ratatui::style::Style::default());
        input.move_cursor(ratatui_textarea::CursorMove::Bottom);
        input.move_cursor(ratatui_textarea::CursorMove::End);
        Self { input }
    }

    /// The text, lines joined and trimmed.
    pub fn text(&self) -> String {
        self.input.lines().join("\n").trim().to_string()
    }

    /// A key, read through `mode`'s table; keys bound there do not reach the text.
    pub fn on_key(&mut self, k: KeyEvent, km: &Keymap, mode: Mode) -> Edit {
        match km.action(mode, &k) {
            Some(Action::Cancel) => Edit::Cancel,
            Some(Action::Confirm) => Edit::Submit(self.text()),
            Some(Action::NewLine) => {
                self.input.insert_newline();
                Edit::Keep
            }
            _ => {
                self.input.input(k);
                Edit::Keep
            }
        }
    }

    pub fn on_paste(&mut self, text: &str) {
        self.input.insert_str(text);
    }

    /// At the bottom, `min_h..=max_h` rows as the text grows.
    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, title: String, min_h: u16, max_h: u16) {
        let h = (self.input.lines().len() as u16 + 2).clamp(min_h, max_h);
        let r = bottom(area, h);
        f.render_widget(Clear, r);
        let mut t = self.input.clone();
        t.set_block(pane(Line::from(Span::styled(title, theme.human())), true, theme));
        f.render_widget(&t, r);
    }
}
