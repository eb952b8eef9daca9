//! The summarizer's pane (ChatEval with `simultaneous-summarizer`): each
//! group's latest summary of the discussion, streaming while it is written.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::pane;
use crate::session::event::Role;
use crate::session::fold::TurnState;
use crate::tui::app::{App, Focus};
use crate::tui::wrap::wrap;

/// Whether the session's panel has a summarizer: its protocol's `strategy`
/// setting is `simultaneous-summarizer` (ChatEval's).
pub fn applies(app: &App) -> bool {
    app.view().panel.as_ref().is_some_and(|p| p.protocol.roles().contains(&crate::roles::Role::Summarizer))
}

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Summary;
    let v = &app.vm.session;
    let block = pane(Line::from(Span::styled(" Summary ", theme.accent())), focused, &theme);
    let inner = block.inner(area);
    let width = inner.width.max(1) as usize;
    f.render_widget(block, area);
    let mut lines: Vec<Line> = Vec::new();
    for g in &v.groups {
        let latest = v.turns.iter().rev().find(|t| t.role == Role::Summarizer && t.group.as_deref() == Some(&g.name));
        let round = latest.and_then(|t| t.round).map(|r| format!(" · after round {r}")).unwrap_or_default();
        let state = match latest.map(|t| t.state) {
            Some(TurnState::Streaming) => "  ▶ writing",
            Some(TurnState::Failed) => "  ✗ failed",
            _ => "",
        };
        lines.push(Line::from(vec![
            Span::styled(g.name.clone(), theme.accent()),
            Span::styled(format!("{round}{state}"), theme.muted()),
        ]));
        match latest {
            Some(t) if !t.text.trim().is_empty() => {
                for l in t.text.trim().lines() {
                    lines.extend(wrap(l, width).into_iter().map(|w| Line::from(Span::styled(w.text, theme.text()))));
                }
            }
            _ => lines.push(Line::from(Span::styled("(no summary yet: it follows each round)", theme.muted()))),
        }
    }
    let s = app.scroll_of(Focus::Summary);
    let top = s.resolve(lines.len(), inner.height as usize);
    f.render_widget(Paragraph::new(lines).scroll((top as u16, 0)), inner);
}
