//! Append-only session log writer: one JSON object per line, written as it happens.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::event::Event;

/// Writes events to `<dir>/<session-id>.jsonl`. Each event is one `write` of a
/// complete line, so a crash loses at most the line being written.
#[derive(Debug)]
pub struct SessionWriter {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    /// Bytes of complete lines in the file: a line whose write failed
    /// half-way is cut back to this, so that writing it again leaves no torn line.
    len: u64,
    /// Tests: while set, every write fails as on a full disk.
    #[cfg(any(test, feature = "testing"))]
    full: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

impl SessionWriter {
    /// Create a new log file; fails if it already exists (a log is never overwritten).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
        hold(&file, &path)?;
        Ok(Self::with(file, path, 0))
    }

    /// Open an existing log to append more events (e.g. a human rating after the run).
    pub fn append(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().append(true).open(&path)?;
        hold(&file, &path)?;
        let len = file.metadata()?.len();
        Ok(Self::with(file, path, len))
    }

    /// Open the log of an interrupted session to go on writing it: an
    /// unterminated last line (cut while being written) is removed first,
    /// so the next event starts a line of its own.
    pub fn reopen(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().append(true).open(&path)?;
        hold(&file, &path)?;
        let bytes = std::fs::read(&path)?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) as u64;
        if complete < bytes.len() as u64 {
            file.set_len(complete)?;
        }
        Ok(Self::with(file, path, complete))
    }

    fn with(file: File, path: PathBuf, len: u64) -> Self {
        Self {
            file,
            path,
            buf: Vec::with_capacity(1024),
            len,
            #[cfg(any(test, feature = "testing"))]
            full: None,
        }
    }

    /// Tests: writes fail as on a full disk while `full` is set.
    #[cfg(any(test, feature = "testing"))]
    pub fn simulate_full_disk(mut self, full: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.full = Some(full);
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write one event as one line.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, event).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        #[cfg(any(test, feature = "testing"))]
        if self.full.as_ref().is_some_and(|f| f.load(std::sync::atomic::Ordering::SeqCst)) {
            // ENOSPC, as the system reports a full disk.
            return Err(io::Error::from_raw_os_error(28));
        }
        if let Err(e) = self.file.write_all(&self.buf) {
            // Leave no part of the line behind: it is written again whole.
            let _ = self.file.set_len(self.len);
            return Err(e);
        }
        self.len += self.buf.len() as u64;
        Ok(())
    }
}

/// Take the log's lock for as long as `file` is open: one process writes a
/// log at a time, and others can tell that it is being written (see
/// [`being_written`]). A file system without locks (some network mounts)
/// is written without one.
/// Unix only: elsewhere (Windows) such a lock would keep readers out too.
#[cfg(unix)]
fn hold(file: &File, path: &Path) -> io::Result<()> {
    match file.try_lock() {
        Ok(()) => Ok(()),
        Err(std::fs::TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "{} is being written by another moot process (its session is still running); wait until that process has ended",
                path.display()
            ),
        )),
        Err(std::fs::TryLockError::Error(_)) => Ok(()),
    }
}

#[cfg(not(unix))]
fn hold(_: &File, _: &Path) -> io::Result<()> {
    Ok(())
}

/// Whether another process is writing the log at `path` now (holds its
/// lock): a session with no end in its log is still running rather than
/// cut off. Always false where logs are not locked.
pub fn being_written(path: &Path) -> bool {
    if cfg!(not(unix)) {
        return false;
    }
    let Ok(file) = File::open(path) else { return false };
    matches!(file.try_lock_shared(), Err(std::fs::TryLockError::WouldBlock))
}

/// Check that session logs can be written in `dir` (creating it if needed)
/// by writing and removing a probe file: the error names the folder and
/// the system's reason.
pub fn check_dir(dir: &Path) -> Result<(), String> {
    let fail = |e: io::Error| format!("cannot write session logs in {}: {e}", dir.display());
    std::fs::create_dir_all(dir).map_err(fail)?;
    let probe = dir.join(format!(".moot-probe-{}", std::process::id()));
    let written = OpenOptions::new().write(true).create(true).truncate(true).open(&probe).and_then(|mut f| {
        f.write_all(b"probe\n")?;
        f.sync_all()
    });
    let _ = std::fs::remove_file(&probe);
    written.map_err(fail)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::session::event::EventKind;

    fn event(seq: u64) -> Event {
        Event { seq, t: chrono::Utc::now(), kind: EventKind::Paused { author: "ana".into() } }
    }

    fn seqs(path: &Path) -> Vec<u64> {
        let log = crate::session::parse_log(&std::fs::read(path).unwrap());
        assert!(log.partial_tail.is_none() && log.problems.is_empty(), "{:?}", log.warnings());
        log.events.iter().map(|e| e.seq).collect()
    }

    #[test]
    fn reopening_a_log_cut_mid_line_drops_the_torn_line_and_appends_whole_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut w = SessionWriter::create(&path).unwrap();
        w.write(&event(0)).unwrap();
        drop(w);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend_from_slice(b"{\"seq\":1,\"t\":\"20");
        std::fs::write(&path, &bytes).unwrap();
        let mut w = SessionWriter::reopen(&path).unwrap();
        w.write(&event(1)).unwrap();
        assert_eq!(seqs(&path), [0, 1]);
    }

    #[test]
    fn a_line_that_could_not_be_written_is_written_whole_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let full = Arc::new(AtomicBool::new(false));
        let mut w = SessionWriter::create(&path).unwrap().simulate_full_disk(full.clone());
        w.write(&event(0)).unwrap();
        full.store(true, Ordering::SeqCst);
        let err = w.write(&event(1)).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(28));
        full.store(false, Ordering::SeqCst);
        w.write(&event(1)).unwrap();
        assert_eq!(seqs(&path), [0, 1]);
    }

    #[test]
    fn a_folder_that_cannot_take_logs_is_named_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), "not a folder").unwrap();
        let err = check_dir(&dir.path().join("f").join("s")).unwrap_err();
        assert!(err.starts_with("cannot write session logs in ") && err.contains("os error"), "{err}");
        let fine = dir.path().join("new");
        check_dir(&fine).unwrap();
        assert!(fine.read_dir().unwrap().next().is_none(), "the probe file is removed");
    }

    #[cfg(unix)]
    #[test]
    fn a_log_being_written_is_locked_against_a_second_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let first = SessionWriter::create(&path).unwrap();
        assert!(being_written(&path));
        let e = SessionWriter::reopen(&path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        assert!(e.to_string().contains("being written by another moot process"), "{e}");
        assert_eq!(SessionWriter::append(&path).unwrap_err().kind(), io::ErrorKind::WouldBlock);
        drop(first);
        assert!(!being_written(&path));
        let again = SessionWriter::reopen(&path).unwrap();
        assert!(being_written(&path));
        drop(again);
    }
}
