//! The log of an optimisation run: one JSONL file (`optimize.jsonl` in the
//! run folder) with the session log's line rules — `seq` from 0 without
//! gaps, `t` (RFC 3339), `type`, each line flushed as it happens, so any
//! prefix of a log is a valid log. See `docs/optimize.md` for every type.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use super::prompt::JudgePrompt;
use super::sample::PickedBy;
use crate::session::event::ModelRef;

/// Version of the optimisation log format (2: `optimize_started` records
/// the run's `options`, so that it can be resumed).
pub const OPTIMIZE_SCHEMA_VERSION: u32 = 2;

/// The file name of the log inside a run folder.
pub const LOG_FILE: &str = "optimize.jsonl";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptEvent {
    pub seq: u64,
    pub t: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: OptKind,
}

/// One example as the log shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExampleRef {
    pub id: String,
    pub cluster: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pick {
    pub id: String,
    pub cluster: usize,
    pub by: PickedBy,
}

/// Which part of the data an example belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Picked,
    Holdout,
    /// Set apart before the loop; judged only once it has chosen its prompt.
    Test,
}

/// A prompt whose score the report sets beside the others (the paper's
/// conditions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// The panel's own prompt (iteration 1's).
    Initial,
    /// The initial prompt with the first iteration's picked examples and
    /// their human labels added to its examples.
    FewShot,
    /// The prompt the loop chose (best held-out S, or a person's choice).
    Chosen,
}

impl Condition {
    pub fn label(self) -> &'static str {
        match self {
            Condition::Initial => "initial prompt",
            Condition::FewShot => "few-shot prompt",
            Condition::Chosen => "chosen prompt",
        }
    }
}

/// One example of a condition's judging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionRow {
    pub id: String,
    pub judge: Option<f64>,
    pub human: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// What a person decided about a proposed rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Accepted,
    Edited,
    Rejected,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OptStatus {
    Completed,
    Stopped,
    Failed,
}

// The first event is large and comes once a run; boxing it would only add noise.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OptKind {
    /// First line.
    OptimizeStarted {
        run_id: String,
        schema_version: u32,
        moot_version: String,
        /// The input panel file (or bundled name).
        panel: String,
        data: String,
        /// The dimension whose human label is compared (`overall` too).
        dimension: String,
        scale_min: f64,
        scale_max: f64,
        objective: String,
        threshold: f64,
        max_iter: u32,
        seed: u64,
        per_cluster: usize,
        /// Training examples with their cluster; held-out ids.
        train: Vec<ExampleRef>,
        holdout: Vec<String>,
        /// `judge`, `feedback`, `rewriter` → provider/model.
        models: BTreeMap<String, ModelRef>,
        prompt: JudgePrompt,
        /// Whether a person reviews each step (the live screen) or not (headless).
        review: bool,
        /// Test split ids: judged only after the loop, never for selection.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        test: Vec<String>,
        /// The item field the training examples are clustered by (none: by their text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster_by: Option<String>,
        /// Whether the few-shot baseline condition is scored.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        few_shot: bool,
        /// `paper` when the run took the paper's settings (`--preset paper`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preset: Option<String>,
        /// The command line's options (since version 2; what `--resume` starts again with).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        options: Option<super::resume::RunOptions>,
    },
    IterationStarted {
        iteration: u32,
        prompt: JudgePrompt,
        /// The iteration whose prompt this one continues from (none for the first).
        from: Option<u32>,
    },
    ExamplesPicked {
        iteration: u32,
        picks: Vec<Pick>,
    },
    /// The judge on one example: its score, or why there is none.
    Judged {
        iteration: u32,
        split: Split,
        id: String,
        judge: Option<f64>,
        human: f64,
        error: Option<String>,
        /// The judge's own words on the example (its justification), when it gave any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    Scored {
        iteration: u32,
        objective: String,
        picked: Option<f64>,
        holdout: Option<f64>,
        /// Why a score is missing.
        picked_error: Option<String>,
        holdout_error: Option<String>,
        failures: usize,
    },
    FeedbackWritten {
        iteration: u32,
        text: String,
        /// `feedback` (the model) or `human` (typed by a person).
        by: String,
        author: Option<String>,
    },
    RewriteProposed {
        iteration: u32,
        prompt: JudgePrompt,
    },
    /// The rewrite model's reply could not be read as a prompt; the prompt stays.
    RewriteFailed {
        iteration: u32,
        error: String,
        reply: Option<String>,
    },
    RewriteDecided {
        iteration: u32,
        decision: Decision,
        /// The prompt the next iteration uses when accepted or edited.
        prompt: Option<JudgePrompt>,
        author: String,
    },
    RolledBack {
        to: u32,
        author: String,
    },
    ExamplePinned {
        id: String,
        author: String,
    },
    ExampleUnpinned {
        id: String,
        author: String,
    },
    /// Left out of later draws (a person replaces it).
    ExampleDropped {
        id: String,
        author: String,
    },
    StopRequested {
        author: String,
        /// An iteration a person chose as the result.
        choose: Option<u32>,
    },
    /// A feedback or rewrite call failed (after retries).
    CallFailed {
        iteration: u32,
        role: String,
        error: String,
    },
    /// A condition's S on the test split (or, with no test split, the
    /// few-shot prompt's on the held-out split), after the loop.
    ConditionScored {
        condition: Condition,
        /// The iteration whose prompt it is (initial: 1; chosen: the chosen one).
        iteration: Option<u32>,
        split: Split,
        objective: String,
        score: Option<f64>,
        error: Option<String>,
        failures: usize,
        /// The few-shot prompt as the judge saw it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        prompt: Option<JudgePrompt>,
        rows: Vec<ConditionRow>,
    },
    /// Last line.
    OptimizeEnded {
        status: OptStatus,
        reason: String,
        best: Option<u32>,
        best_holdout: Option<f64>,
        /// `best` (highest held-out S) or `human` (chosen by a person).
        chosen_by: String,
        output: Option<String>,
        error: Option<String>,
        /// The chosen prompt's S on the test split: the score to report
        /// (`best_holdout` chose it, so it flatters).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        test: Option<f64>,
    },
}

