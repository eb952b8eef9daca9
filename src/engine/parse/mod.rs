//! Reading an agent's verdict out of its reply (the agent output contract).
//!
//! Agents are asked for a JSON object with the panel's dimension keys plus
//! `overall`, `confidence` and `justification`; real replies wrap it in code
//! fences, surround it with prose, nest it or fall back to `Grammar: 4` lines.
//! [`parse_reply`] accepts those shapes and rejects anything it cannot read
//! faithfully with an error that names the problem: a reply that cannot be
//! parsed is never turned into a low score. See `docs/agent-output.md`.

mod done;
mod fields;
mod json;
mod lines;
mod salvage;
mod score;
#[cfg(test)]
mod tests;

use std::ops::Range;

use crate::panel::{Dimension, Scale};
use crate::session::event::Evaluation;

pub use done::says_no_more_comments;
use fields::{Found, Parser};
pub(crate) use json::{JsonObject, expand_to_fence, json_objects, normalize_key};
use score::to_confidence;

/// What the parser needs to know about the panel and the item.
pub struct ParseSpec<'a> {
    pub dimensions: &'a [Dimension],
    pub scale: Scale,
    /// Whether an `overall` score beside the dimensions is read (the mean of
    /// the dimension scores where the reply has none): the panel's
    /// [`asks_overall`](crate::panel::Panel::asks_overall). Without it an
    /// evaluation has no overall, except that a dimension keyed `overall`
    /// always is the evaluation's overall (and is not among its scores).
    pub overall: bool,
    /// Texts the agent was shown as material (item content, context, reference):
    /// JSON or scores quoted from these are never the agent's verdict.
    pub quoted_material: &'a [&'a str],
}

/// Longest justification kept, in characters.
pub const JUSTIFICATION_CAP: usize = 2000;

/// How deep nested JSON objects are searched for scores.
const MAX_DEPTH: usize = 4;

/// Slack for comparing floating scores against scale bounds.
const EPS: f64 = 1e-9;

/// Parse an agent reply into an evaluation. `done` is set when the agent itself
/// said `NO MORE COMMENTS`.
///
/// The verdict is the last JSON object in the reply that carries dimension
/// scores and is not quoted from [`ParseSpec::quoted_material`]; without one,
/// `Dimension: score` lines are read instead (a `Confidence:` line also fills
/// in a confidence the JSON lacks). Every panel dimension is required;
/// a missing `overall` is the mean of the dimension scores where one is
/// asked for ([`ParseSpec::overall`]). Errors name what is
/// wrong (missing dimensions, scores outside the scale, unreadable values) so
/// they can be shown and sent back in a repair request.
pub fn parse_reply(reply: &str, spec: &ParseSpec<'_>) -> Result<Evaluation, String> {
    let parser = Parser::new(spec);
    let mut own: Vec<(JsonObject, Found)> = json_objects(reply)
        .into_iter()
        .filter(|o| !parser.is_quoted(&reply[o.range.clone()]))
        .map(|o| {
            let found = parser.found_in(&o.map);
            (o, found)
        })
        .collect();

    let mut salvaged = None;
    let (found, removed) = if let Some(i) = own.iter().rposition(|(_, f)| parser.has_dimensions(f)) {
        let (object, mut found) = own.swap_remove(i);
        if found.confidence.is_none() {
            found.confidence = parser.collect_lines(reply).0.confidence;
        }
        (found, vec![expand_to_fence(reply, object.range)])
    } else if let Some(s) = salvage::broken_object(reply, &own.iter().map(|(o, _)| o.range.clone()).collect::<Vec<_>>())
        .filter(|s| !parser.is_quoted(&reply[s.range.clone()]))
        .map(|s| (parser.found_in(&s.fields), s))
        .filter(|(found, _)| parser.has_dimensions(found))
    {
        // A broken object's complete fields: every dimension must be among them.
        let (found, s) = s;
        parser.assemble(&found).map_err(|e| format!("{e} ({})", s.reason))?;
        salvaged = Some(format!("{}; its complete score fields were read", s.reason));
        (found, vec![s.range])
    } else {
        let (found, used) = parser.collect_lines(reply);
        if !found.dims.is_empty() || found.overall.is_some() {
            (found, used)
        } else if let Some(i) = own.iter().rposition(|(_, f)| f.overall.is_some()) {
            let (object, found) = own.swap_remove(i);
            (found, vec![expand_to_fence(reply, object.range)])
        } else {
            return Err(parser.no_scores());
        }
    };

    let (scores, overall) = parser.assemble(&found)?;
    let confidence = found.confidence.as_ref().and_then(to_confidence);
    let justification = match &found.justification {
        Some(text) => cap(&mark_cut(text.trim())),
        None => cap(&prose_without(reply, &removed)),
    };
    Ok(Evaluation {
        scores,
        overall,
        confidence,
        justification,
        done: says_no_more_comments(reply, spec),
        label: None,
        labels: Default::default(),
        weighted_scores: None,
        salvaged,
    })
}

/// The reply without the given byte ranges, blank-line runs collapsed.
fn prose_without(text: &str, removed: &[Range<usize>]) -> String {
    let mut ranges = removed.to_vec();
    ranges.sort_by_key(|r| r.start);
    let mut kept = String::with_capacity(text.len());
    let mut at = 0;
    for r in ranges {
        if r.start > at {
            kept.push_str(&text[at..r.start]);
        }
        at = at.max(r.end);
    }
    kept.push_str(&text[at.min(text.len())..]);
    let mut out = String::with_capacity(kept.len());
    let mut blank_run = 0;
    for line in kept.lines() {
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.trim().to_string()
}

/// A justification or reason that stops at its schema's length
/// ([`JUSTIFICATION_MAX`](crate::engine::prompts::JUSTIFICATION_MAX), as
/// a grammar cuts it) in the middle of a sentence ends with `…`, so that
/// nobody reads the cut as the model's own ending.
pub fn mark_cut(text: &str) -> String {
    let max = crate::engine::prompts::JUSTIFICATION_MAX as usize;
    let chars = text.chars().count();
    let ended = text.ends_with(['.', '!', '?', '"', '\'', '”', ')', '…']);
    if (max.saturating_sub(2)..=max).contains(&chars) && !ended { format!("{text}…") } else { text.to_string() }
}

/// At most [`JUSTIFICATION_CAP`] characters, ending in `…` when cut.
fn cap(text: &str) -> String {
    if text.chars().count() <= JUSTIFICATION_CAP {
        return text.to_string();
    }
    let mut out: String = text.chars().take(JUSTIFICATION_CAP - 1).collect();
    out.push('…');
    out
}
