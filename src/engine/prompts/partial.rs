//! Reading a reply while it streams: its prose so far, and the scores of an
//! evaluation whose JSON is not complete yet.

use crate::panel::{OVERALL, Panel};
use crate::provider::structured::string_end;
use crate::session::event::Evaluation;

/// An evaluation still streaming (`json`, its text so far): the scores in
/// the panel's order, then overall (where the panel has one) and confidence, up to the first that is
/// not complete yet (so that its scores read as the beginning of the final
/// ones), then the justification so far once all of them are in. `None`
/// before the first score is complete.
pub(super) fn evaluation_so_far(panel: &Panel, json: &str) -> Option<Evaluation> {
    let mut ev = Evaluation::default();
    let all_scores = (|| {
        // A dimension keyed `overall` is the overall, as a parsed reply has it.
        for d in panel.dimensions.iter().filter(|d| d.key != OVERALL) {
            ev.scores.insert(d.key.clone(), number_field(json, &d.key)?);
        }
        if panel.has_overall() {
            ev.overall = Some(number_field(json, OVERALL)?);
        }
        ev.confidence = Some(number_field(json, "confidence")?);
        Some(())
    })();
    if all_scores.is_some() {
        ev.justification = string_field_so_far(json, "justification").unwrap_or_default();
    }
    (!ev.scores.is_empty() || ev.overall.is_some()).then_some(ev)
}

/// The text of the JSON string given for `key`, as far as it has streamed
/// (`None` before it opens).
fn string_field_so_far(json: &str, key: &str) -> Option<String> {
    let rest = field_value(json, key)?.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => break,
            '\\' => match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        Some(ch) if hex.len() == 4 => out.push(ch),
                        // Cut short, or half of a surrogate pair.
                        _ => break,
                    }
                }
                Some(other) => out.push(other),
                None => break,
            },
            c => out.push(c),
        }
    }
    Some(out)
}

/// The JSON text after `"key":`, as far as it has streamed.
fn field_value<'a>(json: &'a str, key: &str) -> Option<&'a str> {
    let quoted = format!("\"{key}\"");
    let rest = &json[json.find(&quoted)? + quoted.len()..];
    Some(rest.trim_start().strip_prefix(':')?.trim_start())
}

/// The number given for `key` in JSON text, once something follows it.
fn number_field(json: &str, key: &str) -> Option<f64> {
    let rest = field_value(json, key)?;
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))?;
    rest[..end].parse().ok()
}

/// The evaluation of a reply still streaming (`text`, its words and JSON so
/// far) as far as its scores are complete (see [`evaluation_so_far`]), so
/// that they show as soon as they are written. `None` before the first is.
pub fn streaming_evaluation(panel: &Panel, text: &str) -> Option<Evaluation> {
    let prose = prose_so_far(text);
    evaluation_so_far(panel, &text[prose.len()..])
}

/// The justification of a streaming reply that is only its JSON evaluation,
/// as far as it has streamed and as written (escapes are read once the
/// reply is complete); `None` for a reply with words first, or before the
/// justification opens.
pub fn justification_streaming(text: &str) -> Option<&str> {
    if !text.trim_start().starts_with('{') {
        return None;
    }
    let rest = field_value(text, "justification")?.strip_prefix('"')?;
    Some(match string_end(rest) {
        Some(end) => &rest[..end],
        None => rest.strip_suffix('\\').unwrap_or(rest),
    })
}

/// A streaming reply's prose: its text before the evaluation starts (a line
/// opening a JSON object or a code fence), which the history will show.
pub(super) fn prose_so_far(text: &str) -> &str {
    let json = [text.find("\n{"), text.find("```"), text.trim_start().starts_with('{').then_some(0)];
    &text[..json.into_iter().flatten().min().unwrap_or(text.len())]
}
