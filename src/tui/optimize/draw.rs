//! Drawing the optimisation screen from its view (no side effects).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span, Text};
use ratatui::widgets::{Axis, Block, Borders, Chart, Clear, Dataset, GraphType, Paragraph, Wrap};

use super::{Editing, OptScreen, Pane};
use crate::optimize::log::{Decision, OptStatus, Split};
use crate::optimize::prompt::{Change, diff};
use crate::optimize::view::{IterView, OptView, Row, Waiting};
use crate::tui::theme::Theme;

fn s3(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{v:.3}"))
}

fn num(v: f64) -> String {
    crate::engine::prompts::fmt_num((v * 1000.0).round() / 1000.0)
}

/// The table rows of an iteration: picked examples first, then held-out, in log order.
pub(super) fn example_rows<'a>(_view: &OptView, it: &'a IterView) -> Vec<&'a Row> {
    let mut rows: Vec<&Row> = it.rows.iter().filter(|r| r.split == Split::Picked).collect();
    rows.extend(it.rows.iter().filter(|r| r.split == Split::Holdout));
    rows
}

pub fn draw(f: &mut Frame, s: &OptScreen) {
    let theme = s.env.theme();
    let area = f.area();
    let [header, body, footer] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(8), Constraint::Length(1)]).areas(area);
    draw_header(f, s, theme, header);
    let [left, right] = Layout::horizontal([Constraint::Percentage(36), Constraint::Percentage(64)]).areas(body);
    let [list, chart] = Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(left);
    draw_iterations(f, s, theme, list);
    draw_chart(f, s, theme, chart);
    let [prompt, feedback, table] =
        Layout::vertical([Constraint::Percentage(38), Constraint::Percentage(24), Constraint::Percentage(38)])
            .areas(right);
    let shown = s.shown().and_then(|i| s.view.iterations.get(i));
    draw_prompt(f, s, theme, prompt, shown);
    draw_feedback(f, theme, feedback, shown);
    draw_examples(f, s, theme, table, shown);
    draw_footer(f, s, theme, footer);
    if let Some((editing, input)) = &s.editor {
        let r = centered(area, 90, 70);
        f.render_widget(Clear, r);
        let title = match editing {
            Editing::Feedback => " Edit the feedback — Enter sends, Alt-Enter new line, Esc cancels ",
            Editing::Rewrite => {
                " Edit the prompt (keep the ## headings) — Enter takes it, Alt-Enter new line, Esc cancels "
            }
            Editing::AddExample => " Id of a training example to draw every time — Enter adds, Esc cancels ",
        };
        let block = Block::default().borders(Borders::ALL).title(title).border_style(theme.human());
        let inner = block.inner(r);
        f.render_widget(block, r);
        f.render_widget(input, inner);
    }
    if s.help {
        draw_help(f, s, theme, area);
    }
}

fn centered(area: Rect, w_pct: u16, h_pct: u16) -> Rect {
    let w = area.width * w_pct / 100;
    let h = area.height * h_pct / 100;
    Rect { x: area.x + (area.width - w) / 2, y: area.y + (area.height - h) / 2, width: w, height: h }
}

fn draw_header(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect) {
    let v = &s.view;
    let state = match (&v.ended, v.waiting) {
        (Some(e), _) => match e.status {
            OptStatus::Completed => "done".to_string(),
            OptStatus::Stopped => "stopped".to_string(),
            OptStatus::Failed => "failed".to_string(),
        },
        (None, Waiting::Feedback(i)) => format!("iteration {i}: review the feedback"),
        (None, Waiting::Rewrite(i)) => format!("iteration {i}: decide on the rewrite"),
        (None, Waiting::Nothing) => "running".to_string(),
    };
    let replay = s.replay.as_ref().map(|r| {
        let (at, n) = r.position();
        format!(" · replay {at}/{n} ×{}{}", r.speed, if r.playing { "" } else { " paused" })
    });
    let text = format!(
        " moot optimize · {state} · iteration {}/{}{} · S = {} (held-out), threshold {} · {}",
        v.iterations.len(),
        v.max_iter,
        replay.unwrap_or_default(),
        v.objective,
        v.threshold,
        v.panel,
    );
    f.render_widget(Paragraph::new(text).style(theme.header()), area);
}

fn block<'a>(title: impl Into<Line<'a>>, theme: &Theme, focused: bool) -> Block<'a> {
    Block::default().borders(Borders::ALL).title(title).border_style(theme.border(focused))
}

