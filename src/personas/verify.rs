//! Finding an evidence quote in its document.
//!
//! Text is compared as words: lower case, letters and digits only, so
//! typographic quotes, dashes, line breaks and punctuation do not matter. A
//! quote whose words appear in order in the document is found exactly.
//! Otherwise the document's word windows of the quote's length that share
//! the most words with it (counted with a sliding window, one pass over the
//! document) are compared with it by normalised Levenshtein similarity; a
//! window at least [`FUZZY_THRESHOLD`] similar counts as found, with that
//! similarity. Anything less is not found, and is flagged, never kept
//! silently.
//!
//! Small models often open a quote with words of their own ("The text
//! states that all of them read aloud …"). A quote not found whole is
//! checked again without its first words, one to [`LEAD_IN_MAX`] of them,
//! keeping at least [`REST_MIN`] words: the most similar rest (the first
//! found exactly ends the search) is the quote's check, its span the words
//! the document holds.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::docs::Document;

/// Similarity from which a near match counts as found.
pub const FUZZY_THRESHOLD: f64 = 0.85;

/// The most words a quote's lead-in may have.
pub const LEAD_IN_MAX: usize = 6;

/// The fewest words left after a lead-in for the rest to count.
pub const REST_MIN: usize = 6;

/// Word windows compared character by character after the word-overlap pass.
const CANDIDATES: usize = 8;

/// Where a quote was found, or that it was not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuoteCheck {
    /// Found exactly or at least [`FUZZY_THRESHOLD`] similar.
    pub found: bool,
    /// 1.0 for an exact match; the best window's similarity otherwise.
    pub similarity: f64,
    /// The paragraph (its number in the document) holding the best match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paragraph: Option<usize>,
    /// Byte range of the best match in that paragraph's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<(usize, usize)>,
}

impl QuoteCheck {
    pub fn not_found() -> Self {
        Self { found: false, similarity: 0.0, paragraph: None, span: None }
    }
}

/// One word of the document and where it stands.
struct Word {
    norm: String,
    /// Index into the document's paragraphs.
    par: usize,
    start: usize,
    end: usize,
}

/// A document's words, built once and searched for every quote.
pub struct Index<'a> {
    doc: &'a Document,
    words: Vec<Word>,
}

/// Lower-cased words of letters and digits, with their byte ranges.
fn words_of(text: &str) -> impl Iterator<Item = (String, usize, usize)> + '_ {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if start.is_none() {
                start = Some(i);
            }
        } else if c == '\'' || c == '’' {
            // Apostrophes inside a word ("don't") are dropped, not a break.
            continue;
        } else if let Some(s) = start.take() {
            out.push((s, i));
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out.into_iter().map(move |(s, e)| {
        let norm: String = text[s..e].chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect();
        (norm, s, e)
    })
}

/// A quote's normalised words.
pub fn normalise(text: &str) -> Vec<String> {
    words_of(text).map(|(w, _, _)| w).collect()
}

impl<'a> Index<'a> {
    pub fn new(doc: &'a Document) -> Self {
        let mut words = Vec::new();
        for (par, p) in doc.paragraphs.iter().enumerate() {
            words.extend(words_of(&p.text).map(|(norm, start, end)| Word { norm, par, start, end }));
        }
        Self { doc, words }
    }

    /// Search for `quote`.
    pub fn check(&self, quote: &str) -> QuoteCheck {
        let q = normalise(quote);
        let whole = self.check_words(&q);
        if whole.found {
            return whole;
        }
        let mut best = whole;
        for lead in 1..=LEAD_IN_MAX {
            if best.similarity >= 1.0 || q.len() < lead + REST_MIN {
                break;
            }
            let rest = self.check_words(&q[lead..]);
            if rest.similarity > best.similarity {
                best = rest;
            }
        }
        best
    }

