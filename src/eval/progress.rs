//! Progress of a batch run: counters shared with the runner, and a printer
//! that draws bars (`indicatif`, fitted to the terminal's width) on a
//! terminal, or prints plain lines now and then when stderr is a pipe or a
//! file.

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Pricing;
use crate::session::event::Usage;

/// Counters updated by the runner while items run.
#[derive(Debug)]
pub struct Progress {
    /// Items this invocation will run.
    pub total: AtomicUsize,
    pub done: AtomicUsize,
    pub failed: AtomicUsize,
    /// Items stopped before they finished (Ctrl-C, a run budget).
    pub stopped: AtomicUsize,
    pub running: AtomicUsize,
    pub input_tokens: AtomicU64,
    pub output_tokens: AtomicU64,
    /// Of those, the tokens of calls answered through a batch API (billed
    /// at the batch price).
    batch_input_tokens: AtomicU64,
    batch_output_tokens: AtomicU64,
    pricing: Option<Pricing>,
    started: Mutex<Option<Instant>>,
    /// Pairwise runs: the panel's decisions over the finished items.
    pairwise: Mutex<super::pairwise::PairTally>,
    /// Items whose session log cannot be written now (their sessions wait,
    /// paused, until it can), by item index: why.
    blocked: Mutex<std::collections::BTreeMap<usize, String>>,
}

/// A copy of the counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Snapshot {
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub stopped: usize,
    pub running: usize,
    /// Input and output tokens together.
    pub tokens: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
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
            stopped: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            input_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            batch_input_tokens: AtomicU64::new(0),
            batch_output_tokens: AtomicU64::new(0),
            pricing,
            started: Mutex::new(None),
            pairwise: Mutex::new(Default::default()),
            blocked: Mutex::new(Default::default()),
        }
    }

    /// Item `index`'s log cannot be written (`Some(why)`), or can again (`None`).
    pub fn set_blocked(&self, index: usize, why: Option<String>) {
        let mut blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        match why {
            Some(why) => blocked.insert(index, why),
            None => blocked.remove(&index),
        };
    }

    /// While some items' logs cannot be written: what to say (the first
    /// reason, and how many items wait).
    pub fn blocked(&self) -> Option<String> {
        let blocked = self.blocked.lock().unwrap_or_else(|e| e.into_inner());
        let (_, why) = blocked.iter().next()?;
        Some(match blocked.len() {
            1 => format!("{why} — paused, retrying"),
            n => format!("{why} — {n} items paused, retrying"),
        })
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

    /// Count the tokens of `usage` (a batch call's at the batch price in the cost).
    pub fn add_usage(&self, usage: &Usage) {
        self.input_tokens.fetch_add(usage.input_tokens, Ordering::Relaxed);
        self.output_tokens.fetch_add(usage.output_tokens, Ordering::Relaxed);
        self.batch_input_tokens.fetch_add(usage.batch_input_tokens.unwrap_or(0), Ordering::Relaxed);
        self.batch_output_tokens.fetch_add(usage.batch_output_tokens.unwrap_or(0), Ordering::Relaxed);
    }

    /// Set the number of items to run (known once the run folder is read).
    pub fn set_total(&self, total: usize) {
        self.total.store(total, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        let total = self.total.load(Ordering::Relaxed);
        let done = self.done.load(Ordering::Relaxed);
        let failed = self.failed.load(Ordering::Relaxed);
        let stopped = self.stopped.load(Ordering::Relaxed);
        let input = self.input_tokens.load(Ordering::Relaxed);
        let output = self.output_tokens.load(Ordering::Relaxed);
        let elapsed = self.started.lock().unwrap_or_else(|e| e.into_inner()).map(|s| s.elapsed()).unwrap_or_default();
        let finished = done + failed;
        // Once an item is stopped the run is stopping: no time is left to guess.
        let eta = (finished > 0 && finished <= total && stopped == 0).then(|| {
            let per = elapsed.as_secs_f64() / finished as f64;
            Duration::from_secs_f64(per * (total - finished) as f64)
        });
        Snapshot {
            total,
            done,
            failed,
            stopped,
            running: self.running.load(Ordering::Relaxed),
            tokens: input + output,
            input_tokens: input,
            output_tokens: output,
            cost: self.pricing.map(|p| {
                p.cost_of(&Usage {
                    input_tokens: input,
                    output_tokens: output,
                    batch_input_tokens: Some(self.batch_input_tokens.load(Ordering::Relaxed)),
                    batch_output_tokens: Some(self.batch_output_tokens.load(Ordering::Relaxed)),
                    ..Usage::default()
                })
            }),
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
        let mut parts = vec![format!("{}/{} done", self.done, self.total), format!("{} failed", self.failed)];
        parts.extend((self.stopped > 0).then(|| format!("{} stopped", self.stopped)));
        parts.extend([format!("{} running", self.running), format!("{} tokens", fmt_tokens(self.tokens))]);
        if let Some(c) = self.cost {
            parts.push(format!("cost {c:.2}"));
        }
        parts.push(format!("elapsed {}", fmt_duration(self.elapsed)));
        if let Some(eta) = self.eta {
            parts.push(format!("ETA {}", fmt_duration(eta)));
        }
        parts.join(" · ")
    }

    /// What the terminal shows under the bar:
    /// `37 done · 2 failed · 16 running · tokens in 1.20M out 84.0k · cost 0.84 · elapsed 2m05s`
    pub fn status(&self) -> String {
        let mut parts = vec![format!("{} done", self.done), format!("{} failed", self.failed)];
        parts.extend((self.stopped > 0).then(|| format!("{} stopped", self.stopped)));
        parts.extend([
            format!("{} running", self.running),
            format!("tokens in {} out {}", fmt_tokens(self.input_tokens), fmt_tokens(self.output_tokens)),
        ]);
        if let Some(c) = self.cost {
            parts.push(format!("cost {c:.2}"));
        }
        parts.push(format!("elapsed {}", fmt_duration(self.elapsed)));
        parts.join(" · ")
    }
}

/// Systems shown on the terminal's pairwise line, and on a plain pairwise line.
const BAR_SYSTEMS: usize = 2;
const LINE_SYSTEMS: usize = 8;

/// How progress is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Bars redrawn in place, several times a second.
    Bar,
    /// A plain line every `every`.
    Lines { every: Duration },
    /// Nothing.
    Quiet,
}

/// Where the bars of [`Style::Bar`] are drawn: stderr for the terminal
/// styles, nowhere otherwise. Lines printed meanwhile go through
/// [`MultiProgress::suspend`] so that the bars are drawn again under them.
pub fn draw_target(style: Style) -> MultiProgress {
    match style {
        Style::Bar => MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(5)),
        _ => MultiProgress::with_draw_target(ProgressDrawTarget::hidden()),
    }
}

