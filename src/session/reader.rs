//! Reading session logs. Any prefix of a log is a valid log: complete lines are
//! loaded, a partial last line is ignored and reported.

use std::fmt;
use std::path::Path;

use super::event::Event;

/// A line of a log that could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct LineProblem {
    /// 1-based line number.
    pub line: usize,
    pub message: String,
}

impl fmt::Display for LineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The events of a log and what was wrong with it.
#[derive(Debug, Clone, Default)]
pub struct LoadedLog {
    pub events: Vec<Event>,
    /// Complete lines that were not valid events (skipped).
    pub problems: Vec<LineProblem>,
    /// Bytes of an unterminated last line that was ignored.
    pub partial_tail: Option<usize>,
}

impl LoadedLog {
    /// Human-readable warnings about the log, empty for a clean log.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.problems.iter().map(|p| p.to_string()).collect();
        if let Some(n) = self.partial_tail {
            out.push(format!("ignored an incomplete last line ({n} bytes): the log was cut while being written"));
        }
        out
    }
}

/// Parse log text. Never fails: problems are reported in the result.
pub fn parse_log(bytes: &[u8]) -> LoadedLog {
    let mut out = LoadedLog::default();
    let mut rest = bytes;
    let mut line_no = 0;
    while !rest.is_empty() {
        line_no += 1;
        let Some(end) = rest.iter().position(|&b| b == b'\n') else {
            if !rest.iter().all(u8::is_ascii_whitespace) {
                out.partial_tail = Some(rest.len());
            }
            break;
        };
        let line = &rest[..end];
        rest = &rest[end + 1..];
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Event>(line) {
            Ok(ev) => out.events.push(ev),
            Err(e) => out.problems.push(LineProblem { line: line_no, message: describe_line_error(line, &e) }),
        }
    }
    out
}

/// Why a complete line is not a valid event, naming its type when it has one.
pub fn describe_line_error(line: &[u8], e: &serde_json::Error) -> String {
    // Name the event type when the line is JSON but not a known event shape.
    if let Ok(v) = serde_json::from_slice::<serde_json::Value>(line) {
        let ty = v.get("type").and_then(|t| t.as_str()).unwrap_or("?");
        return format!("not a valid `{ty}` event: {e}");
    }
    format!("invalid JSON: {e}")
}

/// Read and parse a log file.
pub fn read_log(path: &Path) -> std::io::Result<LoadedLog> {
    Ok(parse_log(&std::fs::read(path)?))
}
