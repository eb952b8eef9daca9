//! SAGEval's part of a run's state: the meta-evaluator's rectified values
//! and proposals, kept for a person's decision and adoption.

use std::path::PathBuf;

use crate::session::event::{AspectValue, ProposalKind};

/// One rectified value, as the engine keeps it for a person's decision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Revision {
    pub agent: String,
    pub dimension: String,
    pub from: Option<AspectValue>,
    pub to: AspectValue,
}

/// A proposal of the meta-evaluator, for adoption.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Proposal {
    pub kind: ProposalKind,
    pub key: String,
    pub name: String,
    pub definition: String,
}

/// SAGEval's part of a run's state.
#[derive(Debug, Default)]
pub(crate) struct SageState {
    pub revisions: Vec<Revision>,
    pub proposals: Vec<Proposal>,
    /// Proposals adopted so far (kind, key), in order.
    pub adopted: Vec<(ProposalKind, String)>,
    /// The panel file this session writes its adoptions to.
    pub panel_file: Option<PathBuf>,
}
