//! The fallback when no JSON verdict is found: `Dimension: score` lines, with
//! markdown emphasis, bullets, headings, numbered lists and table rows allowed.

use std::ops::Range;

use super::fields::{Field, Found, Parser, Raw};
use super::score::leading_number;

impl Parser<'_, '_> {
    /// `Dimension: score` lines, the last one per key winning. Returns the byte
    /// ranges of the lines used.
    pub(super) fn collect_lines(&self, reply: &str) -> (Found, Vec<Range<usize>>) {
        let mut found = Found::default();
        let mut overall_priority = u8::MAX;
        let mut used = Vec::new();
        let mut offset = 0;
        for line in reply.split_inclusive('\n') {
            let range = offset..offset + line.len();
            offset += line.len();
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('>') || self.in_material(trimmed) {
                continue;
            }
            let Some((label, value)) = split_score_line(trimmed) else {
                continue;
            };
            if leading_number(&value).is_none() {
                continue;
            }
            let raw = Raw::Text(value);
            match self.classify(&label) {
                Some(Field::Dim(i)) => {
                    found.dims.insert(i, raw);
                }
                Some(Field::Overall(p)) if p <= overall_priority => {
                    overall_priority = p;
                    found.overall = Some(raw);
                }
                Some(Field::Confidence) => found.confidence = Some(raw),
                _ => continue,
            }
            used.push(range);
        }
        (found, used)
    }

    fn in_material(&self, text: &str) -> bool {
        self.spec.quoted_material.iter().any(|m| m.contains(text))
    }
}

/// Split a `Label: value` line (markdown emphasis, bullets, headings, numbered
/// lists and table rows allowed) into its label and value.
fn split_score_line(line: &str) -> Option<(String, String)> {
    let cleaned: String = line.chars().filter(|c| !matches!(c, '*' | '`')).collect();
    let cleaned = cleaned.replace("__", "");
    let mut s = cleaned.trim();
    if s.starts_with('|') {
        let cells: Vec<&str> = s.split('|').map(str::trim).filter(|c| !c.is_empty()).collect();
        return match cells.as_slice() {
            [label, value, ..] => Some((strip_brackets(label), value.to_string())),
            _ => None,
        };
    }
    s = s.trim_start_matches('#').trim_start();
    for bullet in ["- ", "+ ", "• ", "– "] {
        if let Some(rest) = s.strip_prefix(bullet) {
            s = rest.trim_start();
            break;
        }
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if (1..3).contains(&digits)
        && let Some(rest) = s[digits..].strip_prefix(". ").or_else(|| s[digits..].strip_prefix(") "))
    {
        s = rest.trim_start();
    }
    let (pos, sep) = [":", "=", " - ", " – ", " — "]
        .iter()
        .filter_map(|sep| s.find(sep).map(|p| (p, *sep)))
        .min_by_key(|(p, _)| *p)?;
    let label = strip_brackets(&s[..pos]);
    if label.is_empty() || label.split_whitespace().count() > 6 {
        return None;
    }
    Some((label, s[pos + sep.len()..].trim().to_string()))
}

/// Remove `( … )` and `[ … ]` asides from a label.
fn strip_brackets(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    let mut depth = 0usize;
    for c in label.chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    out.trim().to_string()
}
