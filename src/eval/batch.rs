//! A batch run's batches (`moot eval --batch`): where a run folder records
//! them, and the lines that say how they stand while the run waits.
//!
//! The batch layer itself is a provider wrapper ([`crate::provider::batch`]);
//! the run only names its file and reports on it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::MultiProgress;
use tokio_util::sync::CancellationToken;

use super::progress::Style;
use crate::provider::batch::{BatchSettings, BatchStatus, Batcher, StoreError, store};
use crate::session::selection::Shard;

/// The batch record of a run folder: `batches.json`, or a shard's own
/// `batches.shard-I-of-N.json` (shards share a folder, never a file).
pub fn batch_file(dir: &Path, shard: Option<Shard>) -> PathBuf {
    match shard {
        Some(s) => dir.join(format!("batches.shard-{}-of-{}.json", s.index, s.count)),
        None => dir.join(store::FILE),
    }
}

/// The batch layer of a run into `dir`: it reads the batches an earlier
/// invocation recorded there, so `--resume` collects them.
pub fn batcher(settings: BatchSettings, dir: &Path, shard: Option<Shard>) -> Result<Batcher, StoreError> {
    Batcher::new(settings, Some(&batch_file(dir, shard)))
}

/// What the printed lines follow: a change in anything but the count of replies.
fn moved(a: &BatchStatus, b: &BatchStatus) -> bool {
    let key = |s: &BatchStatus| (s.submitted, s.pending, s.done, s.resumed, s.resubmitted, s.asked_live);
    key(a) != key(b)
}

/// Print a line whenever the batches move (one is submitted, ends, is
/// submitted again, or its calls go live) and each problem noted, until
/// `stop`; on a terminal above the bars.
pub async fn print_batches(batcher: Batcher, style: Style, bars: MultiProgress, stop: CancellationToken) {
    let tick = match style {
        Style::Bar => Duration::from_millis(200),
        Style::Lines { every } => every.min(Duration::from_secs(1)),
        Style::Quiet => return,
    };
    let mut last = BatchStatus::default();
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let stopping = tokio::select! {
            _ = interval.tick() => false,
            () = stop.cancelled() => true,
        };
        let now = batcher.status();
        let mut lines: Vec<String> = batcher.take_notes().into_iter().map(|n| format!("batch: {n}")).collect();
        if moved(&last, &now) {
            lines.push(now.line());
            last = now;
        }
        if !lines.is_empty() {
            bars.suspend(|| {
                let mut err = std::io::stderr().lock();
                for l in &lines {
                    let _ = writeln!(err, "moot eval: {l}");
                }
            });
        }
        if stopping {
            return;
        }
    }
}

/// The end of a run's account of its batches.
pub fn summary(batcher: &Batcher, file: &Path) -> Vec<String> {
    let status = batcher.status();
    let records = batcher.records();
    if records.is_empty() && status.asked_live == 0 {
        return vec![format!("batches: none submitted (no call of this run could wait for one)")];
    }
    let mut out = vec![format!(
        "batches this run: {} submitted with {} requests, {} collected from an earlier run; {} replies, {} submitted again, {} asked live",
        status.submitted, status.requests, status.resumed, status.answered, status.resubmitted, status.asked_live
    )];
    let pending: Vec<&str> =
        records.iter().filter(|r| r.state == store::RecordState::Submitted).map(|r| r.id.as_str()).collect();
    if !pending.is_empty() {
        out.push(format!(
            "batches still pending on the server: {} (--resume collects them instead of submitting again)",
            pending.join(", ")
        ));
    }
    out.push(format!(
        "batch replies are billed at {:.0}% of the listed prices; the batches are recorded in {}",
        crate::provider::batch::BATCH_PRICE_SHARE * 100.0,
        file.display()
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_keep_their_own_batch_file() {
        let dir = Path::new("runs/x");
        assert_eq!(batch_file(dir, None), dir.join("batches.json"));
        let shard: Shard = "2/4".parse().unwrap();
        assert_eq!(batch_file(dir, Some(shard)), dir.join("batches.shard-2-of-4.json"));
    }

    #[test]
    fn lines_follow_batches_not_replies() {
        let a = BatchStatus { submitted: 1, pending: 1, ..BatchStatus::default() };
        let b = BatchStatus { answered: 40, ..a };
        assert!(!moved(&a, &b));
        let c = BatchStatus { pending: 0, done: 1, ..a };
        assert!(moved(&a, &c));
        assert!(c.line().starts_with("batches: 1 submitted, 0 pending, 1 done"), "{}", c.line());
    }
}
