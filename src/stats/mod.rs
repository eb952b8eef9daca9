//! Agreement statistics between judges and humans.
