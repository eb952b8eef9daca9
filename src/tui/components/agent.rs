//! One pane per agent: who it is, what it is doing, its latest scores, and
//! its turns: their words as they stream in (without the JSON evaluation a
//! reply ends with), then each turn's scores on a line of their own.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use super::{clip, pane, score_spans};
use crate::session::fold::{AgentState, AgentView};
use crate::tui::app::{App, Focus, fmt_score};
use crate::tui::theme::Theme;

/// The state badge of an agent: symbol, word and style.
pub fn badge(a: &AgentView, theme: &Theme) -> (&'static str, String, Style) {
    match a.state {
        AgentState::Waiting if a.progress.finished => ("✓", "done".into(), theme.done()),
        AgentState::Waiting => ("·", "waiting".into(), theme.waiting()),
        AgentState::Thinking => ("…", "thinking".into(), theme.thinking()),
        AgentState::Queued => ("⧗", "queued".into(), theme.waiting()),
        AgentState::Speaking => ("▶", "SPEAKING".into(), theme.speaking().add_modifier(Modifier::REVERSED)),
        AgentState::Done => ("✓", "done".into(), theme.done()),
        AgentState::Failed { retries } => ("✗", format!("failed (try {retries})"), theme.failed()),
    }
}

/// Draw agent `idx` in `area`.
pub fn draw(f: &mut Frame, area: Rect, app: &mut App, idx: usize) {
    let focused = app.focus == Focus::Agent(idx);
    let theme = app.env.theme().clone();
    let Some(a) = app.vm.session.agents.get(idx) else { return };
    let (sym, word, style) = badge(a, &theme);
    let speaking = matches!(a.state, AgentState::Speaking | AgentState::Thinking);
    let name_style = if speaking { theme.speaking() } else { theme.text().add_modifier(Modifier::BOLD) };
    let role = if a.info.role.is_empty() { String::new() } else { format!(" · {}", a.info.role) };
    let title_w = area.width.saturating_sub(word.len() as u16 + 8) as usize;
    let title = Line::from(vec![
        Span::styled(format!(" {sym} "), style),
        Span::styled(clip(&format!("{}{role}", a.info.name), title_w.max(4)), name_style),
        Span::raw(" "),
    ]);
    let mut block =
        pane(title, focused, &theme).title_top(Line::from(Span::styled(format!(" {word} "), style)).right_aligned());
    if speaking {
        block = block.border_set(ratatui::symbols::border::DOUBLE).border_style(if theme.monochrome {
            Style::default().add_modifier(Modifier::BOLD)
        } else {
            Style::default().fg(theme.speaking)
        });
    }
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    // Score line.
    let scale = app.vm.session.panel.as_ref().map(|p| (p.scale.min, p.scale.max)).unwrap_or((1.0, 5.0));
    let dims = app.vm.session.score_keys();
    let mut header_lines: Vec<Line> = Vec::new();
    match &a.progress.latest {
        Some(ev) if ev.label.is_some() && ev.scores.is_empty() => {
            // A label verdict (CollabEval's pairwise mode), not scores.
            let mut spans = vec![
                Span::styled("verdict ", theme.muted()),
                Span::styled(ev.label.clone().unwrap_or_default(), theme.accent()),
            ];
            if let Some(c) = ev.confidence {
                spans.push(Span::styled(format!("  conf {}", fmt_score(c)), theme.muted()));
            }
            header_lines.push(Line::from(spans));
        }
        Some(ev) => {
            let items: Vec<(String, Option<f64>, Option<f64>)> = dims
                .iter()
                .filter(|d| !ev.labels.contains_key(*d))
                .map(|d| (super::abbrev(d), ev.score(d), a.overridden.get(d).copied()))
                .collect();
            let mut spans = score_spans(&items, scale, &theme);
            // Categorical dimensions show their label.
            for (d, l) in &ev.labels {
                spans.push(Span::styled(format!(" {} ", super::abbrev(d)), theme.muted()));
                spans.push(Span::styled(l.clone(), theme.text()));
            }
            if let Some(c) = ev.confidence {
                spans.push(Span::styled(format!("  conf {}", fmt_score(c)), theme.muted()));
            }
            header_lines.push(Line::from(spans));
        }
        None => {
            let compares_pairs = app.vm.session.panel.as_ref().is_some_and(|p| p.protocol.compares_pairs());
            let nothing = if compares_pairs { "no verdict yet" } else { "no scores yet" };
            header_lines.push(Line::from(Span::styled(nothing, theme.muted())));
        }
    }
    if let AgentState::Failed { .. } = a.state
        && let Some(t) = a.turns.last().and_then(|&i| app.vm.session.turns.get(i))
        && let Some(err) = &t.last_error
    {
        header_lines.push(Line::from(Span::styled(clip(err, inner.width as usize), theme.error())));
    }
    let head_h = (header_lines.len() as u16).min(inner.height);
    super::draw_lines(f.buffer_mut(), Rect { height: head_h, ..inner }, &header_lines);
    let body = Rect { y: inner.y + head_h, height: inner.height - head_h, ..inner };
    if body.height == 0 {
        return;
    }
    // Turns of this agent: a marker line, the wrapped words, then the
    // turn's scores once it completed.
    let width = body.width;
    let height = body.height as usize;
    let vm = &mut app.vm;
    let pane = vm.panes.entry(idx).or_default();
    pane.refresh(&vm.session, &vm.session.agents[idx].turns, width, &mut vm.wrap);
    let total = pane.total();
    let top = app.scroll_of(Focus::Agent(idx)).resolve(total, height);
    let vm = &mut app.vm;
    let pane = &vm.panes[&idx];
    let a = &vm.session.agents[idx];
    let mut out: Vec<Line> = Vec::with_capacity(height);
    for (k, start) in pane.visible(top, height) {
        let t = &vm.session.turns[a.turns[k]];
        let mut rows: Vec<Line> = Vec::new();
        let mut label = format!("── {} ", crate::tui::words::turn_label(t));
        if let Some(e) = &t.parse_error {
            label.push_str(&format!("· unparsed: {} ", clip(e, 40)));
        }
        if let Some(why) = t.evaluation.as_ref().and_then(|e| e.salvaged.as_ref()) {
            label.push_str(&format!("· salvaged: {} ", clip(why, 40)));
        }
        if let Some(first) = &t.repeats {
            label.push_str(&format!("· ↻ repeats {} ", clip(first, 20)));
        }
        if let Some(quote) = t.misquotes.first() {
            label.push_str(&format!("· misquotes “{}” ", clip(quote, 24)));
        }
        rows.push(Line::from(Span::styled(label, theme.muted())));
        rows.extend(vm.wrap.lines(t, width).iter().map(|l| Line::from(Span::styled(l.text.clone(), theme.text()))));
        rows.extend(pane.turn(k).scores.iter().map(|l| Line::from(Span::styled(l.clone(), theme.accent()))));
        let skip = top.saturating_sub(start);
        out.extend(rows.into_iter().skip(skip).take(height - out.len()));
    }
    if total == 0 {
        out.push(Line::from(Span::styled("(has not spoken yet)", theme.muted())));
    }
    super::draw_lines(f.buffer_mut(), body, &out);
}

