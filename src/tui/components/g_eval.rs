//! G-Eval's panes: the evaluation steps of each dimension (where they came
//! from, and how to edit them while the run waits for review), and the
//! scores table (each judge's draws per dimension, their mean, and the
//! probability-weighted score).

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{clip, pane};
use crate::session::event::{Phase, StepsSource};
use crate::session::fold::{RunState, SessionView, TurnState};
use crate::tui::app::{App, Focus, fmt_score};
use crate::tui::words::steps_origin;
use crate::tui::wrap::wrap;

pub fn steps(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Steps;
    let v = &app.vm.session;
    let block = pane(Line::from(Span::styled(" Evaluation steps ", theme.accent())), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width.max(1) as usize;
    let mut lines: Vec<Line> = Vec::new();
    if v.state == RunState::Paused && v.phase == Some(Phase::Steps) {
        for l in wrap("Waiting for review: edit with :steps <dimension> <text>, then space to score.", width) {
            lines.push(Line::from(Span::styled(l.text, theme.human())));
        }
    }
    let writing: Vec<&str> = v
        .turns
        .iter()
        .filter(|t| t.phase == Phase::Steps && t.state == TurnState::Streaming)
        .filter_map(|t| t.dimension.as_deref())
        .collect();
    for d in v.panel.iter().flat_map(|p| p.dimensions.iter()) {
        let (status, style) = match v.steps.get(&d.key) {
            Some(s) => {
                let st = if s.source == StepsSource::Human { theme.human() } else { theme.muted() };
                (steps_origin(s.source, s.author.as_deref(), s.turn), st)
            }
            None if writing.contains(&d.key.as_str()) => ("being written…".into(), theme.speaking()),
            None => ("none yet".into(), theme.muted()),
        };
        lines.push(Line::from(vec![
            Span::styled(d.label().to_string(), theme.accent()),
            Span::styled(format!(" · {}", clip(&status, width.saturating_sub(d.label().len() + 3))), style),
        ]));
        if let Some(s) = v.steps.get(&d.key) {
            for l in s.steps.lines().filter(|l| !l.trim().is_empty()) {
                for w in wrap(&format!("  {}", l.trim()), width) {
                    lines.push(Line::from(Span::styled(w.text, theme.text())));
                }
            }
        }
    }
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("no dimensions", theme.muted())));
    }
    // From the top: the review hint and the first dimension come first.
    let s = app.scroll_of(Focus::Steps);
    s.follow = false;
    let top = s.resolve(lines.len(), inner.height as usize);
    f.render_widget(Paragraph::new(lines).scroll((top as u16, 0)), inner);
}

/// One judge's readings of one dimension.
#[derive(Default)]
struct Cell {
    sampled: Vec<f64>,
    weighted: Vec<f64>,
    unreadable: usize,
    pending: usize,
}

/// Judge → dimension → readings, from the scoring turns.
fn cells(v: &SessionView) -> BTreeMap<(String, String), Cell> {
    let mut out: BTreeMap<(String, String), Cell> = BTreeMap::new();
    for t in v.turns.iter().filter(|t| t.phase == Phase::Scoring) {
        let Some(d) = &t.dimension else { continue };
        let cell = out.entry((t.agent.clone(), d.clone())).or_default();
        match (&t.evaluation, t.state) {
            (Some(ev), _) => {
                cell.sampled.extend(ev.score(d));
                cell.weighted.extend(ev.weighted_scores.as_ref().and_then(|w| w.get(d)));
            }
            (None, TurnState::Streaming) => cell.pending += 1,
            // A repair that follows settles the draw; count a failure once it is the last word.
            (None, _) if t.parse_error.is_some() && t.kind == crate::session::event::TurnKind::Repair => {
                cell.unreadable += 1
            }
            (None, TurnState::Failed) => cell.unreadable += 1,
            _ => {}
        }
    }
    out
}

fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

