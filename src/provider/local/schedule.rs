//! How the engines share the work: the queue of requests and of prompts to
//! read ahead, and copies of a sequence from one engine to another.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex, MutexGuard};

use llama_cpp_2::token::LlamaToken;

use super::{Pending, Work};

/// A prompt that a request will soon start with (see [`Provider::read_ahead`]).
pub(super) struct Ahead {
    pub(super) tokens: Vec<LlamaToken>,
    /// The engine reading it.
    pub(super) reader: Option<usize>,
}

/// Tokens at the end of a prompt read ahead that are left out: the text
/// after them may change how they are tokenized.
pub(super) const AHEAD_UNSURE: usize = 2;

/// Tokens read ahead between reports of what an engine holds.
pub(super) const AHEAD_REPORT: usize = 16;

/// Fewest tokens worth reading ahead.
pub(super) const AHEAD_MIN: usize = 16;

/// How long an engine waiting to read ahead (it reads only while no engine
/// serves a request) waits before it looks for a request to serve again.
pub(super) const AHEAD_PATIENCE: std::time::Duration = std::time::Duration::from_millis(20);

/// Tokens an engine reading ahead puts in each round (see
/// [`super::ModelContext::read_ahead`]): a few, so that a request that comes
/// meanwhile waits for at most a short round.
pub(super) const AHEAD_STEP: usize = 16;

/// Prompts read ahead at once, at most: one per conversation in progress
/// (the newest are kept).
pub(super) const AHEAD_TARGETS: usize = 4;

/// Tokens by which a newer prompt to read ahead may differ from the end of
/// an older one and still count as its continuation (the speech grew, and the
/// end of the text so far was tokenized differently), and by which a request
/// may fall short of one and still count as the request it prepared.
pub(super) const AHEAD_SLACK: usize = 16;

/// Requests waiting for an engine, and what each engine holds.
pub(super) struct Queue {
    pub(super) state: Mutex<QueueState>,
    pub(super) changed: Condvar,
}

pub(super) struct QueueState {
    pub(super) pending: VecDeque<Pending>,
    pub(super) closed: bool,
    pub(super) engines: Vec<EngineView>,
    /// Prompts to read ahead, oldest first.
    pub(super) ahead: Vec<Ahead>,
}

/// What the queue knows of an engine: the token sequences its context holds
/// (as of its last request, plus the prompt it is serving) and whether it is
/// serving one.
#[derive(Default)]
pub(super) struct EngineView {
    pub(super) held: Vec<Vec<LlamaToken>>,
    pub(super) busy: bool,
}

/// Prompt tokens within which two engines count as holding a prompt equally.
pub(super) const NEAR_TIE: usize = 32;

/// Most prompt tokens an idle engine reads beyond what a busy one holds, to
/// serve a request at once instead of letting it wait for the busy one (about
/// two seconds of reading on two cores).
pub(super) const TAKE_OVER: usize = 512;

