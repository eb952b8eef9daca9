//! Popups: help, quit confirmation, the comment composer, the command line,
//! pickers and prompts.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::pane;
use crate::tui::app::{App, Overlay};

fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [r] = Layout::horizontal([Constraint::Length(w.min(area.width))]).flex(Flex::Center).areas(area);
    let [r] = Layout::vertical([Constraint::Length(h.min(area.height))]).flex(Flex::Center).areas(r);
    r
}

fn bottom(area: Rect, h: u16) -> Rect {
    let h = h.min(area.height);
    Rect { x: area.x, y: area.y + area.height - h, width: area.width, height: h }
}

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let theme = app.env.theme();
    let Some(o) = &app.overlay else { return };
    match o {
        Overlay::Help => {
            let mode = app.mode();
            let mut lines: Vec<Line> = Vec::new();
            // The keys of SAGEval's changes, only where there are some.
            let sage = super::sage::applies(app);
            let sage_keys = super::sage::ACTIONS.map(crate::tui::action::Action::describe);
            // The keys of pairs, only in pairwise sessions.
            let pairwise = super::pairwise::applies(app);
            let pair_keys = super::pairwise::ACTIONS.map(crate::tui::action::Action::describe);
            let shown = |d: &&str| (sage || !sage_keys.contains(d)) && (pairwise || !pair_keys.contains(d));
            for (k, d) in app.env.config.keymap.help(mode).into_iter().filter(|(_, d)| shown(d)) {
                lines.push(Line::from(vec![
                    Span::styled(format!("{k:>18}  "), theme.accent()),
                    Span::styled(d, theme.text()),
                ]));
            }
            lines.push(Line::raw(""));
            lines.push(Line::from(Span::styled(
                "Comment: Enter sends, Alt-Enter new line, Esc cancels. Pickers: ↑↓ Enter, 1–9.",
                theme.muted(),
            )));
            lines.push(Line::from(Span::styled(
                "Command line: comment, override AGENT|final DIM VALUE [REASON], speaker, veto, pause, resume, step, stop, rate DIM VALUE, quit, speed X, seek TURN (Tab completes)",
                theme.muted(),
            )));
            if sage {
                lines.push(Line::from(Span::styled(
                    "SAGEval: accept DIM [AGENT], reject DIM [AGENT], adopt KEY (a new panel file)",
                    theme.muted(),
                )));
            }
            if pairwise {
                lines.push(Line::from(Span::styled(
                    "Pairwise: settle a|b|tie, vote a|b|tie, abstain, label a|b|tie (blind), pair N — on the selected pair; a and b as the screen shows it",
                    theme.muted(),
                )));
            }
            if !app.is_live() {
                lines.push(Line::from(Span::styled("This is a replay: steering keys are disabled.", theme.error())));
            }
            let h = (lines.len() as u16 + 4).min(area.height);
            let r = centered(area, 84, h);
            f.render_widget(Clear, r);
            let block =
                pane(Line::from(Span::styled(format!(" Keys · {} ", mode.as_str()), theme.accent())), true, theme);
            f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).block(block), r);
        }
        Overlay::ConfirmQuit => {
            let r = centered(area, 56, 5);
            f.render_widget(Clear, r);
            let block = pane(Line::from(Span::styled(" Quit? ", theme.error())), true, theme);
            let text = vec![
                Line::from("The debate is still running. Quit now?"),
                Line::from(Span::styled(
                    "The session ends as `stopped`.  y: quit · any other key: stay",
                    theme.muted(),
                )),
            ];
            f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }).block(block), r);
        }
        Overlay::Composer(t) => {
            let h = (t.lines().len() as u16 + 2).clamp(4, 10);
            let r = bottom(area, h);
            f.render_widget(Clear, r);
            let mut t = t.clone();
            t.set_block(pane(Line::from(Span::styled(" Comment to the panel ", theme.human())), true, theme));
            f.render_widget(&t, r);
        }
        Overlay::Steps { dimension, input } => {
            let h = (input.lines().len() as u16 + 2).clamp(5, area.height.saturating_sub(4).max(5));
            let r = bottom(area, h);
            f.render_widget(Clear, r);
            let mut t = input.clone();
            let title = format!(" Evaluation steps of {dimension} — Enter sends, Alt-Enter new line, Esc cancels ");
            t.set_block(pane(Line::from(Span::styled(title, theme.human())), true, theme));
            f.render_widget(&t, r);
        }
        Overlay::CommandLine { input, candidates, error } => {
            let extra = u16::from(error.is_some() || !candidates.is_empty());
            let r = bottom(area, 3 + extra);
            f.render_widget(Clear, r);
            let mut t = input.clone();
            t.set_block(pane(Line::from(Span::styled(" : ", theme.accent())), true, theme));
            f.render_widget(&t, Rect { height: 3, ..r });
            if extra > 0 {
                let line = match error {
                    Some(e) => Line::from(Span::styled(e.clone(), theme.error())),
                    None => Line::from(Span::styled(candidates.join("  "), theme.muted())),
                };
                f.render_widget(Paragraph::new(line), Rect { y: r.y + 3, height: 1, ..r });
            }
        }
        Overlay::Search(t) => {
            let r = bottom(area, 3);
            f.render_widget(Clear, r);
            let mut t = t.clone();
            t.set_block(pane(Line::from(Span::styled(" / search ", theme.accent())), true, theme));
            f.render_widget(&t, r);
        }
        Overlay::Picker(p) => {
            let h = (p.items.len() as u16 + 2).min(area.height);
            let w = p
                .items
                .iter()
                .map(|(l, _)| l.chars().count() as u16 + 8)
                .max()
                .unwrap_or(20)
                .max(p.title.chars().count() as u16 + 4);
            let r = centered(area, w.min(area.width), h);
            f.render_widget(Clear, r);
            let lines: Vec<Line> = p
                .items
                .iter()
                .enumerate()
                .map(|(i, (label, _))| {
                    let st = if i == p.selected { theme.selection() } else { theme.text() };
                    let n = if i < 9 { format!("{} ", i + 1) } else { "  ".into() };
                    Line::from(vec![Span::styled(n, theme.muted()), Span::styled(label.clone(), st)])
                })
                .collect();
            let block = pane(Line::from(Span::styled(format!(" {} ", p.title), theme.accent())), true, theme);
            let inner_h = h.saturating_sub(2) as usize;
            let top = p.selected.saturating_sub(inner_h.saturating_sub(1));
            f.render_widget(Paragraph::new(lines).scroll((top as u16, 0)).block(block), r);
        }
        Overlay::Prompt(p) => {
            let h = if p.error.is_some() { 4 } else { 3 };
            let r = centered(area, 64, h);
            f.render_widget(Clear, r);
            let mut t = p.input.clone();
            t.set_block(pane(Line::from(Span::styled(format!(" {} ", p.title), theme.accent())), true, theme));
            f.render_widget(&t, Rect { height: 3, ..r });
            if let Some(e) = &p.error {
                f.render_widget(
                    Paragraph::new(Span::styled(e.clone(), theme.error())),
                    Rect { y: r.y + 3, height: 1, ..r },
                );
            }
        }
    }
}
