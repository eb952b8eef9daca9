//! Pairwise judging's screen: the two candidates of the selected pair side
//! by side, each judge's verdict per order (and vote) as it streams, flips
//! marked with the word FLIP as well as a colour, the panel's decision and a
//! person's part (settled, votes, abstained, a blind label, all marked
//! human), and a result pane with the ranking and each system's win rate
//! with a 95% Wilson interval.
//!
//! `[` and `]` move between pairs; A, B and T give your verdict on the pair
//! as the screen shows it (A is the left candidate): in a blind run before
//! the judges' verdicts are shown it is your own label, otherwise it settles
//! a tie or a flip. `v` casts an extra vote and `u` abstains.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::pane;
use crate::engine::Command;
use crate::panel::{Protocol, Screen};
use crate::session::fold::{SessionView, TurnState};
use crate::session::pairwise::{ComparisonView, Flip, PairRef, PairwiseView, RankEntry, win_rate};
use crate::tui::action::Action;
use crate::tui::app::{App, Focus, Pick};
use crate::tui::theme::Theme;
use crate::tui::words::{Stress, pair_parts};

/// The actions of this screen part, listed in the help only for pairwise sessions.
pub const ACTIONS: [Action; 7] = [
    Action::NextPair,
    Action::PrevPair,
    Action::PreferA,
    Action::PreferB,
    Action::PreferTie,
    Action::VotePair,
    Action::AbstainPair,
];

/// Whether the session's protocol has this layout ([`Screen::Pairs`]); a
/// protocol this build does not know has the usual panes.
pub fn applies(app: &App) -> bool {
    match app.view().panel.as_ref() {
        Some(panel) => panel.protocol.screen() == Screen::Pairs,
        None => Protocol::parse(&app.view().protocol)
            .is_some_and(|p| crate::panel::ProtocolSection::new(p).screen() == Screen::Pairs),
    }
}

/// Whether the session's results are pairwise decisions (the pairwise
/// protocol, or CollabEval's pairwise mode, whose discussion has the usual
/// panes and whose result pane is this module's).
pub fn compares_pairs(app: &App) -> bool {
    app.view().panel.as_ref().is_some_and(|p| p.protocol.compares_pairs())
}

/// The selected comparison, if the session has one yet.
pub fn current(app: &App) -> Option<&ComparisonView> {
    let pw = &app.view().pairwise;
    pw.comparisons.get(app.pair.min(pw.comparisons.len().saturating_sub(1)))
}

/// Lay out the body: the candidates on top, the verdicts and the result
/// below (the transcript too, when there is room).
pub fn layout(f: &mut Frame, app: &mut App, body: Rect, draw_pane: fn(&mut Frame, &mut App, Focus, Rect)) {
    let wide = body.width >= 120 && body.height >= 32;
    let top_h = if wide { body.height * 2 / 5 } else { (body.height * 2 / 5).max(7) };
    let [top, bottom] = Layout::vertical([Constraint::Length(top_h), Constraint::Min(4)]).areas(body);
    draw_pane(f, app, Focus::Candidates, top);
    if wide {
        let [verdicts, side] =
            Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)]).areas(bottom);
        let [result, trans] = Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(side);
        draw_pane(f, app, Focus::Verdicts, verdicts);
        draw_pane(f, app, Focus::Aggregator, result);
        draw_pane(f, app, Focus::Transcript, trans);
    } else {
        let [verdicts, result] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(bottom);
        draw_pane(f, app, Focus::Verdicts, verdicts);
        draw_pane(f, app, Focus::Aggregator, result);
    }
}

/// How many pairs the run compares: from its candidates and the panel's
/// pairing (the comparisons seen so far may be fewer while turns start).
fn expected_pairs(v: &SessionView) -> usize {
    let n = v.item.as_ref().and_then(|i| i.candidates.as_ref()).map_or(0, Vec::len);
    let planned = match v.panel.as_ref().and_then(|p| p.protocol.pairs_option("pairing")).as_deref() {
        Some("all-pairs") => n * n.saturating_sub(1) / 2,
        _ => n.saturating_sub(1),
    };
    planned.max(v.pairwise.comparisons.len())
}

/// What the judges call a candidate ("Summary").
fn noun(v: &SessionView) -> String {
    let n = v.panel.as_ref().and_then(|p| p.protocol.pairs_option("candidate_name")).unwrap_or_default();
    let n = n.trim().to_string();
    if n.is_empty() { "Summary".into() } else { n }
}

