//! Stamps events with `seq` and time, writes them to the session log and hands
//! them to observers. Writing happens before observers see an event, so what a
//! screen shows is always already on disk.
//!
//! When the log cannot be written (a full disk, a folder made read-only),
//! events are kept in memory, in order, and [`Recorder::blocked`] says why;
//! the run pauses at its next safe point and retries (see
//! [`Recorder::retry`]) until they are written, then goes on: nothing is lost.
//!
//! A resumed session's recorder holds its old log (a [`Journal`]): events
//! the old log already holds are not written again (nor shown again: the
//! observers were given the old log first), and new ones are numbered on from
//! its last `seq`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use chrono::Utc;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;

use super::journal::Journal;
use crate::session::event::{Event, EventKind};
use crate::session::writer::SessionWriter;

#[derive(Debug)]
struct Inner {
    seq: u64,
    writer: Option<SessionWriter>,
    observer: Option<UnboundedSender<Event>>,
    /// Events the log could not take yet, oldest first: written before any
    /// later one, then shown.
    unwritten: VecDeque<Event>,
    /// Why the log cannot be written now (while `unwritten` is not empty).
    blocked: Option<String>,
    journal: Option<Arc<Journal>>,
}

/// Shared, cheap to clone handle used by every part of a run that emits events.
#[derive(Debug, Clone)]
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    status: Arc<watch::Sender<Option<String>>>,
}

impl Recorder {
    pub fn new(writer: Option<SessionWriter>, observer: Option<UnboundedSender<Event>>) -> Self {
        let inner = Inner { seq: 0, writer, observer, unwritten: VecDeque::new(), blocked: None, journal: None };
        Self { inner: Arc::new(Mutex::new(inner)), status: Arc::new(watch::channel(None).0) }
    }

    /// The recorder of a resumed session: `writer` appends to its log, and
    /// the events `journal` holds are matched instead of written.
    pub fn resuming(
        writer: Option<SessionWriter>,
        observer: Option<UnboundedSender<Event>>,
        journal: Arc<Journal>,
    ) -> Self {
        let rec = Self::new(writer, observer);
        {
            let mut inner = rec.lock();
            inner.seq = journal.next_seq();
            inner.journal = Some(journal);
        }
        rec
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The old log of a resumed session.
    pub fn journal(&self) -> Option<Arc<Journal>> {
        self.lock().journal.clone()
    }

    /// Record one event and return its sequence number.
    pub fn emit(&self, kind: EventKind) -> u64 {
        let mut inner = self.lock();
        if let Some(journal) = &inner.journal
            && let Some(seq) = journal.claim(&kind)
        {
            return seq;
        }
        if inner.writer.is_none() && inner.observer.is_none() {
            // Nobody keeps the event (a judged example of an optimisation, a
            // benchmark): only its number counts.
            inner.seq += 1;
            return inner.seq - 1;
        }
        let event = Event { seq: inner.seq, t: Utc::now(), kind };
        inner.seq += 1;
        let seq = event.seq;
        inner.unwritten.push_back(event);
        let before = inner.blocked.clone();
        inner.flush();
        if inner.blocked != before {
            self.status.send_replace(inner.blocked.clone());
        }
        seq
    }

    /// Why the log cannot be written now, while events wait to be written.
    pub fn blocked(&self) -> Option<String> {
        self.lock().blocked.clone()
    }

    /// Try again to write the events waiting; why it still cannot, if it cannot.
    pub fn retry(&self) -> Option<String> {
        let mut inner = self.lock();
        inner.flush();
        self.status.send_replace(inner.blocked.clone());
        inner.blocked.clone()
    }

    /// Follows [`blocked`](Self::blocked): what a screen shows while the log cannot be written.
    pub fn status(&self) -> watch::Receiver<Option<String>> {
        self.status.subscribe()
    }

    /// The error that kept events out of the log, if some were never written.
    pub fn write_error(&self) -> Option<String> {
        let inner = self.lock();
        inner.blocked.as_ref().map(|e| format!("{e} ({} events not written)", inner.unwritten.len()))
    }

    /// Path of the session log, when one is written.
    pub fn log_path(&self) -> Option<std::path::PathBuf> {
        self.lock().writer.as_ref().map(|w| w.path().to_path_buf())
    }
}

impl Inner {
    /// Write the waiting events in order, each then passed to the observer;
    /// stop at the first that cannot be written.
    fn flush(&mut self) {
        while let Some(event) = self.unwritten.front() {
            if let Some(w) = self.writer.as_mut()
                && let Err(e) = w.write(event)
            {
                self.blocked = Some(format!("cannot write the log {}: {e}", w.path().display()));
                return;
            }
            let event = self.unwritten.pop_front().expect("a front event");
            if let Some(tx) = &self.observer
                && tx.send(event).is_err()
            {
                self.observer = None;
            }
        }
        self.blocked = None;
    }
}