pub fn scores(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Scores;
    let v = &app.vm.session;
    let samples =
        v.panel.as_ref().and_then(|p| p.protocol.composition()).map_or(1, |c| {
            c.of(crate::panel::composition::StageKind::Score).next().map_or(1, |s| s.integer("samples"))
        });
    let title = format!(" Scores · {samples} draw{} unless weighted ", if samples == 1 { "" } else { "s" });
    let block = pane(Line::from(Span::styled(title, theme.accent())), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let (min, max) = v.panel.as_ref().map(|p| (p.scale.min, p.scale.max)).unwrap_or((1.0, 5.0));
    let width = inner.width as usize;
    let label_w = if width >= 50 { 14 } else { 8 };
    let draws_w = width.saturating_sub(label_w + 18).max(4);
    let table = cells(v);
    let mut lines: Vec<Line> = Vec::new();
    let dims: Vec<(String, String)> =
        v.panel.iter().flat_map(|p| p.dimensions.iter()).map(|d| (d.key.clone(), d.label().to_string())).collect();
    for a in &v.agents {
        lines.push(Line::from(vec![
            Span::styled(format!("{:<label_w$}", clip(&a.info.name, label_w)), theme.accent()),
            Span::styled(format!("  {:>draws_w$} {:>6} {:>8}", "draws", "mean", "weighted"), theme.muted()),
        ]));
        let final_ = v.groups.iter().find_map(|g| g.finals.get(&a.info.name));
        for (key, label) in &dims {
            let cell = table.get(&(a.info.name.clone(), key.clone()));
            let mut spans = vec![Span::styled(format!("{:<label_w$}", clip(label, label_w - 1)), theme.text())];
            let mut draws: Vec<String> =
                cell.map(|c| c.sampled.iter().map(|s| fmt_score(*s)).collect()).unwrap_or_default();
            if let Some(c) = cell {
                draws.extend(std::iter::repeat_n("✗".to_string(), c.unreadable));
                draws.extend(std::iter::repeat_n("…".to_string(), c.pending));
            }
            spans.push(Span::styled(format!("  {:>draws_w$}", clip(&draws.join(" "), draws_w)), theme.muted()));
            // The final evaluation has the means, a person's overrides applied.
            let sampled = final_.and_then(|e| e.score(key)).or_else(|| cell.and_then(|c| mean(&c.sampled)));
            let weighted = final_
                .and_then(|e| e.weighted_scores.as_ref().and_then(|w| w.get(key).copied()))
                .or_else(|| cell.and_then(|c| mean(&c.weighted)));
            match sampled {
                Some(s) => spans.push(Span::styled(format!(" {:>6}", fmt_score(s)), theme.score(s, min, max))),
                None => spans.push(Span::styled(format!(" {:>6}", "–"), theme.muted())),
            }
            match weighted {
                Some(w) => spans.push(Span::styled(format!(" {:>8}", format!("{w:.2}")), theme.score(w, min, max))),
                None => spans.push(Span::styled(format!(" {:>8}", "–"), theme.muted())),
            }
            lines.push(Line::from(spans));
        }
        // The mean of the dimensions as overall: not for a panel without
        // one, nor where a dimension keyed `overall` has its own row.
        if let Some(e) = final_.filter(|_| v.panel.as_ref().is_none_or(|p| p.asks_overall())) {
            let o = e.overall.map(fmt_score).unwrap_or_else(|| "–".into());
            let w = e.weighted_scores.as_ref().and_then(|w| w.get("overall")).map(|w| format!("{w:.2}"));
            lines.push(Line::from(vec![
                Span::styled(format!("{:<label_w$}", "overall"), theme.accent()),
                Span::styled(format!("  {:>draws_w$} {o:>6} {:>8}", "", w.unwrap_or_else(|| "–".into())), theme.text()),
            ]));
        }
    }
    if lines.is_empty() {
        lines.push(Line::from(Span::styled("no judges yet", theme.muted())));
    }
    let s = app.scroll_of(Focus::Scores);
    s.follow = false;
    let top = s.resolve(lines.len(), inner.height as usize);
    f.render_widget(Paragraph::new(lines).scroll((top as u16, 0)), inner);
}