    fn check_words(&self, q: &[String]) -> QuoteCheck {
        let n = q.len();
        if n == 0 || self.words.len() < n {
            return QuoteCheck::not_found();
        }
        // Word-overlap pass: how many of the quote's words each window holds.
        let mut need: HashMap<&str, i32> = HashMap::new();
        for w in q {
            *need.entry(w.as_str()).or_default() += 1;
        }
        let mut have: HashMap<&str, i32> = HashMap::new();
        let mut matched = 0i32;
        let mut best: Vec<(i32, usize)> = Vec::with_capacity(CANDIDATES + 1);
        for i in 0..self.words.len() {
            let add = self.words[i].norm.as_str();
            if let Some(&k) = need.get(add) {
                let h = have.entry(add).or_default();
                if *h < k {
                    matched += 1;
                }
                *h += 1;
            }
            if i >= n {
                let drop = self.words[i - n].norm.as_str();
                if let Some(&k) = need.get(drop) {
                    let h = have.get_mut(drop).expect("counted when it entered");
                    *h -= 1;
                    if *h < k {
                        matched -= 1;
                    }
                }
            }
            if i + 1 >= n {
                let start = i + 1 - n;
                if matched as usize == n && self.words[start..=i].iter().zip(q).all(|(w, q)| w.norm == *q) {
                    return self.located(start, n, 1.0);
                }
                if best.len() < CANDIDATES || matched > best.last().map_or(0, |b| b.0) {
                    // Neighbouring windows are nearly the same text: keep the first of a run.
                    if best.iter().any(|&(m, s)| s + n > start && m >= matched) {
                        continue;
                    }
                    best.push((matched, start));
                    best.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
                    best.truncate(CANDIDATES);
                }
            }
        }
        let quote_text = q.join(" ");
        let mut top = (0.0f64, 0usize);
        for &(_, start) in &best {
            // Windows one word shorter and longer catch a dropped or added word.
            for len in [n, n.saturating_sub(1).max(1), n + 1] {
                if start + len > self.words.len() {
                    continue;
                }
                let text: Vec<&str> = self.words[start..start + len].iter().map(|w| w.norm.as_str()).collect();
                let sim = strsim::normalized_levenshtein(&quote_text, &text.join(" "));
                if sim > top.0 {
                    top = (sim, start);
                }
            }
        }
        let mut check = self.located(top.1, n, top.0);
        check.found = top.0 >= FUZZY_THRESHOLD;
        check
    }

    /// A check for the window of `len` words at `start`, within its first paragraph.
    fn located(&self, start: usize, len: usize, similarity: f64) -> QuoteCheck {
        let first = &self.words[start];
        let last = self.words[start..(start + len).min(self.words.len())]
            .iter()
            .rev()
            .find(|w| w.par == first.par)
            .unwrap_or(first);
        QuoteCheck {
            found: similarity >= 1.0,
            similarity,
            paragraph: Some(self.doc.paragraphs[first.par].number),
            span: Some((first.start, last.end)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::personas::docs::{DocKind, from_text};

    fn doc() -> Document {
        from_text(
            "t.md",
            Path::new("t.md"),
            DocKind::Markdown,
            "Intro.\n\nOne teacher said: “I always stop and ask what happens next, because it keeps them guessing.”\n\nParents read at bedtime.",
        )
    }

    #[test]
    fn a_quote_with_a_lead_in_of_the_models_own_is_found_without_it() {
        let d = doc();
        let index = Index::new(&d);
        let c = index.check("The text states that one teacher said: I always stop and ask what happens next, because it keeps them guessing.");
        assert!(c.found, "{c:?}");
        let plain =
            index.check("One teacher said: I always stop and ask what happens next, because it keeps them guessing.");
        assert_eq!(c.paragraph, plain.paragraph, "the paragraph of the quote without its lead-in");
        // A lead-in of more than six words, or a rest too short, is not taken off.
        assert!(
            !index.check("As the text in the second paragraph tells us plainly, teachers ask what happens next").found
        );
        assert!(!index.check("The text says parents read at bedtime").found);
    }

    #[test]
    fn exact_quotes_are_found_whatever_the_punctuation() {
        let d = doc();
        let idx = Index::new(&d);
        let c = idx.check("I always stop and ask \"what happens next\" — because it keeps them guessing");
        assert!(c.found);
        assert_eq!(c.similarity, 1.0);
        assert_eq!(c.paragraph, Some(2));
        let (s, e) = c.span.unwrap();
        assert_eq!(
            &d.paragraphs[1].text[s..e],
            "I always stop and ask what happens next, because it keeps them guessing"
        );
    }

    #[test]
    fn a_slightly_misquoted_passage_is_found_fuzzily() {
        let d = doc();
        let c = Index::new(&d).check("I always stop to ask what happens next, because it keeps them guessing");
        assert!(c.found, "{c:?}");
        assert!(c.similarity < 1.0 && c.similarity >= FUZZY_THRESHOLD);
    }

    #[test]
    fn an_invented_quote_is_not_found() {
        let d = doc();
        let c = Index::new(&d).check("Teachers prefer questions about colours and shapes above all else");
        assert!(!c.found, "{c:?}");
        assert!(c.similarity < FUZZY_THRESHOLD);
        assert!(!Index::new(&d).check("").found);
    }
}
