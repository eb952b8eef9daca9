//! Structured output for HTTP providers.
//!
//! A verdict's JSON schema (scores per dimension, labels, …) constrains the
//! embedded model through a grammar; an HTTP server constrains its reply
//! when asked in its own form: OpenAI-style `response_format` with
//! `json_schema` (OpenAI, vLLM, SGLang, llama.cpp's server, Ollama's
//! OpenAI endpoint), `json_object` with the schema in the prompt, or, for
//! Anthropic, a forced tool call whose input is the verdict.
//!
//! A constrained reply is JSON from its first character, so the speech an
//! agent would write before its verdict becomes the schema's first field,
//! `speech` ([`speech_schema`]). [`SpeechSplitter`] turns the streamed JSON
//! back into what every other provider returns: the speech as prose while it
//! streams, then the verdict's other fields as one JSON object. The engine,
//! the screens and the session log see the same shape whatever the backend.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Longest JSON string a schema allows when it gives no `maxLength`.
pub const DEFAULT_STRING_MAX: u64 = 400;

/// The field of a constrained reply that holds the speech.
pub const SPEECH: &str = "speech";

/// Where a JSON string closes: the byte offset in `body`, the text just
/// after the string's opening quote, of its first quote that no backslash
/// escapes; `None` while the string is still open.
pub fn string_end(body: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => return Some(i),
            _ => {}
        }
    }
    None
}

/// Which structured-output form a provider is sent (`structured_output` in
/// `moot.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutput {
    /// The best form the server accepts: `json_schema`, then `json_object`,
    /// then none, each fallback taken once on a refusal and remembered
    /// (Anthropic: `tool`).
    #[default]
    Auto,
    JsonSchema,
    JsonObject,
    Tool,
    Off,
}

