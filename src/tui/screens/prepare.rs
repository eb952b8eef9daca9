//! The screen shown while a run's providers are built: a model fetch with
//! its stage, bytes and rate, or a plain note while a model loads.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout};
use ratatui::text::Line;
use ratatui::widgets::{Gauge, Paragraph, Wrap};

use crate::model::{FetchProgress, FetchStage, format_bytes};
use crate::tui::app::Env;
use crate::tui::components::pane;

/// What the preparing screen shows.
pub struct Prepare {
    env: Env,
    title: String,
    started: Instant,
    /// The model being fetched and the latest progress of its fetch.
    fetch: Option<(String, FetchProgress)>,
}

impl Prepare {
    pub fn new(env: Env, title: &str) -> Self {
        Self { env, title: title.to_string(), started: Instant::now(), fetch: None }
    }

    /// Note the latest progress of a model fetch.
    pub fn progress(&mut self, model: String, p: FetchProgress) {
        self.fetch = Some((model, p));
    }

    pub fn draw(&self, f: &mut Frame) {
        let theme = self.env.theme();
        let (body, foot) = super::page(f, theme, &self.title);
        let width = body.width.saturating_sub(4).clamp(20, 72);
        let [boxed] = Layout::horizontal([Constraint::Length(width)]).flex(Flex::Center).areas(body);
        let [boxed] = Layout::vertical([Constraint::Length(8)]).flex(Flex::Center).areas(boxed);
        let elapsed = self.started.elapsed().as_secs();
        let block = pane(Line::from(" starting "), true, theme);
        let inner = block.inner(boxed);
        f.render_widget(block, boxed);
        let [text, gauge] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        let mut lines = Vec::new();
        match &self.fetch {
            Some((model, p)) if p.stage != FetchStage::Done => {
                lines.push(Line::styled(format!("Fetching the model {model} (first use only)"), theme.text()));
                lines.push(Line::styled(format!("{} · {elapsed} s", p.stage), theme.muted()));
                let ratio = if p.total > 0 { (p.bytes as f64 / p.total as f64).clamp(0.0, 1.0) } else { 0.0 };
                let label = format!(
                    "{} / {} · {}/s",
                    format_bytes(p.bytes),
                    format_bytes(p.total),
                    format_bytes(p.rate_bps as u64)
                );
                f.render_widget(Gauge::default().ratio(ratio).label(label).gauge_style(theme.accent()), gauge);
            }
            Some((model, _)) => {
                lines.push(Line::styled(format!("Model {model} fetched and verified."), theme.text()));
                lines.push(Line::styled(format!("Loading it into memory… {elapsed} s"), theme.muted()));
            }
            None => {
                lines.push(Line::styled("Building the panel's providers and loading its model…", theme.text()));
                lines.push(Line::styled(format!("{elapsed} s"), theme.muted()));
            }
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), text);
        f.render_widget(Paragraph::new(Line::styled(" q cancel", theme.muted())), foot);
    }
}