/// The terminal's bars: items with a bar and the ETA, then a status line,
/// then (pairwise runs) the running record. Every line is fitted to the terminal's width.
struct Bars {
    items: ProgressBar,
    status: ProgressBar,
    pairwise: Option<ProgressBar>,
}

impl Bars {
    fn new(multi: &MultiProgress, total: usize) -> Self {
        let items = multi.add(ProgressBar::new(total as u64));
        items.set_style(
            ProgressStyle::with_template("[{wide_bar}] {pos}/{len} items{msg}")
                .expect("the template is valid")
                .progress_chars("█▉▊▋▌▍▎▏ "),
        );
        let status = multi.add(ProgressBar::new(0));
        status.set_style(Self::line_style());
        Self { items, status, pairwise: None }
    }

    fn line_style() -> ProgressStyle {
        ProgressStyle::with_template("{wide_msg}").expect("the template is valid")
    }

    fn update(&mut self, multi: &MultiProgress, snap: &Snapshot, pairwise: Option<String>, blocked: Option<String>) {
        self.items.set_length(snap.total as u64);
        self.items.set_position((snap.done + snap.failed + snap.stopped) as u64);
        self.items.set_message(snap.eta.map(|eta| format!(" · ETA {}", fmt_duration(eta))).unwrap_or_default());
        self.status.set_message(match blocked {
            Some(why) => format!("{} · {why}", snap.status()),
            None => snap.status(),
        });
        if let Some(line) = pairwise {
            let bar = self.pairwise.get_or_insert_with(|| {
                let bar = multi.add(ProgressBar::new(0));
                bar.set_style(Self::line_style());
                bar
            });
            bar.set_message(format!("pairwise: {line}"));
        }
    }

