//! A choice from a list: whose score to override, which dimension, who
//! speaks next, an extra vote on a pair. Each item carries what choosing it
//! means, as a [`Pick`].

use ratatui::Frame;
use ratatui::crossterm::event::KeyEvent;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::centered;
use crate::session::event::OverrideTarget;
use crate::tui::action::{Action, CHOOSE};
use crate::tui::components::pane;
use crate::tui::keymap::{Keymap, Mode};
use crate::tui::theme::Theme;

/// What choosing an item does.
#[derive(Debug, Clone, PartialEq)]
pub enum Pick {
    /// Override this score: ask for the dimension next.
    OverrideTarget(OverrideTarget),
    /// Override this dimension of the target's score: ask for the value next.
    OverrideDimension { target: OverrideTarget, dimension: String },
    /// Rate this dimension: ask for the value next.
    RateDimension(String),
    /// Edit this dimension's evaluation steps.
    StepsDimension(String),
    /// This agent speaks next.
    Speaker(String),
    /// Veto the pick of this agent.
    Veto(String),
    /// An extra vote on a pair: the winner's candidate id, none for a tie.
    PairVote { first: String, second: String, winner: Option<String> },
}

impl Pick {
    /// The name the choice is about: an agent (`final` for the final
    /// result), a dimension or a candidate; none for a tie.
    pub fn name(&self) -> Option<&str> {
        match self {
            Pick::OverrideTarget(OverrideTarget::Agent { agent }) => Some(agent),
            Pick::OverrideTarget(OverrideTarget::Final { .. }) => Some("final"),
            Pick::OverrideTarget(OverrideTarget::Turn { .. }) => None,
            Pick::OverrideDimension { dimension: d, .. } | Pick::RateDimension(d) | Pick::StepsDimension(d) => Some(d),
            Pick::Speaker(a) | Pick::Veto(a) => Some(a),
            Pick::PairVote { winner, .. } => winner.as_deref(),
        }
    }
}

/// A choice compares equal to the name it is about.
impl PartialEq<str> for Pick {
    fn eq(&self, other: &str) -> bool {
        self.name() == Some(other)
    }
}

/// A list to choose from.
#[derive(Debug, Clone)]
pub struct Picker {
    pub title: String,
    /// (label, what choosing it does)
    pub items: Vec<(String, Pick)>,
    pub selected: usize,
}

/// What a picker did with a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Choose {
    Keep,
    Cancel,
    Chosen(Pick),
}

impl Picker {
    /// A list with its first item selected; none when it is empty.
    pub fn new(title: &str, items: Vec<(String, Pick)>) -> Option<Self> {
        (!items.is_empty()).then(|| Self { title: title.into(), items, selected: 0 })
    }

    /// A key, read through the picker's table (`choose_1`…`choose_9`, the
    /// digits by default, choose by number).
    pub fn on_key(&mut self, k: KeyEvent, km: &Keymap) -> Choose {
        let n = self.items.len();
        match km.action(Mode::Picker, &k) {
            Some(Action::Cancel) => return Choose::Cancel,
            Some(Action::MoveUp) => self.selected = self.selected.checked_sub(1).unwrap_or(n - 1),
            Some(Action::MoveDown) => self.selected = (self.selected + 1) % n,
            Some(Action::Confirm) => return Choose::Chosen(self.items[self.selected].1.clone()),
            Some(a) => {
                if let Some(i) = a.choice()
                    && i <= n
                {
                    return Choose::Chosen(self.items[i - 1].1.clone());
                }
            }
            None => {}
        }
        Choose::Keep
    }

    /// Each item's number: the first key that chooses it (`1`…`9` by default),
    /// padded to one width; blank past the ninth or when unbound.
    fn numbers(&self, km: &Keymap) -> Vec<String> {
        let keys: Vec<String> = (0..self.items.len())
            .map(|i| {
                CHOOSE.get(i).and_then(|a| km.key_for(Mode::Picker, *a)).map(|k| k.to_string()).unwrap_or_default()
            })
            .collect();
        let w = keys.iter().map(|k| k.chars().count()).max().unwrap_or(0).max(1);
        keys.into_iter().map(|k| format!("{k:<w$} ")).collect()
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme, km: &Keymap) {
        let numbers = self.numbers(km);
        let number_w = numbers.first().map_or(2, |n| n.chars().count()) as u16;
        let h = (self.items.len() as u16 + 2).min(area.height);
        let w = self
            .items
            .iter()
            .map(|(l, _)| l.chars().count() as u16 + 6 + number_w)
            .max()
            .unwrap_or(20)
            .max(self.title.chars().count() as u16 + 4);
        let r = centered(area, w.min(area.width), h);
        f.render_widget(Clear, r);
        let lines: Vec<Line> = self
            .items
            .iter()
            .enumerate()
            .map(|(i, (label, _))| {
                let st = if i == self.selected { theme.selection() } else { theme.text() };
                Line::from(vec![Span::styled(numbers[i].clone(), theme.muted()), Span::styled(label.clone(), st)])
            })
            .collect();
        let block = pane(Line::from(Span::styled(format!(" {} ", self.title), theme.accent())), true, theme);
        let inner_h = h.saturating_sub(2) as usize;
        let top = self.selected.saturating_sub(inner_h.saturating_sub(1));
        f.render_widget(Paragraph::new(lines).scroll((top as u16, 0)).block(block), r);
    }
}

/// The picker's keys for the footer: "↑↓ choose  enter select  1-9 pick  esc cancel"
/// (the pick keys as bound, see [`Keymap::choose_keys`]).
pub fn footer(km: &Keymap) -> Vec<(String, String)> {
    let key = |a: Action| km.key_for(Mode::Picker, a).map(|k| k.to_string());
    let mut out = Vec::new();
    let moves: String = [key(Action::MoveUp), key(Action::MoveDown)].into_iter().flatten().collect();
    if !moves.is_empty() {
        out.push((moves, "choose".to_string()));
    }
    if let Some(k) = key(Action::Confirm) {
        out.push((k, "select".into()));
    }
    if let Some(k) = km.choose_keys(Mode::Picker) {
        out.push((k, "pick".into()));
    }
    if let Some(k) = key(Action::Cancel) {
        out.push((k, "cancel".into()));
    }
    out
}
