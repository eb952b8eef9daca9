//! Progress of a batch run: counters shared with the runner, and a printer
//! that draws a one-line bar on a terminal or prints plain lines now and then
//! when stderr is a pipe or a file.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::Pricing;

/// Counters updated by the runner while items run.
#[derive(Debug)]
pub struct Progress {
    /// Items this invocation will run.
    pub total: AtomicUsize,
    pub done: AtomicUsize,
    pub failed: AtomicUsize,
    pub running: AtomicUsize,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    pricing: Option<Pricing>,
    started: Mutex<Option<Instant>>,
    /// Pairwise runs: the panel's decisions over the finished items.
    pairwise: Mutex<super::pairwise::PairTally>,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub running: usize,
    pub tokens: u64,
    pub cost: Option<f64>,
    pub elapsed: Duration,
    /// Estimated time left, once an item has finished.
    pub eta: Option<Duration>,
}

impl Progress {
    pub fn new(total: usize, pricing: Option<Pricing>) -> Self {
        Self {
            total: AtomicUsize::new(total),
            done: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            input_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            pricing,
            started: Mutex::new(None),
            pairwise: Mutex::new(Default::default()),
        }
    }

    /// Adds a finished item's pairwise comparisons to the running tally.
    pub fn add_pairwise(&self, comparisons: &[crate::session::pairwise::ComparisonView]) {
        self.pairwise.lock().unwrap_or_else(|e| e.into_inner()).add_item(comparisons);
    }

