//! The transcript: the whole debate in order, with phase and round markers,
//! human comments and overrides inline. A turn shows its words (without the
//! JSON verdict a reply ends with) and then its verdict on a line of its
//! own (see [`crate::tui::words`]): its scores, with what moved since the
//! agent's previous turn, or its verdict on a pair.
//!
//! Each entry's lines are built once and kept (see [`TranscriptCache`]); a
//! streaming turn is rebuilt from its wrap cache, which re-wraps only its
//! tail. Only the visible rows are handed to the terminal.
//!
//! [`TranscriptCache`]: crate::tui::view::TranscriptCache

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use super::pane;
use crate::session::event::{OverrideTarget, SelectedBy, StepsSource};
use crate::session::fold::{SessionView, TimelineEntry, TurnState};
use crate::tui::app::{App, Focus, fmt_score};
use crate::tui::theme::Theme;
use crate::tui::view::CachedEntry;
use crate::tui::words::{pick_line, plain, steps_lines, turn_verdict};
use crate::tui::wrap::{WrapCache, wrap};

fn entry_key(v: &SessionView, e: &TimelineEntry) -> u64 {
    match e {
        TimelineEntry::Turn(i) => v
            .turns
            .get(*i)
            .map(|t| (t.revision * 4 + t.state as u64) * 2 + u64::from(v.pairwise.hides_turn(t.id)))
            .unwrap_or(0),
        _ => 0,
    }
}

