//! Sessions: the event vocabulary, the append-only log, and the fold that turns a log into a view.

pub mod event;
pub mod fold;
pub mod overrides;
pub mod pairwise;
pub mod progress;
pub mod reader;
pub mod sage;
pub mod stages;
pub mod writer;

pub use event::{Event, EventKind};
pub use fold::SessionView;
pub use reader::{LoadedLog, parse_log, read_log};
pub use stages::Stages;
pub use writer::SessionWriter;

use std::path::PathBuf;

/// The folder sessions are written to: `MOOT_SESSIONS_DIR`, else `./sessions`.
pub fn default_sessions_dir() -> PathBuf {
    std::env::var_os("MOOT_SESSIONS_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("sessions"))
}

/// A new session id: UTC time plus a short random suffix, sortable by start time.
pub fn new_session_id() -> String {
    use rand::Rng;
    let now = chrono::Utc::now();
    let suffix: u32 = rand::rng().random_range(0..0x10000);
    format!("{}-{:04x}", now.format("%Y%m%dT%H%M%S"), suffix)
}