/// A candidate's name on screen: its id, or "System 1/2" while a blind pair is hidden.
fn shown_name(c: &ComparisonView, revealed: bool, id: &str) -> String {
    if revealed {
        id.to_string()
    } else if id == c.on_screen().0 {
        "System 1".into()
    } else {
        "System 2".into()
    }
}

fn paragraph_scrolled(f: &mut Frame, app: &mut App, focus: Focus, inner: Rect, lines: Vec<Line<'static>>) {
    let w = inner.width.max(1) as usize;
    let total = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
    let s = app.scroll_of(focus);
    s.follow = false;
    let top = s.resolve(total, inner.height as usize);
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }).scroll((top as u16, 0)), inner);
}

/// The two candidates of the selected pair, side by side.
pub fn candidates(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Candidates;
    let v = app.view();
    let pw = &v.pairwise;
    let n = expected_pairs(v);
    let Some(c) = current(app).cloned() else {
        let block = pane(Line::from(Span::styled(" Candidates ", theme.accent())), focused, &theme);
        let msg = match v.item.as_ref().and_then(|i| i.candidates.as_ref()) {
            Some(cs) => format!("{} candidates; the comparisons have not started yet.", cs.len()),
            None => "waiting for the session to start…".into(),
        };
        f.render_widget(Paragraph::new(Span::styled(msg, theme.muted())).block(block), area);
        return;
    };
    let revealed = pw.revealed(&c);
    let i = app.pair.min(pw.comparisons.len().saturating_sub(1));
    let mut title = vec![Span::styled(format!(" Pair {} of {n} ", i + 1), theme.accent())];
    if n > 1 {
        title.push(Span::styled("[ ] ", theme.muted()));
    }
    if !revealed {
        title.push(Span::styled("· blind: names hidden ", theme.human()));
    }
    let block = pane(Line::from(title), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let texts = v.item.as_ref().and_then(|it| it.candidates.clone()).unwrap_or_default();
    let text_of = |id: &str| texts.iter().find(|t| t.id == id).map(|t| t.text.clone()).unwrap_or_default();
    let (left, right) = c.on_screen();
    let [l, r] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(inner);
    let r_inner = Rect { x: r.x + 1, width: r.width.saturating_sub(1), ..r };
    f.render_widget(Block::default().borders(Borders::LEFT).border_style(theme.border(false)), r);
    let mut cols = Vec::new();
    for (pos, id) in [("A", left), ("B", right)] {
        let name = shown_name(&c, revealed, id);
        let mut lines = vec![Line::from(vec![
            Span::styled(format!("{pos} "), theme.accent()),
            Span::styled(name, theme.text().add_modifier(Modifier::BOLD)),
        ])];
        lines.push(Line::from(Span::styled(text_of(id), theme.text())));
        cols.push(lines);
    }
    let right_lines = cols.pop().unwrap_or_default();
    let left_lines = cols.pop().unwrap_or_default();
    // Both columns scroll together.
    let w = l.width.max(1) as usize;
    let rows = |ls: &[Line]| ls.iter().map(|x| x.width().max(1).div_ceil(w)).sum::<usize>();
    let total = rows(&left_lines).max(rows(&right_lines));
    let s = app.scroll_of(Focus::Candidates);
    s.follow = false;
    let top = s.resolve(total, inner.height as usize) as u16;
    f.render_widget(Paragraph::new(left_lines).wrap(Wrap { trim: false }).scroll((top, 0)), l);
    f.render_widget(Paragraph::new(right_lines).wrap(Wrap { trim: false }).scroll((top, 0)), r_inner);
}

fn flip_spans(flip: Option<Flip>, theme: &Theme) -> Vec<Span<'static>> {
    let why = match flip {
        Some(Flip::Opposite) => "each order prefers its A",
        Some(Flip::WinTie) => "a win in one order, a tie in the other",
        _ => return Vec::new(),
    };
    vec![Span::raw(" "), Span::styled(format!("⚑ FLIP: {why}"), theme.flip())]
}

fn preferred(winner: Option<&str>) -> String {
    winner.map(|w| format!("{w} preferred")).unwrap_or_else(|| "tie".into())
}