    /// Leave the bars as they are (an interrupted run's bar is not full).
    fn finish(&self) {
        self.items.abandon();
        self.status.abandon();
        if let Some(p) = &self.pairwise {
            p.abandon();
        }
    }
}

/// Whether a plain progress line is due: something moved since the last
/// one (an item, or the tokens of a turn, so that an item that takes an
/// hour still shows life).
fn moved(last: Option<&Snapshot>, now: &Snapshot) -> bool {
    let key = |s: &Snapshot| (s.done, s.failed, s.stopped, s.running, s.tokens);
    last.is_none_or(|l| key(l) != key(now))
}

/// Print progress until `stop` is cancelled, then a last line. The bars of
/// [`Style::Bar`] are drawn on `multi` (see [`draw_target`]).
pub async fn print_progress(
    progress: std::sync::Arc<Progress>,
    style: Style,
    multi: MultiProgress,
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
    let mut last_blocked: Option<String> = None;
    let mut bars: Option<Bars> = None;
    loop {
        let stopping = tokio::select! {
            _ = interval.tick() => false,
            () = stop.cancelled() => true,
        };
        let snap = progress.snapshot();
        let blocked = progress.blocked();
        match style {
            Style::Bar => {
                let bars = bars.get_or_insert_with(|| Bars::new(&multi, snap.total));
                bars.update(&multi, &snap, progress.pairwise_line(BAR_SYSTEMS), blocked);
                if stopping {
                    bars.finish();
                }
            }
            Style::Lines { .. } => {
                let mut err = std::io::stderr().lock();
                if moved(last_plain.as_ref(), &snap) || stopping {
                    let _ = writeln!(err, "moot eval: {}", snap.line());
                    last_plain = Some(snap);
                }
                if blocked != last_blocked {
                    match &blocked {
                        Some(why) => {
                            let _ = writeln!(err, "moot eval: {why}");
                        }
                        None => {
                            let _ = writeln!(err, "moot eval: the logs are written again; going on");
                        }
                    }
                    last_blocked = blocked;
                }
                let pairwise = progress.pairwise_line(LINE_SYSTEMS);
                if pairwise.is_some() && pairwise != last_pairwise {
                    let _ = writeln!(err, "moot eval: pairwise: {}", pairwise.as_deref().unwrap_or(""));
                    last_pairwise = pairwise;
                }
                let _ = err.flush();
            }
            Style::Quiet => {}
        }
        if stopping {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64) -> Usage {
        Usage { input_tokens: input, output_tokens: output, ..Usage::default() }
    }

    #[test]
    fn batch_tokens_cost_the_batch_price_on_the_progress_line() {
        let p = Progress::new(2, Some(Pricing { input_per_mtok: 2.0, output_per_mtok: 8.0 }));
        p.add_usage(&tokens(1_000_000, 100_000));
        assert!((p.snapshot().cost.unwrap() - 2.8).abs() < 1e-9);
        let batch = Usage {
            batch_input_tokens: Some(1_000_000),
            batch_output_tokens: Some(100_000),
            ..tokens(1_000_000, 100_000)
        };
        p.add_usage(&batch);
        assert!((p.snapshot().cost.unwrap() - 2.8 * (1.0 + crate::session::event::BATCH_PRICE_SHARE)).abs() < 1e-9);
    }

    #[test]
    fn logs_that_cannot_be_written_are_said_until_they_can() {
        let p = Progress::new(3, None);
        assert_eq!(p.blocked(), None);
        p.set_blocked(2, Some("cannot write the log runs/a.jsonl: No space left on device".into()));
        assert_eq!(
            p.blocked().as_deref(),
            Some("cannot write the log runs/a.jsonl: No space left on device — paused, retrying")
        );
        p.set_blocked(0, Some("cannot write the log runs/b.jsonl: No space left on device".into()));
        assert_eq!(
            p.blocked().as_deref(),
            Some("cannot write the log runs/b.jsonl: No space left on device — 2 items paused, retrying")
        );
        p.set_blocked(0, None);
        p.set_blocked(2, None);
        assert_eq!(p.blocked(), None);
    }

    #[test]
    fn snapshot_lines() {
        let p = Progress::new(10, Some(Pricing { input_per_mtok: 1.0, output_per_mtok: 2.0 }));
        p.done.store(4, Ordering::Relaxed);
        p.failed.store(1, Ordering::Relaxed);
        p.running.store(2, Ordering::Relaxed);
        p.add_usage(&tokens(1_000_000, 500_000));
        let s = p.snapshot();
        let line = s.line();
        assert!(line.starts_with("4/10 done · 1 failed · 2 running · 1.50M tokens · cost 2.00"), "{line}");
        let status = s.status();
        assert!(
            status.starts_with("4 done · 1 failed · 2 running · tokens in 1.00M out 500.0k · cost 2.00"),
            "{status}"
        );
    }

    #[test]
    fn a_plain_line_is_due_when_an_item_or_the_tokens_move() {
        let p = Progress::new(3, None);
        p.running.store(2, Ordering::Relaxed);
        let first = p.snapshot();
        assert!(moved(None, &first));
        assert!(!moved(Some(&first), &p.snapshot()), "the clock alone is no news");
        p.add_usage(&tokens(1_200, 80));
        assert!(moved(Some(&first), &p.snapshot()), "a turn's tokens are");
        let turned = p.snapshot();
        p.done.store(1, Ordering::Relaxed);
        assert!(moved(Some(&turned), &p.snapshot()));
    }

    #[test]
    fn a_stopped_item_is_not_counted_as_failed() {
        let p = Progress::new(3, None);
        p.start_clock();
        p.done.store(1, Ordering::Relaxed);
        assert!(p.snapshot().eta.is_some());
        assert!(!p.snapshot().line().contains("stopped"), "no stopped item, no word of it");
        p.stopped.store(1, Ordering::Relaxed);
        let s = p.snapshot();
        assert!(s.line().starts_with("1/3 done · 0 failed · 1 stopped · 0 running"), "{}", s.line());
        assert!(s.status().starts_with("1 done · 0 failed · 1 stopped"), "{}", s.status());
        assert_eq!(s.eta, None, "a run that is stopping has no time left to guess");
    }

    #[test]
    fn tokens_are_short() {
        assert_eq!(fmt_tokens(950), "950");
        assert_eq!(fmt_tokens(12_345), "12.3k");
        assert_eq!(fmt_tokens(4_560_000), "4.56M");
    }

    #[test]
    fn bars_fit_the_terminal_width() {
        use indicatif::InMemoryTerm;
        use unicode_width::UnicodeWidthStr;
        for cols in [24u16, 40, 80, 200] {
            let term = InMemoryTerm::new(12, cols);
            let multi = MultiProgress::with_draw_target(ProgressDrawTarget::term_like(Box::new(term.clone())));
            let p = Progress::new(120, Some(Pricing { input_per_mtok: 3.0, output_per_mtok: 15.0 }));
            p.start_clock();
            p.done.store(37, Ordering::Relaxed);
            p.failed.store(2, Ordering::Relaxed);
            p.running.store(16, Ordering::Relaxed);
            p.add_usage(&tokens(1_200_000, 84_000));
            let snap = p.snapshot();
            let mut bars = Bars::new(&multi, snap.total);
            let pairwise = "sys-lead 6-0-2 win 75% [41%, 93%] · sys-para 2-3-1 win 33% [10%, 70%] · 1 undecided";
            bars.update(&multi, &snap, Some(pairwise.into()), None);
            bars.finish();
            let screen = term.contents();
            let lines: Vec<&str> = screen.lines().collect();
            // Three rows, none wrapped (a wrapped row would read as one longer line).
            assert_eq!(lines.len(), 3, "{cols} columns:\n{screen}");
            for l in &lines {
                assert!(l.width() <= cols as usize, "{cols} columns: {l:?}");
            }
            assert!(lines[0].starts_with('[') && lines[0].contains("] 39/120 items · ETA "), "{screen}");
            assert!(lines[1].starts_with("37 done"), "{screen}");
            assert!(lines[2].starts_with("pairwise: sys-lead"), "{screen}");
            if cols >= 200 {
                assert!(lines[1].contains("tokens in 1.20M out 84.0k · cost 4.86"), "{screen}");
            }
        }
    }
}
