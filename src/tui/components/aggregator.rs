//! The aggregator pane: the result, per group and overall, overrides marked
//! with the original beside them, and the synthesis text.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{abbrev, pane, score_spans};
use crate::session::event::Role;
use crate::session::fold::{AggregateView, SessionView};
use crate::tui::app::{App, Focus};
use crate::tui::theme::Theme;

fn agg_line(label: &str, agg: &AggregateView, dims: &[String], scale: (f64, f64), theme: &Theme) -> Line<'static> {
    if let Some(why) = &agg.no_result {
        return Line::from(vec![
            Span::styled(format!("{label}: "), theme.accent()),
            Span::styled(format!("no result — {why}"), theme.error()),
        ]);
    }
    let items: Vec<(String, Option<f64>, Option<f64>)> = dims
        .iter()
        .filter(|d| !agg.labels.contains_key(*d))
        .map(|d| (abbrev(d), agg.score(d), agg.original.get(d).copied()))
        .collect();
    let mut spans = vec![Span::styled(format!("{label}: "), theme.accent())];
    spans.extend(score_spans(&items, scale, theme));
    // Categorical dimensions: the majority label, not a score.
    for (d, l) in &agg.labels {
        spans.push(Span::styled(format!("  {} ", abbrev(d)), theme.muted()));
        spans.push(Span::raw(l.clone()));
        if let Some(was) = agg.original_labels.get(d) {
            spans.push(Span::styled(format!(" (was {was})"), theme.muted()));
        }
    }
    if let Some(m) = &agg.method {
        spans.push(Span::styled(format!("  [{m}]"), theme.muted()));
    }
    Line::from(spans)
}

/// Means of the agents' latest scores in a group (before aggregation).
fn live_means(v: &SessionView, agents: &[String], dims: &[String]) -> AggregateView {
    let mut scores = crate::session::event::Scores::new();
    let mut overall = None;
    for d in dims {
        let vals: Vec<f64> = agents
            .iter()
            .filter_map(|a| v.agent(a).and_then(|a| a.progress.latest.as_ref()).and_then(|e| e.score(d)))
            .collect();
        if !vals.is_empty() {
            let m = vals.iter().sum::<f64>() / vals.len() as f64;
            if d == "overall" {
                overall = Some(m);
            } else {
                scores.insert(d.clone(), m);
            }
        }
    }
    AggregateView {
        feedback: String::new(),
        scores,
        overall,
        original: Default::default(),
        method: None,
        no_result: None,
        left_out: Vec::new(),
        labels: Default::default(),
        original_labels: Default::default(),
        ranking: Vec::new(),
    }
}

/// The marks of the synthesis shown (the last aggregator turn of `group`,
/// or the panel's): each score it gives that the results do not hold.
fn misstated(v: &SessionView, group: Option<&str>, theme: &Theme) -> Vec<Line<'static>> {
    let last = v.turns.iter().rev().find(|t| t.role == Role::Aggregator && t.group.as_deref() == group);
    last.map(|t| &t.misstates)
        .into_iter()
        .flatten()
        .map(|claim| Line::from(Span::styled(format!("misstates {claim}"), theme.error())))
        .collect()
}

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Aggregator;
    let v = &app.vm.session;
    let scale = v.panel.as_ref().map(|p| (p.scale.min, p.scale.max)).unwrap_or((1.0, 5.0));
    let dims = v.score_keys();
    let block = pane(Line::from(Span::styled(" Result ", theme.accent())), focused, &theme);
    let mut lines: Vec<Line> = Vec::new();
    match &v.aggregate {
        Some(a) => {
            lines.push(agg_line("PANEL", a, &dims, scale, &theme));
            if a.no_result.is_none() && !a.left_out.is_empty() {
                lines.push(Line::from(Span::styled(
                    format!("  left out of the mean (no result): {}", a.left_out.join(", ")),
                    theme.muted(),
                )));
            }
        }
        None => lines.push(Line::from(Span::styled("no result yet — current means:", theme.muted()))),
    }
    for g in &v.groups {
        match &g.aggregate {
            Some(a) => lines.push(agg_line(&g.name, a, &dims, scale, &theme)),
            None => lines.push(agg_line(
                &format!("{} (now)", g.name),
                &live_means(v, &g.agents, &dims),
                &dims,
                scale,
                &theme,
            )),
        }
    }
    if let Some((who, s)) = v.human_ratings.last() {
        let items: Vec<(String, Option<f64>, Option<f64>)> =
            dims.iter().filter(|d| s.contains_key(*d)).map(|d| (abbrev(d), s.get(d).copied(), None)).collect();
        let mut spans = vec![Span::styled(format!("rating by {who}: "), theme.human())];
        spans.extend(score_spans(&items, scale, &theme));
        lines.push(Line::from(spans));
    }
    if let Some(a) = &v.aggregate
        && !a.feedback.trim().is_empty()
    {
        lines.push(Line::raw(""));
        for l in a.feedback.lines() {
            lines.push(Line::from(Span::styled(l.to_string(), theme.text())));
        }
        lines.extend(misstated(v, None, &theme));
    } else {
        for g in &v.groups {
            if let Some(a) = &g.aggregate
                && !a.feedback.trim().is_empty()
            {
                lines.push(Line::raw(""));
                lines.push(Line::from(Span::styled(format!("{}:", g.name), theme.muted())));
                for l in a.feedback.lines() {
                    lines.push(Line::from(Span::styled(l.to_string(), theme.text())));
                }
                lines.extend(misstated(v, Some(&g.name), &theme));
            }
        }
    }
    if let Some(e) = &v.end_error {
        lines.push(Line::from(Span::styled(format!("error: {e}"), theme.error())));
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = inner.width.max(1) as usize;
    let total = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
    let para = Paragraph::new(lines).wrap(Wrap { trim: false });
    let s = app.scroll_of(Focus::Aggregator);
    s.follow = false;
    let top = s.resolve(total, inner.height as usize);
    f.render_widget(para.scroll((top as u16, 0)), inner);
}
