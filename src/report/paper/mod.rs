//! `moot report --paper NAME`: the table of a paper that a run can fill,
//! with the paper's own figures beside moot's (see `docs/reproduce.md`).
//!
//! [`spec`] reads what a paper's table is (`assets/papers/<name>.toml`),
//! [`fill`] takes each cell from the report's rows, [`render`] prints it.

pub mod fill;
pub mod render;
pub mod spec;

pub use fill::{PaperReport, fill};
pub use spec::{PaperError, load};
