//! Reading the complete fields of a broken JSON verdict.
//!
//! A reply cut off by its token limit, or whose justification holds
//! unescaped double quotes, ends with an object that no JSON parser reads.
//! Its score fields are often all there: `"grammar": 4,` with the value
//! finished by a comma, a closing brace or a line break. [`broken_object`]
//! reads those (numbers only: a value cut mid-way has no terminator and is
//! left out), so that the parser can accept the reply as *salvaged* when
//! every dimension is among them, and ask again when one is not.

use std::ops::Range;

use serde_json::{Map, Number, Value};

use super::json::balanced_end;

/// A broken object's complete numeric fields, where it lies in the reply,
/// and what was wrong with it.
pub(super) struct Salvaged {
    pub fields: Map<String, Value>,
    pub range: Range<usize>,
    pub reason: &'static str,
}

/// The last object in `reply` that starts outside the objects already read
/// (`parsed`) and holds at least one complete `"key": number` field.
pub(super) fn broken_object(reply: &str, parsed: &[Range<usize>]) -> Option<Salvaged> {
    let bytes = reply.as_bytes();
    let starts = bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b == b'{' && !parsed.iter().any(|r| r.contains(&i)))
        .map(|(i, _)| i)
        .collect::<Vec<_>>();
    for &start in starts.iter().rev() {
        let (end, reason) = match balanced_end(bytes, start) {
            Some(end) => (end, "its JSON object was malformed (unescaped quotes in a string?)"),
            None => (reply.len(), "its JSON object was cut off before its end"),
        };
        let fields = numeric_fields(&reply[start..end]);
        if !fields.is_empty() {
            return Some(Salvaged { fields, range: start..end, reason });
        }
    }
    None
}

/// Every `"key": number` in `text` whose number is finished by `,`, `}` or a
/// line break (a key at most 64 characters, on one line).
fn numeric_fields(text: &str) -> Map<String, Value> {
    let mut out = Map::new();
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('"') else { break };
        let key = &after[..close];
        let tail = &after[close + 1..];
        if key.is_empty() || key.len() > 64 || key.contains('\n') {
            rest = after;
            continue;
        }
        match field_value(tail) {
            Some((value, used)) => {
                out.entry(key.to_string()).or_insert(Value::Number(value));
                rest = &tail[used..];
            }
            None => rest = after,
        }
    }
    out
}

/// `: <number><terminator>` at the start of `tail`: the number and the bytes
/// up to the terminator.
fn field_value(tail: &str) -> Option<(Number, usize)> {
    let t = tail.trim_start();
    let t = t.strip_prefix(':')?.trim_start();
    let offset = tail.len() - t.len();
    let len = t.char_indices().take_while(|&(i, c)| c.is_ascii_digit() || c == '.' || (i == 0 && c == '-')).count();
    let number = &t[..len];
    let after = t[len..].trim_start_matches([' ', '\t', '\r']);
    if number.is_empty() || !matches!(after.chars().next(), Some(',' | '}' | '\n')) {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    let n = if number.contains('.') { Number::from_f64(value)? } else { Number::from(number.parse::<i64>().ok()?) };
    Some((n, offset + len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_numbers_of_a_cut_object_are_read_and_a_cut_number_is_not() {
        let reply = "Fine.\n\n{\"grammar\": 4, \"relevance\": 3, \"overall\": 1";
        let s = broken_object(reply, &[]).unwrap();
        assert_eq!(s.fields.len(), 2, "{:?}", s.fields);
        assert_eq!(s.fields["grammar"], 4);
        assert!(!s.fields.contains_key("overall"), "1 may have been 10: no terminator, not read");
        assert!(s.reason.contains("cut off"));
        assert_eq!(s.range.start, 7);
    }

    #[test]
    fn unescaped_quotes_break_the_object_but_not_its_scores() {
        let reply = r#"{"grammar": 5, "confidence": 0.8, "justification": "The answer "So Pebble could" is right."}"#;
        let s = broken_object(reply, &[]).unwrap();
        assert_eq!(s.fields["grammar"], 5);
        assert_eq!(s.fields["confidence"], 0.8);
        assert!(s.reason.contains("malformed"));
        assert!(broken_object("no braces at all", &[]).is_none());
        assert!(broken_object("{\"a\": \"text only\"", &[]).is_none());
        // An object already read is not salvaged again.
        let whole = "{\"grammar\": 4}";
        assert!(broken_object(whole, std::slice::from_ref(&(0..whole.len()))).is_none());
    }
}
