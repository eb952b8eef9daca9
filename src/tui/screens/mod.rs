//! Screens arrange components; they hold no logic of their own.

pub mod home;
pub mod live;
pub mod prepare;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::tui::theme::Theme;

/// The frame of a full-screen page: draws the title bar (`moot — <title>`)
/// and returns the body and the one-line footer below it.
pub fn page(f: &mut Frame, theme: &Theme, title: &str) -> (Rect, Rect) {
    let [head, body, foot] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1)]).areas(f.area());
    f.render_widget(
        Paragraph::new(Line::from(Span::styled(format!(" moot — {title} "), theme.header()))).style(theme.header()),
        head,
    );
    (body, foot)
}
