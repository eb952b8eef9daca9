//! What is wrong with one line of a session log, said the same way by every
//! reader: `FILE:LINE: TYPE.FIELD.PATH: expected …, found …`.
//!
//! [`diagnose`] looks at a line that did not read as an [`Event`] and names
//! the event type, the field inside the event and what was expected there.
//! Events are an internally tagged enum flattened into the line, which
//! serde reads through a buffer that forgets where it is (the field paths
//! `serde_path_to_error` reports inside such an event are all `.`); the
//! field is found by [`locate`] instead, which reads pruned copies of the
//! line until the same error appears.

mod locate;

use std::fmt;
use std::path::Path;
use std::sync::{Arc, OnceLock};

use serde::Deserialize;
use serde_json::Value;

use super::event::{Event, EventKind};

/// One line of a log that could not be used, and where it is.
#[derive(Debug, Clone, PartialEq)]
pub struct LogProblem {
    /// The log file; empty when the bytes did not come from a file.
    pub file: Arc<Path>,
    /// 1-based line number.
    pub line: usize,
    /// The line's `type`, when it has a string one.
    pub event_type: Option<Box<str>>,
    /// The field inside the event, as `evaluation.scores.grammar` or
    /// `agents[1].model`; empty when the problem is the whole line.
    pub field: String,
    pub what: What,
}

/// What is wrong with a line.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// The line is not JSON; the column is 1-based.
    NotJson { column: usize, message: String },
    /// The line is JSON but not an object.
    NotAnObject { found: String },
    /// The object has no `type` field.
    NoType,
    /// The `type` names no event this version of moot knows.
    UnknownType { name: String, suggestion: Option<String> },
    /// A value of the wrong type or out of its range.
    Wrong { expected: String, found: String },
    /// A required field is absent.
    Missing,
    /// Anything else serde refused, in its words.
    Invalid { message: String },
    /// The last line has no `\n`: the log was cut while it was being written.
    Torn { bytes: usize },
}

impl LogProblem {
    /// A problem of the whole line at `file:line`.
    pub fn new(file: &Path, line: usize, what: What) -> Self {
        Self { file: Arc::from(file), line, event_type: None, field: String::new(), what }
    }

    /// An unterminated last line of `bytes` bytes.
    pub fn torn(file: &Path, line: usize, bytes: usize) -> Self {
        Self::new(file, line, What::Torn { bytes })
    }

    /// Whether this is a cut last line, the mark of a crash rather than of damage.
    pub fn is_torn(&self) -> bool {
        matches!(self.what, What::Torn { .. })
    }

    /// `TYPE.FIELD.PATH`: the event type and the field, as far as they are known.
    pub fn location(&self) -> String {
        match (&self.event_type, self.field.is_empty()) {
            (Some(t), true) => t.to_string(),
            (Some(t), false) if self.field.starts_with('[') => format!("{t}{}", self.field),
            (Some(t), false) => format!("{t}.{}", self.field),
            (None, false) => self.field.clone(),
            (None, true) => String::new(),
        }
    }

    /// The problem without its file and line: `TYPE.FIELD: expected …, found …`.
    pub fn message(&self) -> String {
        let at = self.location();
        let at = if at.is_empty() { String::new() } else { format!("{at}: ") };
        match &self.what {
            What::NotJson { column, message } => format!("not JSON at column {column}: {message}"),
            What::NotAnObject { found } => format!("expected an event (a JSON object), found {found}"),
            What::NoType => "type: expected an event type, found none (every line needs a \"type\")".into(),
            What::UnknownType { name, suggestion } => {
                let hint = suggestion.as_ref().map(|s| format!("; did you mean \"{s}\"?")).unwrap_or_default();
                format!("type: \"{name}\" is not an event type this version of moot knows{hint}")
            }
            What::Wrong { expected, found } => format!("{at}expected {expected}, found {found}"),
            What::Missing => format!("{at}expected a value, found none (the field is required)"),
            What::Invalid { message } => format!("{at}{message}"),
            What::Torn { bytes } => {
                format!("ignored an incomplete last line ({bytes} bytes): the log was cut while being written")
            }
        }
    }
}

impl fmt::Display for LogProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.as_os_str().is_empty() {
            write!(f, "line {}: {}", self.line, self.message())
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.message())
        }
    }
}

impl std::error::Error for LogProblem {}

/// The fields every line carries besides its payload. A plain struct, so
/// `serde_path_to_error` names the failing field.
#[derive(Deserialize)]
struct Envelope {
    #[allow(dead_code)]
    seq: u64,
    #[allow(dead_code)]
    t: chrono::DateTime<chrono::Utc>,
}

