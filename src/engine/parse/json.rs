//! Finding JSON objects embedded in free text: brace balancing that respects
//! strings, tolerance for trailing commas, key normalisation, and widening an
//! object's range to the code fence around it.

use std::ops::Range;

use serde_json::{Map, Value};

/// A JSON object found in free text.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct JsonObject {
    /// Byte range of the object (braces included) in the text.
    pub range: Range<usize>,
    pub map: Map<String, Value>,
}

/// Every top-level JSON object embedded in `text`, in order.
///
/// Braces are balanced with JSON strings respected; a trailing comma before
/// `}` or `]` is tolerated. Text that only looks like an object is skipped.
pub(crate) fn json_objects(text: &str) -> Vec<JsonObject> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{'
            && let Some(end) = balanced_end(bytes, i)
            && let Some(map) = parse_object(&text[i..end])
        {
            out.push(JsonObject { range: i..end, map });
            i = end;
            continue;
        }
        i += 1;
    }
    out
}

/// Lowercase, with every run of non-alphanumeric characters turned into one `_`:
/// `"Answer Relevancy"`, `"answer-relevancy"` and `"answer_relevancy"` agree.
pub(crate) fn normalize_key(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for c in raw.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

pub(super) fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, &b) in bytes[start..].iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(start + offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Some(map),
        Ok(_) => None,
        Err(_) => match serde_json::from_str::<Value>(&strip_trailing_commas(text)) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        },
    }
}

/// Drop commas that directly precede `}` or `]` outside JSON strings.
fn strip_trailing_commas(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c == ',' && matches!(text[i + 1..].trim_start().chars().next(), Some('}' | ']')) {
            continue;
        }
        out.push(c);
    }
    out
}

/// Widen a JSON object's range to the code fence around it, if any.
pub(crate) fn expand_to_fence(text: &str, range: Range<usize>) -> Range<usize> {
    let before = text[..range.start].trim_end();
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let opener = before[line_start..].trim_start();
    let after = &text[range.end..];
    let close_at = range.end + (after.len() - after.trim_start().len());
    let closer = &text[close_at..];
    let is_opener = opener.strip_prefix("```").is_some_and(|lang| lang.chars().all(char::is_alphanumeric));
    if is_opener && closer.starts_with("```") {
        let close_end = close_at + closer.find('\n').map_or(closer.len(), |i| i + 1);
        return line_start..close_end;
    }
    range
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_objects_finds_top_level_objects_only() {
        let found = json_objects("a {\"x\": {\"y\": 1}} b {\"z\": \"}\"} c {not json}");
        assert_eq!(found.len(), 2);
        assert!(found[0].map.contains_key("x"));
        assert_eq!(found[1].map.get("z"), Some(&Value::String("}".into())));
    }

    #[test]
    fn normalize_key_forms() {
        assert_eq!(normalize_key("Answer Relevancy"), "answer_relevancy");
        assert_eq!(normalize_key("answer-relevancy"), "answer_relevancy");
        assert_eq!(normalize_key("  **Overall score** "), "overall_score");
    }
}
