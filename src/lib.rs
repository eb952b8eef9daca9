//! moot: panels of LLM judges that evaluate generated text by debating.

pub mod cli;
pub mod config;
pub mod engine;
pub mod errors;
pub mod eval;
pub mod item;
pub mod model;
pub mod names;
pub mod optimize;
pub mod paint;
pub mod panel;
pub mod personas;
pub mod preset;
pub mod provider;
pub mod report;
pub mod roles;
pub mod session;
pub mod signals;
pub mod stats;
#[cfg(any(test, feature = "testing"))]
pub mod testkit;
pub mod tui;
