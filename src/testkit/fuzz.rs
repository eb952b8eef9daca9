//! Entry points for fuzzing moot's input readers: each takes arbitrary bytes
//! and must return without panicking, whatever they hold. The fuzz targets
//! in `fuzz/` call these, and `tests/it/fuzz_corpus.rs` runs every kept
//! corpus input through them under `cargo test` (see docs/testing.md).

use crate::engine::parse::{ParseSpec, parse_reply, says_no_more_comments};
use crate::item::{ItemFormat, datasets, parse_items_str};
use crate::panel::{Dimension, Panel, Scale};
use crate::provider::sse::SseParser;
use crate::session::fold::SessionView;
use crate::session::reader::parse_log;

/// A fuzz target's entry point.
pub type Target = fn(&[u8]);

/// The fuzz targets, by name (the names of `fuzz/fuzz_targets/*.rs` and of
/// the corpus folders under `fuzz/corpus/`).
pub const TARGETS: [(&str, Target); 5] =
    [("reply_parser", reply_parser), ("sse", sse), ("session_log", session_log), ("panel", panel), ("items", items)];

fn dimension(key: &str) -> Dimension {
    Dimension { key: key.into(), name: String::new(), description: String::new(), steps: None, labels: Vec::new() }
}

/// An agent's reply, parsed for two dimensions on a 1–5 scale with some
/// quoted material, and checked for the done phrase. The first byte picks
/// the scale (integer 1–5 or 0–1), the rest is the reply.
pub fn reply_parser(data: &[u8]) {
    let (scale, text) = match data.split_first() {
        Some((b, rest)) if b % 2 == 1 => (Scale { min: 0.0, max: 1.0 }, rest),
        Some((_, rest)) => (Scale { min: 1.0, max: 5.0 }, rest),
        None => (Scale { min: 1.0, max: 5.0 }, data),
    };
    let text = String::from_utf8_lossy(text);
    let dims = [dimension("grammar"), dimension("relevance")];
    let material = ["{\"grammar\": 5, \"relevance\": 5}", "The answer is 4."];
    let spec = ParseSpec { dimensions: &dims, scale, overall: true, quoted_material: &material };
    if let Ok(ev) = parse_reply(&text, &spec) {
        for d in &dims {
            let v = ev.scores.get(&d.key).copied().expect("a parsed evaluation has every dimension");
            assert!(v >= scale.min - 1e-9 && v <= scale.max + 1e-9, "{} = {v} is off the scale", d.key);
        }
    }
    let _ = says_no_more_comments(&text, &spec);
}

/// A byte stream fed to the SSE parser in chunks whose sizes the data's
/// first byte chooses, so that events split across reads.
pub fn sse(data: &[u8]) {
    let Some((&step, rest)) = data.split_first() else { return };
    let step = usize::from(step % 17) + 1;
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for chunk in rest.chunks(step) {
        parser.feed_into(chunk, &mut events);
    }
    let mut whole = SseParser::new();
    let at_once = whole.feed(rest);
    assert_eq!(events, at_once, "the events must not depend on how the stream was cut");
    let _ = parser.has_pending();
    let _ = parser.retry();
}

/// A session log: parsed line by line, then folded into the screens' view.
pub fn session_log(data: &[u8]) {
    let log = parse_log(data);
    let _ = SessionView::from_events(&log.events);
}

/// A panel file's text.
pub fn panel(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(panel) = Panel::from_toml_str(text, "fuzz.toml")
    {
        let _ = panel.warnings();
    }
}

/// An items file in each of its formats, moot's own and the datasets'.
pub fn items(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for format in [ItemFormat::Jsonl, ItemFormat::Json, ItemFormat::Csv] {
        let _ = parse_items_str(text, format, "fuzz");
    }
    let _ = datasets::detect(text);
    let files = [datasets::SourceFile::new("fuzz - A1.tsv", text)];
    for format in datasets::FORMATS {
        let _ = datasets::parse(format, &files, "fuzz");
    }
}
