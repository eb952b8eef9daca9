//! The consensus pane: per group and dimension, each agent's current score,
//! the spread, its trend over rounds, and whether the rule holds.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use super::{abbrev, clip, pane, sparkline};
use crate::tui::app::{App, Focus, fmt_score};

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Consensus;
    let v = &app.vm.session;
    let (min, max) = v.panel.as_ref().map(|p| (p.scale.min, p.scale.max)).unwrap_or((1.0, 5.0));
    let compares_pairs = v.panel.as_ref().is_some_and(|p| p.protocol.compares_pairs());
    let rule = v
        .panel
        .as_ref()
        .map(|p| match compares_pairs {
            true => "same verdict".to_string(),
            false => format!("{} ±{}", p.consensus.rule.as_str(), fmt_score(p.consensus.tolerance)),
        })
        .unwrap_or_default();
    let block = pane(Line::from(Span::styled(format!(" Consensus · {rule} "), theme.accent())), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let dims = v.score_keys();
    let label_w = if width >= 60 { 14 } else { 5 };
    let mut lines: Vec<Line> = Vec::new();
    for g in &v.groups {
        let last = g.consensus.last();
        let (mark, st) = match last {
            Some(c) if c.reached => (format!("✓ holds{}", when(c.round)), theme.consensus(true)),
            Some(c) => (format!("✗ not yet{}", when(c.round)), theme.consensus(false)),
            None => ("not checked yet".to_string(), theme.muted()),
        };
        lines.push(Line::from(vec![Span::styled(format!("{} ", g.name), theme.accent()), Span::styled(mark, st)]));
        let n = g.agents.len().max(1);
        let col = ((width.saturating_sub(label_w + 14)) / n).clamp(3, 8);
        let mut head = vec![Span::styled(format!("{:<label_w$}", ""), theme.muted())];
        for a in &g.agents {
            head.push(Span::styled(format!("{:>col$}", clip(a, col - 1)), theme.muted()));
        }
        head.push(Span::styled(if compares_pairs { "  agree" } else { "  spr trend" }, theme.muted()));
        lines.push(Line::from(head));
        if compares_pairs {
            // Label verdicts instead of scores: each member's latest, and whether they all agree.
            let mut spans = vec![Span::styled(format!("{:<label_w$}", "verdict"), theme.text())];
            let said: Vec<Option<&str>> = g
                .agents
                .iter()
                .map(|a| v.agent(a).and_then(|a| a.progress.latest.as_ref()).and_then(|e| e.label.as_deref()))
                .collect();
            for l in &said {
                spans.push(Span::styled(format!("{:>col$}", l.unwrap_or("–")), theme.text()));
            }
            let agreed = said.first().copied().flatten().is_some_and(|f| said.iter().all(|l| *l == Some(f)));
            let word = if agreed { "  same" } else { "  differ" };
            spans.push(Span::styled(word, theme.consensus(agreed)));
            lines.push(Line::from(spans));
            continue;
        }
        for d in &dims {
            let label = if label_w > 5 { clip(&d.replace('_', " "), label_w - 1) } else { abbrev(d) };
            let mut spans = vec![Span::styled(format!("{label:<label_w$}"), theme.text())];
            let mut vals = Vec::new();
            for a in &g.agents {
                let s = v.agent(a).and_then(|a| a.progress.latest.as_ref()).and_then(|e| e.score(d));
                match s {
                    Some(x) => {
                        vals.push(x);
                        spans.push(Span::styled(format!("{:>col$}", fmt_score(x)), theme.score(x, min, max)));
                    }
                    None => spans.push(Span::styled(format!("{:>col$}", "–"), theme.muted())),
                }
            }
            let spread = if vals.len() >= 2 {
                vals.iter().cloned().fold(f64::MIN, f64::max) - vals.iter().cloned().fold(f64::MAX, f64::min)
            } else {
                0.0
            };
            let tol = v.panel.as_ref().map(|p| p.consensus.tolerance).unwrap_or(0.0);
            let history: Vec<f64> = g.consensus.iter().filter_map(|c| c.spread.get(d).copied()).collect();
            spans.push(Span::styled(format!("  {:>3}", fmt_score(spread)), theme.consensus(spread <= tol + 1e-9)));
            spans.push(Span::styled(format!(" {}", sparkline(&history, 0.0, (max - min).max(1.0))), theme.muted()));
            lines.push(Line::from(spans));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("no groups yet", theme.muted())));
    }
    let s = app.scroll_of(Focus::Consensus);
    s.follow = false;
    let top = s.resolve(lines.len(), inner.height as usize);
    super::draw_lines(f.buffer_mut(), inner, lines.get(top..).unwrap_or_default());
}

/// When a consensus check was made, after its status: " (round 2)", or
/// nothing for a check made during a moderated debate (it has no round).
fn when(round: Option<u32>) -> String {
    round.map(|r| format!(" ({})", crate::session::event::round_label(r))).unwrap_or_default()
}