fn draw_iterations(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect) {
    let v = &s.view;
    let best = v.ended.as_ref().and_then(|e| e.best).or_else(|| v.best());
    let shown = s.shown();
    let mut lines = vec![Line::styled(" #  picked  held rewrite", theme.muted())];
    for (idx, it) in v.iterations.iter().enumerate() {
        let (decision, human) = match (&it.decision, &it.rewrite_error) {
            (Some((Decision::Accepted, a)), _) => ("accepted", a != "auto"),
            (Some((Decision::Edited, _)), _) => ("edited", true),
            (Some((Decision::Rejected, _)), _) => ("rejected", true),
            (None, Some(_)) => ("unreadable", false),
            (None, None) if it.proposed.is_some() => ("proposed", false),
            _ => ("", false),
        };
        let mark = if Some(it.iteration) == best { "★" } else { " " };
        let from = match it.from {
            Some(f) if f + 1 != it.iteration => format!(" ←{f}"),
            _ => String::new(),
        };
        let mut spans = vec![
            Span::raw(format!("{mark}{:<2} ", it.iteration)),
            Span::styled(
                format!("{:>6}", s3(it.picked)),
                it.picked.map_or(theme.muted(), |p| theme.score(p, 0.0, 1.0)),
            ),
            Span::styled(
                format!("{:>6} ", s3(it.holdout)),
                it.holdout.map_or(theme.muted(), |p| theme.score(p, 0.0, 1.0)),
            ),
            Span::styled(decision.to_string(), if human { theme.human() } else { theme.text() }),
            Span::styled(from, theme.human()),
        ];
        if Some(idx) == shown {
            spans = spans.into_iter().map(|sp| sp.patch_style(theme.selection())).collect();
        }
        lines.push(Line::from(spans));
    }
    let height = area.height.saturating_sub(2) as usize;
    let skip = (shown.unwrap_or(0) + 2).saturating_sub(height);
    let lines: Vec<Line> = if skip > 0 {
        std::iter::once(lines[0].clone()).chain(lines.into_iter().skip(skip + 1)).collect()
    } else {
        lines
    };
    f.render_widget(Paragraph::new(lines).block(block(" Iterations ", theme, s.pane == Pane::Iterations)), area);
}

fn draw_chart(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect) {
    let v = &s.view;
    let points = |pick: fn(&IterView) -> Option<f64>| -> Vec<(f64, f64)> {
        v.iterations.iter().filter_map(|it| pick(it).map(|p| (f64::from(it.iteration), p))).collect()
    };
    let picked = points(|it| it.picked);
    let held = points(|it| it.holdout);
    let max_x = f64::from(v.max_iter.max(2));
    let threshold = [(1.0, v.threshold), (max_x, v.threshold)];
    let data = vec![
        Dataset::default()
            .name("held-out")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme.accent())
            .data(&held),
        Dataset::default()
            .name("picked")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(theme.thinking())
            .data(&picked),
        Dataset::default()
            .name("threshold")
            .marker(Marker::Dot)
            .graph_type(GraphType::Line)
            .style(theme.muted())
            .data(&threshold),
    ];
    let chart = Chart::new(data)
        .block(block(" S per iteration ", theme, false))
        .x_axis(
            Axis::default()
                .bounds([1.0, max_x])
                .labels(["1".to_string(), format!("{}", v.max_iter)])
                .style(theme.muted()),
        )
        .y_axis(Axis::default().bounds([0.0, 1.0]).labels(["0", "1"]).style(theme.muted()));
    f.render_widget(chart, area);
}

fn draw_prompt(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect, it: Option<&IterView>) {
    let Some(it) = it else {
        f.render_widget(Paragraph::new("").block(block(" Prompt ", theme, false)), area);
        return;
    };
    let v = &s.view;
    let (title, parts) = match v.rewrite_pair(it.iteration) {
        Some((before, after)) => (format!(" Rewrite of iteration {}: word diff ", it.iteration), diff(before, after)),
        None => match it.from.and_then(|f| v.iteration(f)) {
            Some(prev) => (
                format!(" Prompt of iteration {} (diff from {}) ", it.iteration, prev.iteration),
                diff(&prev.prompt, &it.prompt),
            ),
            None => (format!(" Prompt of iteration {} ", it.iteration), diff(&it.prompt, &it.prompt)),
        },
    };
    let mut lines: Vec<Line> = vec![Line::default()];
    // The line where the first change is, to scroll it into view.
    let mut first_change: Option<usize> = None;
    for p in &parts {
        if p.change != Change::Same && first_change.is_none() {
            first_change = Some(lines.len() - 1 + p.text.chars().take_while(|c| *c == '\n').count());
        }
        let style = match p.change {
            Change::Same => theme.text(),
            Change::Added => theme.done().add_modifier(Modifier::UNDERLINED),
            Change::Removed => theme.failed().add_modifier(Modifier::CROSSED_OUT),
        };
        for (i, chunk) in p.text.split('\n').enumerate() {
            if i > 0 {
                lines.push(Line::default());
            }
            if !chunk.is_empty() {
                lines.last_mut().expect("one line").push_span(Span::styled(chunk.to_string(), style));
            }
        }
    }
    let mut title = Line::from(title);
    if let Some(e) = &it.rewrite_error {
        title.push_span(Span::styled(format!("unreadable: {e} "), theme.error()));
    }
    if matches!(s.view.waiting, Waiting::Rewrite(i) if i == it.iteration) {
        title.push_span(Span::styled(" a accept · e edit · r reject ", theme.human()));
    }
    // Rows the lines before the first change take once wrapped; keep one
    // line of context above it.
    let width = area.width.saturating_sub(2).max(1) as usize;
    let rows = |l: &Line| l.width().div_ceil(width).max(1);
    let before: usize = lines.iter().take(first_change.unwrap_or(0).saturating_sub(1)).map(rows).sum();
    let height = area.height.saturating_sub(2) as usize;
    let total: usize = lines.iter().map(rows).sum();
    let scroll = if first_change.is_some() { before.min(total.saturating_sub(height)) } else { 0 };
    f.render_widget(
        Paragraph::new(Text::from(lines))
            .wrap(Wrap { trim: false })
            .scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0))
            .block(block(title, theme, false)),
        area,
    );
}

