//! The footer: a message, or the keys that matter in the current mode.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::tui::action::Action;
use crate::tui::app::{App, MessageKind};

pub fn draw(f: &mut Frame, area: Rect, app: &App) {
    let theme = app.env.theme();
    let mut spans: Vec<Span> = Vec::new();
    if let Some((kind, text)) = &app.message {
        let style = if *kind == MessageKind::Error { theme.error() } else { theme.accent() };
        spans.push(Span::styled(format!(" {text} "), style));
        spans.push(Span::raw(" "));
    }
    let keys: Vec<(String, String)> = match &app.overlay {
        Some(o) => o.footer(&app.env.config.keymap),
        None => {
            let mut k: Vec<(String, String)> =
                app.env.config.keymap.footer(app.mode()).into_iter().map(|(k, d)| (k, d.to_string())).collect();
            if app.zoom {
                k.insert(0, ("esc".into(), "unzoom".into()));
            }
            if !app.is_live() {
                k.retain(|(_, d)| !matches!(d.as_str(), "comment" | "override" | "speaker" | "stop"));
            }
            let v = app.view();
            if let Some(protocol) = v.panel.as_ref().map(|p| &p.protocol) {
                if protocol.speaking_order() == crate::panel::SpeakingOrder::Independent {
                    k.retain(|(_, d)| d != "speaker");
                }
                if super::pairwise::applies(app) {
                    k.retain(|(_, d)| !matches!(d.as_str(), "comment" | "override" | "transcript" | "focus"));
                    k.splice(0..0, pair_keys(app));
                }
                let before_scoring = v.phase.is_none_or(|p| p == crate::session::event::Phase::Steps);
                if protocol.uses_steps()
                    && before_scoring
                    && app.is_live()
                    && let Some(key) = app.env.config.keymap.key_for(app.mode(), Action::EditSteps)
                {
                    k.insert(0, (key.to_string(), "edit steps".into()));
                }
            }
            k
        }
    };
    for (k, d) in keys {
        spans.push(Span::styled(format!(" {k}"), theme.accent()));
        spans.push(Span::styled(format!(" {d} "), theme.muted()));
    }
    super::draw_lines(f.buffer_mut(), area, &[Line::from(spans)]);
}

/// The pairwise keys that apply to the selected pair, first in the footer.
fn pair_keys(app: &App) -> Vec<(String, String)> {
    let km = &app.env.config.keymap;
    let key = |a: Action| km.key_for(app.mode(), a).map(|k| k.to_string());
    let mut out = Vec::new();
    if app.view().pairwise.comparisons.len() > 1
        && let (Some(p), Some(n)) = (key(Action::PrevPair), key(Action::NextPair))
    {
        out.push((format!("{p}{n}"), "pair".into()));
    }
    if !app.is_live() {
        return out;
    }
    let Some(c) = super::pairwise::current(app) else { return out };
    let abc = [Action::PreferA, Action::PreferB, Action::PreferTie].map(key);
    let abc = abc.iter().flatten().cloned().collect::<Vec<_>>().join("/");
    if !app.view().pairwise.revealed(c) {
        out.push((abc, "your verdict".into()));
    } else if c.needs_settling() && c.settled.is_none() {
        out.push((abc, "settle".into()));
        if let Some(u) = key(Action::AbstainPair) {
            out.push((u, "abstain".into()));
        }
    }
    if app.view().pairwise.revealed(c)
        && let Some(v) = key(Action::VotePair)
    {
        out.push((v, "vote".into()));
    }
    out
}
