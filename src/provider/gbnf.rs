//! JSON schemas as GBNF grammars: moot's own conversion, for every schema
//! moot sends. The embedded model follows [`schema_to_gbnf`]'s grammar (see
//! `docs/local-model.md`, *Constrained evaluations*); a llama.cpp server is
//! sent [`lean_gbnf`]'s, which writes the same reply the embedded model
//! does — its words as one paragraph, then the object on a line of its own,
//! each string ending with its first finished sentence — as one grammar,
//! since a server cannot be steered token by token (see
//! `docs/scale.md`, *The HTTP path against the embedded model*).

use serde_json::Value;

use super::structured::DEFAULT_STRING_MAX;

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
    /// [`lean_gbnf`]'s form: one blank after each colon and comma and none
    /// elsewhere, and strings that end with their first finished sentence.
    lean: bool,
}

/// Fewest characters a string value holds before a finished sentence ends
/// it, in [`lean_gbnf`]'s strings: the embedded model's rule (it closes the
/// string there as it writes).
pub const STRING_SENTENCE_MIN: u64 = 40;

impl Rules {
    /// A new rule with `body`; its name.
    fn rule(&mut self, body: String) -> String {
        let name = format!("v{}", self.rules.len());
        self.rules.push(format!("{name} ::= {body}"));
        name
    }

    /// Blanks where JSON allows them.
    fn ws(&self) -> &'static str {
        if self.lean { "" } else { " ws" }
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
                if self.lean && min == 0 && max > STRING_SENTENCE_MIN {
                    // Closed at will before 40 characters; from the 40th on,
                    // the first `.`, `!` or `?` ends it. Never right after a
                    // blank: a quotation mark there opens a quotation in the
                    // model's words (`the question "Why`), which as the
                    // string's end would cut the words mid-sentence; left
                    // out, the model escapes it or writes on.
                    let head = STRING_SENTENCE_MIN - 1;
                    let rest = max - STRING_SENTENCE_MIN;
                    Some(format!(
                        "\"\\\"\" ((char{{0,{}}} solid)? | char{{{head}}} plain{{0,{rest}}} (plain-solid | [.!?])) \"\\\"\"",
                        head - 1
                    ))
                } else {
                    Some(format!("\"\\\"\" char{{{min},{max}}} \"\\\"\""))
                }
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
        let ws = self.ws();
        let (colon, comma) = if self.lean { ("\": \"", "\", \"") } else { ("ws \":\" ws", "\",\" ws") };
        let mut members = Vec::new();
        for key in object_keys(schema)? {
            let body = self.value(&props[key])?;
            let rule = self.rule(body);
            let key_literal = json_literal(&Value::String(key.to_string()));
            members.push(format!("{key_literal} {colon} {rule}"));
        }
        Some(format!("\"{{\"{ws} {}{ws} \"}}\"", members.join(&format!(" {comma} "))))
    }

    /// An array of `items`, with `minItems` and `maxItems` when given.
    fn array(&mut self, schema: &Value) -> Option<String> {
        let items = schema.get("items")?;
        let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = schema.get("maxItems").and_then(Value::as_u64);
        let ws = self.ws();
        let comma = if self.lean { "\", \"" } else { "\",\" ws" };
        if max.is_some_and(|max| max < min.max(1)) {
            return (max == Some(0) && min == 0).then(|| format!("\"[\"{ws} \"]\""));
        }
        let body = self.value(items)?;
        let item = self.rule(body);
        // The items after the first: at least min - 1, at most max - 1.
        let more = match max {
            Some(1) => String::new(),
            Some(max) => format!(" ({comma} {item}){{{},{}}}", min.saturating_sub(1), max - 1),
            None if min <= 1 => format!(" ({comma} {item})*"),
            None => format!(" ({comma} {item}){{{},}}", min - 1),
        };
        let list = format!("{item}{more}");
        Some(if min == 0 { format!("\"[\"{ws} ({list})?{ws} \"]\"") } else { format!("\"[\"{ws} {list}{ws} \"]\"") })
    }
}

/// An object schema's keys in the order its grammar writes them: those of
/// `required` first, in order, then the other properties.
pub fn object_keys(schema: &Value) -> Option<Vec<&str>> {
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

/// A rule for a JSON string's character, less the characters in `also_not`
/// (a GBNF class's contents): any character but a brace, a quotation
/// mark, a backslash or a control character, or an escape. No brace: a
/// model that wants to end the object while its string may not close yet
/// (after a blank, say) wrote one into the string (the 0.5B moderator's
/// reason "… is more important than the }").
fn char_rule(name: &str, also_not: &str) -> String {
    format!("{name} ::= [^{{}}{also_not}\"\\\\\\x7F\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{{4}})\n")
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
    grammar.push_str(&char_rule("char", ""));
    for rule in rules.rules {
        grammar.push_str(&rule);
        grammar.push('\n');
    }
    Some(grammar)
}

/// The words a [`lean_gbnf`] reply writes before its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prose {
    /// Fewest characters (the embedded model writes at least 32 tokens).
    pub min_chars: u64,
    /// Most characters: the reply's budget less the object's.
    pub max_chars: u64,
    /// The reply was given opening words ("Dana, I"): the words go on from
    /// them with a blank and a word, or an apostrophe ("I'm").
    pub after_opening: bool,
}

