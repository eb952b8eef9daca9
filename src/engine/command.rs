//! Human commands the engine applies at safe points.

use crate::session::event::{OverrideTarget, Scores};

/// The author of the pause after G-Eval's steps are written, for a person
/// to review them: the engine's own pause, not a person's.
pub const STEPS_REVIEW_AUTHOR: &str = "g-eval (review_steps)";

/// The author of the pause after SAGEval's meta-evaluator, for a person to
/// decide on its changes: the engine's own pause, not a person's.
pub const SAGE_REVIEW_AUTHOR: &str = "sage-eval (review)";

/// Something a person asks of a running session. Every command the engine
/// accepts becomes an event in the session log.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// A comment every agent sees from its next turn on (all groups when `group` is `None`).
    Comment {
        text: String,
        author: String,
        group: Option<String>,
    },
    /// Choose who speaks next in a debate (in the agent's own group).
    PickSpeaker {
        agent: String,
        author: String,
    },
    /// Refuse the moderator's current pick: that agent does not speak next.
    VetoSpeaker {
        agent: String,
        author: String,
    },
    /// Replace a score; the original stays in the record.
    Override {
        target: OverrideTarget,
        dimension: String,
        value: f64,
        reason: Option<String>,
        author: String,
    },
    /// The human's own rating of the item.
    Rate {
        scores: Scores,
        author: String,
    },
    Pause {
        author: String,
    },
    Resume {
        author: String,
    },
    /// Run one more turn, then pause again.
    Step {
        author: String,
    },
    /// End the debate now (the turn in flight is cancelled) and go to aggregation.
    Stop {
        author: String,
    },
    /// End the session now, without aggregation.
    Quit {
        author: String,
    },
    /// Replace a dimension's evaluation steps before scoring starts (G-Eval).
    EditSteps {
        dimension: String,
        steps: String,
        author: String,
    },
    /// Accept or reject the meta-evaluator's revision of a dimension
    /// (SAGEval); `agent` is needed only when several evaluations were revised.
    Decide {
        dimension: String,
        agent: Option<String>,
        accept: bool,
        author: String,
    },
    /// Adopt a proposed definition or new aspect (by its key) into a new panel file (SAGEval).
    Adopt {
        key: String,
        author: String,
    },
    /// Pairwise: decide a pair the panel left as a tie, undecided, or with a
    /// flip; `winner` is a candidate id (`None`: tie). Replaces the panel's decision.
    SettlePair {
        first: String,
        second: String,
        winner: Option<String>,
        author: String,
    },
    /// Pairwise: one more vote on a pair, counted with the judges' decisions
    /// (as one more judge's); a later vote by the same person replaces it.
    VotePair {
        first: String,
        second: String,
        winner: Option<String>,
        author: String,
    },
    /// Pairwise: decline to decide a pair (to settle it, or in a blind run to label it).
    AbstainPair {
        first: String,
        second: String,
        author: String,
    },
    /// Pairwise, blind runs: the person's own verdict on a pair before the
    /// judges' verdicts and the systems' names are shown (a human label).
    LabelPair {
        first: String,
        second: String,
        winner: Option<String>,
        author: String,
    },
}

impl Command {
    pub fn author(&self) -> &str {
        match self {
            Command::Comment { author, .. }
            | Command::PickSpeaker { author, .. }
            | Command::VetoSpeaker { author, .. }
            | Command::Override { author, .. }
            | Command::Rate { author, .. }
            | Command::EditSteps { author, .. }
            | Command::Decide { author, .. }
            | Command::Adopt { author, .. }
            | Command::SettlePair { author, .. }
            | Command::VotePair { author, .. }
            | Command::AbstainPair { author, .. }
            | Command::LabelPair { author, .. }
            | Command::Pause { author }
            | Command::Resume { author }
            | Command::Step { author }
            | Command::Stop { author }
            | Command::Quit { author } => author,
        }
    }
}
