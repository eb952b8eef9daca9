//! The moderator pane: who speaks, who was picked next and why, who is done.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::pane;
use crate::panel::SpeakingOrder;
use crate::session::event::SelectedBy;
use crate::session::fold::TurnState;
use crate::tui::app::{App, Focus, by_label};

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Moderator;
    let v = &app.vm.session;
    // Protocols that speak in rounds count rounds; a moderated debate counts turns.
    let order = v.panel.as_ref().map(|p| p.protocol.speaking_order());
    let (collab, max, policy) = match (&v.panel, &order) {
        (Some(p), Some(SpeakingOrder::Rounds { rounds, how })) => {
            (true, i64::from(rounds.unwrap_or(p.consensus.max_rounds)), how.clone())
        }
        (Some(p), Some(SpeakingOrder::Moderated)) => {
            (false, i64::from(p.moderator.max_turns), p.moderator.policy.as_str().to_string())
        }
        // A run without a discussion (a composition of other stages): nobody takes the floor.
        (Some(_), Some(SpeakingOrder::Independent)) => (false, 0, "no discussion".to_string()),
        _ => (false, 0, String::new()),
    };
    let independent = order == Some(SpeakingOrder::Independent);
    let unit = if collab { "round" } else { "turn" };
    let block = pane(Line::from(Span::styled(format!(" Moderator · {policy} "), theme.accent())), focused, &theme);
    let mut lines: Vec<Line> = Vec::new();
    let speaking = v.turns.iter().rev().find(|t| t.state == TurnState::Streaming);
    for g in &v.groups {
        let active = speaking.is_some_and(|t| t.group.as_deref() == Some(&g.name));
        let phase = g.phase.map(|p| p.as_str().replace('_', " ")).unwrap_or_else(|| "not started".into());
        lines.push(Line::from(vec![
            Span::styled(g.name.clone(), if active { theme.speaking() } else { theme.accent() }),
            Span::styled(
                if independent {
                    format!("  {phase}")
                } else {
                    format!(
                        "  {phase} · {unit} {} of {max}",
                        if collab { g.round.unwrap_or(0) } else { g.debate_turns }
                    )
                },
                theme.muted(),
            ),
        ]));
        if let Some(t) = speaking.filter(|_| active) {
            lines.push(Line::from(vec![
                Span::styled(" now: ", theme.muted()),
                Span::styled(t.agent.clone(), theme.speaking()),
            ]));
        }
        if let Some(p) = g.picks.last() {
            let who = if p.by == SelectedBy::Human { theme.human() } else { theme.text() };
            let mut spans = vec![
                Span::styled(" pick: ", theme.muted()),
                Span::styled(p.agent.clone(), who),
                Span::styled(
                    format!(" ({})", by_label(p.by)),
                    if p.by == SelectedBy::Human { theme.human() } else { theme.muted() },
                ),
            ];
            if !p.reason.is_empty() {
                spans.push(Span::styled(format!(" — {}", p.reason), theme.text()));
            }
            if let Some(fb) = &p.fallback {
                spans.push(Span::styled(format!(" [fallback: {fb}]"), theme.error()));
            }
            lines.push(Line::from(spans));
        }
        let done: Vec<&str> =
            g.agents.iter().filter(|n| v.agent(n).is_some_and(|a| a.progress.finished)).map(String::as_str).collect();
        if !done.is_empty() {
            lines.push(Line::from(vec![
                Span::styled(" finished: ", theme.muted()),
                Span::styled(done.join(", "), theme.done()),
            ]));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("waiting for the first turn", theme.muted())));
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    let s = app.scroll_of(Focus::Moderator);
    s.follow = false;
    let top = s.resolve(lines.len(), inner.height as usize);
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((top as u16, 0)), inner);
}