fn draw_feedback(f: &mut Frame, theme: &Theme, area: Rect, it: Option<&IterView>) {
    let (title, style) = match it.and_then(|it| it.feedback_by.as_ref()) {
        Some(author) => (format!(" Feedback — edited by {author} "), theme.human()),
        None => (" Feedback ".to_string(), theme.text()),
    };
    let text = it.and_then(|it| it.feedback.clone()).unwrap_or_default();
    f.render_widget(
        Paragraph::new(text).style(style).wrap(Wrap { trim: true }).block(block(title, theme, false)),
        area,
    );
}

fn draw_examples(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect, it: Option<&IterView>) {
    let focused = s.pane == Pane::Examples;
    let mut lines = vec![Line::styled(" example        split     judge  human  |diff|  judge's reason", theme.muted())];
    if let Some(it) = it {
        let rows = example_rows(&s.view, it);
        let height = area.height.saturating_sub(3) as usize;
        let skip = (s.row + 1).saturating_sub(height);
        for (i, r) in rows.iter().enumerate().skip(skip).take(height) {
            let split = match r.split {
                Split::Picked if s.view.pinned.contains(&r.id) => "pinned",
                Split::Picked => "picked",
                Split::Holdout => "held-out",
                Split::Test => "test",
            };
            let (judge, gap) = match r.judge {
                Some(j) => (num(j), num((j - r.human).abs())),
                None => ("fail".to_string(), "—".to_string()),
            };
            let mut line = Line::from(vec![
                Span::raw(format!(" {:<14} ", truncate(&r.id, 14))),
                Span::styled(format!("{split:<8} "), if split == "pinned" { theme.human() } else { theme.muted() }),
                Span::styled(format!("{judge:>6} "), if r.judge.is_none() { theme.error() } else { theme.text() }),
                Span::raw(format!("{:>6} ", num(r.human))),
                Span::raw(format!("{gap:>6}")),
            ]);
            if let Some(e) = &r.error {
                line.push_span(Span::styled(format!("  {e}"), theme.error()));
            } else if let Some(reason) = &r.reason {
                line.push_span(Span::styled(format!("  {}", reason.replace('\n', " ")), theme.muted()));
            }
            if focused && i == s.row {
                line = line.patch_style(theme.selection());
            }
            lines.push(line);
        }
    }
    let title = match it {
        Some(it) => format!(
            " Examples of iteration {} ({} picked, {} held-out) ",
            it.iteration,
            it.picks.len(),
            s.view.holdout.len()
        ),
        None => " Examples ".to_string(),
    };
    f.render_widget(Paragraph::new(lines).block(block(title, theme, focused)), area);
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { s.chars().take(n - 1).chain(['…']).collect() }
}

fn draw_footer(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect) {
    let line = match &s.message {
        Some((m, true)) => Line::styled(format!(" {m}"), theme.error()),
        Some((m, false)) => Line::styled(format!(" {m}"), theme.accent()),
        None => match (&s.view.ended, s.view.notes.last()) {
            (Some(e), _) => {
                let out = e.output.as_deref().map(|o| format!(" → {o}")).unwrap_or_default();
                let best = e.best.map_or("no result".into(), |b| {
                    format!("iteration {b} ({}, held-out {})", e.chosen_by, s3(e.best_holdout))
                });
                Line::styled(format!(" q quit · {}: {best}{out}", e.reason), theme.done())
            }
            _ => {
                let keys = s.env.config.keymap.footer(s.mode());
                let text: Vec<String> = keys.iter().map(|(k, d)| format!("{k} {d}")).collect();
                Line::styled(format!(" {}", text.join(" · ")), theme.muted())
            }
        },
    };
    f.render_widget(Paragraph::new(line), area);
}

fn draw_help(f: &mut Frame, s: &OptScreen, theme: &Theme, area: Rect) {
    let entries = s.env.config.keymap.help(s.mode());
    let r = centered(area, 70, 80);
    f.render_widget(Clear, r);
    let lines: Vec<Line> = entries
        .iter()
        .map(|(k, d)| Line::from(vec![Span::styled(format!(" {k:<16}"), theme.accent()), Span::raw(d.to_string())]))
        .collect();
    f.render_widget(
        Paragraph::new(lines).block(block(" Keys — any key closes ", theme, true)).style(Style::default()),
        r,
    );
}
