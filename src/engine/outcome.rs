//! How a run ended, as [`run`](super::run) returns it.

use std::collections::BTreeMap;

use crate::session::event::{EndStatus, UsageTotals};

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub session_id: String,
    pub status: EndStatus,
    pub error: Option<String>,
    pub reason: Option<String>,
    pub usage: UsageTotals,
    /// The panel-wide result (overrides applied): scores with `overall`.
    pub result: Option<BTreeMap<String, f64>>,
    pub log_path: Option<std::path::PathBuf>,
}
