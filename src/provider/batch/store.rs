//! `batches.json`: every batch a run submitted (its id, provider, endpoint,
//! the custom ids of its requests and how it stands), so that a run started
//! again with `--resume` collects what it already paid for instead of
//! submitting it again. Nothing secret is written: no key, no request text.
//! The file is rewritten whole (a temporary file renamed over it) at each
//! change.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// The file's name in a run folder (a shard's is `batches.shard-I-of-N.json`).
pub const FILE: &str = "batches.json";

/// Format version of the file.
const VERSION: u32 = 1;

/// How a submitted batch stands, as far as this run knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordState {
    /// Being submitted: written before the batch goes up, so that a run
    /// killed before the server's answer arrives finds it by its mark
    /// (`key`) on resume instead of submitting it again.
    Submitting,
    /// Submitted and not seen over yet.
    Submitted,
    /// Over; its results are on the server.
    Ended,
    /// Its window passed before every request ran.
    Expired,
    Cancelled,
    /// The server refused it as a whole.
    Failed,
}

impl RecordState {
    pub fn as_str(self) -> &'static str {
        match self {
            RecordState::Submitting => "submitting",
            RecordState::Submitted => "submitted",
            RecordState::Ended => "ended",
            RecordState::Expired => "expired",
            RecordState::Cancelled => "cancelled",
            RecordState::Failed => "failed",
        }
    }

    /// Whether the batch's requests that did not run must be asked again.
    pub fn is_dead(self) -> bool {
        matches!(self, RecordState::Expired | RecordState::Cancelled | RecordState::Failed)
    }
}

/// One submitted batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchRecord {
    /// The server's id (`batch_…`, `msgbatch_…`); empty while `submitting`.
    pub id: String,
    /// The mark the batch was submitted with ([`super::api::batch_key`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The configured provider name.
    pub provider: String,
    /// `openai` or `anthropic`.
    pub kind: String,
    /// The base URL it went to.
    pub endpoint: String,
    pub submitted: DateTime<Utc>,
    pub state: RecordState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    /// OpenAI: the uploaded input file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_file: Option<String>,
    /// Where the results are (output and error files, or a results URL).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub results: Vec<String>,
    /// The server's counts when last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<String>,
    /// The custom ids of its requests.
    pub requests: Vec<String>,
    /// Requests the server did not run (expired or cancelled lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
    /// What became of it (`expired; 12 requests submitted again`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    batches: Vec<BatchRecord>,
}

/// The run's batches, kept in `batches.json` (or only in memory).
#[derive(Debug)]
pub struct Store {
    path: Option<PathBuf>,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    records: Vec<BatchRecord>,
    /// Custom id → the records holding it, oldest first.
    index: HashMap<String, Vec<usize>>,
}

impl Inner {
    /// Drop the `submitting` record marked `key` (the index is then stale:
    /// [`Self::reindex`]).
    fn forget_intent(&mut self, key: Option<&str>) {
        self.records.retain(|r| !(r.state == RecordState::Submitting && r.key.as_deref() == key));
    }

    /// Build the index again (records were removed).
    fn reindex(&mut self) {
        let records = std::mem::take(&mut self.records);
        self.index.clear();
        records.into_iter().for_each(|r| self.push(r));
    }

    fn push(&mut self, record: BatchRecord) {
        let at = self.records.len();
        for id in &record.requests {
            self.index.entry(id.clone()).or_default().push(at);
        }
        self.records.push(record);
    }
}

/// Why `batches.json` could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {message}", path.display())]
pub struct StoreError {
    pub path: PathBuf,
    pub message: String,
}

