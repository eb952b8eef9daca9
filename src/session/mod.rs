//! Sessions: the event vocabulary, the append-only log, and the fold that turns a log into a view.

pub mod event;
