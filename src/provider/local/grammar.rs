//! What the embedded model's grammar-constrained objects are given rather
//! than made to write (see `docs/local-model.md`, *Constrained
//! evaluations*); the grammars themselves are [`crate::provider::gbnf`]'s.

use std::path::Path;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::sampling::LlamaSampler;
use serde_json::Value;

use super::prose::JsonStrings;
use super::sampling::accepts;
use super::worker::backend;
use crate::provider::{Echo, ProviderError};

use crate::provider::gbnf::object_keys;
pub use crate::provider::gbnf::schema_to_gbnf;
pub(super) use crate::provider::structured::json_reserve;
use crate::provider::structured::string_end;

/// Whether llama.cpp's grammar engine, with the vocabulary of the GGUF
/// model at `model_path`, reads `gbnf` and lets it write `text` whole (every
/// token of it, then the end). An error when the model cannot be read or
/// llama.cpp refuses the grammar. For checking the grammars moot sends to
/// llama.cpp servers against the engine they run.
pub fn grammar_accepts(model_path: &Path, gbnf: &str, text: &str) -> Result<bool, ProviderError> {
    let params = LlamaModelParams::default().with_vocab_only(true);
    let model = LlamaModel::load_from_file(backend()?, model_path, &params)
        .map_err(|e| ProviderError::Config(format!("cannot load {} as a GGUF model: {e}", model_path.display())))?;
    let mut grammar = LlamaSampler::grammar(&model, gbnf, "root")
        .map_err(|e| ProviderError::Config(format!("llama.cpp refuses the grammar: {e}")))?;
    let vocab = model.vocab();
    for token in vocab.tokenize(text.as_bytes(), false, false) {
        if !accepts(&mut grammar, token) {
            return Ok(false);
        }
        grammar.accept(token);
    }
    Ok(accepts(&mut grammar, vocab.eos()))
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

/// Where [`Echo`]'s members stand among a schema's [`member_openings`]:
/// `from` before `into`, whose value is a string. `None` otherwise (the
/// request's echo is then not followed).
pub(super) fn echo_members(schema: &Value, echo: &Echo) -> Option<(usize, usize)> {
    let keys = object_keys(schema)?;
    let at = |key: &str| keys.iter().position(|k| *k == key);
    let (from, into) = (at(&echo.from)?, at(&echo.into)?);
    let is_string = schema["properties"][&echo.into].get("type").and_then(Value::as_str) == Some("string");
    (from < into && is_string).then_some((from, into))
}

/// The value of the string member that `opening` begins (`"next": "`) in
/// `json`, the object written so far, as written (escapes kept), once its
/// closing quote is written.
pub(super) fn member_value<'j>(json: &'j str, opening: &str) -> Option<&'j str> {
    let value = &json[json.find(opening)? + opening.len()..];
    Some(&value[..string_end(value)?])
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
    // A string member's opening ends with its value's quote, or with the
    // words given after it (an [`Echo`]).
    let string = last.split_once("\": ").is_some_and(|(_, v)| v.starts_with('"'));
    place.top && place.members == openings.len() && string && value.is_some_and(|v| v.ends_with('"'))
}