impl Store {
    /// The store in `path`, with the batches it already records.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let error = |message: String| StoreError { path: path.to_owned(), message };
        let mut inner = Inner::default();
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let file: StoreFile = serde_json::from_str(&text)
                    .map_err(|e| error(format!("not a batch record of moot eval --batch ({e})")))?;
                if file.version > VERSION {
                    return Err(error(format!("written by a newer moot (version {})", file.version)));
                }
                file.batches.into_iter().for_each(|r| inner.push(r));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(error(e.to_string())),
        }
        Ok(Self { path: Some(path.to_owned()), inner: Mutex::new(inner) })
    }

    /// A store kept in memory only.
    pub fn in_memory() -> Self {
        Self { path: None, inner: Mutex::default() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every record, oldest first.
    pub fn records(&self) -> Vec<BatchRecord> {
        self.lock().records.clone()
    }

    /// Record a new batch (a run records its batches through
    /// [`Self::intend`] and [`Self::confirm`]).
    #[cfg(test)]
    pub(crate) fn add(&self, record: BatchRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.push(record);
        self.save(&inner)
    }

    /// Record a batch about to be submitted (state `submitting`, marked
    /// with its key), in place of an earlier such record of the same key.
    pub fn intend(&self, record: BatchRecord) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.forget_intent(record.key.as_deref());
        inner.records.push(record);
        inner.reindex();
        self.save(&inner)
    }

    /// The batch marked `key` was accepted as `id`: its record is `submitted`.
    pub fn confirm(&self, key: &str, id: &str, input_file: Option<String>) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(r) = inner.records.iter_mut().rev().find(|r| r.key.as_deref() == Some(key) && r.id.is_empty()) {
            r.id = id.to_string();
            r.state = RecordState::Submitted;
            r.input_file = input_file;
            r.submitted = Utc::now();
        }
        self.save(&inner)
    }

    /// The batch marked `key` never reached the server: forget it.
    pub fn withdraw(&self, key: &str) -> Result<(), StoreError> {
        let mut inner = self.lock();
        inner.forget_intent(Some(key));
        inner.reindex();
        self.save(&inner)
    }

    /// Change the record of batch `id`.
    pub fn update(&self, id: &str, change: impl FnOnce(&mut BatchRecord)) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if let Some(r) = inner.records.iter_mut().rev().find(|r| r.id == id) {
            change(r);
        }
        self.save(&inner)
    }

    /// The newest batch of `provider` at `endpoint` that holds `custom_id`
    /// and may still answer it (not dead, the line not left unrun).
    pub fn find(&self, provider: &str, endpoint: &str, custom_id: &str) -> Option<BatchRecord> {
        let inner = self.lock();
        inner.index.get(custom_id)?.iter().rev().map(|&i| &inner.records[i]).find_map(|r| {
            let usable = r.provider == provider
                && r.endpoint == endpoint
                && !r.state.is_dead()
                && !r.not_run.iter().any(|c| c == custom_id);
            usable.then(|| r.clone())
        })
    }

    /// How many batches of `provider` at `endpoint` held `custom_id` and did not run it.
    pub fn unrun(&self, provider: &str, endpoint: &str, custom_id: &str) -> usize {
        let inner = self.lock();
        inner.index.get(custom_id).map_or(0, |at| {
            at.iter()
                .map(|&i| &inner.records[i])
                .filter(|r| r.provider == provider && r.endpoint == endpoint)
                .filter(|r| r.state.is_dead() || r.not_run.iter().any(|c| c == custom_id))
                .count()
        })
    }

    fn save(&self, inner: &Inner) -> Result<(), StoreError> {
        let Some(path) = &self.path else { return Ok(()) };
        let error = |e: std::io::Error| StoreError { path: path.clone(), message: format!("cannot write: {e}") };
        if inner.records.is_empty() {
            // The only batch was withdrawn (it never reached the server): no record, no file.
            return match std::fs::remove_file(path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(error(e)),
                _ => Ok(()),
            };
        }
        let file = StoreFile { version: VERSION, batches: inner.records.clone() };
        let text = serde_json::to_string_pretty(&file).map_err(|e| error(std::io::Error::other(e)))?;
        let tmp = path.with_extension("json.tmp");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(error)?;
        }
        std::fs::write(&tmp, text + "\n").map_err(error)?;
        std::fs::rename(&tmp, path).map_err(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, state: RecordState, requests: &[&str]) -> BatchRecord {
        BatchRecord {
            id: id.into(),
            key: None,
            provider: "openai".into(),
            kind: "openai".into(),
            endpoint: "http://x/v1".into(),
            submitted: Utc::now(),
            state,
            ended: None,
            input_file: None,
            results: Vec::new(),
            counts: None,
            requests: requests.iter().map(|s| s.to_string()).collect(),
            not_run: Vec::new(),
            note: None,
        }
    }

    #[test]
    fn records_survive_a_reopen_and_dead_batches_are_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let store = Store::open(&path).unwrap();
        store.add(record("b1", RecordState::Submitted, &["a", "b"])).unwrap();
        store.update("b1", |r| r.state = RecordState::Expired).unwrap();
        store.add(record("b2", RecordState::Submitted, &["a"])).unwrap();
        let again = Store::open(&path).unwrap();
        assert_eq!(again.records().len(), 2);
        assert_eq!(again.find("openai", "http://x/v1", "a").map(|r| r.id), Some("b2".into()));
        assert_eq!(again.find("openai", "http://x/v1", "b"), None, "b's only batch expired");
        assert_eq!(again.find("other", "http://x/v1", "a"), None, "another provider's batch");
        assert_eq!(again.unrun("openai", "http://x/v1", "b"), 1);
        again.update("b2", |r| r.not_run.push("a".into())).unwrap();
        assert_eq!(again.find("openai", "http://x/v1", "a"), None);
        assert_eq!(again.unrun("openai", "http://x/v1", "a"), 2);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"state\": \"expired\""), "{text}");
    }

    #[test]
    fn a_batch_being_submitted_is_found_by_its_requests_then_confirmed_or_withdrawn() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let store = Store::open(&path).unwrap();
        store.add(record("b1", RecordState::Submitted, &["x"])).unwrap();
        let intent =
            |key: &str| BatchRecord { key: Some(key.into()), ..record("", RecordState::Submitting, &["a", "b"]) };
        store.intend(intent("k1")).unwrap();
        store.intend(intent("k1")).unwrap();
        let again = Store::open(&path).unwrap();
        assert_eq!(again.records().len(), 2, "one record per key");
        let found = again.find("openai", "http://x/v1", "b").unwrap();
        assert_eq!((found.state, found.key.as_deref(), found.id.as_str()), (RecordState::Submitting, Some("k1"), ""));
        again.confirm("k1", "b2", Some("file-9".into())).unwrap();
        let found = Store::open(&path).unwrap().find("openai", "http://x/v1", "a").unwrap();
        assert_eq!(
            (found.state, found.id.as_str(), found.input_file.as_deref()),
            (RecordState::Submitted, "b2", Some("file-9"))
        );
        again.intend(intent("k2")).unwrap();
        again.withdraw("k2").unwrap();
        let last = Store::open(&path).unwrap();
        assert_eq!(last.records().len(), 2);
        assert_eq!(last.find("openai", "http://x/v1", "x").map(|r| r.id), Some("b1".into()), "the index was rebuilt");
        assert_eq!(last.find("openai", "http://x/v1", "a").map(|r| r.id), Some("b2".into()));
    }

    #[test]
    fn a_broken_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        std::fs::write(&path, "{oops").unwrap();
        let e = Store::open(&path).unwrap_err();
        assert!(e.to_string().contains("batches.json") && e.to_string().contains("not a batch record"), "{e}");
    }
}
