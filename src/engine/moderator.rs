//! Moderator policies: who speaks next in a debate.
