//! The rows an agent pane's turns take, kept between frames.
//!
//! A pane shows every turn of its agent (a marker line, the wrapped words,
//! the wrapped score line), and scrolling needs the rows of all of them. A
//! turn that completed or failed, with every turn before it, can no longer
//! change, so its rows are counted once; a frame looks again only at the
//! turns after the last such one (the one streaming, usually).

use crate::session::event::{Phase, Role};
use crate::session::fold::{SessionView, TurnState};
use crate::tui::words::{score_line, shown_scores};
use crate::tui::wrap::{WrapCache, wrap};

/// What one turn takes in the pane.
#[derive(Debug, Clone)]
pub struct PaneTurn {
    /// What the rows were made from: the turn's revision and state, and the
    /// turn (index and revision) whose evaluation its score moves are shown against.
    made_from: (u64, TurnState, Option<(usize, u64)>),
    /// Wrapped lines of the turn's words.
    text: usize,
    /// The turn's score line, wrapped.
    pub scores: Vec<String>,
}

/// The last turn with an evaluation, per role and group: what the next
/// turn's scores moved from (as `previous_evaluation` finds it).
type LastEvaluated = Vec<(Role, Option<String>, usize)>;

/// An agent pane's turns at one width.
#[derive(Debug, Default)]
pub struct PaneCache {
    width: u16,
    turns: Vec<PaneTurn>,
    /// The row after each turn, counted from the pane's first.
    ends: Vec<usize>,
    /// How many leading turns can no longer change.
    settled: usize,
    /// [`LastEvaluated`] after the settled turns.
    last: LastEvaluated,
}

impl PaneCache {
    /// Bring the rows up to date with the agent's `turns` (indices into
    /// `view.turns`, in order) at `width`.
    pub fn refresh(&mut self, view: &SessionView, turns: &[usize], width: u16, wraps: &mut WrapCache) {
        if self.width != width || self.turns.len() > turns.len() {
            *self = Self { width, ..Self::default() };
        }
        // Only a turn whose rows are made again needs the panel's dimensions.
        let mut keys = None;
        let mut last = self.last.clone();
        let mut settling = true;
        for (k, &ti) in turns.iter().enumerate().skip(self.settled) {
            let t = &view.turns[ti];
            let slot = last.iter().position(|(r, g, _)| *r == t.role && g.as_deref() == t.group.as_deref());
            let before = if t.phase == Phase::Scoring { None } else { slot.map(|i| last[i].2) };
            let made_from = (t.revision, t.state, before.map(|b| (b, view.turns[b].revision)));
            if self.turns.get(k).is_none_or(|c| c.made_from != made_from) {
                let scores = match shown_scores(t, view.panel.as_ref()) {
                    Some(ev) => {
                        let before = before.and_then(|b| view.turns[b].evaluation.as_ref());
                        let keys = keys.get_or_insert_with(|| view.dimension_keys());
                        let line = score_line(keys, &ev, before, true);
                        wrap(&line, width as usize).into_iter().map(|l| l.text).collect()
                    }
                    None => Vec::new(),
                };
                let row = PaneTurn { made_from, text: wraps.lines(t, width).len(), scores };
                match self.turns.get_mut(k) {
                    Some(c) => *c = row,
                    None => self.turns.push(row),
                }
            }
            let start = k.checked_sub(1).map_or(0, |p| self.ends[p]);
            let end = start + self.rows(k);
            match self.ends.get_mut(k) {
                Some(e) => *e = end,
                None => self.ends.push(end),
            }
            if t.evaluation.is_some() {
                match slot {
                    Some(i) => last[i].2 = ti,
                    None => last.push((t.role, t.group.clone(), ti)),
                }
            }
            settling &= t.state != TurnState::Streaming;
            if settling {
                self.settled = k + 1;
                self.last.clone_from(&last);
            }
        }
    }

    /// Look at every turn again at the next refresh (rows are kept where
    /// what they were made from is unchanged).
    pub fn unsettle(&mut self) {
        self.settled = 0;
        self.last.clear();
    }

    /// Rows of turn `k`: its marker line, its words and its scores.
    fn rows(&self, k: usize) -> usize {
        let t = &self.turns[k];
        1 + t.text + t.scores.len()
    }

    /// All the rows the turns take.
    pub fn total(&self) -> usize {
        self.ends.last().copied().unwrap_or(0)
    }

    /// The turns that show in rows `top..top + height`, each with the first
    /// row it takes there (counted from the pane's first).
    pub fn visible(&self, top: usize, height: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let first = self.ends.partition_point(|&e| e <= top);
        (first..self.turns.len())
            .map(|k| (k, k.checked_sub(1).map_or(0, |p| self.ends[p])))
            .take_while(move |&(_, start)| start < top + height)
    }

    /// Turn `k`'s rows.
    pub fn turn(&self, k: usize) -> &PaneTurn {
        &self.turns[k]
    }
}
