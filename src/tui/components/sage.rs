//! SAGEval's screen parts: the meta-evaluator's pane beside the evaluator's,
//! the table of its changes (aspect, evaluator's value → SAGE's, reason, a
//! person's decision) with keys to accept or reject the selected one, and
//! the proposed definitions and aspects.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{clip, pane};
use crate::engine::Command;
use crate::panel::{Protocol, Screen};
use crate::session::event::{AspectValue, ProposalKind, Role};
use crate::session::fold::{SessionView, TurnState};
use crate::session::sage::RevisionView;
use crate::tui::action::Action;
use crate::tui::app::{App, Focus};
use crate::tui::theme::Theme;
use crate::tui::wrap::wrap;

/// The actions of this screen part, listed in the help only for SAGEval sessions.
pub const ACTIONS: [Action; 4] = [Action::AcceptChange, Action::RejectChange, Action::NextChange, Action::PrevChange];

/// Whether the session's protocol has this layout ([`Screen::Review`]); a
/// protocol this build does not know has the usual panes.
pub fn applies(app: &App) -> bool {
    match app.view().panel.as_ref() {
        Some(panel) => panel.protocol.screen() == Screen::Review,
        None => Protocol::parse(&app.view().protocol)
            .is_some_and(|p| crate::panel::ProtocolSection::new(p).screen() == Screen::Review),
    }
}

/// Lay out the body: evaluators and SAGE side by side on top, the changes
/// below (beside the transcript and the result when there is room).
pub fn layout(f: &mut Frame, app: &mut App, body: Rect, draw_pane: fn(&mut Frame, &mut App, Focus, Rect)) {
    let wide = body.width >= 120 && body.height >= 32;
    let top_h = if wide { body.height * 2 / 5 } else { (body.height / 3).max(6) };
    let [top, bottom] = Layout::vertical([Constraint::Length(top_h), Constraint::Min(4)]).areas(body);
    let agents: Vec<usize> = (0..app.view().agents.len()).collect();
    let n = agents.len() as u32 + 1;
    let cols = Layout::horizontal(vec![Constraint::Ratio(1, n); n as usize]).split(top);
    for (i, col) in agents.iter().zip(cols.iter()) {
        draw_pane(f, app, Focus::Agent(*i), *col);
    }
    draw_sage(f, cols[cols.len() - 1], app);
    if wide {
        let [table, side] = Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(bottom);
        let [result, trans] = Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(side);
        draw_pane(f, app, Focus::Consensus, table);
        draw_pane(f, app, Focus::Aggregator, result);
        draw_pane(f, app, Focus::Transcript, trans);
    } else {
        draw_pane(f, app, Focus::Consensus, bottom);
    }
}

/// The meta-evaluator's pane: its latest turn, streaming or done.
fn draw_sage(f: &mut Frame, area: Rect, app: &App) {
    let theme = app.env.theme();
    let v = app.view();
    let who = Role::MetaEvaluator.label();
    let model = v.roles.get(Role::MetaEvaluator.as_str()).map(|m| format!(" {}/{}", m.provider, m.model));
    let turn = v.turns.iter().rev().find(|t| t.role == Role::MetaEvaluator);
    let state = match turn.map(|t| t.state) {
        Some(TurnState::Streaming) => "reviewing",
        Some(TurnState::Completed) => "done",
        Some(TurnState::Failed) => "failed",
        None => "waiting",
    };
    let title = Line::from(vec![
        Span::styled(format!(" SAGE ({who}) "), theme.accent()),
        Span::styled(format!("{state}{} ", model.unwrap_or_default()), theme.muted()),
    ]);
    let block = pane(title, false, theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let text = match turn {
        Some(t) if t.state == TurnState::Completed && t.parse_error.is_some() => {
            format!("{}\n⚠ unreadable: {}", t.text.trim(), t.parse_error.as_deref().unwrap_or_default())
        }
        Some(t) => crate::tui::words::shown(t).trim().to_string(),
        None => "Reviews the evaluator's values once they are in.".to_string(),
    };
    let lines = wrap(&text, inner.width.max(1) as usize);
    // Follow the tail: the newest words are at the bottom.
    let skip = lines.len().saturating_sub(inner.height as usize);
    let shown: Vec<Line> = lines.into_iter().skip(skip).map(|l| Line::styled(l.text, theme.text())).collect();
    f.render_widget(Paragraph::new(shown), inner);
}

fn value(v: Option<&AspectValue>) -> String {
    v.map_or_else(|| "–".to_string(), ToString::to_string)
}

fn decision(r: &RevisionView, theme: &Theme) -> Span<'static> {
    match &r.decision {
        None => Span::styled("proposed", theme.muted()),
        Some(d) if d.accepted => Span::styled(format!("accepted·{}", d.author), theme.human()),
        Some(d) => Span::styled(format!("rejected·{}", d.author), theme.human()),
    }
}

/// The evaluator's value of a dimension (its own evaluation, before any revision).
fn evaluator_value(v: &SessionView, agent: &str, dimension: &str) -> Option<AspectValue> {
    let own = v.stages.agent(agent).and_then(|a| a.initial.as_ref())?;
    AspectValue::of(own, dimension)
}

