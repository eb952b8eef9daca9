//! `moot report`: agreement of judges with human ratings, read from session
//! logs and run folders (see `docs/report.md`).
//!
//! [`load`] folds each log into the few numbers a report needs, [`human`]
//! reads a ratings file, [`build`] joins them and computes every statistic
//! with [`crate::stats`], [`format`] prints tables, CSV and JSON, and
//! [`plot`] draws SVG charts; [`raters_table`] prints the section on
//! several named human raters, [`binary_table`] the one on binary human
//! values, [`versus_table`] the differences between panels.

pub mod binary_table;
pub mod build;
pub mod format;
pub mod html;
pub mod human;
pub mod load;
pub mod pairwise;
pub mod paper;
pub mod plot;
pub mod raters_table;
pub mod sage;
pub mod versus_table;

pub use build::{PanelSummary, Report, ReportOptions, Row, Stage, build_report};
pub use human::{HumanFile, load_human_file};
pub use load::{ItemRecord, Loaded, collect_logs, load_records, read_record};