/// The lines of the verdicts pane for one comparison.
///
/// `reasons`: show each verdict's reasoning (when there is room).
pub fn verdict_lines(
    v: &SessionView,
    c: &ComparisonView,
    live: bool,
    reasons: bool,
    theme: &Theme,
) -> Vec<Line<'static>> {
    let pw: &PairwiseView = &v.pairwise;
    let mut lines: Vec<Line<'static>> = Vec::new();
    let judges: Vec<String> = v.agents.iter().map(|a| a.info.name.clone()).collect();
    // Turns of this pair: (judge, swapped, vote, turn index).
    let mut turns: Vec<(String, bool, u32, usize)> = v
        .turns
        .iter()
        .enumerate()
        .filter_map(|(ti, t)| {
            let (cv, swapped) = pw.of_turn(t.id)?;
            (cv.first == c.first && cv.second == c.second).then(|| (t.agent.clone(), swapped, t.round.unwrap_or(1), ti))
        })
        .collect();
    turns.sort_by_key(|(j, s, vote, ti)| (judges.iter().position(|x| x == j), *s, *vote, *ti));
    if !pw.revealed(c) {
        lines.push(Line::from(Span::styled(
            "Blind: the judges' verdicts stay hidden until you give your own.",
            theme.human(),
        )));
        lines.push(Line::from(vec![
            Span::styled("Press ", theme.muted()),
            Span::styled("A", theme.accent()),
            Span::styled(" (left), ", theme.muted()),
            Span::styled("B", theme.accent()),
            Span::styled(" (right) or ", theme.muted()),
            Span::styled("T", theme.accent()),
            Span::styled(" (tie); u abstains.", theme.muted()),
        ]));
        let done = turns.iter().filter(|(.., ti)| v.turns[*ti].state != TurnState::Streaming).count();
        lines.push(Line::from(Span::styled(format!("{done} of {} replies in.", turns.len()), theme.muted())));
        return lines;
    }
    // The decision and a person's part first: what matters at a glance.
    let mut summary: Vec<Line<'static>> = Vec::new();
    if let Some(p) = &c.panel {
        let mut spans = vec![Span::styled("PANEL: ", theme.accent())];
        match &p.no_result {
            Some(why) => spans.push(Span::styled(format!("no decision — {why}"), theme.error())),
            None => spans.push(Span::styled(preferred(p.winner.as_deref()), theme.text().add_modifier(Modifier::BOLD))),
        }
        if judges.len() > 1 && c.flipped() && !p.flip.is_some_and(Flip::is_flip) {
            spans.push(Span::raw(" "));
            spans.push(Span::styled("⚑ FLIP: a judge's orders disagree", theme.flip()));
        } else {
            spans.extend(flip_spans(p.flip, theme));
        }
        summary.push(Line::from(spans));
    } else if !turns.is_empty() {
        let done = turns.iter().filter(|(.., ti)| v.turns[*ti].state != TurnState::Streaming).count();
        summary.push(Line::from(Span::styled(
            format!("{done} of {} replies in; the panel decides when every judge is done.", turns.len()),
            theme.muted(),
        )));
    }
    if let Some(l) = &c.label {
        summary.push(Line::from(Span::styled(
            format!("your blind verdict ({}, human): {}", l.author, preferred(l.winner.as_deref())),
            theme.human(),
        )));
    }
    for x in &c.votes {
        summary.push(Line::from(Span::styled(
            format!("extra vote by {} (human): {}", x.author, preferred(x.winner.as_deref())),
            theme.human(),
        )));
    }
    if let Some(s) = &c.settled {
        summary.push(Line::from(Span::styled(
            format!("SETTLED by {} (human): {}", s.author, preferred(s.winner.as_deref())),
            theme.human(),
        )));
    } else if let Some(who) = &c.abstained {
        summary.push(Line::from(Span::styled(
            format!("{who} (human) abstained: the panel's decision stands"),
            theme.human(),
        )));
    } else if live && c.needs_settling() {
        summary.push(Line::from(vec![
            Span::styled("settle: ", theme.muted()),
            Span::styled("A", theme.accent()),
            Span::styled(" / ", theme.muted()),
            Span::styled("B", theme.accent()),
            Span::styled(" / ", theme.muted()),
            Span::styled("T", theme.accent()),
            Span::styled(" · ", theme.muted()),
            Span::styled("v", theme.accent()),
            Span::styled(" extra vote · ", theme.muted()),
            Span::styled("u", theme.accent()),
            Span::styled(" abstain", theme.muted()),
        ]));
    }
    let noun = noun(v);
    let votes_per_order = turns.iter().map(|t| t.2).max().unwrap_or(1);
    for judge in &judges {
        let theirs = turns.iter().any(|(j, ..)| j == judge);
        if theirs {
            lines.push(Line::from(Span::styled(judge.clone(), theme.text().add_modifier(Modifier::BOLD))));
        }
        for swapped in [false, true] {
            let mine: Vec<&(String, bool, u32, usize)> =
                turns.iter().filter(|(j, s, ..)| j == judge && *s == swapped).collect();
            if mine.is_empty() {
                continue;
            }
            let shown =
                if swapped { (c.second.as_str(), c.first.as_str()) } else { (c.first.as_str(), c.second.as_str()) };
            let head = format!("  {noun} A = {}", shown.0);
            if votes_per_order > 1 {
                lines.push(Line::from(Span::styled(head.clone(), theme.muted())));
            }
            for (_, _, vote, ti) in mine {
                let t = &v.turns[*ti];
                let tag = if votes_per_order > 1 { format!("    vote {vote}: ") } else { format!("{head}: ") };
                let verdict = c.verdicts.iter().find(|x| x.turn == t.id);
                let mut spans = vec![Span::styled(tag, theme.muted())];
                match (verdict, t.state) {
                    (Some(x), _) => {
                        let pair = PairRef { first: c.first.clone(), second: c.second.clone(), swapped };
                        for (k, part) in
                            pair_parts(&pair, x.label, &x.criteria, x.confidence, true).into_iter().enumerate()
                        {
                            let style = if part.stress == Stress::Decision { theme.done() } else { theme.muted() };
                            let sep = if k == 0 { "" } else { " · " };
                            spans.push(Span::styled(format!("{sep}{}", part.text), style));
                        }
                        if reasons && !x.reasoning.is_empty() {
                            spans.push(Span::styled(format!(" — {}", x.reasoning), theme.text()));
                        }
                    }
                    (None, TurnState::Streaming) => {
                        let tail: String = {
                            let flat = crate::tui::words::shown(t).split_whitespace().collect::<Vec<_>>().join(" ");
                            let n = flat.chars().count();
                            flat.chars().skip(n.saturating_sub(40)).collect()
                        };
                        spans.push(Span::styled("streaming", theme.speaking()));
                        if !tail.is_empty() {
                            spans.push(Span::styled(format!(" …{tail}"), theme.text()));
                        }
                    }
                    (None, TurnState::Completed) => match &t.parse_error {
                        Some(pe) => {
                            spans.push(Span::styled(format!("parse failure (no verdict): {pe}"), theme.error()))
                        }
                        None => spans.push(Span::styled("no verdict", theme.muted())),
                    },
                    (None, TurnState::Failed) => spans.push(Span::styled(
                        format!("failed: {}", t.last_error.clone().unwrap_or_default()),
                        theme.failed(),
                    )),
                }
                lines.push(Line::from(spans));
            }
        }
        if let Some(d) = c.decisions.iter().find(|d| d.judge.as_deref() == Some(judge.as_str())) {
            let mut spans = vec![Span::styled(format!("  {judge}: "), theme.accent())];
            match &d.no_result {
                Some(why) => spans.push(Span::styled(format!("no decision — {why}"), theme.error())),
                None => spans.push(Span::styled(preferred(d.winner.as_deref()), theme.text())),
            }
            spans.extend(flip_spans(d.flip, theme));
            lines.push(Line::from(spans));
        }
    }
    summary.extend(lines);
    summary
}