/// Why `line`, which did not read as an [`Event`] (`error`), is not one.
pub fn diagnose(file: &Path, line_no: usize, line: &[u8], error: &serde_json::Error) -> LogProblem {
    let at = |what| LogProblem::new(file, line_no, what);
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return at(What::NotJson { column: e.column(), message: bare_message(&e) }),
    };
    let Some(object) = value.as_object() else {
        return at(What::NotAnObject { found: found(&value) });
    };
    let name = match object.get("type") {
        None => return at(What::NoType),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            let mut p = at(What::Wrong { expected: "a string naming the event type".into(), found: found(other) });
            p.field = "type".into();
            return p;
        }
    };
    let known = known_types();
    if !known.is_empty() && !known.contains(&name) {
        let suggestion = closest_type(&name);
        return at(What::UnknownType { name, suggestion });
    }
    let mut problem = at(What::Invalid { message: bare_message(error) });
    problem.event_type = Some(name.into());
    if let Err(e) = serde_path_to_error::deserialize::<_, Envelope>(&value) {
        let field = e.path().to_string();
        let message = e.into_inner().to_string();
        let field = missing_field(&message).map(str::to_string).unwrap_or(field);
        problem.what = match (classify(&message, value.get(&field)), value.get(&field)) {
            // chrono's own words ("input contains invalid characters") do not say what it wants.
            (What::Invalid { .. }, Some(v)) if field == "t" => {
                What::Wrong { expected: "a time in RFC 3339 form, as 2026-11-22T05:00:11Z".into(), found: found(v) }
            }
            (what, _) => what,
        };
        problem.field = field;
        return problem;
    }
    let message = match serde_json::from_value::<Event>(value.clone()) {
        // Read as a value it is an event: the text itself is at fault (a key given twice, say).
        Ok(_) => return problem,
        Err(e) => e.to_string(),
    };
    let path = match missing_field(&message) {
        Some(name) => locate::missing(&value, name),
        None => locate::culprit(&value, &message),
    };
    problem.what = classify(&message, locate::get(&value, &path));
    problem.field = locate::render(&path);
    problem
}

/// Turn serde's words into `expected …, found …`.
fn classify(message: &str, at: Option<&Value>) -> What {
    if missing_field(message).is_some() {
        return What::Missing;
    }
    let expectation = ["invalid type: ", "invalid value: ", "invalid length ", "unknown variant "]
        .iter()
        .any(|p| message.starts_with(p))
        .then(|| message.rsplit_once(", expected ").map(|(_, e)| e))
        .flatten();
    match (expectation, at) {
        (Some(expected), Some(v)) => What::Wrong { expected: plain_expectation(expected), found: found(v) },
        (_, Some(v)) => What::Invalid { message: format!("{message}, found {}", found(v)) },
        _ => What::Invalid { message: message.to_string() },
    }
}

/// The field of a `missing field `x`` message.
fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.split('`').next()
}

/// serde's names of what it expected, in a user's words.
fn plain_expectation(e: &str) -> String {
    let e = e.trim();
    let plain = match e {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a whole number, 0 or more",
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a borrowed string" => "a string",
        "a sequence" => "an array",
        "a map" => "an object",
        "a boolean" => "true or false",
        _ if e.starts_with("struct ") => "an object",
        _ => e,
    };
    plain.to_string()
}

/// A value as the message shows it: scalars as written, containers by kind.
pub(crate) fn found(v: &Value) -> String {
    match v {
        Value::Object(_) => "an object".into(),
        Value::Array(a) => format!("an array of {}", a.len()),
        Value::String(s) if s.chars().count() > 40 => {
            format!("\"{}…\"", s.chars().take(40).collect::<String>().escape_debug())
        }
        other => other.to_string(),
    }
}

/// A JSON error without serde_json's ` at line L column C` suffix.
fn bare_message(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) if e.line() > 0 => s[..i].to_string(),
        _ => s,
    }
}

/// The event types this build reads, as serde lists them.
pub fn known_types() -> &'static [String] {
    static TYPES: OnceLock<Vec<String>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let probe = serde_json::json!({ "type": "\u{1}" });
        let message = match serde_json::from_value::<EventKind>(probe) {
            Ok(_) => return Vec::new(),
            Err(e) => e.to_string(),
        };
        let list = message.split_once("expected one of ").map_or("", |(_, l)| l);
        list.split(", ").map(|s| s.trim_matches('`').to_string()).filter(|s| !s.is_empty()).collect()
    })
}

/// The known type nearest to a misspelt one, when one is near.
fn closest_type(name: &str) -> Option<String> {
    known_types()
        .iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.clone())
}
