//! Replay of a recorded session, driven by the log's timestamps.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::session::LogProblem;
use crate::session::event::{Event, EventKind};

/// Slowest and fastest playback.
pub const MIN_SPEED: f64 = 0.25;
pub const MAX_SPEED: f64 = 32.0;
/// Longer pauses in the log play as this long (at ×1).
const MAX_GAP_MS: i64 = 3_000;

/// A log loaded for replay: its events and what was wrong with it.
#[derive(Debug, Clone)]
pub struct ReplayLog {
    pub events: Vec<Event>,
    /// Damaged lines (skipped) and a cut last line (ignored), in the
    /// reader's words: `FILE:LINE: TYPE.FIELD: expected …, found …`.
    pub problems: Vec<LogProblem>,
}

impl ReplayLog {
    /// Read a log to replay; fails when it cannot be read or gives no
    /// event, naming its first problem.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let log = crate::session::read_log(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let problems: Vec<LogProblem> = log.all_problems().cloned().collect();
        if log.events.is_empty() {
            match problems.first() {
                Some(p) => anyhow::bail!("{}: no events could be read; the first problem: {p}", path.display()),
                None => anyhow::bail!("{}: no events in this session log", path.display()),
            }
        }
        Ok(Self { events: log.events, problems })
    }

    /// The line the replay screen shows about the log's damage, if any:
    /// the first problem, and how many more there are.
    pub fn notice(&self) -> Option<String> {
        let first = self.problems.iter().find(|p| !p.is_torn()).or(self.problems.first())?;
        Some(match self.problems.len() - 1 {
            0 => first.to_string(),
            n => format!("{first} (and {n} more; `moot sessions show` lists them)"),
        })
    }
}

/// Where a replay stands: the log, how much of it is applied, and the clock.
#[derive(Debug, Clone)]
pub struct Replay {
    events: Vec<Event>,
    /// Playback time of each event (ms from the start, long gaps shortened).
    at_ms: Vec<i64>,
    /// Events applied so far.
    pos: usize,
    pub speed: f64,
    pub playing: bool,
    /// Real instant at which playback time `anchor_ms` was current.
    anchor: Instant,
    anchor_ms: i64,
}

impl Replay {
    pub fn new(events: Vec<Event>, speed: f64) -> Self {
        let mut at_ms = Vec::with_capacity(events.len());
        let mut acc = 0i64;
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                let gap = (e.t - events[i - 1].t).num_milliseconds().clamp(0, MAX_GAP_MS);
                acc += gap;
            }
            at_ms.push(acc);
        }
        Self {
            events,
            at_ms,
            pos: 0,
            speed: speed.clamp(MIN_SPEED, MAX_SPEED),
            playing: true,
            anchor: Instant::now(),
            anchor_ms: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    pub fn position(&self) -> usize {
        self.pos
    }
    pub fn at_end(&self) -> bool {
        self.pos >= self.events.len()
    }
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    fn now_ms(&self, now: Instant) -> i64 {
        if self.playing {
            self.anchor_ms + (now.saturating_duration_since(self.anchor).as_secs_f64() * 1000.0 * self.speed) as i64
        } else {
            self.anchor_ms
        }
    }

    fn reanchor(&mut self, now: Instant) {
        self.anchor_ms = self.now_ms(now);
        self.anchor = now;
    }

    /// When the next event is due, if playing.
    pub fn next_due(&self) -> Option<Instant> {
        if !self.playing || self.at_end() {
            return None;
        }
        let wait_ms = (self.at_ms[self.pos] - self.anchor_ms).max(0) as f64 / self.speed;
        Some(self.anchor + Duration::from_micros((wait_ms * 1000.0) as u64))
    }

    /// Events due by `now`, to apply in order (the position moves past them).
    pub fn due(&mut self, now: Instant) -> &[Event] {
        let t = self.now_ms(now);
        let start = self.pos;
        while self.pos < self.events.len() && self.at_ms[self.pos] <= t {
            self.pos += 1;
        }
        &self.events[start..self.pos]
    }

    pub fn set_playing(&mut self, playing: bool, now: Instant) {
        self.reanchor(now);
        self.playing = playing;
    }

    pub fn set_speed(&mut self, speed: f64, now: Instant) {
        self.reanchor(now);
        self.speed = speed.clamp(MIN_SPEED, MAX_SPEED);
    }

    /// Double or halve the speed.
    pub fn faster(&mut self, up: bool, now: Instant) {
        let s = if up { self.speed * 2.0 } else { self.speed / 2.0 };
        self.set_speed(s, now);
    }

    /// Move to `pos` events applied; returns the events to fold from scratch
    /// when going back, or the events to apply when going forward.
    pub fn seek(&mut self, pos: usize, now: Instant) -> Seek<'_> {
        let pos = pos.min(self.events.len());
        let back = pos < self.pos;
        let from = if back { 0 } else { self.pos };
        self.pos = pos;
        self.anchor = now;
        self.anchor_ms = if pos == 0 { 0 } else { self.at_ms[pos - 1] };
        let events = &self.events[from..pos];
        if back { Seek::Refold(events) } else { Seek::Forward(events) }
    }

    /// The position just past the end of the next turn (its completion or failure).
    pub fn next_turn_end(&self) -> usize {
        let found = self.events[self.pos..].iter().position(|e| {
            matches!(e.kind, EventKind::TurnCompleted { .. } | EventKind::TurnFailed { will_retry: false, .. })
        });
        found.map(|i| self.pos + i + 1).unwrap_or(self.events.len())
    }

    /// The position just past the completion of turn `turn`.
    pub fn turn_end(&self, turn: u64) -> Option<usize> {
        self.events
            .iter()
            .position(|e| matches!(&e.kind, EventKind::TurnCompleted { turn: t, .. } | EventKind::TurnFailed { turn: t, will_retry: false, .. } if *t == turn))
            .map(|i| i + 1)
    }
}

/// What a seek asks of the view.
pub enum Seek<'a> {
    /// Start over and apply these.
    Refold(&'a [Event]),
    /// Apply these on top.
    Forward(&'a [Event]),
}
