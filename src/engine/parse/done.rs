//! Whether the agent itself says `NO MORE COMMENTS`: the phrase in its own
//! words, not inside quotation marks, blockquotes, code blocks or text copied
//! from the quoted material.

use std::ops::Range;

use serde_json::{Map, Value};

use super::ParseSpec;
use super::fields::Parser;
use super::json::json_objects;

/// Whether the agent itself (not a quotation) says `NO MORE COMMENTS`.
///
/// The phrase is matched case-insensitively, with any run of spaces, `_`, `-`
/// or `*` between the words and any punctuation after it. It does not count
/// inside quotation marks, a `> ` blockquote, a fenced code block, or a span
/// of text copied verbatim from the quoted material. String values of the
/// agent's own JSON verdict are the agent's words and are checked by the same
/// rules.
pub fn says_no_more_comments(reply: &str, spec: &ParseSpec<'_>) -> bool {
    let objects = json_objects(reply);
    let mut mask = quotation_mask(reply);
    for object in &objects {
        mask[object.range.clone()].fill(true);
    }
    if own_phrase(reply, &mask, spec.quoted_material) {
        return true;
    }
    let parser = Parser::new(spec);
    objects.iter().filter(|o| !parser.is_quoted(&reply[o.range.clone()])).any(|o| {
        let found = parser.found_in(&o.map);
        (!found.dims.is_empty() || found.overall.is_some())
            && string_values(&o.map).into_iter().any(|s| own_phrase(s, &quotation_mask(s), spec.quoted_material))
    })
}

fn string_values(map: &Map<String, Value>) -> Vec<&str> {
    fn walk<'v>(value: &'v Value, out: &mut Vec<&'v str>) {
        match value {
            Value::String(s) => out.push(s),
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            Value::Object(map) => map.values().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    map.values().for_each(|v| walk(v, &mut out));
    out
}

/// Per byte of `text`: whether it lies in a quotation (a quoted span within a
/// line, a `>` blockquote line, or a fenced code block).
fn quotation_mask(text: &str) -> Vec<bool> {
    let mut mask = vec![false; text.len()];
    let mut offset = 0;
    let mut in_fence = false;
    for line in text.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let t = line.trim_start();
        let fence = t.starts_with("```") || t.starts_with("~~~");
        if fence || in_fence || t.starts_with('>') {
            mask[start..offset].fill(true);
            if fence {
                in_fence = !in_fence;
            }
            continue;
        }
        let mut open: Option<(usize, char)> = None;
        for (i, c) in line.char_indices() {
            let at = start + i;
            match open {
                Some((from, close)) if c == close => {
                    mask[from..at + c.len_utf8()].fill(true);
                    open = None;
                }
                Some(_) => {}
                None => {
                    open = match c {
                        '"' => Some((at, '"')),
                        '“' => Some((at, '”')),
                        '«' => Some((at, '»')),
                        _ => None,
                    }
                }
            }
        }
    }
    mask
}

/// Byte ranges of `NO MORE COMMENTS` (any case, flexible separators).
fn phrase_occurrences(text: &str) -> Vec<Range<usize>> {
    fn word(b: &[u8], i: usize, w: &str) -> Option<usize> {
        let end = i + w.len();
        (end <= b.len() && b[i..end].eq_ignore_ascii_case(w.as_bytes())).then_some(end)
    }

    fn separators(b: &[u8], mut i: usize) -> Option<usize> {
        let start = i;
        while i < b.len() && (b[i].is_ascii_whitespace() || matches!(b[i], b'_' | b'-' | b'*')) {
            i += 1;
        }
        (i > start).then_some(i)
    }
    let b = text.as_bytes();
    let mut out = Vec::new();
    for i in 0..b.len() {
        if !b[i].eq_ignore_ascii_case(&b'n') || text[..i].chars().next_back().is_some_and(char::is_alphanumeric) {
            continue;
        }
        let end = word(b, i, "no")
            .and_then(|j| separators(b, j))
            .and_then(|j| word(b, j, "more"))
            .and_then(|j| separators(b, j))
            .and_then(|j| word(b, j, "comments"));
        if let Some(end) = end
            && !text[end..].chars().next().is_some_and(char::is_alphanumeric)
        {
            out.push(i..end);
        }
    }
    out
}

/// Whether an occurrence of the phrase in `text` lies outside the mask and
/// is not copied, with its surrounding words, from the material.
fn own_phrase(text: &str, mask: &[bool], material: &[&str]) -> bool {
    phrase_occurrences(text)
        .into_iter()
        .any(|occ| !mask[occ.clone()].iter().any(|&m| m) && !copied_from(text, occ, material))
}

/// Whether the span `occ` of `text`, widened by at least three letters or
/// digits of its neighbourhood, appears verbatim in one of the materials.
fn copied_from(text: &str, occ: Range<usize>, material: &[&str]) -> bool {
    const CONTEXT: usize = 3;
    let extra = |lo: usize, hi: usize| {
        text[lo..occ.start].chars().filter(|c| c.is_alphanumeric()).count()
            + text[occ.end..hi].chars().filter(|c| c.is_alphanumeric()).count()
    };
    for m in material {
        if !m.contains(&text[occ.clone()]) {
            continue;
        }
        let (mut lo, mut hi) = (occ.start, occ.end);
        while extra(lo, hi) < CONTEXT {
            let Some(c) = text[..lo].chars().next_back() else {
                break;
            };
            if !m.contains(&text[lo - c.len_utf8()..hi]) {
                break;
            }
            lo -= c.len_utf8();
        }
        while extra(lo, hi) < CONTEXT {
            let Some(c) = text[hi..].chars().next() else {
                break;
            };
            if !m.contains(&text[lo..hi + c.len_utf8()]) {
                break;
            }
            hi += c.len_utf8();
        }
        if extra(lo, hi) >= CONTEXT {
            return true;
        }
    }
    false
}
