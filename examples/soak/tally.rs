//! What a finished session's log says about the kills it went through.
//!
//! A turn's identity is who spoke, in which phase, group, round and kind of
//! turn, about which dimension or pair; an agent speaking twice in a debate
//! has two turns of the same identity, so identities are counted, and the
//! counts compared with those of an uninterrupted run of the same item.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// The identity of a turn, as its `turn_started` line gives it.
type Identity = String;

/// What one final log holds.
#[derive(Debug, Default, Clone)]
pub struct LogTally {
    /// How the session ended (`completed`, `failed`, `stopped`), if it did.
    pub ended: Option<String>,
    /// Completed turns per identity.
    pub completed: BTreeMap<Identity, u32>,
    /// Turn numbers completed more than once.
    pub completed_twice: u32,
    /// Turns started that neither completed, failed for good, nor were
    /// marked abandoned.
    pub unresolved: u32,
    /// Turns marked abandoned (streaming at a kill, redone).
    pub abandoned: u32,
    /// Abandoned turns never started again.
    pub abandoned_not_redone: u32,
    /// `seq` values that repeat or skip.
    pub seq_faults: u32,
    /// Complete lines the log reader could not read, in its words.
    pub problems: Vec<String>,
    /// The aggregator's results, without times and usage.
    pub results: Vec<Value>,
}

impl LogTally {
    /// Read the log at `path`.
    pub fn read(path: &Path) -> std::io::Result<Self> {
        let loaded = moot::session::read_log(path)?;
        let mut t =
            LogTally { problems: loaded.problems.iter().map(ToString::to_string).collect(), ..Default::default() };
        let text = std::fs::read_to_string(path)?;
        let lines: Vec<Value> =
            text[..loaded.complete_len].lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        let mut identity_of: BTreeMap<u64, Identity> = BTreeMap::new();
        let mut resolved: BTreeSet<u64> = BTreeSet::new();
        let mut completions: BTreeMap<u64, u32> = BTreeMap::new();
        let mut pending_redo: BTreeMap<Identity, u32> = BTreeMap::new();
        let mut next_seq = 0u64;
        for e in &lines {
            match e["seq"].as_u64() {
                Some(s) if s == next_seq => next_seq += 1,
                Some(s) => {
                    t.seq_faults += 1;
                    next_seq = s + 1;
                }
                None => t.seq_faults += 1,
            }
            let turn = e["turn"].as_u64();
            match e["type"].as_str().unwrap_or("") {
                "turn_started" => {
                    let id = identity(e);
                    // The redo of an abandoned turn (itself completed,
                    // abandoned again and redone, or failed: its own line says).
                    if let Some(p) = pending_redo.get_mut(&id).filter(|p| **p > 0) {
                        *p -= 1;
                    }
                    identity_of.insert(turn.unwrap_or(0), id);
                }
                "turn_completed" => {
                    let n = turn.unwrap_or(0);
                    resolved.insert(n);
                    *completions.entry(n).or_insert(0) += 1;
                    if let Some(id) = identity_of.get(&n) {
                        *t.completed.entry(id.clone()).or_insert(0) += 1;
                    }
                }
                "turn_failed" if e["will_retry"] == false => {
                    resolved.insert(turn.unwrap_or(0));
                }
                ty if ty.contains("abandon") => {
                    let n = turn.unwrap_or(0);
                    t.abandoned += 1;
                    resolved.insert(n);
                    if let Some(id) = identity_of.get(&n) {
                        *pending_redo.entry(id.clone()).or_insert(0) += 1;
                    }
                }
                "aggregation_completed" => {
                    let mut r = e.clone();
                    if let Some(o) = r.as_object_mut() {
                        for volatile in ["seq", "t", "usage", "latency_ms"] {
                            o.remove(volatile);
                        }
                    }
                    t.results.push(r);
                }
                "session_ended" => t.ended = e["status"].as_str().map(str::to_string),
                _ => {}
            }
        }
        t.completed_twice = completions.values().filter(|&&c| c > 1).map(|c| c - 1).sum();
        t.unresolved = identity_of.keys().filter(|n| !resolved.contains(n)).count() as u32;
        t.abandoned_not_redone = pending_redo.values().sum();
        Ok(t)
    }

    /// Completed turns missing from, and beyond, those of `baseline`.
    pub fn against(&self, baseline: &LogTally) -> (u32, u32) {
        let mut lost = 0;
        let mut extra = 0;
        let ids: BTreeSet<&Identity> = self.completed.keys().chain(baseline.completed.keys()).collect();
        for id in ids {
            let here = self.completed.get(id).copied().unwrap_or(0);
            let there = baseline.completed.get(id).copied().unwrap_or(0);
            lost += there.saturating_sub(here);
            extra += here.saturating_sub(there);
        }
        (lost, extra)
    }

    pub fn turns(&self) -> u32 {
        self.completed.values().sum()
    }
}

fn identity(e: &Value) -> Identity {
    let field = |k: &str| match &e[k] {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    ["agent", "role", "phase", "group", "round", "kind", "dimension", "pair"].map(field).join("|")
}
