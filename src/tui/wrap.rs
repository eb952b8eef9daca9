//! Word wrapping with per-turn caches.
//!
//! Each paragraph is wrapped with `textwrap` (Unicode line-break rules,
//! display widths from `unicode-width`, first fit), after its tabs are
//! expanded to spaces up to the next tab stop. A turn's wrapped lines are
//! kept with the turn's `revision` and the width; while a turn streams, only
//! its last wrapped line and what follows it are wrapped again (the text a
//! turn shows only grows while it streams, and first fit never moves an
//! earlier line break for text added after it), so a token costs one short
//! re-wrap however long the turn is.

use std::collections::HashMap;

use textwrap::core::{Word, break_words};
use textwrap::word_splitters::split_words;
use textwrap::wrap_algorithms::wrap_first_fit;
use textwrap::{WordSeparator, WordSplitter};
use unicode_width::UnicodeWidthChar;

use crate::session::fold::{TurnState, TurnView};
use crate::tui::words::shown;

/// Columns between tab stops.
pub const TAB_STOP: usize = 4;

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
    for (i, para) in text[from..].split('\n').enumerate() {
        // Tab stops count from the start of the paragraph; a wrap that starts
        // inside one needs the column it starts at, but only if a tab follows.
        let col = if i == 0 && from > 0 && para.contains('\t') {
            let begin = text[..from].rfind('\n').map_or(0, |n| n + 1);
            expand_tabs(&text[begin..from], 0).1
        } else {
            0
        };
        wrap_paragraph(para, para_start, col, width, out);
        para_start += para.len() + 1;
    }
}

/// Wrap a whole text.
pub fn wrap(text: &str, width: usize) -> Vec<WrappedLine> {
    let mut out = Vec::new();
    wrap_into(text, 0, width, &mut out);
    out
}

/// `s` with its tabs expanded to the next tab stop, counting columns from
/// `col`, and the column it ends at.
fn expand_tabs(s: &str, col: usize) -> (String, usize) {
    let mut out = String::with_capacity(s.len());
    let mut col = col;
    for c in s.chars() {
        if c == '\t' {
            let n = TAB_STOP - col % TAB_STOP;
            out.extend(std::iter::repeat_n(' ', n));
            col += n;
        } else {
            out.push(c);
            col += c.width().unwrap_or(0);
        }
    }
    (out, col)
}

/// Where a byte of the tab-expanded text comes from in the source: the
/// expanded text shifted past each tab, as `(first expanded byte after the
/// tab, bytes added so far)`.
struct Shifts(Vec<(usize, usize)>);

impl Shifts {
    fn of(source: &str, expanded_col: usize) -> Self {
        let mut shifts = Vec::new();
        let (mut col, mut added, mut at) = (expanded_col, 0, 0);
        for c in source.chars() {
            if c == '\t' {
                let n = TAB_STOP - col % TAB_STOP;
                col += n;
                at += n;
                added += n - 1;
                shifts.push((at, added));
            } else {
                col += c.width().unwrap_or(0);
                at += c.len_utf8();
            }
        }
        Self(shifts)
    }

    /// The source offset of an expanded offset (inside a tab's spaces: the tab).
    fn source(&self, expanded: usize) -> usize {
        let i = self.0.partition_point(|&(at, _)| at <= expanded);
        match i {
            0 => expanded,
            _ => expanded - self.0[i - 1].1,
        }
    }
}

/// The words of `text` by the Unicode line-break rules, each with the spaces after it.
fn find_words(text: &str) -> Vec<Word<'_>> {
    if !text.ends_with(['-', '\u{ad}']) {
        return WordSeparator::UnicodeBreakProperties.find_words(text).collect();
    }
    // textwrap leaves out the break at the end of a text that ends with a
    // hyphen and so the break before its last word (the words of `is well-`
    // would be `is well-` alone): a space at the end keeps the breaks where
    // they are, and is left out of the words again.
    let padded = format!("{text} ");
    WordSeparator::UnicodeBreakProperties
        .find_words(&padded)
        .map(|w| {
            let start = offset(&padded, w.word);
            let end = start + w.word.len();
            let spaces = (end + w.whitespace.len()).min(text.len());
            Word { word: &text[start..end], whitespace: &text[end..spaces], penalty: "", width: w.width }
        })
        .collect()
}

