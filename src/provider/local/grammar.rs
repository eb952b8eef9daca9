//! JSON schemas as GBNF grammars for constrained replies: moot's own
//! conversion, for every schema moot sends (see `docs/local-model.md`,
//! *Constrained evaluations*).

use serde_json::Value;

use super::prose::JsonStrings;

pub(super) use crate::provider::structured::{DEFAULT_STRING_MAX, json_reserve};

/// A GBNF string literal for `s`.
fn gbnf_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// GBNF literal for the JSON encoding of a value.
fn json_literal(value: &Value) -> String {
    gbnf_literal(&value.to_string())
}

fn as_int(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    v.as_i64().or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 1e15).map(|f| f as i64))
}

/// The rules of a grammar under construction: `v0`, `v1`, … in the order
/// they are made.
#[derive(Default)]
struct Rules {
    rules: Vec<String>,
}

impl Rules {
    /// A new rule with `body`; its name.
    fn rule(&mut self, body: String) -> String {
        let name = format!("v{}", self.rules.len());
        self.rules.push(format!("{name} ::= {body}"));
        name
    }

    /// The grammar of a value of `schema`, as an expression, or `None` when
    /// the schema is outside the supported subset.
    fn value(&mut self, schema: &Value) -> Option<String> {
        if let Some(values) = schema.get("enum").and_then(Value::as_array) {
            if values.is_empty() {
                return None;
            }
            let alts: Vec<String> = values.iter().map(json_literal).collect();
            return Some(format!("({})", alts.join(" | ")));
        }
        match schema.get("type").and_then(Value::as_str)? {
            "integer" => {
                let lo = as_int(schema.get("minimum"));
                let hi = as_int(schema.get("maximum"));
                match (lo, hi) {
                    (Some(lo), Some(hi)) if lo <= hi && hi - lo <= 1000 => {
                        let alts: Vec<String> = (lo..=hi).rev().map(|n| format!("\"{n}\"")).collect();
                        Some(format!("({})", alts.join(" | ")))
                    }
                    _ => Some("(\"-\"? [0-9]{1,12})".to_string()),
                }
            }
            "number" => {
                let lo = as_int(schema.get("minimum"));
                let hi = as_int(schema.get("maximum"));
                match (lo, hi) {
                    (Some(lo), Some(hi)) if 0 <= lo && lo <= hi && hi - lo <= 1000 => {
                        // lo ≤ x < hi with up to three decimals, or exactly hi.
                        let mut alts: Vec<String> =
                            (lo..hi).rev().map(|n| format!("\"{n}\" (\".\" [0-9]{{1,3}})?")).collect();
                        alts.insert(0, format!("\"{hi}\" (\".\" \"0\"{{1,3}})?"));
                        Some(format!("({})", alts.join(" | ")))
                    }
                    _ => Some("(\"-\"? [0-9]{1,12} (\".\" [0-9]{1,6})?)".to_string()),
                }
            }
            "string" => {
                let min = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
                let max = schema.get("maxLength").and_then(Value::as_u64).unwrap_or(DEFAULT_STRING_MAX).max(min);
                Some(format!("\"\\\"\" char{{{min},{max}}} \"\\\"\""))
            }
            "boolean" => Some("(\"true\" | \"false\")".to_string()),
            "object" => self.object(schema),
            "array" => self.array(schema),
            _ => None,
        }
    }

    /// An object: every property, those of `required` first, in order.
    fn object(&mut self, schema: &Value) -> Option<String> {
        let props = schema.get("properties")?.as_object()?;
        if props.is_empty() {
            return None;
        }
        let mut members = Vec::new();
        for key in object_keys(schema)? {
            let body = self.value(&props[key])?;
            let rule = self.rule(body);
            let key_literal = json_literal(&Value::String(key.to_string()));
            members.push(format!("{key_literal} ws \":\" ws {rule}"));
        }
        Some(format!("\"{{\" ws {} ws \"}}\"", members.join(" \",\" ws ")))
    }

    /// An array of `items`, with `minItems` and `maxItems` when given.
    fn array(&mut self, schema: &Value) -> Option<String> {
        let items = schema.get("items")?;
        let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = schema.get("maxItems").and_then(Value::as_u64);
        if max.is_some_and(|max| max < min.max(1)) {
            return (max == Some(0) && min == 0).then(|| "\"[\" ws \"]\"".to_string());
        }
        let body = self.value(items)?;
        let item = self.rule(body);
        // The items after the first: at least min - 1, at most max - 1.
        let more = match max {
            Some(1) => String::new(),
            Some(max) => format!(" (\",\" ws {item}){{{},{}}}", min.saturating_sub(1), max - 1),
            None if min <= 1 => format!(" (\",\" ws {item})*"),
            None => format!(" (\",\" ws {item}){{{},}}", min - 1),
        };
        let list = format!("{item}{more}");
        Some(if min == 0 { format!("\"[\" ws ({list})? ws \"]\"") } else { format!("\"[\" ws {list} ws \"]\"") })
    }
}

