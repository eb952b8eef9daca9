//! The view model: the session fold plus what only the screen needs (caches
//! of wrapped text). Session state changes only through [`ViewModel::apply`],
//! which hands each event to [`SessionView::apply`].

use ratatui::text::Line;

use std::collections::HashMap;

use super::components::agent_rows::PaneCache;
use super::wrap::WrapCache;
use crate::session::event::Event;
use crate::session::fold::SessionView;

/// Rendered lines of one transcript entry.
#[derive(Debug, Clone)]
pub struct CachedEntry {
    /// Changes whenever the entry's content does (a turn's revision and state).
    pub key: u64,
    pub lines: Vec<Line<'static>>,
}

/// Rendered transcript entries at one width.
#[derive(Debug, Default)]
pub struct TranscriptCache {
    pub width: u16,
    pub entries: Vec<Option<CachedEntry>>,
    /// The row after each entry, counted from the transcript's first.
    pub ends: Vec<usize>,
    /// How many leading entries can no longer change (see `transcript::settled`).
    pub settled: usize,
    /// Entries built (for tests and benchmarks).
    pub builds: u64,
}

/// The session as the screen sees it.
#[derive(Debug, Default)]
pub struct ViewModel {
    pub session: SessionView,
    pub wrap: WrapCache,
    pub transcript: TranscriptCache,
    /// Agent panes, by agent index.
    pub panes: HashMap<usize, PaneCache>,
    /// A transcript entry to bring into view at the next render (search).
    pub pending_jump: Option<usize>,
}

impl ViewModel {
    /// Fold one event.
    pub fn apply(&mut self, event: &Event) {
        self.session.apply(event);
    }

    /// Fold a list of events into a new view model.
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Event>) -> Self {
        let mut vm = Self::default();
        for e in events {
            vm.apply(e);
        }
        vm
    }

    /// Take over another view model's caches (after a refold of the same log).
    pub fn adopt_caches(&mut self, other: &mut ViewModel) {
        self.wrap = std::mem::take(&mut other.wrap);
        // Transcript entries are keyed by position, which a refold keeps.
        self.transcript = std::mem::take(&mut other.transcript);
        // Pane rows say what they were made from, and agents keep their places.
        self.panes = std::mem::take(&mut other.panes);
        // An entry or turn settled in the other fold may be streaming in this
        // one (a seek back): look at every one again.
        self.transcript.settled = 0;
        self.panes.values_mut().for_each(PaneCache::unsettle);
    }

    /// Agent indices per stakeholder group, in panel order.
    pub fn agents_by_group(&self) -> Vec<(String, Vec<usize>)> {
        let v = &self.session;
        let mut out: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, a) in v.agents.iter().enumerate() {
            match out.iter_mut().find(|(g, _)| *g == a.info.group) {
                Some((_, list)) => list.push(i),
                None => out.push((a.info.group.clone(), vec![i])),
            }
        }
        out
    }
}
