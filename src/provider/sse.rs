//! Server-sent events parsing over a byte stream.
//!
//! [`SseParser`] follows the WHATWG `text/event-stream` interpretation rules:
//! lines end with CRLF, LF or CR; a line starting with `:` is a comment; a
//! line without a colon is a field with an empty value; one leading space of a
//! value is dropped; `data` lines are joined with `\n`; a blank line dispatches
//! the event. Bytes may arrive split at any offset, even inside a multi-byte
//! UTF-8 character: the parser buffers bytes and decodes only complete lines
//! (a line terminator byte never occurs inside a UTF-8 sequence). Invalid
//! UTF-8 is replaced with U+FFFD, as the standard asks.

use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when the event set one.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n` (without a trailing newline).
    pub data: String,
    /// The last event ID seen on the stream so far (it persists across events).
    pub id: Option<String>,
}

/// Incremental parser: feed it bytes as they arrive, get whole events back.
#[derive(Debug, Clone, Default)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous chunk ended with CR: a leading LF in the next one belongs to it.
    skip_lf: bool,
    /// No line has been completed yet (a leading BOM is dropped from it).
    first_line_done: bool,
    data: String,
    has_data: bool,
    event: Option<String>,
    last_id: Option<String>,
    retry: Option<Duration>,
    bytes_seen: u64,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next bytes of the stream and return the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        self.feed_into(bytes, &mut out);
        out
    }

    /// Like [`SseParser::feed`], appending completed events to `out`.
    pub fn feed_into(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.bytes_seen += bytes.len() as u64;
        let mut rest = bytes;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            if self.line.is_empty() {
                self.process_line(&rest[..pos], out);
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&rest[..pos]);
                self.process_line(&line, out);
                line.clear();
                // Keep the allocation for the next partial line.
                self.line = line;
            }
            let mut next = pos + 1;
            if rest[pos] == b'\r' {
                match rest.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            rest = &rest[next..];
        }
        self.line.extend_from_slice(rest);
    }

    /// Whether the stream so far ends in the middle of an event or a line:
    /// data that a blank line has not dispatched yet would be lost if it ended now.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    /// The reconnection delay the stream asked for with a `retry:` field.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Total number of bytes fed so far.
    pub fn bytes_seen(&self) -> u64 {
        self.bytes_seen
    }

    fn process_line(&mut self, raw: &[u8], out: &mut Vec<SseEvent>) {
        let mut raw = raw;
        if !self.first_line_done {
            self.first_line_done = true;
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        if raw.is_empty() {
            self.dispatch(out);
            return;
        }
        if raw[0] == b':' {
            return;
        }
        let line = String::from_utf8_lossy(raw);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take().filter(|e| !e.is_empty());
        if !self.has_data {
            // No data: the event is dropped, its type buffer reset.
            return;
        }
        self.has_data = false;
        out.push(SseEvent { event, data: std::mem::take(&mut self.data), id: self.last_id.clone() });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn parse_all(bytes: &[u8]) -> Vec<SseEvent> {
        SseParser::new().feed(bytes)
    }

    fn ev(event: Option<&str>, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent { event: event.map(str::to_owned), data: data.to_owned(), id: id.map(str::to_owned) }
    }

    #[test]
    fn single_data_event() {
        assert_eq!(parse_all(b"data: hello\n\n"), vec![ev(None, "hello", None)]);
    }

    #[test]
    fn multiple_data_lines_are_joined_with_newline() {
        assert_eq!(parse_all(b"data: a\ndata:b\ndata:  c\n\n"), vec![ev(None, "a\nb\n c", None)]);
    }

    #[test]
    fn event_and_id_fields() {
        let events = parse_all(b"event: delta\nid: 7\ndata: x\n\ndata: y\n\n");
        assert_eq!(events, vec![ev(Some("delta"), "x", Some("7")), ev(None, "y", Some("7"))]);
    }

    #[test]
    fn id_with_nul_is_ignored_and_empty_id_resets() {
        let events = parse_all(b"id: 1\ndata: a\n\nid: 2\0\ndata: b\n\nid\ndata: c\n\n");
        assert_eq!(events, vec![ev(None, "a", Some("1")), ev(None, "b", Some("1")), ev(None, "c", Some(""))]);
    }

    #[test]
    fn comments_are_ignored() {
        let events = parse_all(b": ping\n\n:another\ndata: real\n: mid\n\n");
        assert_eq!(events, vec![ev(None, "real", None)]);
    }

    #[test]
    fn field_without_colon_has_empty_value() {
        // `data` alone appends an empty line.
        assert_eq!(parse_all(b"data\ndata\n\n"), vec![ev(None, "\n", None)]);
        assert_eq!(parse_all(b"data\n\n"), vec![ev(None, "", None)]);
    }

    #[test]
    fn only_one_leading_space_is_stripped() {
        assert_eq!(parse_all(b"data:   three\n\n"), vec![ev(None, "  three", None)]);
        assert_eq!(parse_all(b"data:no-space\n\n"), vec![ev(None, "no-space", None)]);
    }

    #[test]
    fn value_may_contain_colons() {
        assert_eq!(parse_all(b"data: {\"a\":\"b:c\"}\n\n"), vec![ev(None, "{\"a\":\"b:c\"}", None)]);
    }

    #[test]
    fn crlf_lf_and_cr_line_endings() {
        let expected = vec![ev(Some("e"), "a\nb", None), ev(None, "c", None)];
        assert_eq!(parse_all(b"event: e\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n"), expected);
        assert_eq!(parse_all(b"event: e\rdata: a\rdata: b\r\rdata: c\r\r"), expected);
        assert_eq!(parse_all(b"event: e\ndata: a\rdata: b\r\n\ndata: c\r\r\n"), expected);
    }

    #[test]
    fn cr_at_chunk_end_followed_by_lf() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: a\r").is_empty());
        // The LF completes the CRLF of the previous line, not a blank line.
        assert!(p.feed(b"\n").is_empty());
        assert_eq!(p.feed(b"\r"), vec![ev(None, "a", None)]);
        assert!(p.feed(b"\ndata: b\n\n").len() == 1);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_type_resets() {
        let events = parse_all(b"event: lonely\n\ndata: x\n\n");
        assert_eq!(events, vec![ev(None, "x", None)]);
    }

    #[test]
    fn unknown_fields_are_ignored_and_retry_is_recorded() {
        let mut p = SseParser::new();
        let events = p.feed(b"foo: bar\nretry: 1500\nretry: x1\ndata: d\n\n");
        assert_eq!(events, vec![ev(None, "d", None)]);
        assert_eq!(p.retry(), Some(Duration::from_millis(1500)));
    }

    #[test]
    fn leading_bom_is_dropped() {
        assert_eq!(parse_all(b"\xEF\xBB\xBFdata: x\n\n"), vec![ev(None, "x", None)]);
        let mut p = SseParser::new();
        assert!(p.feed(b"\xEF").is_empty());
        assert!(p.feed(b"\xBB\xBFdata: y\n").is_empty());
        assert_eq!(p.feed(b"\n"), vec![ev(None, "y", None)]);
    }

    #[test]
    fn unterminated_event_is_pending_not_dispatched() {
        let mut p = SseParser::new();
        assert!(p.feed(b"data: partial\n").is_empty());
        assert!(p.has_pending());
        let mut p = SseParser::new();
        assert!(p.feed(b"data: x\n\n").len() == 1);
        assert!(!p.has_pending());
        assert!(p.feed(b"dat").is_empty());
        assert!(p.has_pending());
    }

    #[test]
    fn invalid_utf8_is_replaced() {
        assert_eq!(parse_all(b"data: a\xFFb\n\n"), vec![ev(None, "a\u{FFFD}b", None)]);
    }

    const STREAM: &str = concat!(
        "\u{FEFF}: keep-alive\r\n",
        "event: message\r\n",
        "id: 1\r\n",
        "data: {\"t\":\"caf\u{e9} \u{2014} \u{1F600}\"}\r\n",
        "\r\n",
        "data: line one\n",
        "data: line two \u{4E2D}\u{6587}\n",
        "\n",
        ":comment\r",
        "data\r",
        "\r",
        "id: 2\n",
        "event: done\n",
        "data: [DONE]\n",
        "\n",
    );

    fn expected_stream_events() -> Vec<SseEvent> {
        vec![
            ev(Some("message"), "{\"t\":\"caf\u{e9} \u{2014} \u{1F600}\"}", Some("1")),
            ev(None, "line one\nline two \u{4E2D}\u{6587}", Some("1")),
            ev(None, "", Some("1")),
            ev(Some("done"), "[DONE]", Some("2")),
        ]
    }

    #[test]
    fn whole_stream_parses() {
        assert_eq!(parse_all(STREAM.as_bytes()), expected_stream_events());
    }

    #[test]
    fn split_at_every_offset_gives_same_events() {
        let bytes = STREAM.as_bytes();
        let expected = expected_stream_events();
        for cut in 0..=bytes.len() {
            let mut p = SseParser::new();
            let mut events = p.feed(&bytes[..cut]);
            events.extend(p.feed(&bytes[cut..]));
            assert_eq!(events, expected, "split at byte {cut}");
            assert!(!p.has_pending());
        }
    }

    #[test]
    fn split_at_every_pair_of_offsets_gives_same_events() {
        let bytes = STREAM.as_bytes();
        let expected = expected_stream_events();
        for a in 0..=bytes.len() {
            for b in a..=bytes.len() {
                let mut p = SseParser::new();
                let mut events = Vec::new();
                p.feed_into(&bytes[..a], &mut events);
                p.feed_into(&bytes[a..b], &mut events);
                p.feed_into(&bytes[b..], &mut events);
                assert_eq!(events, expected, "split at bytes {a} and {b}");
            }
        }
    }

    #[test]
    fn byte_by_byte_and_random_chunks_give_same_events() {
        let bytes = STREAM.as_bytes();
        let expected = expected_stream_events();
        let mut p = SseParser::new();
        let mut events = Vec::new();
        for b in bytes {
            p.feed_into(std::slice::from_ref(b), &mut events);
        }
        assert_eq!(events, expected);

        let mut rng = ChaCha8Rng::seed_from_u64(42);
        for _ in 0..500 {
            let mut p = SseParser::new();
            let mut events = Vec::new();
            let mut rest = bytes;
            while !rest.is_empty() {
                let n = rng.random_range(0..=rest.len().min(9));
                p.feed_into(&rest[..n], &mut events);
                rest = &rest[n..];
            }
            assert_eq!(events, expected);
        }
    }
}
