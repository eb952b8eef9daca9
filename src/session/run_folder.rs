//! The run folder of a batch evaluation: one session log per item
//! (`<item>.jsonl`), earlier attempts kept aside in `attempts/`, and
//! `run.json` describing the run. Batch evaluation (`moot eval`) writes
//! it; reports read it.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::event::{EndStatus, EventKind, Usage};
use super::selection::{Selection, Shard, stable_hash};
use crate::item::{Item, ItemProblem};

/// File name of the run description in a run folder.
pub const MANIFEST: &str = "run.json";
/// Sub-folder where logs of earlier attempts are kept.
pub const ATTEMPTS: &str = "attempts";

/// Why `run.json` could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: not a readable run description: {message}", path.display())]
    Unreadable { path: PathBuf, message: String },
}

/// Prices per million tokens, for cost totals.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Pricing {
    /// Cost of these token counts.
    pub fn cost(&self, input_tokens: u64, output_tokens: u64) -> f64 {
        (input_tokens as f64 * self.input_per_mtok + output_tokens as f64 * self.output_per_mtok) / 1e6
    }
    /// Cost of a usage record (a batch call's tokens at the batch price).
    pub fn cost_of(&self, usage: &Usage) -> f64 {
        let (input, output) = usage.billed_tokens();
        (input * self.input_per_mtok + output * self.output_per_mtok) / 1e6
    }
}

/// Longest file stem taken from an item id as is.
const MAX_STEM: usize = 80;

/// File stems (without `.jsonl`) for the items' session logs, one per item,
/// distinct even on case-insensitive file systems. An id that is a plain
/// file name is used as is; any other id (spaces, slashes, very long…) is
/// cleaned and gets a short hash of the id appended.
pub fn log_stems(items: &[Item]) -> Vec<String> {
    let mut stems: Vec<String> =
        items.iter().map(|i| plain_stem(&i.id).unwrap_or_else(|| hashed_stem(&i.id))).collect();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for s in &stems {
        *seen.entry(s.to_lowercase()).or_default() += 1;
    }
    for (stem, item) in stems.iter_mut().zip(items) {
        if seen[&stem.to_lowercase()] > 1 {
            *stem = hashed_stem(&item.id);
        }
    }
    stems
}

fn plain_stem(id: &str) -> Option<String> {
    let ok = !id.is_empty()
        && id.len() <= MAX_STEM
        && !id.starts_with('.')
        && id != ATTEMPTS
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    ok.then(|| id.to_string())
}

fn hashed_stem(id: &str) -> String {
    let mut clean: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_') { c } else { '_' })
        .take(MAX_STEM - 9)
        .collect();
    if clean.is_empty() {
        clean.push_str("item");
    }
    format!("{clean}-{:08x}", stable_hash(id) as u32)
}

/// How an existing session log ended, read from its last complete line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogState {
    Completed,
    Stopped,
    Failed,
    /// No `session_ended` line: the run was killed or crashed.
    Incomplete,
}

impl LogState {
    pub fn as_str(self) -> &'static str {
        match self {
            LogState::Completed => "completed",
            LogState::Stopped => "stopped",
            LogState::Failed => "failed",
            LogState::Incomplete => "incomplete",
        }
    }
}

impl From<EndStatus> for LogState {
    fn from(s: EndStatus) -> Self {
        match s {
            EndStatus::Completed => LogState::Completed,
            EndStatus::Stopped => LogState::Stopped,
            EndStatus::Failed => LogState::Failed,
        }
    }
}

/// How the log at `path` ended (the last `session_ended` line counts).
pub fn log_state(path: &Path) -> std::io::Result<LogState> {
    let bytes = std::fs::read(path)?;
    // Look at complete lines from the end: `session_ended` is the last one.
    for line in bytes.split(|&b| b == b'\n').rev().filter(|l| !l.iter().all(u8::is_ascii_whitespace)).take(3) {
        if let Ok(ev) = serde_json::from_slice::<super::Event>(line)
            && let EventKind::SessionEnded { status, .. } = ev.kind
        {
            return Ok(status.into());
        }
    }
    Ok(LogState::Incomplete)
}

/// Move a log aside to `attempts/<stem>.<n>.jsonl` (first free `n`), keeping it.
pub fn move_aside(dir: &Path, stem: &str) -> std::io::Result<PathBuf> {
    let from = dir.join(format!("{stem}.jsonl"));
    let attempts = dir.join(ATTEMPTS);
    std::fs::create_dir_all(&attempts)?;
    for n in 1u32.. {
        let to = attempts.join(format!("{stem}.{n}.jsonl"));
        if to.exists() {
            continue;
        }
        // Hard-link then remove: never replaces an existing attempt, even if
        // another process raced for the same name.
        match std::fs::hard_link(&from, &to) {
            Ok(()) => {
                std::fs::remove_file(&from)?;
                return Ok(to);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => {
                // File systems without hard links: a rename after the existence check.
                std::fs::rename(&from, &to)?;
                return Ok(to);
            }
        }
    }
    unreachable!("u32 attempts exhausted")
}

/// Whether `dir` already holds a run (a manifest or session logs).
pub fn holds_a_run(dir: &Path) -> bool {
    if dir.join(MANIFEST).exists() {
        return true;
    }
    std::fs::read_dir(dir)
        .is_ok_and(|entries| entries.flatten().any(|e| e.path().extension().is_some_and(|x| x == "jsonl")))
}

/// One item's entry in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemEntry {
    /// Log file name inside the run folder.
    pub file: String,
    /// How its current log ended, or `not_started`.
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Times the item was started in this folder (earlier attempts are in `attempts/`).
    #[serde(default)]
    pub attempts: u32,
}