/// Each judge's verdicts on the selected pair, the decisions and a person's part.
pub fn verdicts(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Verdicts;
    let live = app.is_live();
    let (lines, title) = match current(app) {
        Some(c) => {
            let v = app.view();
            let title = if v.pairwise.revealed(c) {
                format!(" Verdicts · {} vs {} ", c.first, c.second)
            } else {
                " Verdicts · hidden (blind) ".to_string()
            };
            (verdict_lines(v, c, live, area.width >= 90, &theme), title)
        }
        None => (vec![Line::from(Span::styled("no verdicts yet", theme.muted()))], " Verdicts ".to_string()),
    };
    let block = pane(Line::from(Span::styled(title, theme.accent())), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    paragraph_scrolled(f, app, Focus::Verdicts, inner, lines);
}

/// The ranking: the result's, else one from the pairs decided so far.
fn ranking(v: &SessionView) -> (Vec<RankEntry>, bool) {
    if let Some(a) = &v.aggregate {
        return (a.ranking.clone(), true);
    }
    let mut out: Vec<RankEntry> = Vec::new();
    fn entry(out: &mut Vec<RankEntry>, id: &str) -> usize {
        if let Some(i) = out.iter().position(|r| r.candidate == id) {
            return i;
        }
        out.push(RankEntry { candidate: id.to_string(), wins: 0, losses: 0, ties: 0, human: false });
        out.len() - 1
    }
    for c in v.pairwise.comparisons.iter().filter(|c| c.decided()) {
        let (a, b) = (entry(&mut out, &c.first), entry(&mut out, &c.second));
        let human = c.settled.is_some() || !c.votes.is_empty();
        match c.winner() {
            Some(w) if w == c.first => {
                out[a].wins += 1;
                out[b].losses += 1;
            }
            Some(_) => {
                out[b].wins += 1;
                out[a].losses += 1;
            }
            None => {
                out[a].ties += 1;
                out[b].ties += 1;
            }
        }
        out[a].human |= human;
        out[b].human |= human;
    }
    let score = |r: &RankEntry| win_rate(r).map(|(p, _)| p).unwrap_or(0.0);
    out.sort_by(|x, y| score(y).total_cmp(&score(x)));
    (out, false)
}

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// The result: the ranking with win rates and 95% Wilson intervals.
pub fn result(f: &mut Frame, area: Rect, app: &mut App) {
    let theme = app.env.theme().clone();
    let focused = app.focus == Focus::Aggregator;
    let v = app.view();
    let pw = &v.pairwise;
    let hidden = pw.comparisons.iter().filter(|c| !pw.revealed(c)).count();
    let mut lines: Vec<Line<'static>> = Vec::new();
    let (rank, final_) = ranking(v);
    if hidden > 0 {
        lines.push(Line::from(Span::styled(
            format!("hidden until you have given your verdict on every pair ({hidden} to go)"),
            theme.human(),
        )));
    } else if let Some(why) = v.aggregate.as_ref().and_then(|a| a.no_result.clone()) {
        lines.push(Line::from(Span::styled(format!("no result — {why}"), theme.error())));
    } else if rank.is_empty() {
        let decided = pw.comparisons.iter().filter(|c| c.decided()).count();
        lines.push(Line::from(Span::styled(
            format!("no pair decided yet ({decided} of {})", pw.comparisons.len()),
            theme.muted(),
        )));
    } else {
        if !final_ {
            lines.push(Line::from(Span::styled("so far (before aggregation):", theme.muted())));
        }
        for (i, r) in rank.iter().enumerate() {
            let mut spans = vec![
                Span::styled(format!("{}. ", i + 1), theme.muted()),
                Span::styled(r.candidate.clone(), theme.text().add_modifier(Modifier::BOLD)),
                Span::styled(format!(" {}W {}L {}T", r.wins, r.losses, r.ties), theme.muted()),
            ];
            if let Some((p, (lo, hi))) = win_rate(r) {
                spans.push(Span::styled(format!(" win {}", pct(p)), theme.score(p, 0.0, 1.0)));
                spans.push(Span::styled(format!(" [{}–{}]", pct(lo), pct(hi)), theme.muted()));
            }
            if r.human {
                spans.push(Span::styled(" (human)", theme.human()));
            }
            lines.push(Line::from(spans));
        }
        lines.push(Line::from(Span::styled("win: ties count half; [95% Wilson interval]", theme.muted())));
        let flips = pw.comparisons.iter().filter(|c| c.flipped()).count();
        let decided = pw.comparisons.iter().filter(|c| c.panel.is_some()).count();
        // Flips need both orders; CollabEval's pairwise mode judges one.
        let swapped = pw
            .comparisons
            .iter()
            .any(|c| c.order(true).next().is_some() || c.decisions.iter().any(|d| d.swapped_order.is_some()));
        if decided > 0 && swapped {
            let style = if flips > 0 { theme.flip() } else { theme.muted() };
            lines.push(Line::from(Span::styled(format!("flips: {flips} of {decided} pairs"), style)));
        } else if decided > 0 {
            lines.push(Line::from(Span::styled("one order only: position bias not measured", theme.muted())));
        }
    }
    if let Some(e) = &v.end_error {
        lines.push(Line::from(Span::styled(format!("error: {e}"), theme.error())));
    }
    let title = if final_ { " Result " } else { " Result · running " };
    let block = pane(Line::from(Span::styled(title, theme.accent())), focused, &theme);
    let inner = block.inner(area);
    f.render_widget(block, area);
    paragraph_scrolled(f, app, Focus::Aggregator, inner, lines);
}

/// Move the selection to the next or previous pair.
pub fn select(app: &mut App, forward: bool) {
    let n = app.view().pairwise.comparisons.len();
    if n == 0 {
        app.error("no pairs yet");
        return;
    }
    let i = app.pair.min(n - 1);
    app.pair = if forward { (i + 1) % n } else { (i + n - 1) % n };
    app.scroll.remove(&Focus::Candidates);
    app.scroll.remove(&Focus::Verdicts);
    let c = &app.view().pairwise.comparisons[app.pair];
    let what = if app.view().pairwise.revealed(c) {
        format!("pair {} of {n}: {} vs {}", app.pair + 1, c.first, c.second)
    } else {
        format!("pair {} of {n} (blind)", app.pair + 1)
    };
    app.info(what);
}

/// A position on screen, or a tie.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    Left,
    Right,
    Tie,
}

