//! Reading an agent's verdict out of its reply (the agent output contract).
//! Owned by the parser work; see `docs/agent-output.md`.

use crate::panel::{Dimension, Scale};
use crate::session::event::Evaluation;

/// What the parser needs to know about the panel and the item.
pub struct ParseSpec<'a> {
    pub dimensions: &'a [Dimension],
    pub scale: Scale,
    /// Texts the agent was shown as material (item content, context, reference):
    /// JSON or scores quoted from these are never the agent's verdict.
    pub quoted_material: &'a [&'a str],
}

/// Parse an agent reply into an evaluation. `done` is set when the agent itself
/// said `NO MORE COMMENTS`.
pub fn parse_reply(reply: &str, spec: &ParseSpec<'_>) -> Result<Evaluation, String> {
    let _ = (reply, spec);
    Err("parser not implemented".into())
}

/// Whether the agent itself (not a quotation) says `NO MORE COMMENTS`.
pub fn says_no_more_comments(reply: &str, spec: &ParseSpec<'_>) -> bool {
    let _ = spec;
    reply.contains("NO MORE COMMENTS")
}