/// Item counts of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Items selected for the run.
    pub items: usize,
    pub completed: usize,
    pub failed: usize,
    pub stopped: usize,
    /// Items never started (the run was interrupted before them).
    pub not_started: usize,
    /// Lines of the data file that were not usable items.
    pub bad_items: usize,
    /// Items skipped by `--resume` because their session had completed before.
    pub already_done: usize,
}

/// Token and cost totals of a run (all attempts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub calls: u64,
    /// In the pricing's currency; absent without prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// One invocation of `moot eval` on the folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invocation {
    pub started: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    pub resume: bool,
    /// Items started by this invocation.
    pub ran: usize,
    #[serde(default)]
    pub interrupted: bool,
}

/// Panel identity recorded in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelRef {
    pub name: String,
    pub protocol: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// `run.json`: what a run folder holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub moot_version: String,
    pub panel: PanelRef,
    /// The data file, as given on the command line.
    pub data: String,
    pub started: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<DateTime<Utc>>,
    /// `running`, `completed` (every item completed), `incomplete` (failed,
    /// stopped or unstarted items remain; `--resume` continues), `interrupted`.
    pub status: String,
    pub selection: Selection,
    pub concurrency: usize,
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Who judges with what: `default`, `agent <name>` and `[<role>]`, each
    /// to `<model> on <provider>`. A resumed run must have the same.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<Pricing>,
    pub counts: Counts,
    pub totals: Totals,
    #[serde(default)]
    pub bad_items: Vec<BadItem>,
    /// Item id → its log and status.
    pub items: BTreeMap<String, ItemEntry>,
    #[serde(default)]
    pub invocations: Vec<Invocation>,
}

/// A line of the data file that was skipped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadItem {
    pub line: usize,
    pub message: String,
}

impl From<&ItemProblem> for BadItem {
    fn from(p: &ItemProblem) -> Self {
        BadItem { line: p.line, message: p.message.clone() }
    }
}

impl Manifest {
    /// Read `run.json` from a run folder.
    pub fn load(dir: &Path) -> Result<Option<Manifest>, ManifestError> {
        Self::load_named(dir, MANIFEST)
    }

    /// Read the manifest file `name` of a run folder (`run.json`, or a
    /// shard's); none when there is none.
    pub fn load_named(dir: &Path, name: &str) -> Result<Option<Manifest>, ManifestError> {
        let path = dir.join(name);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(ManifestError::Io { path, error: e }),
        };
        serde_json::from_str(&text).map(Some).map_err(|e| ManifestError::Unreadable { path, message: e.to_string() })
    }

    /// Write `run.json` atomically (a temporary file renamed over it).
    pub fn save(&self, dir: &Path) -> Result<(), ManifestError> {
        self.save_named(dir, MANIFEST)
    }

    /// Write the manifest file `name` (`run.json`, or a shard's) atomically.
    pub fn save_named(&self, dir: &Path, name: &str) -> Result<(), ManifestError> {
        let path = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        let io = |error| ManifestError::Io { path: path.clone(), error };
        let mut text = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        text.push(b'\n');
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&text).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, &path).map_err(io)
    }
}

/// The shard a manifest's file name describes, if it is a shard's.
pub(crate) fn shard_of(file: &str) -> Option<Shard> {
    let rest = file.strip_prefix("run.shard-")?.strip_suffix(".json")?;
    let (i, n) = rest.split_once("-of-")?;
    format!("{i}/{n}").parse().ok()
}

/// The shard manifests in `dir`.
pub fn shard_manifests(dir: &Path) -> Vec<(Shard, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(Shard, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            shard_of(name.to_str()?).map(|s| (s, e.path()))
        })
        .collect();
    found.sort_by_key(|(s, _)| (s.count, s.index));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: &str) -> Item {
        Item::new(id, "x")
    }

    #[test]
    fn stems_are_safe_and_distinct() {
        let items: Vec<Item> =
            ["qa-01", "a/b", "a b", "Case", "case", "", "attempts"].iter().map(|i| item(i)).collect();
        let stems = log_stems(&items);
        assert_eq!(stems[0], "qa-01");
        for s in &stems {
            assert!(s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)), "{s}");
            assert!(!s.is_empty());
        }
        let lower: std::collections::BTreeSet<String> = stems.iter().map(|s| s.to_lowercase()).collect();
        assert_eq!(lower.len(), stems.len(), "{stems:?}");
        assert_ne!(stems[6], "attempts");
    }

    #[test]
    fn moving_aside_never_overwrites() {
        let dir = tempfile::tempdir().unwrap();
        for round in 1..=2 {
            std::fs::write(dir.path().join("x.jsonl"), format!("attempt {round}\n")).unwrap();
            let to = move_aside(dir.path(), "x").unwrap();
            assert_eq!(to, dir.path().join(ATTEMPTS).join(format!("x.{round}.jsonl")));
            assert_eq!(std::fs::read_to_string(&to).unwrap(), format!("attempt {round}\n"));
        }
        assert!(!dir.path().join("x.jsonl").exists());
    }
}