/// The candidate a choice names on the selected pair (`None`: tie).
fn winner_of(c: &ComparisonView, choice: Choice) -> Option<String> {
    let (l, r) = c.on_screen();
    match choice {
        Choice::Left => Some(l.to_string()),
        Choice::Right => Some(r.to_string()),
        Choice::Tie => None,
    }
}

/// A, B or T: your own verdict on a blind pair not shown yet, else a
/// settlement (the engine refuses one that does not apply, with its reason).
pub fn prefer(app: &mut App, choice: Choice) {
    let Some(c) = current(app).cloned() else { return app.error("no pair to decide yet") };
    let author = app.env.author.clone();
    let winner = winner_of(&c, choice);
    let revealed = app.view().pairwise.revealed(&c);
    let said = match choice {
        Choice::Left => "A",
        Choice::Right => "B",
        Choice::Tie => "tie",
    };
    if revealed {
        app.send(Command::SettlePair { first: c.first, second: c.second, winner, author });
        app.info(format!("settling the pair: {said}"));
    } else {
        app.send(Command::LabelPair { first: c.first, second: c.second, winner, author });
        app.info(format!("your verdict: {said}; the judges' verdicts are shown"));
    }
}

/// `v`: choose an extra vote on the selected pair.
pub fn open_vote(app: &mut App) {
    let Some(c) = current(app).cloned() else { return app.error("no pair to vote on yet") };
    let revealed = app.view().pairwise.revealed(&c);
    let (l, r) = c.on_screen();
    let vote = |winner: Option<&str>| Pick::PairVote {
        first: c.first.clone(),
        second: c.second.clone(),
        winner: winner.map(str::to_string),
    };
    let items = vec![
        (format!("A · {}", shown_name(&c, revealed, l)), vote(Some(l))),
        (format!("B · {}", shown_name(&c, revealed, r)), vote(Some(r))),
        ("tie".to_string(), vote(None)),
    ];
    app.open_picker("Your extra vote on this pair (counts as one more judge)", items);
}

/// `u`: decline to decide the selected pair.
pub fn abstain(app: &mut App) {
    let Some(c) = current(app).cloned() else { return app.error("no pair yet") };
    let author = app.env.author.clone();
    app.send(Command::AbstainPair { first: c.first, second: c.second, author });
    app.info("abstaining on this pair");
}

/// A command-line word as a choice on the selected pair: `a`, `b`, `tie`,
/// or a candidate id of the pair.
pub fn resolve_choice(app: &App, word: Option<&str>) -> Result<(ComparisonView, Option<String>), String> {
    let c = current(app).cloned().ok_or("no pair yet")?;
    let winner = match word.map(str::to_ascii_lowercase).as_deref() {
        None => return Err("name a, b or tie (as the screen shows the pair), or a candidate".into()),
        Some("a") => winner_of(&c, Choice::Left),
        Some("b") => winner_of(&c, Choice::Right),
        Some("tie" | "t") => None,
        Some(_) => {
            let w = word.unwrap_or_default();
            if w != c.first && w != c.second {
                return Err(format!("{w} is not in this pair; name a, b, tie, {} or {}", c.first, c.second));
            }
            Some(w.to_string())
        }
    };
    Ok((c, winner))
}
