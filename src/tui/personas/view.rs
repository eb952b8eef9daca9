//! Drawing the review screen: header (progress, tokens against the
//! estimate), the tree, the selected item's details (evidence in its
//! document's context), footer and help from the keymap.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};

use super::{Review, Row};
use crate::personas::log::BuildStatus;
use crate::personas::num;
use crate::personas::state::PERSONA_FIELDS;
use crate::tui::keymap::Mode;
use crate::tui::theme::Theme;

fn pane<'a>(title: impl Into<Line<'a>>, theme: &Theme) -> Block<'a> {
    Block::default().borders(Borders::ALL).border_style(Style::default().fg(theme.border)).title(title)
}

fn status_line(r: &Review) -> String {
    let s = &r.state;
    let step = match s.status {
        Some(BuildStatus::Completed) => "review".to_string(),
        Some(BuildStatus::Failed) => "build failed".to_string(),
        Some(BuildStatus::Stopped) => "build stopped".to_string(),
        None => match s.calls.last() {
            Some(c) => format!("{} · {}", c.step.as_str(), c.about),
            None => "starting".to_string(),
        },
    };
    let estimate = s.estimate.input_tokens + s.estimate.output_tokens;
    let cost = s.usage.cost.map(|c| format!(" · cost {c:.4}")).unwrap_or_default();
    format!(
        " moot personas · {} · {step} · {} tokens of ≈ {}{cost} ",
        r.out.display(),
        num(s.usage.total()),
        num(estimate)
    )
}

/// A tree row's text and style.
fn row_line(r: &Review, row: &Row, theme: &Theme) -> Line<'static> {
    let s = &r.state;
    let rejected = |id: &str| s.rejected.contains(id);
    let mark = |id: &str| if rejected(id) { Span::styled("[rejected] ", theme.error()) } else { Span::raw("") };
    match row {
        Row::Docs => Line::from(Span::styled("Documents", theme.accent().add_modifier(Modifier::BOLD))),
        Row::Doc(i) => {
            let d = &s.documents[*i];
            let n = s.stakeholders.iter().filter(|x| x.doc == *i).count();
            Line::from(vec![
                Span::raw(format!(" {}", d.name)),
                Span::styled(format!("  {} ¶ · {n} stakeholders", d.paragraphs), theme.muted()),
            ])
        }
        Row::Stakeholder(id) => {
            let st = s.stakeholder(id);
            Line::from(vec![
                Span::raw("   "),
                mark(id),
                Span::raw(st.map_or("?", |x| x.name.as_str()).to_string()),
                Span::styled(format!(" {id}"), theme.muted()),
            ])
        }
        Row::Perspective(id) => {
            let Some((_, p)) = s.source(id) else { return Line::raw("") };
            let check =
                if p.check.found { Span::styled("✓", theme.done()) } else { Span::styled("✗", theme.error()) };
            Line::from(vec![Span::raw("     "), check, Span::raw(" "), mark(id), Span::raw(p.text.clone())])
        }
        Row::Groups => {
            let label = if s.groups.is_empty() { "Groups (after extraction)" } else { "Groups" };
            Line::from(Span::styled(label, theme.accent().add_modifier(Modifier::BOLD)))
        }
        Row::Group(id) => {
            let Some(g) = s.groups.iter().find(|g| &g.id == id) else { return Line::raw("") };
            let kept = s.chosen().iter().find(|(x, _)| x.id == g.id).map_or(0, |(_, ps)| ps.len());
            let cap = s.caps.get(id).map(|c| format!(" · cap {c}")).unwrap_or_default();
            Line::from(vec![
                Span::raw(" "),
                mark(id),
                Span::raw(g.name.clone()),
                Span::styled(format!(" {id} · {kept}/{} personas{cap}", g.perspectives.len()), theme.muted()),
            ])
        }
        Row::GroupPerspective(id) => {
            let Some(g) = s.groups.iter().find(|g| g.perspectives.iter().any(|p| &p.id == id)) else {
                return Line::raw("");
            };
            let p = g.perspectives.iter().find(|p| &p.id == id).expect("found above");
            let chosen = s.chosen().iter().any(|(_, ps)| ps.iter().any(|x| &x.id == id));
            let who = match s.personas.get(id) {
                Some(persona) => Span::styled(format!(" → {}", persona.name), theme.done()),
                None => Span::styled(" → no persona", theme.muted()),
            };
            let note = if rejected(id) {
                Span::styled("[rejected] ", theme.error())
            } else if !s.perspective_kept(g, p) {
                Span::styled("[no evidence kept] ", theme.error())
            } else if !chosen {
                Span::styled("[over the cap] ", theme.muted())
            } else {
                Span::raw("")
            };
            Line::from(vec![Span::raw("   "), note, Span::raw(p.text.clone()), who])
        }
    }
}