/// The byte offset of `part` (a slice of `whole`) in `whole`.
fn offset(whole: &str, part: &str) -> usize {
    part.as_ptr() as usize - whole.as_ptr() as usize
}

/// Wrap one paragraph (no newline) starting at source byte `base`, its first
/// character at tab column `col`.
fn wrap_paragraph(para: &str, base: usize, col: usize, width: usize, out: &mut Vec<WrappedLine>) {
    let tabs = para.contains('\t');
    let (expanded, shifts) = if tabs {
        (std::borrow::Cow::Owned(expand_tabs(para, col).0), Some(Shifts::of(para, col)))
    } else {
        (std::borrow::Cow::Borrowed(para), None)
    };
    let text: &str = &expanded;
    let to_source = |e: usize| base + shifts.as_ref().map_or(e, |s| s.source(e));
    let words = break_words(split_words(find_words(text), &WordSplitter::HyphenSplitter), width);
    if words.is_empty() {
        out.push(WrappedLine { start: base, text: String::new() });
        return;
    }
    let lines = wrap_first_fit(&words, &[width as f64]);
    let first = out.len();
    for line in lines {
        let (Some(head), Some(last)) = (line.first(), line.last()) else { continue };
        let start = offset(text, head.word);
        let end = offset(text, last.word) + last.word.len();
        let mut shown = text[start..end].to_string();
        shown.push_str(last.penalty);
        out.push(WrappedLine { start: to_source(start), text: shown });
    }
    // Indentation that leaves no room for the first word makes an empty first
    // line: leave it out.
    if out.len() > first + 1 && out[first].text.trim().is_empty() {
        out.remove(first);
    }
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
        let key = (turn.id, width);
        if self.entries.get(&key).is_some_and(|e| e.revision == turn.revision && e.streaming == streaming) {
            return &self.entries[&key].lines;
        }
        let text = shown(turn);
        let fresh = match self.entries.get(&key) {
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
    use crate::session::event::Role;
    use unicode_width::UnicodeWidthStr;

    fn texts(l: &[WrappedLine]) -> Vec<&str> {
        l.iter().map(|l| l.text.as_str()).collect()
    }

    /// Every line fits `width` (a single character wider than the line excepted).
    fn fits(lines: &[WrappedLine], width: usize) {
        for l in lines {
            let w = l.text.width();
            assert!(w <= width || l.text.chars().count() == 1, "{:?} is {w} columns, more than {width}", l.text);
        }
    }

    #[test]
    fn wraps_words_and_long_words() {
        assert_eq!(texts(&wrap("the quick brown fox", 9)), vec!["the quick", "brown fox"]);
        assert_eq!(texts(&wrap("abcdefghij", 4)), vec!["abcd", "efgh", "ij"]);
        assert_eq!(texts(&wrap("a\n\nb", 4)), vec!["a", "", "b"]);
        assert_eq!(texts(&wrap("", 4)), vec![""]);
    }

    #[test]
    fn a_long_word_is_broken() {
        let lines = wrap("see supercalifragilistic now", 8);
        assert_eq!(texts(&lines), vec!["see", "supercal", "ifragili", "stic now"]);
        fits(&lines, 8);
        // Where each line starts in the source.
        assert_eq!(lines.iter().map(|l| l.start).collect::<Vec<_>>(), vec![0, 4, 12, 20]);
    }

    #[test]
    fn a_tab_has_width() {
        // Tabs stop every TAB_STOP columns.
        assert_eq!(texts(&wrap("a\tb", 20)), vec!["a   b"]);
        assert_eq!(texts(&wrap("\tx", 20)), vec!["    x"]);
        assert_eq!(texts(&wrap("abcd\te", 20)), vec!["abcd    e"]);
        // Six columns once expanded: it no longer fits five.
        let lines = wrap("ab\tcd", 5);
        assert_eq!(texts(&lines), vec!["ab", "cd"]);
        assert_eq!(lines[1].start, 3, "the second line starts at `c` in the source");
        fits(&wrap("col\tcol\tcol\tcol\tcol", 9), 9);
        // A line starting after a tab keeps its source offset.
        let text = "x\ty\tz\tw";
        for l in wrap(text, 5) {
            let first = l.text.trim_start().chars().next().unwrap();
            assert!(text[l.start..].starts_with(first), "{l:?}");
        }
    }

    #[test]
    fn wide_characters_count_double() {
        assert_eq!(texts(&wrap("你好世界", 4)), vec!["你好", "世界"]);
        assert_eq!(texts(&wrap("你好世界", 5)), vec!["你好", "世界"]);
        let lines = wrap("日本語のテキストを折り返す", 6);
        fits(&lines, 6);
        assert!(lines.len() >= 5, "{lines:?}");
        // Mixed with Latin words.
        let lines = wrap("grammar 很好 and 内容 ok", 8);
        fits(&lines, 8);
        assert_eq!(lines.iter().map(|l| l.text.replace(' ', "")).collect::<String>(), "grammar很好and内容ok");
    }

    #[test]
    fn unicode_rules_keep_punctuation_with_its_word() {
        // No line starts with closing punctuation, even after a space.
        for l in wrap("a score ( of four ) is fair !", 6) {
            assert!(!l.text.starts_with([')', '!']), "{l:?}");
        }
    }

    fn turn(role: Role) -> TurnView {
        TurnView {
            id: 1,
            agent: "a".into(),
            group: None,
            phase: crate::session::event::Phase::Initial,
            round: None,
            role,
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
            repeats: None,
            misquotes: Vec::new(),
            misstates: Vec::new(),
            started: chrono::Utc::now(),
            pair: None,
            pair_verdict: None,
            revision: 0,
        }
    }

    /// Streams `full` in chunks of `step` bytes, checking the cache against a wrap from scratch after each.
    fn stream_and_compare(role: Role, full: &str, width: u16, step: usize) -> WrapCache {
        let mut turn = turn(role);
        let mut cache = WrapCache::default();
        let mut i = 0;
        while i < full.len() {
            let mut j = (i + step).min(full.len());
            while !full.is_char_boundary(j) {
                j += 1;
            }
            turn.text.push_str(&full[i..j]);
            turn.revision += 1;
            i = j;
            let got = cache.lines(&turn, width).to_vec();
            let want = wrap(shown(&turn), width as usize);
            assert_eq!(got, want, "width {width}, step {step}, after {i} bytes");
        }
        cache
    }

    #[test]
    fn tail_rewrap_equals_full_wrap() {
        let full = "Grammar is fine. The answer matches the story, although the word choice is a little advanced for a four year old reader.\n```json\n{\"grammar\": 4}\n```";
        let cache = stream_and_compare(Role::Agent, full, 20, 7);
        assert_eq!(cache.full_wraps, 1);
        assert!(cache.tail_wraps > 10);
    }

    #[test]
    fn incremental_cache_equals_wrapping_from_scratch() {
        let texts = [
            "The answer is well-organised and mostly accurate; the second paragraph, however, repeats the first.\n\nScores:\tgrammar\t4\n\trelevance\t3\n",
            "一段中文的评价：语法很好，内容与故事相符，但是用词对四岁的读者来说有点难。Mixed with English words, and 日本語も少し。",
            "averyveryverylongwordwithoutanyspacesthatmustbebroken and then short ones, then (parenthesised) words!",
            "\tindented\tby\ttabs\tall\tthe\tway\tdown\n  two leading spaces before a long paragraph that wraps several times over",
        ];
        for text in texts {
            for width in [1u16, 3, 7, 12, 20, 33] {
                for step in [1, 3, 11] {
                    let cache = stream_and_compare(Role::Aggregator, text, width, step);
                    assert_eq!(cache.full_wraps, 1, "width {width}, step {step}: only the first wrap is a full one");
                }
            }
        }
    }
}
