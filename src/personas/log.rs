//! The builder's log: one JSON object a line (`seq`, `t`, `type`, …),
//! written as it happens, like a session log. Replaying it through
//! [`BuildState::apply`](super::state::BuildState::apply) gives back every
//! step and every decision a person made.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc::UnboundedSender;

use super::state::{Decision, Group, Persona, Stakeholder};
use crate::session::event::Usage;

/// Version of the builder's log format.
pub const BUILD_SCHEMA_VERSION: u32 = 1;

/// One line of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildEvent {
    pub seq: u64,
    pub t: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: BuildEventKind,
}

/// Which step of the build a model call belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Step {
    Extract,
    Consolidate,
    Persona,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Extract => "extract",
            Step::Consolidate => "consolidate",
            Step::Persona => "persona",
        }
    }
}

/// Tokens a build is expected to use, said before it starts.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Estimate {
    pub calls: u64,
    pub input_tokens: u64,
    /// The most the replies may use (each call's reply budget).
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
}

/// A document as recorded in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocInfo {
    pub name: String,
    pub path: PathBuf,
    pub paragraphs: usize,
    pub chars: usize,
    pub chunks: usize,
    /// Sections left out: heading and paragraphs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<(String, usize)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BuildStatus {
    Completed,
    Failed,
    Stopped,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BuildEventKind {
    /// First line.
    BuildStarted {
        build_id: String,
        task: String,
        provider: String,
        model: String,
        estimate: Estimate,
        schema_version: u32,
        moot_version: String,
    },
    DocumentRead {
        doc: usize,
        info: DocInfo,
    },
    CallStarted {
        call: u64,
        step: Step,
        /// What the call is about: `teachers.md, part 1/2`, a group, a perspective.
        about: String,
    },
    CallDelta {
        call: u64,
        text: String,
    },
    CallCompleted {
        call: u64,
        text: String,
        usage: Usage,
        latency_ms: u64,
        /// Why the reply held no readable answer (a repair request follows once).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        parse_error: Option<String>,
    },
    CallFailed {
        call: u64,
        error: String,
        attempt: u32,
        will_retry: bool,
    },
    /// What one part of a document yielded (possibly nothing), quotes checked.
    StakeholdersExtracted {
        doc: usize,
        chunk: usize,
        stakeholders: Vec<Stakeholder>,
    },
    /// A step's answer stayed unreadable, or its call failed: nothing was taken from it.
    StepFailed {
        step: Step,
        about: String,
        error: String,
    },
    GroupsFormed {
        groups: Vec<Group>,
        /// Extracted perspectives that no group took up.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        left_out: Vec<String>,
    },
    PersonaWritten {
        /// The group perspective it stands for.
        perspective: String,
        persona: Persona,
    },
    /// A person's choice in the review screen.
    Decided {
        decision: Decision,
        author: String,
    },
    PanelWritten {
        path: PathBuf,
        groups: usize,
        agents: usize,
    },
    /// Last line.
    BuildEnded {
        status: BuildStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        usage: Usage,
        duration_ms: u64,
    },
}

impl BuildEventKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::BuildStarted { .. } => "build_started",
            Self::DocumentRead { .. } => "document_read",
            Self::CallStarted { .. } => "call_started",
            Self::CallDelta { .. } => "call_delta",
            Self::CallCompleted { .. } => "call_completed",
            Self::CallFailed { .. } => "call_failed",
            Self::StakeholdersExtracted { .. } => "stakeholders_extracted",
            Self::StepFailed { .. } => "step_failed",
            Self::GroupsFormed { .. } => "groups_formed",
            Self::PersonaWritten { .. } => "persona_written",
            Self::Decided { .. } => "decided",
            Self::PanelWritten { .. } => "panel_written",
            Self::BuildEnded { .. } => "build_ended",
        }
    }
}

struct Inner {
    seq: u64,
    file: Option<File>,
    path: Option<PathBuf>,
    error: Option<String>,
    usage: Usage,
}

/// Numbers events, writes them to the log file (one write per line) and
/// sends them to whoever watches (the screen, the headless printer).
pub struct BuildLog {
    inner: Mutex<Inner>,
    tx: Option<UnboundedSender<BuildEvent>>,
}

impl BuildLog {
    /// A log written to `path` (created; an existing file is never overwritten), or only sent to `tx`.
    pub fn new(path: Option<&Path>, tx: Option<UnboundedSender<BuildEvent>>) -> std::io::Result<Self> {
        let file = match path {
            Some(p) => {
                if let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent)?;
                }
                Some(OpenOptions::new().write(true).create_new(true).open(p)?)
            }
            None => None,
        };
        Ok(Self {
            inner: Mutex::new(Inner {
                seq: 0,
                file,
                path: path.map(Path::to_path_buf),
                error: None,
                usage: Usage::default(),
            }),
            tx,
        })
    }

    /// Append to an existing log (a review after the build), numbering on from `next_seq`.
    pub fn append(path: &Path, next_seq: u64, tx: Option<UnboundedSender<BuildEvent>>) -> std::io::Result<Self> {
        let file = OpenOptions::new().append(true).open(path)?;
        let inner = Inner {
            seq: next_seq,
            file: Some(file),
            path: Some(path.to_path_buf()),
            error: None,
            usage: Usage::default(),
        };
        Ok(Self { inner: Mutex::new(inner), tx })
    }

    pub fn path(&self) -> Option<PathBuf> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).path.clone()
    }

    /// The first write error, if the file could not be written.
    pub fn write_error(&self) -> Option<String> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).error.clone()
    }

    /// Tokens of the calls completed so far through this log.
    pub fn usage(&self) -> Usage {
        self.inner.lock().unwrap_or_else(|e| e.into_inner()).usage
    }

    pub fn emit(&self, kind: BuildEventKind) -> BuildEvent {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let BuildEventKind::CallCompleted { usage, .. } = &kind {
            inner.usage.add(usage);
        }
        let event = BuildEvent { seq: inner.seq, t: Utc::now(), kind };
        inner.seq += 1;
        if let Some(f) = inner.file.as_mut() {
            let mut line = serde_json::to_vec(&event).unwrap_or_default();
            line.push(b'\n');
            if let Err(e) = f.write_all(&line)
                && inner.error.is_none()
            {
                inner.error = Some(e.to_string());
            }
        }
        // Sent under the lock, so watchers see events in `seq` order.
        if let Some(tx) = &self.tx {
            let _ = tx.send(event.clone());
        }
        drop(inner);
        event
    }
}

/// Read a builder's log. A torn last line (a crash while writing) is
/// ignored; any other bad line is an error naming its line number.
pub fn read_log(path: &Path) -> Result<Vec<BuildEvent>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<BuildEvent>(line) {
            Ok(e) => out.push(e),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => return Err(format!("{}: line {}: {e}", path.display(), i + 1)),
        }
    }
    Ok(out)
}