pub(super) fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl Queue {
    pub(super) fn new(engines: usize) -> Self {
        let engines = (0..engines).map(|_| EngineView::default()).collect();
        Self {
            state: Mutex::new(QueueState { pending: VecDeque::new(), closed: false, engines, ahead: Vec::new() }),
            changed: Condvar::new(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn push(&self, pending: Pending) {
        let mut state = self.lock();
        // The request that a prompt read ahead was for has come.
        let tokens = &pending.prompt.tokens;
        state.ahead.retain(|a| common_prefix(&a.tokens, tokens) + AHEAD_SLACK < a.tokens.len());
        state.pending.push_back(pending);
        drop(state);
        self.changed.notify_all();
    }

    /// A prompt to read ahead. It replaces the one it continues, if any.
    pub(super) fn read_ahead(&self, tokens: Vec<LlamaToken>) {
        let mut state = self.lock();
        let continued =
            state.ahead.iter().position(|a| common_prefix(&a.tokens, &tokens) + AHEAD_SLACK >= a.tokens.len());
        let reader = match continued {
            Some(i) => state.ahead.remove(i).reader,
            None => None,
        };
        state.ahead.push(Ahead { tokens, reader });
        if state.ahead.len() > AHEAD_TARGETS {
            state.ahead.remove(0);
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Whether engine `id` has a request to serve (it stops reading ahead).
    pub(super) fn has_work(&self, id: usize) -> bool {
        let state = self.lock();
        state.choose(id).is_some() || state.closed
    }

    /// Engine `id`, reading ahead, now holds `held`.
    pub(super) fn holds(&self, id: usize, held: Vec<Vec<LlamaToken>>) {
        self.lock().engines[id].held = held;
    }

    /// Engine `id` stopped reading ahead and now holds `held`.
    pub(super) fn read_ahead_done(&self, id: usize, held: Vec<Vec<LlamaToken>>) {
        let mut state = self.lock();
        state.engines[id].held = held;
        for a in &mut state.ahead {
            if a.reader == Some(id) {
                a.reader = None;
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.changed.notify_all();
    }

    /// Blocks until there is a request for engine `id` (`None` once the queue
    /// is closed and empty).
    pub(super) fn next_for(&self, id: usize) -> Option<Work> {
        let mut state = self.lock();
        loop {
            // Of the idle engines a request fits, the lowest-numbered takes
            // it: the engines serving at once then have consecutive working
            // sequences, which llama.cpp steps together.
            let chosen =
                state.choose(id).filter(|&i| !(0..id).any(|e| !state.engines[e].busy && state.choose(e) == Some(i)));
            if let Some(i) = chosen {
                let pending = state.pending.remove(i)?;
                let view = &mut state.engines[id];
                view.busy = true;
                view.held.push(pending.prompt.tokens.clone());
                return Some(Work::Serve(Box::new(pending)));
            }
            if state.closed && state.pending.is_empty() {
                return None;
            }
            if let Some(i) = state.choose_ahead(id) {
                state.ahead[i].reader = Some(id);
                let tokens = state.ahead[i].tokens.clone();
                let donor = state.donor(id, &tokens);
                return Some(Work::ReadAhead(tokens, donor));
            }
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Engine `id` finished a request and now holds `held`.
    pub(super) fn done(&self, id: usize, held: Vec<Vec<LlamaToken>>) {
        self.lock().engines[id] = EngineView { held, busy: false };
        self.changed.notify_all();
    }
}

impl QueueState {
    /// How many of `tokens` the engine holds.
    pub(super) fn held_by(view: &EngineView, tokens: &[LlamaToken]) -> usize {
        view.held.iter().map(|h| common_prefix(h, tokens)).max().unwrap_or(0)
    }

    /// The busy engine holding most of `tokens`, if it holds at least
    /// [`HANDOFF_MIN`] more than engine `id`.
    pub(super) fn donor(&self, id: usize, tokens: &[LlamaToken]) -> Option<usize> {
        let mine = Self::held_by(&self.engines[id], tokens);
        self.engines
            .iter()
            .enumerate()
            .filter(|&(e, v)| e != id && v.busy)
            .map(|(e, v)| (Self::held_by(v, tokens), e))
            .filter(|&(theirs, _)| theirs >= mine + HANDOFF_MIN)
            .max()
            .map(|(_, e)| e)
    }

    /// The prompt that engine `id` should read ahead: one that no engine is
    /// reading, that it holds less of than its whole, and that no other idle
    /// engine holds more of; the one with the least left to read.
    pub(super) fn choose_ahead(&self, id: usize) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, a) in self.ahead.iter().enumerate().filter(|(_, a)| a.reader.is_none()) {
            let mine = Self::held_by(&self.engines[id], &a.tokens);
            if mine + AHEAD_SLACK >= a.tokens.len() {
                continue;
            }
            let others = self.engines.iter().enumerate().filter(|&(e, v)| e != id && !v.busy);
            if others.map(|(_, v)| Self::held_by(v, &a.tokens)).any(|theirs| theirs > mine + NEAR_TIE) {
                continue;
            }
            let left = a.tokens.len() - mine;
            if best.is_none_or(|(least, _)| left < least) {
                best = Some((left, i));
            }
        }
        best.map(|(_, i)| i)
    }

    /// The waiting request that engine `id` should serve next. Each engine
    /// is credited with the prompt tokens it holds (a long system prompt
    /// whose state is saved counts as held by all: it loads in
    /// milliseconds; one not saved yet counts only where it is held). A
    /// request that another engine holds more of (beyond [`NEAR_TIE`]) is
    /// left to that engine while it is idle, and taken over while it is busy
    /// only if the difference is at most [`TAKE_OVER`]: reading a discussion
    /// again costs seconds. Of the requests left, the one with the least to
    /// read beyond what another engine holds, the oldest on ties.
    pub(super) fn choose(&self, id: usize) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, p) in self.pending.iter().enumerate() {
            let loadable = p.prompt.system.as_ref().filter(|s| s.saved).map_or(0, |s| s.len);
            let held = |view: &EngineView| Self::held_by(view, &p.prompt.tokens).max(loadable);
            let mine = held(&self.engines[id]);
            let mut extra = 0;
            let mut fits = true;
            for (_, other) in self.engines.iter().enumerate().filter(|&(e, _)| e != id) {
                let theirs = held(other);
                if theirs > mine + NEAR_TIE {
                    fits &= other.busy && theirs - mine <= TAKE_OVER;
                    extra = extra.max(theirs - mine);
                }
            }
            if fits && best.is_none_or(|(least, _)| extra < least) {
                best = Some((extra, i));
            }
        }
        best.map(|(_, i)| i)
    }
}

/// A sequence of an engine (its id in the shared context) and the tokens it
/// holds.
pub(super) type Snapshot = (i32, Vec<LlamaToken>);

/// Copies of a sequence from a generating engine to one that reads ahead:
/// the reader would otherwise read again what the generating engine already
/// holds (the discussion before the speech), and a copy within the shared
/// context takes milliseconds. The generating engine looks for a request
/// after each token it generates, and offers the sequence it generates in.
pub(super) struct Handoffs {
    pub(super) wanted: Vec<std::sync::atomic::AtomicBool>,
    pub(super) given: Mutex<Vec<Option<Snapshot>>>,
    pub(super) changed: Condvar,
}

/// How long an engine reading ahead waits for another engine's sequence
/// (it generates a token about every 100 ms).
pub(super) const HANDOFF_PATIENCE: std::time::Duration = std::time::Duration::from_millis(300);

/// Fewest more prompt tokens another engine must hold for a copy of its
/// sequence to be worth asking for.
pub(super) const HANDOFF_MIN: usize = 48;

impl Handoffs {
    pub(super) fn new(engines: usize) -> Self {
        Self {
            wanted: (0..engines).map(|_| std::sync::atomic::AtomicBool::new(false)).collect(),
            given: Mutex::new((0..engines).map(|_| None).collect()),
            changed: Condvar::new(),
        }
    }

    pub(super) fn is_wanted(&self, from: usize) -> bool {
        self.wanted.get(from).is_some_and(|w| w.swap(false, Ordering::AcqRel))
    }

    /// Engine `from` offers its working sequence.
    pub(super) fn give(&self, from: usize, snapshot: Snapshot) {
        let mut given = self.given.lock().unwrap_or_else(|p| p.into_inner());
        given[from] = Some(snapshot);
        drop(given);
        self.changed.notify_all();
    }

    /// Asks engine `from` for the sequence it generates in and waits for it,
    /// at most [`HANDOFF_PATIENCE`].
    pub(super) fn take(&self, from: usize) -> Option<Snapshot> {
        let mut given = self.given.lock().unwrap_or_else(|p| p.into_inner());
        given[from] = None;
        self.wanted[from].store(true, Ordering::Release);
        let (mut given, _) = self
            .changed
            .wait_timeout_while(given, HANDOFF_PATIENCE, |g| g[from].is_none())
            .unwrap_or_else(|p| p.into_inner());
        self.wanted[from].store(false, Ordering::Release);
        given[from].take()
    }
}