fn build(v: &SessionView, e: &TimelineEntry, width: u16, theme: &Theme, wraps: &mut WrapCache) -> Vec<Line<'static>> {
    let w = width as usize;
    let wrapped = |prefix: &str, text: &str, style| -> Vec<Line<'static>> {
        wrap(&format!("{prefix}{text}"), w).into_iter().map(|l| Line::from(Span::styled(l.text, style))).collect()
    };
    match e {
        TimelineEntry::Phase { phase, group, round } => {
            let mut s = format!("━━ {}", phase.as_str().replace('_', " ").to_uppercase());
            if let Some(g) = group {
                s.push_str(&format!(" · {g}"));
            }
            if let Some(r) = round {
                s.push_str(&format!(" · round {r}"));
            }
            s.push(' ');
            let fill = w.saturating_sub(unicode_width::UnicodeWidthStr::width(s.as_str()));
            s.push_str(&"━".repeat(fill));
            vec![Line::raw(""), Line::from(Span::styled(s, theme.accent()))]
        }
        TimelineEntry::Turn(i) => {
            let Some(t) = v.turns.get(*i) else { return Vec::new() };
            let mut head = vec![Span::styled(format!("▸ {}", t.agent), theme.text().add_modifier(Modifier::BOLD))];
            let mut meta = format!("  #{} {}", t.id, crate::tui::words::turn_label(t));
            if t.role != crate::session::event::Role::Agent {
                meta.push_str(&format!(" ({})", t.role.as_str().replace('_', " ")));
            }
            head.push(Span::styled(meta, theme.muted()));
            match t.state {
                TurnState::Streaming => head.push(Span::styled("  ▶ streaming", theme.speaking())),
                TurnState::Failed => head.push(Span::styled(
                    format!("  ✗ {}", t.last_error.clone().unwrap_or_else(|| "failed".into())),
                    theme.failed(),
                )),
                TurnState::Completed => {
                    if let Some(pe) = &t.parse_error {
                        head.push(Span::styled(format!("  unparsed: {pe}"), theme.error()));
                    }
                    if let Some(why) = t.evaluation.as_ref().and_then(|e| e.salvaged.as_ref()) {
                        head.push(Span::styled(format!("  salvaged: {why}"), theme.error()));
                    }
                    if t.truncated {
                        head.push(Span::styled("  cut at the reply limit", theme.muted()));
                    }
                    if let Some(first) = &t.repeats {
                        head.push(Span::styled(format!("  ↻ repeats {first}"), theme.muted()));
                    }
                }
            }
            if v.pairwise.hides_turn(t.id) {
                // A blind run: the verdict waits for the person's own.
                let head = vec![
                    Span::styled(format!("▸ {}", t.agent), theme.text().add_modifier(Modifier::BOLD)),
                    Span::styled(format!("  #{} hidden until you give your own verdict (blind)", t.id), theme.muted()),
                ];
                return vec![Line::from(head)];
            }
            let mut out = vec![Line::from(head)];
            let inner = width.saturating_sub(2).max(1);
            // Each misquote on lines of its own: a heading would cut it at the pane's edge.
            if t.state == TurnState::Completed {
                for quote in &t.misquotes {
                    out.extend(wrapped("  ", &format!("misquotes “{quote}”"), theme.error()));
                }
                for claim in &t.misstates {
                    out.extend(wrapped("  ", &format!("misstates {claim}"), theme.error()));
                }
            }
            for l in wraps.lines(t, inner) {
                out.push(Line::from(Span::styled(format!("  {}", l.text), theme.text())));
            }
            // The turn's verdict, on a line of its own.
            if let Some(parts) = turn_verdict(v, *i) {
                for l in wrap(&plain(&parts), inner as usize) {
                    out.push(Line::from(Span::styled(format!("  {}", l.text), theme.accent())));
                }
            }
            out
        }
        TimelineEntry::Pick { group, pick } => {
            let style = if pick.by == SelectedBy::Human { theme.human() } else { theme.muted() };
            let line = pick_line(group, &pick.agent, pick.by, &pick.reason, pick.fallback.as_deref());
            wrapped("→ ", &line, style)
        }
        TimelineEntry::Comment { text, author, group } => {
            let to = group.as_ref().map(|g| format!(" to {g}")).unwrap_or_default();
            wrapped("", &format!("✎ {author}{to}: {text}"), theme.human())
        }
        TimelineEntry::Override { target, dimension, from, to, reason, author } => {
            let what = match target {
                OverrideTarget::Agent { agent } => agent.clone(),
                OverrideTarget::Turn { turn, agent } => format!("{agent} (turn {turn})"),
                OverrideTarget::Final { group: Some(g) } => format!("result of {g}"),
                OverrideTarget::Final { group: None } => "final result".into(),
            };
            let from = from.map(fmt_score).unwrap_or_else(|| "–".into());
            let why = reason.as_ref().map(|r| format!(" — {r}")).unwrap_or_default();
            wrapped(
                "",
                &format!("⚑ {author} overrode {what} {dimension}: {from} → {}{why}", fmt_score(*to)),
                theme.human(),
            )
        }
        TimelineEntry::Rating { scores, author } => {
            let s: Vec<String> = scores.iter().map(|(k, x)| format!("{k} {}", fmt_score(*x))).collect();
            wrapped("", &format!("★ {author} rated: {}", s.join(", ")), theme.human())
        }
        TimelineEntry::Control { what, author } => wrapped("", &format!("■ {what} by {author}"), theme.human()),
        TimelineEntry::Steps { dimension, steps: s } => {
            let style = if s.source == StepsSource::Human { theme.human() } else { theme.muted() };
            let lines = steps_lines(dimension, &s.steps, s.source, s.author.as_deref(), s.turn);
            lines.iter().flat_map(|l| wrapped("", l, style)).collect()
        }
        TimelineEntry::Note { text, human } => wrapped("", text, if *human { theme.human() } else { theme.muted() }),
        TimelineEntry::Trimmed(t) => wrapped("", &format!("✂ {}", t.summary()), theme.muted()),
        TimelineEntry::Rejected { command, reason } => {
            wrapped("", &format!("✗ rejected {command}: {reason}"), theme.error())
        }
        TimelineEntry::Consensus { group, round, reached, rule } => wrapped(
            "",
            &format!(
                "≈ {}: {}",
                crate::session::event::check_place(group.as_deref(), *round),
                crate::session::fold::consensus_words(
                    crate::session::fold::consensus_check(&v.protocol, v.panel.as_ref()),
                    *reached,
                    rule
                )
            ),
            theme.consensus(*reached),
        ),
        TimelineEntry::Aggregate { group } => {
            let agg = match group {
                Some(g) => v.group(g).and_then(|g| g.aggregate.as_ref()),
                None => v.aggregate.as_ref(),
            };
            let who = group.clone().unwrap_or_else(|| "panel".into());
            let text = match agg {
                // Pairwise results: the ranking (hidden in a blind run until
                // every pair is revealed), or how a group reached its label.
                Some(a) if !a.ranking.is_empty() && v.pairwise.comparisons.iter().any(|c| !v.pairwise.revealed(c)) => {
                    "hidden until you give your own verdicts (blind)".to_string()
                }
                Some(a) if !a.ranking.is_empty() => a
                    .ranking
                    .iter()
                    .map(|r| {
                        let human = if r.human { " (human)" } else { "" };
                        format!("{} {}W {}L {}T{human}", r.candidate, r.wins, r.losses, r.ties)
                    })
                    .collect::<Vec<_>>()
                    .join(" · "),
                Some(a) if a.overall.is_none() && a.scores.is_empty() && !a.feedback.trim().is_empty() => {
                    a.feedback.lines().next().unwrap_or_default().to_string()
                }
                // A panel without an overall: its dimensions' results.
                Some(a) if !v.has_overall() => v
                    .score_keys()
                    .iter()
                    .filter_map(|k| a.score(k).map(|x| format!("{k} {}", fmt_score(x))))
                    .collect::<Vec<_>>()
                    .join(" · "),
                _ => format!("overall {}", agg.and_then(|a| a.overall).map(fmt_score).unwrap_or_else(|| "–".into())),
            };
            vec![Line::from(Span::styled(format!("Σ result ({who}): {text}"), theme.accent()))]
        }
        TimelineEntry::Ended { status, error, reason } => {
            let mut s = format!("■ session {}", status.as_str());
            if let Some(r) = reason {
                s.push_str(&format!(" ({r})"));
            }
            if let Some(e) = error {
                s.push_str(&format!(": {e}"));
            }
            wrapped(
                "",
                &s,
                if *status == crate::session::event::EndStatus::Failed { theme.error() } else { theme.accent() },
            )
        }
    }
}