/// The evidence of an extracted perspective in its paragraph, the quote highlighted.
fn evidence_lines(r: &Review, id: &str, theme: &Theme, out: &mut Vec<Line<'static>>) {
    let Some((st, p)) = r.state.source(id) else { return };
    let doc = r.state.documents.get(st.doc).map_or("?", |d| d.name.as_str()).to_string();
    let status = if p.check.similarity >= 1.0 {
        Span::styled("found in the document".to_string(), theme.done())
    } else if p.check.found {
        Span::styled(format!("found, {:.0}% similar", p.check.similarity * 100.0), theme.done())
    } else {
        Span::styled(
            format!("NOT FOUND in {doc} (closest passage {:.0}% similar)", p.check.similarity * 100.0),
            theme.error(),
        )
    };
    out.push(Line::from(vec![Span::styled(format!("{id} "), theme.muted()), status]));
    out.push(Line::from(Span::styled(format!("\"{}\"", p.evidence), Style::default().add_modifier(Modifier::ITALIC))));
    let para = p.check.paragraph.and_then(|n| r.docs.get(st.doc).and_then(|d| d.paragraph(n)));
    if let (Some(par), Some((a, b))) = (para, p.check.span) {
        out.push(Line::from(Span::styled(format!("{doc}, paragraph {}:", par.number), theme.muted())));
        let t = &par.text;
        let (a, b) = (a.min(t.len()), b.min(t.len()));
        let hl = if p.check.found {
            theme.done().add_modifier(Modifier::BOLD)
        } else {
            theme.muted().add_modifier(Modifier::UNDERLINED)
        };
        out.push(Line::from(vec![
            Span::raw(t.get(..a).unwrap_or("").to_string()),
            Span::styled(t.get(a..b).unwrap_or("").to_string(), hl),
            Span::raw(t.get(b..).unwrap_or("").to_string()),
        ]));
    }
    out.push(Line::raw(""));
}

/// "set by NAME" under a name or wording a person changed.
fn edited_note(r: &Review, id: &str, theme: &Theme, out: &mut Vec<Line<'static>>) {
    if let Some(who) = r.state.edited.get(id) {
        out.push(Line::from(Span::styled(format!("(set by {who})"), theme.human())));
    }
}