/// The compact list of agents, grouped, one row each.
pub fn list(f: &mut Frame, area: Rect, app: &App) -> Vec<(Rect, Focus)> {
    let theme = app.env.theme();
    let v = app.view();
    let mut lines: Vec<Line> = Vec::new();
    let mut hits = Vec::new();
    let w = area.width as usize;
    let has_overall = app.vm.session.has_overall();
    for (group, members) in app.vm.agents_by_group() {
        lines.push(Line::from(Span::styled(clip(&group, w), theme.accent())));
        for i in members {
            let a = &v.agents[i];
            let (sym, _, style) = badge(a, theme);
            let focused = app.focus == Focus::Agent(i);
            // The overall score, or a label verdict (CollabEval's pairwise
            // mode); a panel without an overall leaves the column blank.
            let ovr = a.progress.latest.as_ref().and_then(|e| e.overall.map(fmt_score).or_else(|| e.label.clone()));
            let ovr = ovr.unwrap_or_else(|| if has_overall { "–".into() } else { String::new() });
            let name_w = w.saturating_sub(8);
            let row_style = if focused { theme.selection() } else { Style::default() };
            hits.push((
                Rect { x: area.x, y: area.y + lines.len() as u16, width: area.width, height: 1 },
                Focus::Agent(i),
            ));
            lines.push(
                Line::from(vec![
                    Span::styled(format!("{sym} "), style),
                    Span::styled(format!("{:<name_w$}", clip(&a.info.name, name_w)), row_style),
                    Span::styled(format!(" {ovr:>4}"), row_style),
                ])
                .style(row_style),
            );
        }
    }
    lines.push(Line::raw(""));
    for fo in app.side_panes() {
        let label = fo.label();
        let st = if app.focus == fo { theme.selection() } else { theme.text() };
        hits.push((Rect { x: area.x, y: area.y + lines.len() as u16, width: area.width, height: 1 }, fo));
        lines.push(Line::from(Span::styled(format!("{:<w$}", format!("  {label}")), st)));
    }
    hits.retain(|(r, _)| r.y < area.y + area.height);
    super::draw_lines(f.buffer_mut(), area, &lines);
    hits
}
