//! Searching the transcript: the matches of a query, the current one, and
//! moving to the next.

use super::app::{App, Focus};
use crate::session::fold::{SessionView, TimelineEntry};

/// Transcript search state.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub query: String,
    /// Timeline entries that match.
    pub hits: Vec<usize>,
    pub current: usize,
}

impl App {
    pub(super) fn run_search(&mut self, query: &str) {
        let q = query.trim().to_lowercase();
        if q.is_empty() {
            return;
        }
        let v = self.view();
        let hits: Vec<usize> = v
            .timeline
            .iter()
            .enumerate()
            .filter(|(_, e)| entry_text(v, e).to_lowercase().contains(&q))
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            self.error(format!("no match for \"{query}\""));
            self.search = Search::default();
            return;
        }
        self.search = Search { query: query.trim().to_string(), hits, current: 0 };
        self.focus = Focus::Transcript;
        self.zoom = true;
        self.show_hit();
    }

    pub(super) fn search_next(&mut self) {
        if self.search.hits.is_empty() {
            self.error("no search yet (/ searches)");
            return;
        }
        self.search.current = (self.search.current + 1) % self.search.hits.len();
        self.focus = Focus::Transcript;
        self.show_hit();
    }

    fn show_hit(&mut self) {
        let entry = self.search.hits[self.search.current];
        let n = self.search.hits.len();
        let cur = self.search.current + 1;
        let q = self.search.query.clone();
        self.vm.pending_jump = Some(entry);
        self.info(format!("\"{q}\": match {cur} of {n} (N: next)"));
    }
}

/// Text of a timeline entry, for search.
pub fn entry_text(v: &SessionView, e: &TimelineEntry) -> String {
    match e {
        TimelineEntry::Turn(i) => v.turns.get(*i).map(|t| format!("{} {}", t.agent, t.text)).unwrap_or_default(),
        TimelineEntry::Comment { text, author, .. } => format!("{author} {text}"),
        TimelineEntry::Pick { pick, .. } => format!("{} {}", pick.agent, pick.reason),
        TimelineEntry::Override { dimension, reason, author, .. } => {
            format!("{author} {dimension} {}", reason.clone().unwrap_or_default())
        }
        TimelineEntry::Rejected { command, reason } => format!("{command} {reason}"),
        TimelineEntry::Note { text, .. } => text.clone(),
        TimelineEntry::Steps { dimension, steps } => format!("{dimension} {}", steps.steps),
        _ => String::new(),
    }
}