/// Whether an entry's lines can no longer change: a turn that completed or
/// failed and is not hidden (a blind pairwise verdict is shown once revealed),
/// or any other entry once another follows it (a result is rebuilt while it is
/// the last entry).
fn settled(v: &SessionView, e: &TimelineEntry, last: bool) -> bool {
    match e {
        TimelineEntry::Turn(i) => v.turns.get(*i).is_some_and(|t| {
            // A pair's verdict is recorded after its turn ends (its key changes then).
            let verdict_due = t.pair.is_some()
                && t.pair_verdict.is_none()
                && t.state == TurnState::Completed
                && t.parse_error.is_none()
                && !v.state.is_ended();
            t.state != TurnState::Streaming && !v.pairwise.hides_turn(t.id) && !verdict_due
        }),
        _ => !last,
    }
}

/// Bring the cache up to date for `width`, looking again only at the entries
/// after the settled ones.
fn refresh(app: &mut App, width: u16) {
    let theme = app.env.theme().clone();
    let vm = &mut app.vm;
    let cache = &mut vm.transcript;
    let n = vm.session.timeline.len();
    if cache.width != width || cache.entries.len() > n {
        *cache = crate::tui::view::TranscriptCache { width, builds: cache.builds, ..Default::default() };
    }
    cache.entries.resize(n, None);
    cache.ends.resize(n, 0);
    let mut settling = true;
    for i in cache.settled..n {
        let e = &vm.session.timeline[i];
        let key = entry_key(&vm.session, e);
        let stale = match &cache.entries[i] {
            Some(c) => c.key != key || matches!(e, TimelineEntry::Aggregate { .. }) && i + 1 == n,
            None => true,
        };
        if stale {
            let lines = build(&vm.session, e, width, &theme, &mut vm.wrap);
            cache.entries[i] = Some(CachedEntry { key, lines });
            cache.builds += 1;
        }
        let rows = cache.entries[i].as_ref().map_or(0, |c| c.lines.len());
        cache.ends[i] = i.checked_sub(1).map_or(0, |p| cache.ends[p]) + rows;
        settling &= settled(&vm.session, e, i + 1 == n);
        if settling {
            cache.settled = i + 1;
        }
    }
}

pub fn draw(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Transcript;
    let title = if app.search.hits.is_empty() {
        " Transcript ".to_string()
    } else {
        format!(" Transcript · /{} {}/{} ", app.search.query, app.search.current + 1, app.search.hits.len())
    };
    let block = pane(Line::from(Span::styled(title, theme.accent())), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    refresh(app, inner.width);
    let height = inner.height as usize;
    let ends = &app.vm.transcript.ends;
    let total = ends.last().copied().unwrap_or(0);
    if let Some(target) = app.vm.pending_jump.take() {
        let row = target.checked_sub(1).map_or(0, |p| ends.get(p).copied().unwrap_or(total));
        let s = app.scroll.entry(Focus::Transcript).or_default();
        s.follow = false;
        s.top = row;
    }
    let top = app.scroll.entry(Focus::Transcript).or_default().resolve(total, height);
    let hit = app.search.hits.get(app.search.current).copied();
    let cache = &app.vm.transcript;
    let mut out: Vec<Line> = Vec::with_capacity(height);
    let first = cache.ends.partition_point(|&e| e <= top);
    for i in first..cache.entries.len() {
        let Some(c) = &cache.entries[i] else { continue };
        let start = i.checked_sub(1).map_or(0, |p| cache.ends[p]);
        if out.len() >= height {
            break;
        }
        let skip = top.saturating_sub(start);
        for l in c.lines.iter().skip(skip) {
            if out.len() >= height {
                break;
            }
            let line = l.clone();
            out.push(if Some(i) == hit { line.patch_style(theme.selection()) } else { line });
        }
    }
    super::draw_lines(f.buffer_mut(), inner, &out);
}
