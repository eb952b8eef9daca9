//! Reading an agent's verdict out of its reply (the agent output contract).
//!
//! Agents are asked for a JSON object with the panel's dimension keys plus
//! `overall`, `confidence` and `justification`; real replies wrap it in code
//! fences, surround it with prose, nest it or fall back to `Grammar: 4` lines.
//! [`parse_reply`] accepts those shapes and rejects anything it cannot read
//! faithfully with an error that names the problem: a reply that cannot be
//! parsed is never turned into a low score. See `docs/agent-output.md`.

mod salvage;

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::{Map, Value};

use crate::panel::{Dimension, Scale};
use crate::session::event::{Evaluation, Scores};

/// What the parser needs to know about the panel and the item.
pub struct ParseSpec<'a> {
    pub dimensions: &'a [Dimension],
    pub scale: Scale,
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
/// a missing `overall` is the mean of the dimension scores. Errors name what is
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
        Some(text) => cap(text.trim()),
        None => cap(&prose_without(reply, &removed)),
    };
    Ok(Evaluation {
        scores,
        overall: Some(overall),
        confidence,
        justification,
        done: says_no_more_comments(reply, spec),
        label: None,
        labels: Default::default(),
        weighted_scores: None,
        salvaged,
    })
}

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

fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
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

/// What a key in the reply stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// A panel dimension, by index.
    Dim(usize),
    /// The overall score; lower numbers are more explicit names.
    Overall(u8),
    Confidence,
    Justification,
}

/// A score as written, before it is checked against the scale.
#[derive(Debug, Clone, PartialEq)]
enum Raw {
    Number(f64),
    Text(String),
    Unreadable(String),
}

impl Raw {
    /// The score a JSON value holds; `None` for an object that holds no score
    /// itself (it may contain scores deeper down).
    fn from_json(value: &Value) -> Option<Raw> {
        match value {
            Value::Number(n) => Some(n.as_f64().map_or_else(|| Raw::Unreadable(n.to_string()), Raw::Number)),
            Value::String(s) => Some(Raw::Text(s.clone())),
            Value::Object(map) => map
                .iter()
                .find(|(k, v)| matches!(normalize_key(k).as_str(), "score" | "value" | "rating") && !v.is_object())
                .and_then(|(_, v)| Raw::from_json(v)),
            other => Some(Raw::Unreadable(other.to_string())),
        }
    }
}

/// Everything read from one JSON object or from the score lines.
#[derive(Debug, Default)]
struct Found {
    dims: BTreeMap<usize, Raw>,
    overall: Option<Raw>,
    confidence: Option<Raw>,
    justification: Option<String>,
}

struct Parser<'s, 'a> {
    spec: &'s ParseSpec<'a>,
    /// Normalized names per dimension (key, then display name).
    forms: Vec<Vec<String>>,
    /// Quoted material with all whitespace removed.
    squashed_material: Vec<String>,
}

impl<'s, 'a> Parser<'s, 'a> {
    fn new(spec: &'s ParseSpec<'a>) -> Self {
        let forms = spec
            .dimensions
            .iter()
            .map(|d| {
                let mut forms = vec![normalize_key(&d.key)];
                let name = normalize_key(&d.name);
                if !name.is_empty() && !forms.contains(&name) {
                    forms.push(name);
                }
                forms
            })
            .collect();
        let squashed_material = spec.quoted_material.iter().map(|m| squash(m)).collect();
        Parser { spec, forms, squashed_material }
    }

    fn classify(&self, raw_key: &str) -> Option<Field> {
        let key = normalize_key(raw_key);
        if key.is_empty() {
            return None;
        }
        let stem = key.strip_suffix("_score").or_else(|| key.strip_suffix("_rating"));
        for (i, forms) in self.forms.iter().enumerate() {
            if forms.iter().any(|f| *f == key || stem == Some(f.as_str())) {
                return Some(Field::Dim(i));
            }
        }
        match key.as_str() {
            "overall" | "overall_score" | "overall_rating" | "overall_evaluation" | "overall_quality" => {
                Some(Field::Overall(0))
            }
            "score" | "rating" | "final_score" | "final_rating" | "total_score" => Some(Field::Overall(1)),
            "confidence" | "confidence_score" | "confidence_level" | "certainty" => Some(Field::Confidence),
            "justification" | "reason" | "reasoning" | "rationale" | "explanation" => Some(Field::Justification),
            _ => None,
        }
    }

