//! Members' names as replies write them.

/// The titles a member's name may begin with ("Dr. Haddad"), lower-cased,
/// without their dot: the moderator's reasons are read with them
/// (`engine::reasons`), a speech's opening name is known without its
/// title (`engine::repeats`), and the embedded model's speeches written
/// (`provider::local::speaker`).
pub const TITLES: [&str; 6] = ["dr", "ms", "mr", "mrs", "prof", "st"];
