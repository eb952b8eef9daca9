//! The engine runs a judging protocol for one item, emitting events and taking commands.

pub mod command;
pub mod consensus;
pub mod moderator;
pub mod parse;

pub use command::Command;