fn detail(r: &Review, theme: &Theme) -> Vec<Line<'static>> {
    let s = &r.state;
    let mut out = Vec::new();
    let label = |k: &str| Span::styled(format!("{k}: "), theme.accent());
    match r.selected_row() {
        Some(Row::Doc(i)) => {
            let d = &s.documents[i];
            out.push(Line::from(vec![label("file"), Span::raw(d.path.display().to_string())]));
            out.push(Line::raw(format!(
                "{} paragraphs, {} characters, {} part(s)",
                d.paragraphs,
                num(d.chars as u64),
                d.chunks
            )));
            for (h, n) in &d.skipped {
                out.push(Line::from(Span::styled(format!("left out: {h} ({n} paragraphs)"), theme.muted())));
            }
        }
        Some(Row::Stakeholder(id)) => {
            if let Some(st) = s.stakeholder(&id) {
                out.push(Line::from(vec![label(&id), Span::raw(st.name.clone())]));
                edited_note(r, &id, theme, &mut out);
                out.push(Line::raw(st.characteristics.clone()));
                out.push(Line::raw(""));
                for p in &st.perspectives {
                    evidence_lines(r, &p.id, theme, &mut out);
                }
            }
        }
        Some(Row::Perspective(id)) => {
            if let Some((_, p)) = s.source(&id) {
                out.push(Line::from(vec![label("perspective"), Span::raw(p.text.clone())]));
                edited_note(r, &id, theme, &mut out);
                out.push(Line::raw(""));
            }
            evidence_lines(r, &id, theme, &mut out);
        }
        Some(Row::Group(id)) => {
            if let Some(g) = s.groups.iter().find(|g| g.id == id) {
                out.push(Line::from(vec![label(&id), Span::raw(g.name.clone())]));
                edited_note(r, &id, theme, &mut out);
                out.push(Line::raw(g.description.clone()));
                for m in &g.members {
                    let name = s.stakeholder(m).map_or("?", |x| x.name.as_str());
                    out.push(Line::from(Span::styled(format!("member {m}: {name}"), theme.muted())));
                }
            }
        }
        Some(Row::GroupPerspective(id)) => {
            if let Some(p) = s.groups.iter().flat_map(|g| &g.perspectives).find(|p| p.id == id) {
                out.push(Line::from(vec![label("perspective"), Span::raw(p.text.clone())]));
                edited_note(r, &id, theme, &mut out);
                if let Some(persona) = s.personas.get(&id) {
                    for f in PERSONA_FIELDS {
                        let v = persona.field(f).unwrap_or("").to_string();
                        let mut spans = vec![label(f), Span::raw(v)];
                        if let Some(who) = persona.edited_by.get(f) {
                            spans.push(Span::styled(format!(" (edited by {who})"), theme.human()));
                        }
                        out.push(Line::from(spans));
                    }
                }
                out.push(Line::raw(""));
                for src in &p.sources {
                    evidence_lines(r, src, theme, &mut out);
                }
            }
        }
        _ => {
            // Tokens per step so far, then (while the build runs) the call streaming now.
            for (step, u) in &s.by_step {
                let cost = u.cost.map(|c| format!(", cost {c:.4}")).unwrap_or_default();
                out.push(Line::from(Span::styled(
                    format!(
                        "{}: {} in / {} out tokens{cost}",
                        step.as_str(),
                        num(u.input_tokens),
                        num(u.output_tokens)
                    ),
                    theme.muted(),
                )));
            }
            if let Some(c) = s.calls.last() {
                out.push(Line::from(Span::styled(format!("{} · {}", c.step.as_str(), c.about), theme.accent())));
                out.extend(c.text.lines().map(|l| Line::raw(l.to_string())));
            }
            if let Some(e) = &s.error {
                out.push(Line::from(Span::styled(format!("build: {e}"), theme.error())));
            }
        }
    }
    out
}

pub fn draw(f: &mut Frame, r: &Review) {
    let theme = &r.env.config.theme;
    let area = f.area();
    let [head, body, foot] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(1)]).areas(area);
    f.render_widget(Paragraph::new(Span::styled(status_line(r), theme.header())), head);
    let [left, right] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(body);
    let rows = r.rows();
    let items: Vec<ListItem> = rows.iter().map(|row| ListItem::new(row_line(r, row, theme))).collect();
    let mut st = ListState::default();
    st.select(Some(r.selected.min(rows.len().saturating_sub(1))));
    let list = List::new(items).block(pane(" Stakeholders · groups ", theme)).highlight_style(theme.selection());
    f.render_stateful_widget(list, left, &mut st);
    let text = detail(r, theme);
    f.render_widget(Paragraph::new(text).wrap(Wrap { trim: false }).block(pane(" Details ", theme)), right);

    let mut spans = Vec::new();
    if let Some(p) = &r.prompt {
        spans.push(Span::styled(format!(" {}: ", p.label), theme.accent()));
        spans.push(Span::raw(format!("{}▏", p.text)));
        spans.push(Span::styled("  enter ok · esc cancel", theme.muted()));
    } else {
        if let Some((m, err)) = &r.message {
            spans.push(Span::styled(format!(" {m} "), if *err { theme.error() } else { theme.done() }));
        }
        for (k, d) in r.env.config.keymap.footer(Mode::Personas) {
            spans.push(Span::styled(format!(" {k}"), theme.accent()));
            spans.push(Span::styled(format!(" {d} "), theme.muted()));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), foot);
    if r.help {
        let lines: Vec<Line> = r
            .env
            .config
            .keymap
            .help(Mode::Personas)
            .into_iter()
            .map(|(k, d)| Line::from(vec![Span::styled(format!("{k:>16}  "), theme.accent()), Span::raw(d)]))
            .collect();
        let h = (lines.len() as u16 + 2).min(area.height);
        let w = 64.min(area.width);
        let rect = Rect {
            x: area.x + area.width.saturating_sub(w) / 2,
            y: area.y + area.height.saturating_sub(h) / 2,
            width: w,
            height: h,
        };
        f.render_widget(Clear, rect);
        f.render_widget(Paragraph::new(lines).block(pane(" Keys · persona review ", theme)), rect);
    }
}
