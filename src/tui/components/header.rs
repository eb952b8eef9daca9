//! The header: what is running, where it stands, what it has cost.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::session::fold::{RunState, SessionView};
use crate::tui::app::{App, fmt_speed};

fn tokens(n: u64) -> String {
    if n >= 10_000 { format!("{:.1}k", n as f64 / 1000.0) } else { n.to_string() }
}

fn clock(ms: u64) -> String {
    let s = ms / 1000;
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60)
    } else {
        format!("{:02}:{:02}", s / 60, s % 60)
    }
}

/// Elapsed time: the wall clock for a live run until its result, the log
/// otherwise (it stops at the result, see [`SessionView::elapsed_ms`]).
pub fn elapsed_ms(app: &App) -> u64 {
    let v = app.view();
    match (app.now, v.started) {
        (Some(now), Some(start)) if !v.is_done() && v.state != RunState::Paused => {
            (now - start).num_milliseconds().max(v.elapsed_ms() as i64) as u64
        }
        _ => v.elapsed_ms(),
    }
}

fn model_label(v: &SessionView) -> String {
    let mut models: Vec<String> = v.agents.iter().map(|a| format!("{}/{}", a.info.provider, a.info.model)).collect();
    models.dedup();
    match models.len() {
        0 => String::new(),
        1 => models.remove(0),
        n => format!("{} +{} more", models[0], n - 1),
    }
}

/// The run's preset, and how many settings depart from the paper
/// (the transcript's first line lists them).
fn preset_tag(v: &SessionView) -> String {
    if v.panel.as_ref().is_some_and(|p| p.protocol.kind.takes_stages()) {
        return "[composition]".into();
    }
    match v.departures.len() {
        0 => format!("[{}]", v.preset.as_str()),
        n => format!("[{}, {n} off paper]", v.preset.as_str()),
    }
}

/// Draw the header in `area` (one or two rows).
pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let theme = app.env.theme();
    let v = app.view();
    let base = theme.header();
    let state_style = match v.state {
        _ if v.aggregate.as_ref().is_some_and(|a| a.no_result.is_some()) => theme.failed(),
        RunState::Running => theme.speaking(),
        RunState::Paused | RunState::Stopping => theme.thinking().add_modifier(Modifier::BOLD),
        RunState::Ended(crate::session::event::EndStatus::Completed) => theme.done().add_modifier(Modifier::BOLD),
        RunState::Ended(_) => theme.failed(),
        RunState::Empty => theme.muted(),
    };
    let panel = v.panel.as_ref().map(|p| p.name.clone()).unwrap_or_else(|| "…".into());
    let item = v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default();
    let mut state = v.state.label().to_string();
    let no_result = v.aggregate.as_ref().is_some_and(|a| a.no_result.is_some());
    if !v.state.is_ended() && v.aggregate.is_some() {
        let open = if super::pairwise::applies(app) { "open for settling" } else { "open for overrides" };
        state = format!("{} · {open}", if no_result { "no result" } else { "done" });
    }
    if app.quitting && !v.state.is_ended() {
        state = "closing".into();
    }
    let mut first = vec![Span::styled(" moot ", base.add_modifier(Modifier::BOLD))];
    // Where a replay stands comes before the run's description, which a
    // narrow terminal cuts at its right edge.
    if let Some(r) = app.replay_state() {
        let mark = if r.playing && !r.at_end() { "▶" } else { "⏸" };
        first.push(Span::styled(
            format!("REPLAY {mark} ×{} {}/{} · ", fmt_speed(r.speed), r.position(), r.len()),
            base.add_modifier(Modifier::BOLD),
        ));
    }
    // The preset and its departures before the model: a terminal of 80
    // columns cuts the model's name, not what departs from the paper.
    first.push(Span::styled(
        format!("{panel} · item {item} · {} {} · {} ", v.protocol, preset_tag(v), model_label(v)),
        base,
    ));
    let phase = match (v.phase, v.round) {
        (Some(p), Some(r)) => format!("{} r{r}", p.as_str()),
        (Some(p), None) => p.as_str().to_string(),
        _ => "—".into(),
    };
    // A phase every group is in at once (first evaluations, G-Eval's scoring) names no group.
    let per_group = matches!(
        v.phase,
        Some(
            crate::session::event::Phase::Debate
                | crate::session::event::Phase::Discussion
                | crate::session::event::Phase::FinalJudgment
                | crate::session::event::Phase::Verification
        )
    );
    let group = if per_group {
        v.speaking_turn().and_then(|t| t.group.clone()).or_else(|| v.phase_group.clone())
    } else {
        None
    };
    let u = &v.usage.total;
    let est = if u.estimated { "~" } else { "" };
    let second = vec![
        Span::styled(format!(" {} ", state.to_uppercase()), state_style.add_modifier(Modifier::REVERSED)),
        Span::raw(format!(
            "  phase {phase}{}  ·  {}  ·  tokens {est}{} in / {est}{} out{}  ·  {} calls",
            group.map(|g| format!(" ({g})")).unwrap_or_default(),
            clock(elapsed_ms(app)),
            tokens(u.input_tokens),
            tokens(u.output_tokens),
            u.cost.map(|c| format!("  ·  cost {c:.4}")).unwrap_or_default(),
            v.usage.calls
        )),
    ];
    let lines = if area.height >= 2 {
        vec![Line::from(first).style(base), Line::from(second)]
    } else {
        let mut one = second;
        one.insert(0, Span::styled(format!(" {panel} · {item} "), base));
        vec![Line::from(one)]
    };
    super::draw_lines(f.buffer_mut(), area, &lines);
}
