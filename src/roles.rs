//! The roles a model call speaks for: a panel binds them to providers, and
//! every turn in a session log names one.

use serde::{Deserialize, Serialize};

/// Who a model call speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    #[default]
    Agent,
    Moderator,
    Aggregator,
    FinalJudge,
    /// Checks and rectifies an evaluator's scores (SAGEval's SAGE).
    MetaEvaluator,
    /// Condenses each round of a discussion (ChatEval).
    Summarizer,
    /// Confirms or corrects a member's scores (a composition's `verify` stage).
    Verifier,
    /// Explains a judge's mistakes against human labels (`moot optimize`).
    Feedback,
    /// Rewrites a judge's prompt from that feedback (`moot optimize`).
    Rewriter,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Agent => "agent",
            Role::Moderator => "moderator",
            Role::Aggregator => "aggregator",
            Role::FinalJudge => "final_judge",
            Role::MetaEvaluator => "meta_evaluator",
            Role::Summarizer => "summarizer",
            Role::Verifier => "verifier",
            Role::Feedback => "feedback",
            Role::Rewriter => "rewriter",
        }
    }

    pub const ALL: [Role; 9] = [
        Role::Agent,
        Role::Moderator,
        Role::Aggregator,
        Role::FinalJudge,
        Role::MetaEvaluator,
        Role::Summarizer,
        Role::Verifier,
        Role::Feedback,
        Role::Rewriter,
    ];
    /// The roles of `moot optimize`, which any panel may bind with `[roles.<role>]`.
    pub const OPTIMIZE: [Role; 2] = [Role::Feedback, Role::Rewriter];
    /// The participant name of a role in events and on screen (`final judge`).
    pub fn label(self) -> &'static str {
        match self {
            Role::FinalJudge => "final judge",
            Role::MetaEvaluator => "meta-evaluator",
            other => other.as_str(),
        }
    }
}
