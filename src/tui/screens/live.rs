//! The session screen (live run or replay).
//!
//! Wide terminals show every agent's pane by group, with the moderator,
//! consensus and result panes and the transcript; small ones (80×24) show a
//! list of agents and panes beside one focused pane. Enter zooms the focused
//! pane to the whole body.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use crate::tui::app::{App, Focus};
use crate::tui::components::{
    agent, aggregator, consensus, footer, g_eval, header, moderator, pairwise, sage, summary, transcript,
};
use crate::tui::overlays;

/// Below this width or height the compact layout is used.
pub const WIDE_MIN: (u16, u16) = (120, 32);

fn draw_pane(f: &mut Frame, app: &mut App, focus: Focus, area: Rect) {
    if area.width < 3 || area.height < 3 {
        return;
    }
    app.hits.push((area, focus));
    match focus {
        Focus::Agent(i) => agent::draw(f, area, app, i),
        Focus::Moderator => moderator::draw(f, area, app),
        Focus::Consensus if sage::applies(app) => sage::draw_table(f, area, app),
        Focus::Consensus => consensus::draw(f, area, app),
        Focus::Aggregator if pairwise::applies(app) || pairwise::compares_pairs(app) => pairwise::result(f, area, app),
        Focus::Aggregator => aggregator::draw(f, area, app),
        Focus::Candidates => pairwise::candidates(f, area, app),
        Focus::Verdicts => pairwise::verdicts(f, area, app),
        Focus::Transcript => transcript::draw(f, area, app),
        Focus::Steps => g_eval::steps(f, area, app),
        Focus::Scores => g_eval::scores(f, area, app),
        Focus::Summary => summary::draw(f, area, app),
    }
}

/// Draw the whole screen.
pub fn draw(f: &mut Frame, app: &mut App) {
    let area = f.area();
    app.hits.clear();
    if (!app.view().agents.is_empty() || pairwise::applies(app)) && !app.focus_order().contains(&app.focus) {
        app.focus = app.focus_order()[0];
    }
    let header_h = if area.height >= 16 { 2 } else { 1 };
    let [head, body, foot] =
        Layout::vertical([Constraint::Length(header_h), Constraint::Min(1), Constraint::Length(1)]).areas(area);
    header::draw(f, head, app);
    footer::draw(f, foot, app);
    let compact = area.width < WIDE_MIN.0 || area.height < WIDE_MIN.1;
    if app.zoom {
        draw_pane(f, app, app.focus, body);
    } else if pairwise::applies(app) {
        pairwise::layout(f, app, body, draw_pane);
    } else if sage::applies(app) {
        sage::layout(f, app, body, draw_pane);
    } else if compact {
        let list_w = if body.width >= 100 { 28 } else { 22 };
        let [list, main] = Layout::horizontal([Constraint::Length(list_w), Constraint::Min(10)]).areas(body);
        let list_inner = Rect { x: list.x + 1, width: list.width.saturating_sub(2), ..list };
        let hits = agent::list(f, list_inner, app);
        app.hits.extend(hits);
        draw_pane(f, app, app.focus, main);
    } else {
        wide(f, app, body);
    }
    overlays::draw(f, area, app);
}

fn wide(f: &mut Frame, app: &mut App, body: Rect) {
    let [left, right] = Layout::horizontal([Constraint::Percentage(62), Constraint::Percentage(38)]).areas(body);
    let [grid, trans] = Layout::vertical([Constraint::Percentage(64), Constraint::Percentage(36)]).areas(left);
    let groups = app.vm.agents_by_group();
    if !groups.is_empty() {
        let rows = Layout::vertical(vec![Constraint::Ratio(1, groups.len() as u32); groups.len()]).split(grid);
        for ((_, members), row) in groups.iter().zip(rows.iter()) {
            let cols = Layout::horizontal(vec![Constraint::Ratio(1, members.len() as u32); members.len()]).split(*row);
            for (i, col) in members.iter().zip(cols.iter()) {
                draw_pane(f, app, Focus::Agent(*i), *col);
            }
        }
    }
    draw_pane(f, app, Focus::Transcript, trans);
    let v = app.view();
    let ngroups = v.groups.len().max(1) as u16;
    let dims = v.dimension_keys().len() as u16 + 1;
    let panes = app.side_panes();
    let (first, second) = (panes[0], panes[1]);
    let (first_h, second_h) = if first == Focus::Steps {
        // Steps are a few lines per dimension; the scores table a line per dimension and judge.
        let judges = v.agents.len().max(1) as u16;
        (right.height * 2 / 5, (3 + judges * (dims + 1)).min(right.height / 3))
    } else {
        ((2 + ngroups * 4).min(right.height / 3).max(5), (2 + ngroups * (dims + 2)).min(right.height / 2))
    };
    let [m, c, a] =
        Layout::vertical([Constraint::Length(first_h), Constraint::Length(second_h), Constraint::Min(4)]).areas(right);
    draw_pane(f, app, first, m);
    draw_pane(f, app, second, c);
    draw_pane(f, app, Focus::Aggregator, a);
}
