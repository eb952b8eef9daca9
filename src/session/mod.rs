//! Sessions: the event vocabulary, the append-only log, and the fold that turns a log into a view.

pub mod event;
pub mod fold;
pub mod overrides;
pub mod pairwise;
pub mod problem;
pub mod progress;
pub mod reader;
pub mod run_folder;
pub mod sage;
pub mod selection;
pub mod stages;
pub mod writer;

pub use event::{Event, EventKind};
pub use fold::SessionView;
pub use reader::{LoadedLog, LogProblem, parse_event, parse_log, read_log};
pub use stages::Stages;
pub use writer::SessionWriter;

use std::path::PathBuf;

/// The folder sessions are written to: `MOOT_SESSIONS_DIR`, else `./sessions`.
pub fn default_sessions_dir() -> PathBuf {
    std::env::var_os("MOOT_SESSIONS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("sessions"))
}

/// The name put on events a person causes: `MOOT_USER`, else `$USER`.
pub fn human_name() -> String {
    ["MOOT_USER", "USER", "USERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "human".into())
}

/// Every `*.jsonl` log under `dir` (run folders included), newest first by name.
pub fn find_logs(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    out
}

/// A new session id: UTC time plus a short random suffix, sortable by start time.
pub fn new_session_id() -> String {
    use rand::Rng;
    let now = chrono::Utc::now();
    let suffix: u32 = rand::rng().random_range(0..0x10000);
    format!("{}-{:04x}", now.format("%Y%m%dT%H%M%S"), suffix)
}
