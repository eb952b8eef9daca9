//! Reading session logs. Any prefix of a log is a valid log: complete lines are
//! loaded, a partial last line is ignored and reported.
//!
//! Every reader of session logs (`moot sessions`, `moot report`, replay,
//! `moot run --resume`) reads a line with [`parse_event`], so a damaged line
//! is reported the same way everywhere, as a [`LogProblem`]:
//! `FILE:LINE: TYPE.FIELD.PATH: expected …, found …`.

use std::path::Path;

use super::event::Event;
pub use super::problem::{LogProblem, What};

/// The events of a log and what was wrong with it.
#[derive(Debug, Clone, Default)]
pub struct LoadedLog {
    pub events: Vec<Event>,
    /// Complete lines that were not valid events (skipped), in order.
    pub problems: Vec<LogProblem>,
    /// An unterminated last line that was ignored.
    pub torn: Option<LogProblem>,
    /// Bytes of that line.
    pub partial_tail: Option<usize>,
    /// Bytes of the complete lines: where a writer continuing the log
    /// appends, after dropping the torn line.
    pub complete_len: usize,
}

impl LoadedLog {
    /// Human-readable warnings about the log, empty for a clean log.
    pub fn warnings(&self) -> Vec<String> {
        self.all_problems().map(ToString::to_string).collect()
    }

    /// Every problem, the torn last line last.
    pub fn all_problems(&self) -> impl Iterator<Item = &LogProblem> {
        self.problems.iter().chain(&self.torn)
    }

    /// The first complete line that is not a valid event: damage, as
    /// opposed to a last line cut by a crash. A log is safe to continue
    /// when this is `None`.
    pub fn first_damage(&self) -> Option<&LogProblem> {
        self.problems.first()
    }
}

/// Read one line of the log `file` (1-based `line_no`) as an event, or say
/// precisely what is wrong with it. The one place a session log line is parsed.
pub fn parse_event(file: &Path, line_no: usize, line: &[u8]) -> Result<Event, LogProblem> {
    serde_json::from_slice::<Event>(line).map_err(|e| super::problem::diagnose(file, line_no, line, &e))
}

/// A line of a log and its 1-based number.
pub type Line<'a> = (usize, &'a [u8]);

/// The complete lines of a log with their numbers (blank lines skipped),
/// and the unterminated last line when there is one.
pub fn lines(bytes: &[u8]) -> (impl Iterator<Item = Line<'_>>, Option<Line<'_>>) {
    let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let (complete, rest) = bytes.split_at(end);
    let count = complete.iter().filter(|&&b| b == b'\n').count();
    let torn = (!rest.iter().all(u8::is_ascii_whitespace)).then_some((count + 1, rest));
    let lines = complete
        .split(|&b| b == b'\n')
        .take(count)
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
    (lines, torn)
}

/// Parse the text of the log `file`. Never fails: problems are reported in the result.
pub fn parse_log_at(file: &Path, bytes: &[u8]) -> LoadedLog {
    let mut out = LoadedLog::default();
    let (complete, torn) = lines(bytes);
    for (line_no, line) in complete {
        match parse_event(file, line_no, line) {
            Ok(ev) => out.events.push(ev),
            Err(p) => out.problems.push(p),
        }
    }
    out.torn = torn.map(|(line_no, rest)| LogProblem::torn(file, line_no, rest.len()));
    out.partial_tail = torn.map(|(_, rest)| rest.len());
    out.complete_len = bytes.len() - torn.map_or(0, |(_, rest)| rest.len());
    out
}

/// Parse log text that did not come from a file (problems name lines only).
pub fn parse_log(bytes: &[u8]) -> LoadedLog {
    parse_log_at(Path::new(""), bytes)
}

