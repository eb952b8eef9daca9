//! The help overlay (`?`): every key of the screen's mode and of the
//! overlays it can open, as bound, and the command line's words. It scrolls
//! when it is taller than the screen.

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::centered;
use crate::tui::action::Action;
use crate::tui::app::{App, Scroll};
use crate::tui::components::{pairwise, pane, sage};
use crate::tui::keymap::{Keymap, Mode};

/// The help overlay and how far it is scrolled.
#[derive(Debug, Clone)]
pub struct Help {
    scroll: Scroll,
}

impl Default for Help {
    fn default() -> Self {
        Self { scroll: Scroll { follow: false, ..Scroll::default() } }
    }
}

/// The overlays a mode can open, with a heading for each, in the order the help lists them.
fn overlays(mode: Mode) -> Vec<(Mode, &'static str)> {
    let mut v = Vec::new();
    if mode == Mode::Live {
        v.extend([
            (Mode::Picker, "In a list to choose from"),
            (Mode::Prompt, "In a prompt (a value, a reason)"),
            (Mode::Composer, "In the comment box"),
            (Mode::Steps, "In the evaluation steps box"),
        ]);
    }
    v.extend([(Mode::CommandLine, "On the command line"), (Mode::Search, "In the search box")]);
    if mode == Mode::Live {
        v.push((Mode::ConfirmQuit, "When quitting asks first"));
    }
    v.push((Mode::Help, "In this help"));
    v
}

/// `(keys, description)` of the overlays `mode` can open, under a heading each (keys empty).
pub fn overlay_keys(km: &Keymap, mode: Mode) -> Vec<(String, &'static str)> {
    let mut out = Vec::new();
    for (m, heading) in overlays(mode) {
        out.push((String::new(), heading));
        out.extend(km.help(m));
    }
    out
}

/// The help's keys for the footer.
pub fn footer(km: &Keymap) -> Vec<(String, String)> {
    let key = |a: Action| km.key_for(Mode::Help, a).map(|k| k.to_string());
    let mut out = Vec::new();
    if let Some(k) = key(Action::Back) {
        out.push((k, "close".to_string()));
    }
    let moves: String = [key(Action::ScrollUp), key(Action::ScrollDown)].into_iter().flatten().collect();
    if !moves.is_empty() {
        out.push((moves, "scroll".into()));
    }
    out
}

impl Help {
    /// A key: whether the help stays open.
    pub fn on_key(&mut self, k: KeyEvent, km: &Keymap) -> bool {
        let page = self.scroll.height.max(2) as isize - 1;
        match km.action(Mode::Help, &k) {
            Some(Action::Back) => return false,
            Some(Action::ScrollUp) => self.scroll.by(-1),
            Some(Action::ScrollDown) => self.scroll.by(1),
            Some(Action::PageUp) => self.scroll.by(-page),
            Some(Action::PageDown) => self.scroll.by(page),
            _ => {}
        }
        true
    }

    pub fn draw(&mut self, f: &mut Frame, area: Rect, app: &App) {
        let theme = app.env.theme();
        let km = &app.env.config.keymap;
        let mode = app.mode();
        let mut lines: Vec<Line> = Vec::new();
        // The keys of SAGEval's changes, only where there are some.
        let sage = sage::applies(app);
        let sage_keys = sage::ACTIONS.map(Action::describe);
        // The keys of pairs, only in pairwise sessions.
        let pairwise = pairwise::applies(app);
        let pair_keys = pairwise::ACTIONS.map(Action::describe);
        let shown = |d: &&str| (sage || !sage_keys.contains(d)) && (pairwise || !pair_keys.contains(d));
        let key_line = |k: String, d: &'static str| {
            Line::from(vec![Span::styled(format!("{k:>18}  "), theme.accent()), Span::styled(d, theme.text())])
        };
        for (k, d) in km.help(mode).into_iter().filter(|(_, d)| shown(d)) {
            lines.push(key_line(k, d));
        }
        for (k, d) in overlay_keys(km, mode) {
            if k.is_empty() {
                lines.push(Line::raw(""));
                lines.push(Line::from(Span::styled(d, theme.muted())));
            } else {
                lines.push(key_line(k, d));
            }
        }
        lines.push(Line::raw(""));
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
        // Rows once wrapped, counted generously so that the end can be reached.
        let inner_w = r.width.saturating_sub(2).max(1) as usize;
        let rows: usize =
            lines.iter().map(|l| l.width().div_ceil(inner_w).max(1) + usize::from(l.width() > inner_w)).sum();
        let top = self.scroll.resolve(rows, r.height.saturating_sub(2) as usize);
        let block = pane(Line::from(Span::styled(format!(" Keys · {} ", mode.as_str()), theme.accent())), true, theme);
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((top as u16, 0)).block(block), r);
    }
}