/// [`Prose::min_chars`] as moot sends it: about the embedded model's least
/// prose, 32 tokens.
pub const PROSE_MIN_CHARS: u64 = 100;

/// A grammar for the reply the embedded model writes for `schema`: with
/// `prose`, one paragraph of words (no line break, no `{`, no backtick: the
/// embedded model's words end where it opens the object or a code fence)
/// that ends with a finished sentence and a line break or two, then the
/// object; without, the object alone. The object is written compactly (one blank after each
/// colon and comma), and each string value (from its 40th character on) ends
/// with its first `.`, `!` or `?`, as the embedded model closes it. `None`
/// where [`schema_to_gbnf`] has none.
pub fn lean_gbnf(schema: &Value, prose: Option<Prose>) -> Option<String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let mut rules = Rules { lean: true, ..Rules::default() };
    let object = rules.object(schema)?;
    let mut grammar = match prose {
        Some(p) => {
            let min = p.min_chars.max(1);
            let max = p.max_chars.max(min + 1);
            // The first character after the opening words.
            let first = if p.after_opening { "([ ] [A-Za-z] | ['’] [a-z]) " } else { "" };
            format!(
                "root ::= prose \"\\n\" \"\\n\"? object\nprose ::= {first}word{{{},{}}} [.!?] [\"')”*]? \" \"?\n\
                 word ::= [^{{`\\n\\x00-\\x08\\x0B-\\x1F]\nobject ::= {object}\n",
                min - 1,
                max - 1
            )
        }
        None => format!("root ::= {object}\n"),
    };
    // `plain`: no sentence end; `solid`: no blank.
    for (name, also_not) in [("char", ""), ("plain", ".!?"), ("solid", " "), ("plain-solid", " .!?")] {
        grammar.push_str(&char_rule(name, also_not));
    }
    for rule in rules.rules {
        grammar.push_str(&rule);
        grammar.push('\n');
    }
    Some(grammar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval_schema() -> Value {
        json!({"type": "object",
               "properties": {"accuracy": {"type": "integer", "minimum": 1, "maximum": 5},
                              "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                              "justification": {"type": "string", "maxLength": 200}},
               "required": ["accuracy", "confidence", "justification"], "additionalProperties": false})
    }

    #[test]
    fn the_lean_grammar_writes_words_then_a_compact_object() {
        let p = Prose { min_chars: 100, max_chars: 900, after_opening: true };
        let g = lean_gbnf(&eval_schema(), Some(p)).unwrap();
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(lines[0], r#"root ::= prose "\n" "\n"? object"#, "{g}");
        assert_eq!(lines[1], r#"prose ::= ([ ] [A-Za-z] | ['’] [a-z]) word{99,899} [.!?] ["')”*]? " "?"#, "{g}");
        assert_eq!(lines[2], r"word ::= [^{`\n\x00-\x08\x0B-\x1F]", "{g}");
        assert_eq!(
            lines[3],
            r#"object ::= "{" "\"accuracy\"" ": " v0 ", " "\"confidence\"" ": " v1 ", " "\"justification\"" ": " v2 "}""#,
            "{g}"
        );
        assert!(
            g.contains(r#"v2 ::= "\"" ((char{0,38} solid)? | char{39} plain{0,160} (plain-solid | [.!?])) "\"""#),
            "{g}"
        );
        assert!(g.contains(r#"solid ::= [^{} "\\\x7F\x00-\x1F] | "\\" "#), "{g}");
        // Without words: the object alone.
        let g = lean_gbnf(&eval_schema(), None).unwrap();
        assert!(g.starts_with(r#"root ::= "{" "\"accuracy\"" ": " v0"#), "{g}");
        assert!(!g.contains("prose"), "{g}");
        assert_eq!(lean_gbnf(&json!({"type": "array"}), None), None);
        let g = lean_gbnf(&eval_schema(), Some(Prose { after_opening: false, ..p })).unwrap();
        assert!(g.contains("prose ::= word{99,899} [.!?]"), "{g}");
    }

    #[test]
    fn lean_arrays_are_compact_too() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 3},
            "b": {"type": "array", "items": {"type": "boolean"}, "maxItems": 0}}});
        let g = lean_gbnf(&schema, None).unwrap();
        assert!(g.contains(r#"v1 ::= "[" v0 (", " v0){0,2} "]""#), "{g}");
        assert!(g.contains(r#"v2 ::= "[" "]""#), "{g}");
    }
}