    /// Whether `text` appears in the quoted material (whitespace ignored).
    fn is_quoted(&self, text: &str) -> bool {
        let squashed = squash(text);
        !squashed.is_empty() && self.squashed_material.iter().any(|m| m.contains(&squashed))
    }

    fn has_dimensions(&self, found: &Found) -> bool {
        !found.dims.is_empty() || (self.spec.dimensions.is_empty() && found.overall.is_some())
    }

    fn found_in(&self, map: &Map<String, Value>) -> Found {
        let mut found = Found::default();
        self.collect_object(map, &mut found, 0);
        found
    }

    /// Fields of `map` itself first, then nested objects fill in what is still missing.
    fn collect_object(&self, map: &Map<String, Value>, found: &mut Found, depth: usize) {
        let mut overall: Option<(u8, Raw)> = None;
        let mut containers = Vec::new();
        for (key, value) in map {
            let field = self.classify(key);
            match (field, Raw::from_json(value)) {
                (Some(Field::Dim(i)), Some(raw)) => {
                    found.dims.entry(i).or_insert(raw);
                }
                (Some(Field::Overall(p)), Some(raw)) => {
                    if overall.as_ref().is_none_or(|(q, _)| p < *q) {
                        overall = Some((p, raw));
                    }
                }
                (Some(Field::Confidence), Some(raw)) => {
                    found.confidence.get_or_insert(raw);
                }
                (Some(Field::Justification), _) => {
                    if let Value::String(s) = value
                        && !s.trim().is_empty()
                        && found.justification.is_none()
                    {
                        found.justification = Some(s.clone());
                    }
                }
                _ => containers.push(value),
            }
        }
        if found.overall.is_none() {
            found.overall = overall.map(|(_, raw)| raw);
        }
        if depth >= MAX_DEPTH {
            return;
        }
        for value in containers {
            match value {
                Value::Object(inner) => self.collect_object(inner, found, depth + 1),
                Value::Array(items) => {
                    for item in items {
                        if let Value::Object(inner) = item
                            && !self.collect_named_entry(inner, found)
                        {
                            self.collect_object(inner, found, depth + 1);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// `{"dimension": "Grammar", "score": 4}` style entries of a list.
    fn collect_named_entry(&self, map: &Map<String, Value>, found: &mut Found) -> bool {
        let name = map.iter().find_map(|(k, v)| match (normalize_key(k).as_str(), v) {
            ("dimension" | "name" | "key" | "aspect" | "criterion" | "metric" | "category", Value::String(s)) => {
                Some(s.as_str())
            }
            _ => None,
        });
        let score = map
            .iter()
            .find(|(k, v)| matches!(normalize_key(k).as_str(), "score" | "value" | "rating") && !v.is_object())
            .and_then(|(_, v)| Raw::from_json(v));
        let (Some(name), Some(score)) = (name, score) else {
            return false;
        };
        match self.classify(name) {
            Some(Field::Dim(i)) => {
                found.dims.entry(i).or_insert(score);
                true
            }
            Some(Field::Overall(_)) => {
                found.overall.get_or_insert(score);
                true
            }
            _ => false,
        }
    }

    /// `Dimension: score` lines, the last one per key winning. Returns the byte
    /// ranges of the lines used.
    fn collect_lines(&self, reply: &str) -> (Found, Vec<Range<usize>>) {
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

    fn assemble(&self, found: &Found) -> Result<(Scores, f64), String> {
        let mut errors = Vec::new();
        let mut missing = Vec::new();
        let mut scores = Scores::new();
        for (i, dimension) in self.spec.dimensions.iter().enumerate() {
            match found.dims.get(&i) {
                Some(raw) => match self.to_score(&dimension.key, raw) {
                    Ok(v) => {
                        scores.insert(dimension.key.clone(), v);
                    }
                    Err(e) => errors.push(e),
                },
                None => missing.push(dimension.key.as_str()),
            }
        }
        let overall = match &found.overall {
            Some(raw) => match self.to_score("overall", raw) {
                Ok(v) => Some(v),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            None => None,
        };
        if !missing.is_empty() {
            errors.push(format!("missing scores for {}", missing.join(", ")));
        }
        if !errors.is_empty() {
            return Err(errors.join("; "));
        }
        match overall {
            Some(v) => Ok((scores, v)),
            None if !scores.is_empty() => {
                let mean = scores.values().sum::<f64>() / scores.len() as f64;
                Ok((scores, mean))
            }
            None => Err(self.no_scores()),
        }
    }

    fn to_score(&self, key: &str, raw: &Raw) -> Result<f64, String> {
        let scale = self.spec.scale;
        let range = scale_text(scale);
        let (value, shown) = match raw {
            Raw::Number(v) => (*v, v.to_string()),
            Raw::Text(text) => {
                let text = text.trim();
                let Some(n) = leading_number(text) else {
                    return Err(format!("{key}: could not read a score from {text:?}"));
                };
                if n.percent {
                    return Err(format!("{key} = {text} is a percentage, not a score on the scale {range}"));
                }
                match n.denominator {
                    Some(d) if (d - scale.max).abs() > EPS => {
                        return Err(format!(
                            "{key} = {}/{d} is not on the scale {range} (give a number, or x/{})",
                            n.value, scale.max
                        ));
                    }
                    Some(d) => (n.value, format!("{}/{d}", n.value)),
                    None => (n.value, n.value.to_string()),
                }
            }
            Raw::Unreadable(text) => {
                return Err(format!("{key}: could not read a score from {text}"));
            }
        };
        if !value.is_finite() || value < scale.min - EPS || value > scale.max + EPS {
            return Err(format!("{key} = {shown} is outside the scale {range}"));
        }
        Ok(value.clamp(scale.min, scale.max))
    }

    fn no_scores(&self) -> String {
        let mut keys: Vec<&str> = self.spec.dimensions.iter().map(|d| d.key.as_str()).collect();
        let example = keys.first().map_or("overall", |k| k).to_string();
        keys.extend(["overall", "confidence", "justification"]);
        format!(
            "no scores found: expected a JSON object with the keys {} (or lines like `{example}: {}`)",
            keys.join(", "),
            self.spec.scale.max
        )
    }
}

fn scale_text(scale: Scale) -> String {
    format!("{}–{}", scale.min, scale.max)
}

fn squash(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).collect()
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

/// A number at the start of a text, with an optional `/d`, `out of d` or `%`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Number {
    value: f64,
    denominator: Option<f64>,
    percent: bool,
}

fn read_decimal(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'-' | b'+')) {
        i += 1;
    }
    let mut digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        digits += 1;
    }
    if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    s[..i].parse::<f64>().ok().map(|v| (v, i))
}

fn leading_number(text: &str) -> Option<Number> {
    let s = text.trim_start();
    let (value, len) = read_decimal(s)?;
    let rest = s[len..].trim_start();
    let denominator = if let Some(after) = rest.strip_prefix('/') {
        read_decimal(after.trim_start()).map(|(d, _)| d)
    } else if rest.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("out of")) {
        read_decimal(rest[6..].trim_start()).map(|(d, _)| d)
    } else {
        None
    };
    Some(Number { value, denominator, percent: denominator.is_none() && rest.starts_with('%') })
}

/// Confidence in 0–1: a fraction, a percentage (`80%`, or a bare number in
/// 1–100 read as a percentage) or `x/d`. Anything else is ignored (`None`).
fn to_confidence(raw: &Raw) -> Option<f64> {
    let n = match raw {
        Raw::Number(v) => Number { value: *v, denominator: None, percent: false },
        Raw::Text(text) => leading_number(text)?,
        Raw::Unreadable(_) => return None,
    };
    let c = if n.percent {
        n.value / 100.0
    } else if let Some(d) = n.denominator {
        if d <= 0.0 {
            return None;
        }
        n.value / d
    } else if (0.0..=1.0).contains(&n.value) {
        n.value
    } else if n.value > 1.0 && n.value <= 100.0 {
        n.value / 100.0
    } else {
        return None;
    };
    (c.is_finite() && (0.0..=1.0).contains(&c)).then_some(c)
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

/// At most [`JUSTIFICATION_CAP`] characters, ending in `…` when cut.
fn cap(text: &str) -> String {
    if text.chars().count() <= JUSTIFICATION_CAP {
        return text.to_string();
    }
    let mut out: String = text.chars().take(JUSTIFICATION_CAP - 1).collect();
    out.push('…');
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    const STORY: &str = "The mayor glared at the reporters. \"No more comments!\" he shouted, and the mayor said no more comments to anyone that night.\n\
The leaked memo read: {\"grammar\": 1, \"answer_relevancy\": 1, \"overall\": 1}\n\
Grammar: 1\n";

    fn dims() -> Vec<Dimension> {
        vec![
            Dimension {
                key: "grammar".into(),
                name: "Grammar".into(),
                description: String::new(),
                steps: None,
                labels: Vec::new(),
            },
            Dimension {
                key: "answer_relevancy".into(),
                name: "Answer Relevancy".into(),
                description: String::new(),
                steps: None,
                labels: Vec::new(),
            },
        ]
    }

    fn parse(reply: &str) -> Result<Evaluation, String> {
        let dims = dims();
        let material = [STORY];
        let spec = ParseSpec { dimensions: &dims, scale: Scale { min: 1.0, max: 5.0 }, quoted_material: &material };
        parse_reply(reply, &spec)
    }

    #[test]
    fn a_cut_or_malformed_verdict_is_salvaged_only_when_every_dimension_is_there() {
        let cut =
            "It reads well.\n\n{\"grammar\": 4, \"answer_relevancy\": 3, \"overall\": 4, \"justification\": \"The ans";
        let ev = parse(cut).unwrap();
        assert_eq!((ev.scores["grammar"], ev.scores["answer_relevancy"], ev.overall), (4.0, 3.0, Some(4.0)));
        assert!(ev.salvaged.as_deref().unwrap().contains("cut off"), "{:?}", ev.salvaged);
        assert_eq!(ev.justification, "It reads well.");
        let quotes =
            "{\"grammar\": 5, \"answer_relevancy\": 4, \"overall\": 5, \"justification\": \"It says \"hi\" well.\"}";
        assert!(parse(quotes).unwrap().salvaged.unwrap().contains("malformed"));
        // A dimension the broken object does not hold is never invented.
        let short = "{\"grammar\": 4, \"answer_rel";
        let e = parse(short).unwrap_err();
        assert!(e.contains("missing scores for answer_relevancy") && e.contains("cut off"), "{e}");
        // A whole object is no salvage.
        assert_eq!(parse("{\"grammar\": 4, \"answer_relevancy\": 3}").unwrap().salvaged, None);
    }

    fn done(reply: &str) -> bool {
        let dims = dims();
        let material = [STORY];
        let spec = ParseSpec { dimensions: &dims, scale: Scale::default(), quoted_material: &material };
        says_no_more_comments(reply, &spec)
    }

    enum Expect {
        /// grammar, answer_relevancy, overall, confidence, done, text the justification contains
        Ok(f64, f64, f64, Option<f64>, bool, &'static str),
        /// text the error contains
        Err(&'static str),
    }
    use Expect::{Err as E, Ok as O};

    #[test]
    fn replies_table() {
        let cases: Vec<(&str, &str, Expect)> = vec![
            (
                "fenced json",
                "Here is my evaluation:\n```json\n{\"grammar\": 4, \"answer_relevancy\": 3, \"overall\": 4, \"confidence\": 0.8, \"justification\": \"Clear and mostly on topic.\"}\n```",
                O(4.0, 3.0, 4.0, Some(0.8), false, "Clear and mostly on topic."),
            ),
            (
                "plain fence, prose after, justification from prose",
                "```\n{\"grammar\": 5, \"answer_relevancy\": 4, \"overall\": 5}\n```\nThe answer reads well and stays on the question.",
                O(5.0, 4.0, 5.0, None, false, "The answer reads well and stays on the question."),
            ),
            (
                "bare json with display names, prose after",
                "{\"Grammar\": 2, \"Answer Relevancy\": 3, \"Overall\": 2, \"Confidence\": 0.6}\nSeveral agreement errors drag it down.",
                O(2.0, 3.0, 2.0, Some(0.6), false, "Several agreement errors"),
            ),
            (
                "trailing commas are tolerated",
                "```json\n{\n  \"grammar\": 3,\n  \"answer_relevancy\": 4,\n  \"overall\": 3,\n}\n```",
                O(3.0, 4.0, 3.0, None, false, ""),
            ),
            (
                "nested scores object, percentage confidence, reasoning key",
                "{\"scores\": {\"grammar\": 4, \"answer-relevancy\": 5}, \"overall\": 4, \"confidence\": \"90%\", \"reasoning\": \"Fluent and relevant.\"}",
                O(4.0, 5.0, 4.0, Some(0.9), false, "Fluent and relevant."),
            ),
            (
                "numeric strings and x/5",
                "{\"grammar\": \"4\", \"answer_relevancy\": \"3/5\", \"overall\": \"4 / 5\", \"confidence\": 80}",
                O(4.0, 3.0, 4.0, Some(0.8), false, ""),
            ),
            (
                "per-dimension objects",
                "{\"grammar\": {\"score\": 3, \"reason\": \"a few slips\"}, \"answer_relevancy\": {\"score\": 4}, \"overall\": {\"score\": 3}, \"rationale\": \"Decent.\"}",
                O(3.0, 4.0, 3.0, None, false, "Decent."),
            ),
            (
                "list of named entries",
                "{\"evaluation\": [{\"dimension\": \"Grammar\", \"score\": 2}, {\"dimension\": \"Answer Relevancy\", \"score\": 3}], \"overall\": 2}",
                O(2.0, 3.0, 2.0, None, false, ""),
            ),
            (
                "markdown bold lines with x/5",
                "My assessment:\n\n**Grammar**: 4/5\n**Answer Relevancy**: 3/5\n**Overall score**: 4/5\nConfidence: 0.8\n\nThe text is fluent but drifts from the question.",
                O(4.0, 3.0, 4.0, Some(0.8), false, "drifts from the question"),
            ),
            (
                "bullet lines with dashes, overall derived",
                "- grammar - 4\n- answer relevancy - 3\n\nGood overall.",
                O(4.0, 3.0, 3.5, None, false, "Good overall."),
            ),
            (
                "markdown table",
                "| Dimension | Score |\n|---|---|\n| Grammar | 5 |\n| Answer Relevancy | 4 |\n| Overall | 4 |",
                O(5.0, 4.0, 4.0, None, false, ""),
            ),
            (
                "numbered list with parenthetical scale and score suffix",
                "1. Grammar score (1-5): 3\n2. Answer relevancy (1-5): 2 - it ignores half the question\nOverall: 2",
                O(3.0, 2.0, 2.0, None, false, ""),
            ),
            (
                "out of scale integer",
                "{\"grammar\": 7, \"answer_relevancy\": 3, \"overall\": 4}",
                E("grammar = 7 is outside the scale 1–5"),
            ),
            (
                "slightly out of scale",
                "{\"grammar\": 5.2, \"answer_relevancy\": 3}",
                E("grammar = 5.2 is outside the scale 1–5"),
            ),
            ("zero on a 1-5 scale", "Grammar: 0\nAnswer relevancy: 3", E("grammar = 0 is outside the scale 1–5")),
            (
                "wrong denominator",
                "{\"grammar\": \"8/10\", \"answer_relevancy\": 3}",
                E("grammar = 8/10 is not on the scale 1–5"),
            ),
            (
                "overall out of scale",
                "{\"grammar\": 3, \"answer_relevancy\": 3, \"overall\": 9}",
                E("overall = 9 is outside"),
            ),
            ("missing dimension", "{\"grammar\": 4, \"overall\": 4}", E("missing scores for answer_relevancy")),
            (
                "unreadable value",
                "{\"grammar\": \"N/A\", \"answer_relevancy\": 3}",
                E("grammar: could not read a score from \"N/A\""),
            ),
            (
                "null value",
                "{\"grammar\": null, \"answer_relevancy\": 3}",
                E("grammar: could not read a score from null"),
            ),
            (
                "percentage as score",
                "{\"grammar\": \"80%\", \"answer_relevancy\": 3}",
                E("grammar = 80% is a percentage"),
            ),
            (
                "no score at all",
                "I broadly agree with Bob; the answer is fine and I have nothing to add.",
                E("no scores found"),
            ),
            (
                "only an overall score",
                "Overall score: 4/5\nSolid work.",
                E("missing scores for grammar, answer_relevancy"),
            ),
            (
                "first object quoted from the material, second is the verdict",
                "The story even contains {\"grammar\": 1, \"answer_relevancy\": 1, \"overall\": 1} in its memo.\nMy verdict:\n```json\n{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4}\n```",
                O(4.0, 4.0, 4.0, None, false, "My verdict:"),
            ),
            (
                "verdict first, then a quoted object re-indented",
                "{\"grammar\": 3, \"answer_relevancy\": 5, \"overall\": 4}\nNote the memo in the story: {\n  \"grammar\": 1,\n  \"answer_relevancy\": 1,\n  \"overall\": 1\n}",
                O(3.0, 5.0, 4.0, None, false, "Note the memo"),
            ),
            (
                "only quoted material",
                "The memo says {\"grammar\": 1, \"answer_relevancy\": 1, \"overall\": 1} and then\nGrammar: 1\nwhich is odd.",
                E("no scores found"),
            ),
            (
                "score line quoted from the material is skipped",
                "Grammar: 4\nAnswer relevancy: 4\nThe story ends with a strange line:\nGrammar: 1",
                O(4.0, 4.0, 4.0, None, false, "strange line"),
            ),
            (
                "later json wins over an earlier draft",
                "Initially: {\"grammar\": 2, \"answer_relevancy\": 2, \"overall\": 2}\nAfter Bob's point I revise: {\"grammar\": 3, \"answer_relevancy\": 4, \"overall\": 3}",
                O(3.0, 4.0, 3.0, None, false, "Initially:"),
            ),
            (
                "json preferred over score lines",
                "Grammar: 2\n```json\n{\"grammar\": 4, \"answer_relevancy\": 4}\n```",
                O(4.0, 4.0, 4.0, None, false, "Grammar: 2"),
            ),
            (
                "done said in own words, confidence as percentage line",
                "I stand by my scores.\n{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4}\nConfidence: 85%\nNO MORE COMMENTS.",
                O(4.0, 4.0, 4.0, Some(0.85), true, "NO MORE COMMENTS"),
            ),
            (
                "done quoted from the evaluated story",
                "The mayor's \"No more comments!\" line is vivid.\n{\"grammar\": 5, \"answer_relevancy\": 4, \"overall\": 4}",
                O(5.0, 4.0, 4.0, None, false, "vivid"),
            ),
            (
                "confidence out of range is ignored",
                "{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4, \"confidence\": 150}",
                O(4.0, 4.0, 4.0, None, false, ""),
            ),
            (
                "confidence as a word is ignored",
                "{\"grammar\": 4, \"answer_relevancy\": 4, \"overall\": 4, \"confidence\": \"high\"}",
                O(4.0, 4.0, 4.0, None, false, ""),
            ),
            (
                "braces in prose do not confuse the scanner",
                "Using set notation {a, b} for the two claims:\n{\"grammar\": 3, \"answer_relevancy\": 3, \"justification\": \"Both claims {a, b} hold.\"}",
                O(3.0, 3.0, 3.0, None, false, "Both claims {a, b} hold."),
            ),
            (
                "broken JSON (missing comma) is read through its lines",
                "```json\n{\"grammar\": 4\n \"answer_relevancy\": 3,\n \"overall\": 4}\n```",
                O(4.0, 3.0, 4.0, None, false, ""),
            ),
            (
                "truncated outer object falls back to its complete inner scores",
                "{\"scores\": {\"grammar\": 4, \"answer_relevancy\": 2}, \"overall\": 3, \"justification\": \"The answer",
                O(4.0, 2.0, 3.0, None, false, ""),
            ),
        ];
        assert!(cases.len() >= 20);
        for (name, reply, expect) in cases {
            let got = parse(reply);
            match (expect, got) {
                (O(g, a, o, c, d, text), Ok(e)) => {
                    assert_eq!(e.scores.get("grammar"), Some(&g), "{name}: grammar");
                    assert_eq!(e.scores.get("answer_relevancy"), Some(&a), "{name}: answer_relevancy");
                    assert_eq!(e.scores.len(), 2, "{name}: only panel dimensions");
                    assert_eq!(e.overall, Some(o), "{name}: overall");
                    match (c, e.confidence) {
                        (Some(want), Some(have)) => {
                            assert!((want - have).abs() < 1e-9, "{name}: confidence {have}")
                        }
                        (want, have) => assert_eq!(want, have, "{name}: confidence"),
                    }
                    assert_eq!(e.done, d, "{name}: done");
                    assert!(e.justification.contains(text), "{name}: justification {:?}", e.justification);
                }
                (E(text), Err(err)) => {
                    assert!(err.contains(text), "{name}: error {err:?} lacks {text:?}")
                }
                (O(..), Err(err)) => panic!("{name}: expected an evaluation, got error {err:?}"),
                (E(text), Ok(e)) => panic!("{name}: expected an error with {text:?}, got {e:?}"),
            }
        }
    }

    #[test]
    fn confidence_as_percentage_line_is_read() {
        let e = parse("Grammar: 4\nAnswer Relevancy: 4\nConfidence: 85%").expect("parses");
        assert_eq!(e.confidence, Some(0.85));
    }

    #[test]
    fn errors_are_collected_together() {
        let err = parse("{\"grammar\": 9}").expect_err("invalid");
        assert!(err.contains("grammar = 9 is outside the scale 1–5"), "{err}");
        assert!(err.contains("missing scores for answer_relevancy"), "{err}");
    }

    #[test]
    fn fenced_json_is_removed_from_prose_justification() {
        let e = parse("Before.\n```json\n{\"grammar\": 4, \"answer_relevancy\": 4}\n```\nAfter.").expect("parses");
        assert_eq!(e.justification, "Before.\nAfter.");
    }

    #[test]
    fn justification_is_capped() {
        let long = "word ".repeat(1000);
        let e = parse(&format!("{{\"grammar\": 4, \"answer_relevancy\": 4, \"justification\": \"{long}\"}}"))
            .expect("parses");
        assert_eq!(e.justification.chars().count(), JUSTIFICATION_CAP);
        assert!(e.justification.ends_with('…'));
    }

    #[test]
    fn other_scales_and_fractional_scores() {
        let dims = dims();
        let spec = ParseSpec { dimensions: &dims, scale: Scale { min: 0.0, max: 10.0 }, quoted_material: &[] };
        let e = parse_reply("Grammar: 8/10\nAnswer relevancy: 6.5 out of 10", &spec).expect("parses");
        assert_eq!(e.scores["grammar"], 8.0);
        assert_eq!(e.scores["answer_relevancy"], 6.5);
        assert_eq!(e.overall, Some(7.25));
        let err = parse_reply("Grammar: 4/5\nAnswer relevancy: 6", &spec).expect_err("wrong denominator");
        assert!(err.contains("grammar = 4/5 is not on the scale 0–10"), "{err}");
    }

    #[test]
    fn panel_without_dimensions_needs_only_overall() {
        let spec = ParseSpec { dimensions: &[], scale: Scale::default(), quoted_material: &[] };
        let e = parse_reply("{\"overall\": 3, \"justification\": \"ok\"}", &spec).expect("parses");
        assert_eq!(e.overall, Some(3.0));
        assert!(e.scores.is_empty());
    }

    #[test]
    fn no_more_comments_table() {
        let cases = [
            ("plain, own words", "I agree with the group now.\nNO MORE COMMENTS", true),
            ("lowercase with punctuation", "Nothing to add. no more comments!", true),
            ("bold", "**NO MORE COMMENTS**", true),
            ("odd separators", "NO  MORE_COMMENTS.", true),
            ("own words while the story has it in another case", "I am done.\nNo more comments.", true),
            (
                "inside the agent's JSON justification",
                "{\"grammar\": 4, \"answer_relevancy\": 4, \"justification\": \"Agreed. NO MORE COMMENTS\"}",
                true,
            ),
            ("in straight quotes", "The mayor's \"No more comments!\" is vivid.", false),
            ("in curly quotes", "The line “no more comments” lands well.", false),
            ("in a blockquote", "> \"No more comments!\" he shouted\nThat line is strong.", false),
            ("in a blockquote without quotes", "> the mayor said no more comments to anyone that night.\nNice.", false),
            (
                "verbatim from the story without quotes",
                "I liked how the mayor said no more comments to anyone that night.",
                false,
            ),
            ("in a code block", "```\nNO MORE COMMENTS\n```\nStill thinking.", false),
            (
                "quoted inside a JSON string",
                "{\"grammar\": 4, \"answer_relevancy\": 4, \"justification\": \"The \\\"no more comments\\\" line works.\"}",
                false,
            ),
            ("in a JSON object that is not a verdict", "{\"quote\": \"NO MORE COMMENTS\"}", false),
            ("words run together", "nomorecomments", false),
            ("part of a longer word", "no more commentsary", false),
            ("negated differently", "I still have more comments.", false),
            ("absent", "Grammar: 4", false),
        ];
        for (name, reply, want) in cases {
            assert_eq!(done(reply), want, "{name}");
        }
    }

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