/// An object schema's keys in the order its grammar writes them: those of
/// `required` first, in order, then the other properties.
fn object_keys(schema: &Value) -> Option<Vec<&str>> {
    let props = schema.get("properties")?.as_object()?;
    let mut keys: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).filter(|k| props.contains_key(*k)).collect())
        .unwrap_or_default();
    for key in props.keys() {
        if !keys.contains(&key.as_str()) {
            keys.push(key);
        }
    }
    Some(keys)
}

/// How each member of a schema's top-level object begins, in order: its
/// key, the colon and a blank, and the opening quote of a string value
/// (`"justification": "`). The grammar leaves the model no other choice
/// there but blanks, so the reply is given this text rather than made to
/// write it a token a step (see [`forced_text`]).
pub(super) fn member_openings(schema: &Value) -> Vec<String> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else { return Vec::new() };
    let is_string = |v: &Value| {
        v.get("type").and_then(Value::as_str) == Some("string")
            || v.get("enum").and_then(Value::as_array).is_some_and(|e| !e.is_empty() && e.iter().all(Value::is_string))
    };
    object_keys(schema)
        .unwrap_or_default()
        .into_iter()
        .map(|key| {
            let quote = if is_string(&props[key]) { "\"" } else { "" };
            format!("{}: {quote}", Value::String(key.to_string()))
        })
        .collect()
}

/// Where `json`, a JSON object being written, stands at its top level.
struct Place<'j> {
    /// Members begun (the first with the object's brace).
    members: usize,
    /// The text after the last top-level `{` or `,`; `None` before the
    /// object's brace.
    tail: Option<&'j str>,
    /// Whether it ends at the top level of the object, outside a string.
    top: bool,
}

fn place(json: &str) -> Place<'_> {
    let (mut depth, mut strings) = (0usize, JsonStrings::default());
    let (mut members, mut after) = (0usize, None);
    for (i, c) in json.char_indices() {
        if strings.take(c) {
            continue;
        }
        match c {
            '{' | '[' => {
                depth += 1;
                if depth == 1 {
                    members = 1;
                    after = Some(i + 1);
                }
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => {
                members += 1;
                after = Some(i + 1);
            }
            _ => {}
        }
    }
    Place { members, tail: after.map(|a| &json[a..]), top: depth == 1 && !strings.inside }
}

/// The text the grammar forces next on `json`, the object written so far,
/// given its [`member_openings`]: at the start, the brace and the first
/// member's opening; after a member's comma (and any blanks), the rest of
/// the next member's opening. `None` anywhere else (inside a value or a
/// nested object, after the last member), and where the text does not
/// follow the openings (the grammar then keeps the model to what it
/// allows).
pub(super) fn forced_text(json: &str, openings: &[String]) -> Option<String> {
    if json.trim().is_empty() {
        return openings.first().map(|first| format!("{{{first}"));
    }
    let place = place(json);
    let opening = openings.get(place.members.checked_sub(1)?)?;
    let tail = place.tail?;
    let written = tail.trim_start();
    if written.len() >= opening.len() || !opening.starts_with(written) {
        return None;
    }
    // A blank after a member's comma, as a model writes it.
    let blank = if tail.is_empty() && place.members > 1 { " " } else { "" };
    Some(format!("{blank}{}", &opening[written.len()..]))
}

/// Whether `json` has just closed the string value of the object's last
/// member, so that only the object's closing brace may follow.
pub(super) fn closes_object(json: &str, openings: &[String]) -> bool {
    let place = place(json);
    let (Some(last), Some(tail)) = (openings.last(), place.tail) else { return false };
    let value = tail.trim_start().strip_prefix(last.as_str());
    place.top && place.members == openings.len() && last.ends_with('"') && value.is_some_and(|v| v.ends_with('"'))
}

/// A GBNF grammar for a JSON object schema. Properties may be integers or
/// numbers (ranges enforced when `minimum` and `maximum` are integers),
/// strings (length bounded by `maxLength`, 400 by default), booleans, enums,
/// objects of the same kinds, or arrays of them (`minItems` and `maxItems`
/// enforced). An object's keys come in the order of `required`, then its
/// other properties; every key is written. `None` for anything else (an
/// object without properties, an array without `items`, `oneOf`, …): the
/// local model then refuses the request, saying so.
pub fn schema_to_gbnf(schema: &Value) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let mut rules = Rules::default();
    let root = rules.object(schema)?;
    let mut grammar = format!("root ::= {root}\n");
    grammar.push_str("ws ::= (\"\\n\" \" \"{0,4} | \" \")?\n");
    grammar.push_str("char ::= [^\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4})\n");
    for rule in rules.rules {
        grammar.push_str(&rule);
        grammar.push('\n');
    }
    Some(grammar)
}