impl StructuredOutput {
    pub const ALL: [StructuredOutput; 5] = [
        StructuredOutput::Auto,
        StructuredOutput::JsonSchema,
        StructuredOutput::JsonObject,
        StructuredOutput::Tool,
        StructuredOutput::Off,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StructuredOutput::Auto => "auto",
            StructuredOutput::JsonSchema => "json_schema",
            StructuredOutput::JsonObject => "json_object",
            StructuredOutput::Tool => "tool",
            StructuredOutput::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

/// Tokens kept back from a reply's budget for a schema's JSON object: the
/// keys and numbers, and its strings at their `maxLength` (about three
/// characters a token).
pub fn json_reserve(schema: &Value) -> u32 {
    let props = schema.get("properties").and_then(Value::as_object);
    let count = props.map_or(0, |p| p.len() as u32);
    let strings: u64 = props
        .map(|p| {
            p.values()
                .filter(|v| v.get("type").and_then(Value::as_str) == Some("string") && v.get("enum").is_none())
                .map(|v| v.get("maxLength").and_then(Value::as_u64).unwrap_or(DEFAULT_STRING_MAX))
                .sum()
        })
        .unwrap_or(0);
    32 + 8 * count + u32::try_from(strings / 3).unwrap_or(u32::MAX)
}

/// Shortest speech a constrained reply is allowed, in characters, however
/// small its token budget.
const MIN_SPEECH_CHARS: u64 = 200;

/// The verdict's object schema with a `speech` string as its first property,
/// as JSON text (property order is kept: servers generate fields in the
/// order the schema lists them). The speech may take what `max_tokens`
/// leaves after the verdict's fields; the verdict's own strings get a
/// `maxLength` when they have none, so that they cannot use the speech's
/// room. `None` when `schema` is not an object schema. Without `speech` (a
/// request that wants its verdict at once: see
/// [`ChatRequest::prose_first`](super::ChatRequest::prose_first)), the
/// verdict's fields alone.
pub fn speech_schema(schema: &Value, max_tokens: u32, speech: bool) -> Option<String> {
    let object = schema.as_object()?;
    if object.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let props = object.get("properties").and_then(Value::as_object)?;
    let mut capped = Map::new();
    for (key, prop) in props {
        let mut prop = prop.clone();
        if let Some(p) = prop.as_object_mut()
            && p.get("type").and_then(Value::as_str) == Some("string")
            && !p.contains_key("enum")
            && !p.contains_key("maxLength")
        {
            p.insert("maxLength".into(), Value::from(DEFAULT_STRING_MAX));
        }
        capped.insert(key.clone(), prop);
    }
    let reserve = json_reserve(&serde_json::json!({ "properties": capped.clone() }));
    let speech_chars = (u64::from(max_tokens.saturating_sub(reserve)) * 3).max(MIN_SPEECH_CHARS);
    let mut out = String::from("{\"type\":\"object\",\"properties\":{");
    let mut required = Vec::new();
    if speech {
        let _ = write!(out, "\"{SPEECH}\":{{\"type\":\"string\",\"maxLength\":{speech_chars}}},");
        required.push(Value::from(SPEECH));
    }
    for (key, prop) in &capped {
        let _ = write!(out, "{}:{},", Value::from(key.as_str()), prop);
    }
    if out.ends_with(',') {
        out.pop();
    }
    out.push_str("},\"required\":[");
    required.extend(object.get("required").and_then(Value::as_array).into_iter().flatten().cloned());
    out.push_str(&required.iter().map(Value::to_string).collect::<Vec<_>>().join(","));
    out.push_str("],\"additionalProperties\":false}");
    Some(out)
}

/// What a request whose reply is constrained to `schema` (a
/// [`speech_schema`]) adds to its last message; `in_prompt` when the server
/// is not given the schema itself.
pub fn instruction(schema: &str, in_prompt: bool, speech: bool) -> String {
    let mut s = String::from(if speech {
        "Write your whole reply as one JSON object. Its first field, \"speech\", holds everything you would say \
         before your verdict, as plain prose; the fields after it hold the verdict asked for above."
    } else {
        "Write your whole reply as one JSON object holding the verdict asked for above, and nothing else."
    });
    if in_prompt {
        let _ = write!(s, " The object must follow this JSON schema: {schema}");
    }
    s
}

/// Where a [`SpeechSplitter`] stands in the reply.
#[derive(Debug, Clone, PartialEq)]
enum State {
    /// Before `{"speech":"` is complete.
    Opening,
    /// Inside the speech string.
    Speech,
    /// After a backslash in the speech.
    Escape,
    /// Inside a `\uXXXX` escape: the hex digits so far.
    Unicode(String),
    /// After the speech string: the rest of the object is kept for the end.
    Rest,
    /// The reply is an object that does not start with the speech: it is
    /// kept whole for the end.
    Whole,
    /// The reply is no JSON object (a server that ignored the request for
    /// structured output): it passes on as it is.
    Prose,
}

/// Turns a streamed JSON reply `{"speech": "…", <verdict fields>}` into the
/// speech as prose, streamed as it arrives, then (at [`SpeechSplitter::finish`])
/// a blank line and the verdict's fields as one JSON object.
///
/// An object that does not open with the speech is kept whole and
/// rearranged at the end when it parses; a reply that is no object passes on
/// as it is; a reply cut off is passed on as far as it got (the speech, then
/// `{` and the fields written before the cut), so that the parser can report
/// or salvage it.
#[derive(Debug, Clone)]
pub struct SpeechSplitter {
    state: State,
    /// The opening seen so far, blanks left out.
    opening: String,
    /// Everything received, for a reply that turns out not to fit.
    raw: String,
    rest: String,
    /// A high surrogate waiting for its pair.
    high: Option<u16>,
}

const OPENING: &str = "{\"speech\":\"";

impl Default for SpeechSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl SpeechSplitter {
    pub fn new() -> Self {
        Self { state: State::Opening, opening: String::new(), raw: String::new(), rest: String::new(), high: None }
    }

    /// Take a chunk of the reply; returns the prose to pass on now.
    pub fn push(&mut self, chunk: &str) -> String {
        if self.state == State::Prose {
            return chunk.to_owned();
        }
        self.raw.push_str(chunk);
        let mut out = String::new();
        for c in chunk.chars() {
            match &mut self.state {
                State::Opening => {
                    if c.is_whitespace() {
                        continue;
                    }
                    self.opening.push(c);
                    if self.opening.len() == 1 && c != '{' {
                        // Nothing was passed on yet: all of it, and what follows.
                        self.state = State::Prose;
                        return std::mem::take(&mut self.raw);
                    }
                    if self.opening == OPENING {
                        self.state = State::Speech;
                    } else if !OPENING.starts_with(&self.opening) {
                        self.state = State::Whole;
                    }
                }
                State::Speech => match c {
                    '\\' => self.state = State::Escape,
                    '"' => self.state = State::Rest,
                    c => self.emit(c, &mut out),
                },
                State::Escape => {
                    self.state = State::Speech;
                    match c {
                        'n' => self.emit('\n', &mut out),
                        't' => self.emit('\t', &mut out),
                        'r' | 'b' | 'f' => {}
                        'u' => self.state = State::Unicode(String::new()),
                        c => self.emit(c, &mut out),
                    }
                }
                State::Unicode(hex) => {
                    hex.push(c);
                    if hex.len() == 4 {
                        let code = u16::from_str_radix(hex, 16).ok();
                        self.state = State::Speech;
                        match code {
                            Some(h @ 0xD800..=0xDBFF) => self.high = Some(h),
                            Some(l @ 0xDC00..=0xDFFF) => {
                                if let Some(h) = self.high.take()
                                    && let Some(ch) = char::decode_utf16([h, l]).next().and_then(Result::ok)
                                {
                                    out.push(ch);
                                }
                            }
                            Some(u) => self.emit(char::from_u32(u32::from(u)).unwrap_or('\u{fffd}'), &mut out),
                            None => {}
                        }
                    }
                }
                State::Rest => self.rest.push(c),
                State::Whole | State::Prose => {}
            }
        }
        out
    }

    fn emit(&mut self, c: char, out: &mut String) {
        self.high = None;
        out.push(c);
    }

    /// The end of the reply: what is still to pass on.
    pub fn finish(self) -> String {
        match self.state {
            State::Rest => {
                let rest = self.rest.trim().trim_start_matches(',').trim_start();
                match serde_json::from_str::<Map<String, Value>>(&format!("{{{rest}")) {
                    Ok(fields) if fields.is_empty() => String::new(),
                    Ok(fields) => format!("\n\n{}", Value::Object(fields)),
                    // Cut off or malformed: as far as it got, for the parser.
                    Err(_) if rest.is_empty() => String::new(),
                    Err(_) => format!("\n\n{{{rest}"),
                }
            }
            State::Opening | State::Whole => match serde_json::from_str::<Map<String, Value>>(self.raw.trim()) {
                Ok(mut fields) => {
                    let speech = match fields.remove(SPEECH) {
                        Some(Value::String(s)) => s,
                        _ => String::new(),
                    };
                    match (speech.is_empty(), fields.is_empty()) {
                        (_, true) => speech,
                        (true, false) => Value::Object(fields).to_string(),
                        (false, false) => format!("{speech}\n\n{}", Value::Object(fields)),
                    }
                }
                Err(_) => self.raw,
            },
            // Cut off inside the speech, or prose: it has all been passed on.
            State::Speech | State::Escape | State::Unicode(_) | State::Prose => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn split(chunks: &[&str]) -> String {
        let mut s = SpeechSplitter::new();
        let mut out: String = chunks.iter().map(|c| s.push(c)).collect();
        out.push_str(&s.finish());
        out
    }

    #[test]
    fn a_string_ends_at_its_first_quote_no_backslash_escapes() {
        assert_eq!(string_end(r#"Ann"s"#), Some(3));
        assert_eq!(string_end(r#"say \"hi\" now", "x""#), Some(14));
        assert_eq!(string_end(r#"a backslash \\"#), None, "the quote after an escaped backslash is still to come");
        assert_eq!(string_end(r#"ends \\"x"#), Some(7), "an escaped backslash does not escape the quote");
        assert_eq!(string_end("still open \\"), None);
    }

    fn schema() -> Value {
        json!({"type": "object",
               "properties": {"grammar": {"type": "integer"}, "justification": {"type": "string"}},
               "required": ["grammar", "justification"], "additionalProperties": false})
    }

    #[test]
    fn the_speech_comes_first_and_the_verdicts_strings_are_capped() {
        let text = speech_schema(&schema(), 600, true).unwrap();
        assert!(text.starts_with("{\"type\":\"object\",\"properties\":{\"speech\":"), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["required"], json!(["speech", "grammar", "justification"]));
        assert_eq!(v["properties"]["justification"]["maxLength"], json!(400));
        // 600 tokens less the verdict's reserve (32 + 8 per field + 400 / 3 for
        // the justification = 181), three characters a token.
        assert_eq!(v["properties"]["speech"]["maxLength"], json!((600 - 181) * 3));
        assert_eq!(speech_schema(&json!({"type": "array"}), 600, true), None);
        // A small budget still leaves the speech some room.
        let small: Value = serde_json::from_str(&speech_schema(&schema(), 10, true).unwrap()).unwrap();
        assert_eq!(small["properties"]["speech"]["maxLength"], json!(200));
        // A verdict wanted at once has no speech.
        let at_once: Value = serde_json::from_str(&speech_schema(&schema(), 600, false).unwrap()).unwrap();
        assert_eq!(at_once["required"], json!(["grammar", "justification"]));
        assert!(at_once["properties"].get("speech").is_none() && at_once["properties"].get("grammar").is_some());
    }

    #[test]
    fn the_speech_streams_as_prose_and_the_verdict_follows() {
        let reply =
            r#"{"speech": "Tom \"likes\" it.\nNext line \u00e9 \ud83d\ude00", "grammar": 4, "justification": "ok"}"#;
        let whole = split(&[reply]);
        assert_eq!(whole, "Tom \"likes\" it.\nNext line é 😀\n\n{\"grammar\":4,\"justification\":\"ok\"}");
        // Split anywhere, even inside escapes: the same text.
        let chars: Vec<char> = reply.chars().collect();
        for cut in 1..chars.len() {
            let a: String = chars[..cut].iter().collect();
            let b: String = chars[cut..].iter().collect();
            assert_eq!(split(&[&a, &b]), whole, "cut at {cut}");
        }
        let mut s = SpeechSplitter::new();
        assert_eq!(s.push("{\"speech\":\"Hel"), "Hel", "prose passes on as it arrives");
        assert_eq!(s.push("lo\", \"grammar\""), "lo");
    }

    #[test]
    fn a_cut_or_foreign_reply_is_passed_on_as_far_as_it_got() {
        assert_eq!(split(&["{\"speech\": \"I think", " it is good"]), "I think it is good");
        assert_eq!(split(&["{\"speech\": \"Fine.\", \"grammar\": 4, \"justif"]), "Fine.\n\n{\"grammar\": 4, \"justif");
        assert_eq!(split(&["{\"grammar\": 4, \"speech\": \"Late.\"}"]), "Late.\n\n{\"grammar\":4}");
        assert_eq!(split(&["{\"grammar\": 3}"]), "{\"grammar\":3}");
        assert_eq!(split(&["No JSON at all."]), "No JSON at all.");
        let mut s = SpeechSplitter::new();
        assert_eq!(s.push("  Plain"), "  Plain", "prose from a server that ignored the schema streams on");
        assert_eq!(s.push(" words {\"grammar\": 4}"), " words {\"grammar\": 4}");
        assert_eq!(s.finish(), "");
    }

    #[test]
    fn names_round_trip() {
        for f in StructuredOutput::ALL {
            assert_eq!(StructuredOutput::parse(f.as_str()), Some(f));
        }
        assert_eq!(StructuredOutput::parse("json"), None);
    }
}
