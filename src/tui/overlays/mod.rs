//! The popups of the session screen. Each is a component: a struct that owns
//! its state, draws itself and reads its keys through the keymap (one
//! `[keys.<overlay>]` table per overlay, see [`Mode`]). A component's key
//! handler says what happened; the [`App`] carries it out (sends a command,
//! opens the next overlay).

pub mod confirm_quit;
pub mod editor;
pub mod help;
pub mod line;
pub mod picker;

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui_textarea::TextArea;

use super::action::Action;
use super::app::App;
use super::keymap::{Key, KeyCodeOrd, Keymap, Mode};

pub use editor::Editor;
pub use help::Help;
pub use line::{CommandLine, Prompt, PromptPurpose, SearchBox};
pub use picker::{Pick, Picker};

/// A popup over the screen that takes the keys while open.
#[derive(Debug, Clone)]
pub enum Overlay {
    Help(Help),
    ConfirmQuit,
    Composer(Editor),
    CommandLine(CommandLine),
    Picker(Picker),
    Prompt(Prompt),
    Search(SearchBox),
    /// Editing a dimension's evaluation steps.
    Steps {
        dimension: String,
        editor: Editor,
    },
}

/// What a text box did with a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Edit {
    /// Still open.
    Keep,
    /// Closed without doing anything.
    Cancel,
    /// Closed with this text to act on.
    Submit(String),
}

impl Overlay {
    /// The keymap table this overlay reads.
    pub fn mode(&self) -> Mode {
        match self {
            Overlay::Help(_) => Mode::Help,
            Overlay::ConfirmQuit => Mode::ConfirmQuit,
            Overlay::Composer(_) => Mode::Composer,
            Overlay::CommandLine(_) => Mode::CommandLine,
            Overlay::Picker(_) => Mode::Picker,
            Overlay::Prompt(_) => Mode::Prompt,
            Overlay::Search(_) => Mode::Search,
            Overlay::Steps { .. } => Mode::Steps,
        }
    }

    /// Text pasted while the overlay is open.
    pub fn on_paste(&mut self, text: &str) -> bool {
        match self {
            Overlay::Composer(e) => e.on_paste(text),
            Overlay::Search(s) => s.on_paste(text),
            Overlay::CommandLine(c) => c.on_paste(text),
            Overlay::Prompt(p) => p.on_paste(text),
            _ => return false,
        }
        true
    }

    /// The overlay's keys for the footer: `(keys, what they do)`.
    pub fn footer(&self, km: &Keymap) -> Vec<(String, String)> {
        let mode = self.mode();
        match self {
            Overlay::Composer(_) | Overlay::Steps { .. } => {
                keys(km, mode, &[(Action::Confirm, "send"), (Action::NewLine, "new line"), (Action::Cancel, "cancel")])
            }
            Overlay::CommandLine(_) => {
                keys(km, mode, &[(Action::Confirm, "run"), (Action::Complete, "complete"), (Action::Cancel, "cancel")])
            }
            Overlay::Picker(_) => picker::footer(km),
            Overlay::Prompt(_) => keys(km, mode, &[(Action::Confirm, "ok"), (Action::Cancel, "cancel")]),
            Overlay::Search(_) => keys(km, mode, &[(Action::Confirm, "search"), (Action::Cancel, "cancel")]),
            Overlay::ConfirmQuit => {
                let mut k = keys(km, mode, &[(Action::Confirm, "quit")]);
                k.push(("any other key".into(), "stay".into()));
                k
            }
            Overlay::Help(_) => help::footer(km),
        }
    }
}

/// Draw the open overlay, if any.
pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let Some(mut o) = app.overlay.take() else { return };
    let theme = app.env.theme();
    let km = &app.env.config.keymap;
    match &mut o {
        Overlay::Help(h) => h.draw(f, area, app),
        Overlay::ConfirmQuit => confirm_quit::draw(f, area, theme, km),
        Overlay::Composer(e) => e.draw(f, area, theme, " Comment to the panel ".into(), 4, 10),
        Overlay::Steps { dimension, editor } => {
            let title = format!(" Evaluation steps of {dimension} — {} ", editor::hint(km, Mode::Steps));
            editor.draw(f, area, theme, title, 5, area.height.saturating_sub(4).max(5));
        }
        Overlay::CommandLine(c) => c.draw(f, area, theme),
        Overlay::Search(s) => s.draw(f, area, theme),
        Overlay::Picker(p) => p.draw(f, area, theme, km),
        Overlay::Prompt(p) => p.draw(f, area, theme),
    }
    app.overlay = Some(o);
}

/// `(key, label)` for the footer: the first key bound to each action in a mode; unbound actions are left out.
pub(crate) fn keys(km: &Keymap, mode: Mode, actions: &[(Action, &str)]) -> Vec<(String, String)> {
    actions.iter().filter_map(|(a, d)| km.key_for(mode, *a).map(|k| (k.to_string(), d.to_string()))).collect()
}

/// A key as running text names it: `Enter`, `Alt-Enter`, `Esc`, `ctrl-s` → `Ctrl-s`.
pub(crate) fn key_name(key: Key) -> String {
    let plain = key.to_string();
    if matches!(key.code, KeyCodeOrd::Char(c) if c != ' ') && !key.ctrl && !key.alt {
        return plain;
    }
    plain
        .split('-')
        .map(|part| {
            let mut c = part.chars();
            match (c.next(), part.chars().count() > 1) {
                (Some(first), true) => first.to_uppercase().chain(c).collect(),
                _ => part.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

pub(crate) fn textarea(placeholder: &str) -> TextArea<'static> {
    let mut t = TextArea::default();
    t.set_placeholder_text(placeholder);
    t.set_cursor_line_style(ratatui::style::Style::default());
    t
}

pub(crate) fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(area);
    let [r] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(r);
    r
}

pub(crate) fn bottom(area: Rect, h: u16) -> Rect {
    let h = h.min(area.height);
    Rect { x: area.x, y: area.y + area.height - h, width: area.width, height: h }
}