#[derive(Debug)]
struct Inner {
    seq: u64,
    file: Option<(PathBuf, std::io::BufWriter<std::fs::File>)>,
    observer: Option<UnboundedSender<OptEvent>>,
    write_error: Option<String>,
    /// Resuming: the log the run is matched to.
    journal: Option<super::journal::Journal>,
}

/// Stamps, writes and forwards the events of one optimisation run.
#[derive(Debug, Clone)]
pub struct OptRecorder {
    inner: Arc<Mutex<Inner>>,
}

impl OptRecorder {
    /// Write to `path` (created, never overwritten) and/or send to `observer`.
    pub fn new(path: Option<&Path>, observer: Option<UnboundedSender<OptEvent>>) -> std::io::Result<Self> {
        let file = match path {
            Some(p) => {
                if let Some(dir) = p.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let f = std::fs::OpenOptions::new().write(true).create_new(true).open(p)?;
                Some((p.to_path_buf(), std::io::BufWriter::new(f)))
            }
            None => None,
        };
        Ok(Self { inner: Arc::new(Mutex::new(Inner { seq: 0, file, observer, write_error: None, journal: None })) })
    }

    /// Go on with the log at `path`, whose complete lines are `old` (a torn
    /// last line is removed first): the old events go to `observer` now, an
    /// event the run emits again is matched to its line and not written
    /// again, the others are appended, numbered on.
    pub fn resume(
        path: &Path,
        old: Vec<OptEvent>,
        observer: Option<UnboundedSender<OptEvent>>,
    ) -> std::io::Result<(Self, super::journal::Journal)> {
        super::resume::cut_torn_line(path)?;
        if let Some(tx) = &observer {
            for e in &old {
                let _ = tx.send(e.clone());
            }
        }
        let journal = super::journal::Journal::new(old);
        let f = std::fs::OpenOptions::new().append(true).open(path)?;
        let inner = Inner {
            seq: journal.next_seq(),
            file: Some((path.to_path_buf(), std::io::BufWriter::new(f))),
            observer,
            write_error: None,
            journal: Some(journal.clone()),
        };
        Ok((Self { inner: Arc::new(Mutex::new(inner)) }, journal))
    }