/// The table of changes and the proposals.
pub fn draw_table(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Consensus;
    let v = &app.vm.session;
    let revisions = &v.sage.revisions;
    let selected = app.sage_row.min(revisions.len().saturating_sub(1));
    let keys = if app.is_live() { " a accept · d reject · ,/. select " } else { " ,/. select " };
    let title = Line::from(vec![
        Span::styled(" SAGE changes ", theme.accent()),
        Span::styled(format!("{} revised · {} proposed ", revisions.len(), v.sage.proposals.len()), theme.muted()),
    ]);
    let block = pane(title, focused, &theme).title_bottom(Line::styled(keys, theme.muted()));
    let inner = block.inner(area);
    f.render_widget(block, area);
    let w = inner.width as usize;
    let name_w = (w / 4).clamp(8, 26);
    let mut lines: Vec<Line> = vec![Line::styled(
        format!("  {:<name_w$} {:>8} → {:<8} {:<16} reason", "aspect", "evaluator", "SAGE", "decision"),
        theme.muted(),
    )];
    let agents: Vec<String> = v.agents.iter().map(|a| a.info.name.clone()).collect();
    let many = agents.len() > 1;
    for agent in &agents {
        for d in v.panel.as_ref().map(|p| p.dimensions.as_slice()).unwrap_or_default() {
            let label = if many { format!("{agent}: {}", d.key) } else { d.key.clone() };
            let own = evaluator_value(v, agent, &d.key);
            let row = revisions.iter().position(|r| r.agent == *agent && r.dimension == d.key);
            let mut spans = vec![Span::styled(if row == Some(selected) { "▸ " } else { "  " }, theme.accent())];
            spans.push(Span::styled(format!("{:<name_w$} ", clip(&label, name_w)), theme.text()));
            spans.push(Span::styled(format!("{:>8} → ", clip(&value(own.as_ref()), 8)), theme.text()));
            match row.map(|i| &revisions[i]) {
                Some(r) => {
                    let to = Span::styled(format!("{:<8} ", clip(&r.to.to_string(), 8)), theme.accent());
                    spans.push(to);
                    let dec = decision(r, &theme);
                    let dec_w = 16usize.saturating_sub(dec.content.chars().count());
                    spans.push(dec);
                    spans.push(Span::raw(" ".repeat(dec_w + 1)));
                    let used = 2 + name_w + 1 + 11 + 9 + 17;
                    spans.push(Span::styled(clip(&r.reason, w.saturating_sub(used).max(4)), theme.muted()));
                    let style = if row == Some(selected) && focused { theme.selection() } else { Default::default() };
                    lines.push(Line::from(spans).style(style));
                }
                None => {
                    let kept = if v.turns.iter().any(|t| t.role == Role::MetaEvaluator && t.evaluation.is_some()) {
                        "kept"
                    } else {
                        ""
                    };
                    spans.push(Span::styled(format!("{kept:<8}"), theme.muted()));
                    lines.push(Line::from(spans));
                }
            }
        }
    }
    if !v.sage.proposals.is_empty() {
        lines.push(Line::styled("Proposals (:adopt KEY writes a new panel file)", theme.muted()));
        for p in &v.sage.proposals {
            let head = match (p.kind, p.score) {
                (ProposalKind::Definition, _) => format!("✎ {}: ", p.key),
                (ProposalKind::Aspect, Some(s)) => format!("+ {} ({}): ", p.key, AspectValue::Score(s)),
                (ProposalKind::Aspect, None) => format!("+ {}: ", p.key),
            };
            let mut spans = vec![Span::styled(head, theme.accent()), Span::styled(p.definition.clone(), theme.text())];
            if let Some((path, who)) = &p.adopted {
                spans.push(Span::styled(format!(" — adopted by {who} into {path}"), theme.human()));
            }
            lines.push(Line::from(spans));
        }
    }
    let total = lines.iter().map(|l| l.width().max(1).div_ceil(w.max(1))).sum();
    let s = app.scroll_of(Focus::Consensus);
    s.follow = false;
    let top = s.resolve(total, inner.height as usize);
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((top as u16, 0)), inner);
}

/// Accept or reject the selected change.
pub fn decide(app: &mut App, accept: bool) {
    let Some(r) = app.view().sage.revisions.get(app.sage_row).cloned() else {
        return app.error("no SAGE change to decide on");
    };
    let many = app.view().agents.len() > 1;
    let what = if accept { "accepting" } else { "rejecting" };
    let author = app.env.author.clone();
    app.send(Command::Decide { dimension: r.dimension.clone(), agent: many.then(|| r.agent.clone()), accept, author });
    if app.is_live() {
        app.info(format!("{what} SAGE's {} for {}", r.dimension, r.agent));
    }
}

/// Move the selection of the changes table.
pub fn select(app: &mut App, forward: bool) {
    let n = app.view().sage.revisions.len();
    if n == 0 {
        return app.error("no SAGE changes to select");
    }
    app.sage_row = if forward { (app.sage_row + 1) % n } else { (app.sage_row + n - 1) % n };
    let r = &app.view().sage.revisions[app.sage_row];
    let msg = format!("selected {} ({} → {})", r.dimension, value(r.from.as_ref()), r.to);
    app.info(msg);
}