    /// The pairwise tally so far.
    pub fn pairwise(&self) -> super::pairwise::PairTally {
        self.pairwise.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The running pairwise line (up to `max` systems), once an item has
    /// pairwise decisions.
    pub fn pairwise_line(&self, max: usize) -> Option<String> {
        self.pairwise.lock().unwrap_or_else(|e| e.into_inner()).line(max)
    }

    /// Mark the start of the clock (the first item starting).
    pub fn start_clock(&self) {
        let mut s = self.started.lock().unwrap_or_else(|e| e.into_inner());
        s.get_or_insert_with(Instant::now);
    }

    pub fn add_tokens(&self, input: u64, output: u64) {
        self.input_tokens.fetch_add(input, Ordering::Relaxed);
        self.output_tokens.fetch_add(output, Ordering::Relaxed);
    }

    /// Set the number of items to run (known once the run folder is read).
    pub fn set_total(&self, total: usize) {
        self.total.store(total, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let total = self.total.load(Ordering::Relaxed);
        let done = self.done.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let input = self.input_tokens.load(Ordering::Relaxed);
        let output = self.output_tokens.load(Ordering::Relaxed);
        let elapsed = self.started.lock().unwrap_or_else(|e| e.into_inner()).map(|s| s.elapsed()).unwrap_or_default();
        let finished = done + failed;
        let eta = (finished > 0 && finished <= total).then(|| {
            let per = elapsed.as_secs_f64() / finished as f64;
            Duration::from_secs_f64(per * (total - finished) as f64)
        });
        Snapshot {
            total,
            done,
            failed,
            running: self.running.load(Ordering::Relaxed),
            tokens: input + output,
            cost: self.pricing.map(|p| p.cost(input, output)),
            elapsed,
            eta,
        }
    }
}

fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// Tokens as `950`, `12.3k`, `4.56M`.
pub fn fmt_tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

impl Snapshot {
    /// `37/120 done · 2 failed · 16 running · 1.20M tokens · $0.84 · ETA 3m10s`
    pub fn line(&self) -> String {
        let mut parts = vec![
            format!("{}/{} done", self.done, self.total),
            format!("{} failed", self.failed),
            format!("{} running", self.running),
            format!("{} tokens", fmt_tokens(self.tokens)),
        ];
        if let Some(c) = self.cost {
            parts.push(format!("cost {c:.2}"));
        }
        parts.push(format!("elapsed {}", fmt_duration(self.elapsed)));
        if let Some(eta) = self.eta {
            parts.push(format!("ETA {}", fmt_duration(eta)));
        }
        parts.join(" · ")
    }

    /// A bar of `width` cells: done, failed, then running.
    pub fn bar(&self, width: usize) -> String {
        let total = self.total.max(1) as f64;
        let cells = |n: usize| ((n as f64 / total) * width as f64).round() as usize;
        let done = cells(self.done).min(width);
        let failed = cells(self.failed).min(width - done);
        let running = cells(self.running).min(width - done - failed);
        format!(
            "{}{}{}{}",
            "█".repeat(done),
            "▓".repeat(failed),
            "░".repeat(running),
            " ".repeat(width - done - failed - running)
        )
    }
}

/// Systems shown on the one-line bar, and on a plain pairwise line.
const BAR_SYSTEMS: usize = 2;
const LINE_SYSTEMS: usize = 8;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Redraw one line in place, several times a second.
    Bar,
    /// A plain line every `every`.
    Lines { every: Duration },
    /// Nothing.
    Quiet,
}

/// Print progress until `stop` is cancelled, then a last line.
pub async fn print_progress(
    progress: std::sync::Arc<Progress>,
    style: Style,
    stop: tokio_util::sync::CancellationToken,
) {
    let tick = match style {
        Style::Bar => Duration::from_millis(200),
        Style::Lines { every } => every,
        Style::Quiet => return,
    };
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut last_plain: Option<Snapshot> = None;
    let mut last_pairwise: Option<String> = None;
    loop {
        let stopping = tokio::select! {
            _ = interval.tick() => false,
            () = stop.cancelled() => true,
        };
        let snap = progress.snapshot();
        let mut err = std::io::stderr().lock();
        match style {
            Style::Bar => {
                let pairwise = progress.pairwise_line(BAR_SYSTEMS).map(|l| format!(" · {l}")).unwrap_or_default();
                let _ = write!(err, "\r\x1b[2K[{}] {}{pairwise}", snap.bar(24), snap.line());
                if stopping {
                    let _ = writeln!(err);
                }
            }
            Style::Lines { .. } => {
                // Only print when something moved (or at the end).
                let moved =
                    last_plain.is_none_or(|l| (l.done, l.failed, l.running) != (snap.done, snap.failed, snap.running));
                if moved || stopping {
                    let _ = writeln!(err, "moot eval: {}", snap.line());
                    last_plain = Some(snap);
                }
                let pairwise = progress.pairwise_line(LINE_SYSTEMS);
                if pairwise.is_some() && pairwise != last_pairwise {
                    let _ = writeln!(err, "moot eval: pairwise: {}", pairwise.as_deref().unwrap_or(""));
                    last_pairwise = pairwise;
                }
            }
            Style::Quiet => {}
        }
        let _ = err.flush();
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_line_and_bar() {
        let p = Progress::new(10, Some(Pricing { input_per_mtok: 1.0, output_per_mtok: 2.0 }));
        p.done.store(4, Ordering::Relaxed);
        p.failed.store(1, Ordering::Relaxed);
        p.running.store(2, Ordering::Relaxed);
        p.add_tokens(1_000_000, 500_000);
        let s = p.snapshot();
        let line = s.line();
        assert!(line.starts_with("4/10 done · 1 failed · 2 running · 1.50M tokens · cost 2.00"), "{line}");
        let bar = s.bar(10);
        assert_eq!(bar.chars().count(), 10);
        assert_eq!(bar.chars().filter(|&c| c == '█').count(), 4);
        assert_eq!(bar.chars().filter(|&c| c == '▓').count(), 1);
        assert_eq!(bar.chars().filter(|&c| c == '░').count(), 2);
    }

    #[test]
    fn tokens_are_short() {
        assert_eq!(fmt_tokens(950), "950");
        assert_eq!(fmt_tokens(12_345), "12.3k");
        assert_eq!(fmt_tokens(4_560_000), "4.56M");
    }
}
