//! Word wrapping with per-turn caches.
//!
//! A turn's wrapped lines are kept with the turn's `revision` and the width;
//! while a turn streams, only its last wrapped line and what follows it are
//! wrapped again (the text a turn shows only grows while it streams), so a
//! token costs one short re-wrap however long the turn is.

use std::collections::HashMap;

use unicode_width::UnicodeWidthChar;

use crate::session::fold::{TurnState, TurnView};
use crate::tui::words::shown;

/// One wrapped line: where it starts in the source text and what it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrappedLine {
    pub start: usize,
    pub text: String,
}

/// Wrap `text` from byte `from` (a line start) to `width` columns, appending to `out`.
pub fn wrap_into(text: &str, from: usize, width: usize, out: &mut Vec<WrappedLine>) {
    let width = width.max(1);
    let mut para_start = from;
    for para in text[from..].split('\n') {
        wrap_paragraph(para, para_start, width, out);
        para_start += para.len() + 1;
    }
}

/// Wrap a whole text.
pub fn wrap(text: &str, width: usize) -> Vec<WrappedLine> {
    let mut out = Vec::new();
    wrap_into(text, 0, width, &mut out);
    out
}

fn wrap_paragraph(para: &str, base: usize, width: usize, out: &mut Vec<WrappedLine>) {
    let mut line = String::new();
    let mut line_start = base;
    let mut line_w = 0usize;
    let mut first = true;
    let bytes = para.as_bytes();
    let mut i = 0;
    while i < para.len() {
        let ws_start = i;
        while i < para.len() && bytes[i] == b' ' {
            i += 1;
        }
        let word_start = i;
        while i < para.len() && bytes[i] != b' ' {
            i += 1;
        }
        let spaces = &para[ws_start..word_start];
        let word = &para[word_start..i];
        let word_w: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
        if word.is_empty() {
            if line_w + spaces.len() <= width {
                line.push_str(spaces);
            }
            break;
        }
        if !first && line_w + spaces.len() + word_w > width {
            out.push(WrappedLine { start: line_start, text: std::mem::take(&mut line) });
            line_w = 0;
            line_start = base + word_start;
        } else {
            line.push_str(spaces);
            line_w += spaces.len();
        }
        first = false;
        if line_w + word_w <= width {
            line.push_str(word);
            line_w += word_w;
        } else {
            // A word longer than the line: split it by columns.
            for (off, c) in word.char_indices() {
                let cw = c.width().unwrap_or(0);
                if line_w + cw > width && line_w > 0 {
                    out.push(WrappedLine { start: line_start, text: std::mem::take(&mut line) });
                    line_w = 0;
                    line_start = base + word_start + off;
                }
                line.push(c);
                line_w += cw;
            }
        }
    }
    out.push(WrappedLine { start: line_start, text: line });
}

#[derive(Debug, Clone)]
struct Entry {
    revision: u64,
    streaming: bool,
    len: usize,
    lines: Vec<WrappedLine>,
}

/// Wrapped lines of turns, by turn id and width.
#[derive(Debug, Default)]
pub struct WrapCache {
    entries: HashMap<(u64, u16), Entry>,
    /// Full wraps done (for tests and benchmarks).
    pub full_wraps: u64,
    /// Tail re-wraps done.
    pub tail_wraps: u64,
}

impl WrapCache {
    /// The wrapped lines of the text a turn shows (see [`shown`]) at this
    /// width, re-wrapping only what changed.
    pub fn lines(&mut self, turn: &TurnView, width: u16) -> &[WrappedLine] {
        let streaming = turn.state == TurnState::Streaming;
        let text = shown(turn);
        let key = (turn.id, width);
        let fresh = match self.entries.get(&key) {
            Some(e) if e.revision == turn.revision && e.streaming == streaming => false,
            Some(e) if e.streaming && streaming && text.len() >= e.len => {
                let e = self.entries.get_mut(&key).expect("present");
                let from = e.lines.pop().map(|l| l.start).unwrap_or(0);
                let from = if text.is_char_boundary(from) { from } else { 0 };
                if from == 0 {
                    e.lines.clear();
                }
                wrap_into(text, from, width as usize, &mut e.lines);
                e.revision = turn.revision;
                e.len = text.len();
                self.tail_wraps += 1;
                false
            }
            _ => true,
        };
        if fresh {
            self.full_wraps += 1;
            self.entries.insert(
                key,
                Entry { revision: turn.revision, streaming, len: text.len(), lines: wrap(text, width as usize) },
            );
        }
        &self.entries[&key].lines
    }

    /// Forget everything (theme or layout changes keep it; only memory pressure needs this).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(l: &[WrappedLine]) -> Vec<&str> {
        l.iter().map(|l| l.text.as_str()).collect()
    }

    #[test]
    fn wraps_words_and_long_words() {
        assert_eq!(texts(&wrap("the quick brown fox", 9)), vec!["the quick", "brown fox"]);
        assert_eq!(texts(&wrap("abcdefghij", 4)), vec!["abcd", "efgh", "ij"]);
        assert_eq!(texts(&wrap("a\n\nb", 4)), vec!["a", "", "b"]);
    }

    #[test]
    fn tail_rewrap_equals_full_wrap() {
        let full = "Grammar is fine. The answer matches the story, although the word choice is a little advanced for a four year old reader.\n```json\n{\"grammar\": 4}\n```";
        let mut turn = TurnView {
            id: 1,
            agent: "a".into(),
            group: None,
            phase: crate::session::event::Phase::Initial,
            round: None,
            role: Default::default(),
            kind: Default::default(),
            dimension: None,
            text: String::new(),
            state: TurnState::Streaming,
            evaluation: None,
            parse_error: None,
            usage: Default::default(),
            latency_ms: None,
            failed_attempts: 0,
            last_error: None,
            cached: false,
            truncated: false,
            started: chrono::Utc::now(),
            revision: 0,
        };
        let mut cache = WrapCache::default();
        let mut i = 0;
        while i < full.len() {
            let mut j = (i + 7).min(full.len());
            while !full.is_char_boundary(j) {
                j += 1;
            }
            turn.text.push_str(&full[i..j]);
            turn.revision += 1;
            i = j;
            let got: Vec<String> = cache.lines(&turn, 20).iter().map(|l| l.text.clone()).collect();
            let want: Vec<String> = wrap(shown(&turn), 20).into_iter().map(|l| l.text).collect();
            assert_eq!(got, want, "after {i} bytes");
        }
        assert_eq!(cache.full_wraps, 1);
        assert!(cache.tail_wraps > 10);
    }
}
