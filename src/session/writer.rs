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
}

impl SessionWriter {
    /// Create a new log file; fails if it already exists (a log is never overwritten).
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)?;
        }
        let file = OpenOptions::new().write(true).create_new(true).open(&path)?;
        Ok(Self { file, path, buf: Vec::with_capacity(1024) })
    }

    /// Open an existing log to append more events (e.g. a human rating after the run).
    pub fn append(path: impl AsRef<Path>) -> io::Result<Self> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new().append(true).open(&path)?;
        Ok(Self { file, path, buf: Vec::with_capacity(1024) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write one event as one line.
    pub fn write(&mut self, event: &Event) -> io::Result<()> {
        self.buf.clear();
        serde_json::to_writer(&mut self.buf, event).map_err(io::Error::other)?;
        self.buf.push(b'\n');
        self.file.write_all(&self.buf)
    }
}
