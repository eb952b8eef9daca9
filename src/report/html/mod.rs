//! Self-contained HTML pages: one per session (`moot sessions export ID
//! --format html`) and one per report (`moot report RUN --format html`),
//! readable offline (styles, script and charts inline; no network).
//!
//! [`markup`] is the only way text enters a page, escaped; [`layout`] is
//! the shell and the fragments both pages share; [`svg`] draws the score
//! timelines and embeds the report's charts; [`session`] and [`report`]
//! are the two pages. See `docs/html.md`.

pub mod layout;
pub mod markup;
pub mod report;
pub mod session;
pub mod svg;

pub use markup::{Html, escape, file_stem};
pub use session::session_page;