/// Read and parse a log file.
pub fn read_log(path: &Path) -> std::io::Result<LoadedLog> {
    Ok(parse_log_at(path, &std::fs::read(path)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A line of the bundled example log whose `type` is `ty`, as a value.
    fn example(ty: &str) -> Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/maj-eval-two-groups.jsonl");
        let text = std::fs::read_to_string(path).unwrap();
        let line = text.lines().find(|l| l.contains(&format!("\"type\":\"{ty}\""))).unwrap();
        serde_json::from_str(line).unwrap()
    }

    fn problem_of(line: &Value) -> LogProblem {
        let bytes = serde_json::to_vec(line).unwrap();
        parse_event(Path::new("logs/s.jsonl"), 3, &bytes).expect_err("the line should not read")
    }

    #[test]
    fn a_wrong_type_names_the_event_and_field() {
        let mut line = example("session_started");
        line["protocol"] = json!(42);
        let p = problem_of(&line);
        assert_eq!(p.to_string(), "logs/s.jsonl:3: session_started.protocol: expected a string, found 42");
    }

    #[test]
    fn a_nested_field_is_named_by_its_path() {
        let mut line = example("turn_completed");
        line["evaluation"]["scores"]["grammar"] = json!("four");
        let p = problem_of(&line);
        assert_eq!(p.location(), "turn_completed.evaluation.scores.grammar");
        assert_eq!(p.what, What::Wrong { expected: "a number".into(), found: "\"four\"".into() });
        let mut line = example("session_started");
        line["agents"][1]["model"] = json!(["x"]);
        assert!(problem_of(&line).location().starts_with("session_started.agents[1].model"), "{}", problem_of(&line));
    }

    #[test]
    fn a_long_array_is_searched_by_halves() {
        let mut line = example("session_started");
        let agent = line["agents"][0].clone();
        line["agents"] = Value::Array(vec![agent; 5000]);
        line["agents"][3210]["name"] = json!(false);
        let started = std::time::Instant::now();
        let p = problem_of(&line);
        assert_eq!(p.to_string(), "logs/s.jsonl:3: session_started.agents[3210].name: expected a string, found false");
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());
    }

    #[test]
    fn a_missing_field_is_named_where_it_belongs() {
        let mut line = example("session_started");
        line.as_object_mut().unwrap().remove("seed");
        let p = problem_of(&line);
        assert_eq!((p.location(), &p.what), ("session_started.seed".to_string(), &What::Missing));
        let mut line = example("turn_completed");
        line["usage"].as_object_mut().unwrap().remove("output_tokens");
        let p = problem_of(&line);
        assert_eq!(
            p.to_string(),
            "logs/s.jsonl:3: turn_completed.usage.output_tokens: expected a value, found none (the field is required)"
        );
    }

    #[test]
    fn the_envelope_fields_are_named_too() {
        let mut line = example("turn_completed");
        line["seq"] = json!(-1);
        assert_eq!(
            problem_of(&line).to_string(),
            "logs/s.jsonl:3: turn_completed.seq: expected a whole number, 0 or more, found -1"
        );
        line["seq"] = json!(7);
        line["t"] = json!("yesterday");
        let p = problem_of(&line);
        assert_eq!(p.location(), "turn_completed.t");
        assert!(p.message().ends_with("found \"yesterday\""), "{p}");
    }

    #[test]
    fn a_value_outside_an_enum_lists_the_choices() {
        let mut line = example("phase_started");
        line["phase"] = json!("debat");
        let p = problem_of(&line);
        assert_eq!(p.location(), "phase_started.phase");
        assert!(p.message().contains("expected one of `initial`, `debate`"), "{p}");
        assert!(p.message().ends_with("found \"debat\""), "{p}");
    }

    #[test]
    fn unknown_types_and_untyped_lines_say_so() {
        let mut line = example("turn_completed");
        line["type"] = json!("turn_complete");
        assert_eq!(
            problem_of(&line).message(),
            "type: \"turn_complete\" is not an event type this version of moot knows; did you mean \"turn_completed\"?"
        );
        line["type"] = json!("weather_report");
        assert!(matches!(problem_of(&line).what, What::UnknownType { suggestion: None, .. }));
        line.as_object_mut().unwrap().remove("type");
        assert_eq!(problem_of(&line).what, What::NoType);
        assert!(super::super::problem::known_types().len() > 20);
    }

    #[test]
    fn a_line_that_is_not_json_gives_the_column() {
        let p = parse_event(Path::new("s.jsonl"), 2, br#"{"seq":1,"t":oops}"#).unwrap_err();
        assert_eq!(p.to_string(), "s.jsonl:2: not JSON at column 14: expected value");
        let p = parse_event(Path::new("s.jsonl"), 2, b"[1,2]").unwrap_err();
        assert_eq!(p.message(), "expected an event (a JSON object), found an array of 2");
    }

    #[test]
    fn a_log_reports_bad_lines_and_a_torn_tail_with_their_numbers() {
        let good = serde_json::to_string(&example("turn_completed")).unwrap();
        let text = format!("{good}\n\nnot json\n{good}\n{{\"seq\":9,");
        let log = parse_log_at(Path::new("a.jsonl"), text.as_bytes());
        assert_eq!(log.events.len(), 2);
        assert_eq!(log.problems.len(), 1);
        assert_eq!(log.problems[0].line, 3);
        assert_eq!(log.first_damage().map(|p| p.line), Some(3));
        let torn = log.torn.as_ref().unwrap();
        assert_eq!(
            torn.to_string(),
            "a.jsonl:5: ignored an incomplete last line (9 bytes): the log was cut while being written"
        );
        assert_eq!(log.complete_len, text.len() - 9);
        assert_eq!(log.warnings().len(), 2);
    }

    /// Why the field is found by `problem::locate`: serde reads a flattened,
    /// internally tagged event through a buffer, and the path
    /// `serde_path_to_error` tracks stops at the event.
    #[test]
    fn serde_path_to_error_cannot_see_inside_an_event() {
        let mut line = example("session_started");
        line["protocol"] = json!(42);
        let e = serde_path_to_error::deserialize::<_, Event>(&line).unwrap_err();
        assert_eq!(e.path().to_string(), ".");
        assert_eq!(problem_of(&line).location(), "session_started.protocol");
    }

    #[test]
    fn a_clean_log_has_no_problems() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/maj-eval-two-groups.jsonl");
        let log = read_log(&path).unwrap();
        assert!(log.warnings().is_empty(), "{:?}", log.warnings());
        assert_eq!(log.complete_len, std::fs::metadata(&path).unwrap().len() as usize);
        let text = parse_log(b"x\n");
        assert_eq!(text.problems[0].to_string(), "line 1: not JSON at column 1: expected value");
    }
}
