//! The question before quitting a session that is still running.

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::centered;
use crate::tui::action::Action;
use crate::tui::components::pane;
use crate::tui::keymap::{Keymap, Mode};
use crate::tui::theme::Theme;

/// Whether the key says quit; any other key stays.
pub fn on_key(k: KeyEvent, km: &Keymap) -> bool {
    km.action(Mode::ConfirmQuit, &k) == Some(Action::Confirm)
}

pub fn draw(f: &mut Frame, area: Rect, theme: &Theme, km: &Keymap) {
    let r = centered(area, 56, 5);
    f.render_widget(Clear, r);
    let block = pane(Line::from(Span::styled(" Quit? ", theme.error())), true, theme);
    let yes = km.key_for(Mode::ConfirmQuit, Action::Confirm).map(|k| format!("{k}: quit · ")).unwrap_or_default();
    let text = vec![
        Line::from("The debate is still running. Quit now?"),
        Line::from(Span::styled(format!("The session ends as `stopped`.  {yes}any other key: stay"), theme.muted())),
    ];
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }).block(block), r);
}