    pub fn emit(&self, kind: OptKind) -> OptEvent {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(j) = &inner.journal
            && j.matches(&kind)
        {
            return OptEvent { seq: inner.seq, t: Utc::now(), kind };
        }
        let event = OptEvent { seq: inner.seq, t: Utc::now(), kind };
        inner.seq += 1;
        let inner = &mut *inner;
        if let Some((path, w)) = inner.file.as_mut() {
            let line = serde_json::to_string(&event).map_err(std::io::Error::other);
            let written = line.and_then(|l| writeln!(w, "{l}").and_then(|()| w.flush()));
            if let Err(e) = written
                && inner.write_error.is_none()
            {
                inner.write_error = Some(format!("writing {}: {e}", path.display()));
            }
        }
        if let Some(tx) = &inner.observer
            && tx.send(event.clone()).is_err()
        {
            inner.observer = None;
        }
        event
    }

    pub fn write_error(&self) -> Option<String> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).write_error.clone()
    }
}

/// Whether `path` is an optimisation log, or a folder holding one; gives the log's path.
pub fn find_log(path: &Path) -> Option<PathBuf> {
    let file = if path.is_dir() { path.join(LOG_FILE) } else { path.to_path_buf() };
    let f = std::fs::File::open(&file).ok()?;
    let mut first = String::new();
    std::io::BufReader::new(f).read_line(&mut first).ok()?;
    let v: serde_json::Value = serde_json::from_str(first.trim()).ok()?;
    (v.get("type").and_then(|t| t.as_str()) == Some("optimize_started")).then_some(file)
}

/// Read a log; a line that does not parse stops the reading with its line number
/// (a last line cut short by a crash is dropped silently).
pub fn read_log(path: &Path) -> anyhow::Result<Vec<OptEvent>> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<OptEvent>(line) {
            Ok(e) => out.push(e),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => anyhow::bail!("{}:{}: not an optimisation event: {e}", path.display(), i + 1),
        }
    }
    if !matches!(out.first().map(|e| &e.kind), Some(OptKind::OptimizeStarted { .. })) {
        anyhow::bail!("{}: does not begin with optimize_started", path.display());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> OptKind {
        OptKind::OptimizeStarted {
            run_id: "r".into(),
            schema_version: OPTIMIZE_SCHEMA_VERSION,
            moot_version: "0".into(),
            panel: "p.toml".into(),
            data: "d.jsonl".into(),
            dimension: "match".into(),
            scale_min: 0.0,
            scale_max: 1.0,
            objective: "agreement".into(),
            threshold: 0.9,
            max_iter: 2,
            seed: 1,
            per_cluster: 1,
            train: vec![ExampleRef { id: "a".into(), cluster: 0 }],
            holdout: vec!["b".into()],
            models: BTreeMap::new(),
            prompt: JudgePrompt { task: "t".into(), ..JudgePrompt::default() },
            review: false,
            test: Vec::new(),
            cluster_by: None,
            few_shot: false,
            preset: None,
            options: None,
        }
    }

    #[test]
    fn a_log_cut_short_by_a_crash_still_reads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        let rec = OptRecorder::new(Some(&path), None).unwrap();
        rec.emit(started());
        rec.emit(OptKind::RolledBack { to: 1, author: "ann".into() });
        drop(rec);
        assert_eq!(find_log(dir.path()), Some(path.clone()));
        let full = std::fs::read_to_string(&path).unwrap();
        let events = read_log(&path).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[1].seq, 1);
        // Half of the last line, as a crash mid-write leaves it.
        let cut = full.len() - 10;
        std::fs::write(&path, &full[..cut]).unwrap();
        assert_eq!(read_log(&path).unwrap().len(), 1);
        // A bad line in the middle is an error naming it.
        std::fs::write(&path, format!("{}not json\n{}", full.lines().next().unwrap().to_owned() + "\n", "")).unwrap();
        assert!(read_log(&path).unwrap_err().to_string().contains(":2: not an optimisation event"));
        // An existing log is never overwritten.
        assert!(OptRecorder::new(Some(&path), None).is_err());
    }
}
