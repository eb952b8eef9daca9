//! Quotations in a speech that nothing the speaker was shown contains.
//!
//! The rule (documented in `docs/panels.md`, *Quotations*): take the
//! reply's words before its JSON evaluation and each span between double
//! quotation marks (`"…"` or `“…”`) in them. A span is cut at an ellipsis
//! (`...` or `…`) into parts; a part of at least [`MIN_WORDS`] words,
//! read as [`crate::engine::repeats`] reads words (lower-cased, letters and
//! digits), is *found* when those words occur in a row in one of the
//! sources: the item, the request the reply answered (its instructions, the
//! personas, the discussion it showed) and the group's earlier
//! contributions. A span with a part that is not found quotes words that
//! nobody wrote: the log records it (`turn_completed.misquotes`) and the
//! screens show it. Shorter parts ("the sail") are too short to tell a
//! quotation from a phrase of the speaker's own, and are not checked; nor
//! is a span the speaker proposes rather than quotes: one whose lead-in,
//! the last [`LEAD_IN`] words of its sentence before the opening mark,
//! holds a word of [`PROPOSING`] ("a better question would have been
//! something like \"How did Mila decide …?\"").

use super::repeats::split;

/// The fewest words a part of a quotation has to be checked.
pub const MIN_WORDS: usize = 4;

/// Words before a quotation, in its sentence, that may say it is proposed.
pub const LEAD_IN: usize = 6;

/// Words that, in a quotation's lead-in, say its words are the speaker's
/// proposal or a hypothetical rather than something the sources wrote:
/// "something like", "such as", "instead", "would", "could", "should",
/// "a better question", "for example", "I suggest", "reword it as".
pub const PROPOSING: &[&str] = &[
    "like",
    "such",
    "instead",
    "rather",
    "would",
    "could",
    "should",
    "might",
    "better",
    "example",
    "instance",
    "suggest",
    "suggests",
    "suggested",
    "propose",
    "proposes",
    "proposed",
    "rephrase",
    "rephrased",
    "reword",
    "reworded",
    "rewrite",
    "rewritten",
];

/// The spans of `prose` between double quotation marks, without the marks:
/// straight quotes pair in order, a curly opening mark pairs with the next
/// closing one. An opening mark never closed ends no span.
pub fn quoted(prose: &str) -> Vec<&str> {
    spans(prose).into_iter().map(|(_, span)| span).collect()
}

/// [`quoted`]'s spans, each with the byte offset of its opening mark.
fn spans(prose: &str) -> Vec<(usize, &str)> {
    let mut spans = Vec::new();
    let mut open: Option<(usize, char)> = None;
    for (i, c) in prose.char_indices() {
        match (open, c) {
            (None, '"' | '“') => open = Some((i, c)),
            (Some((at, '"')), '"') | (Some((at, '“')), '”') => {
                spans.push((at, &prose[at + c.len_utf8()..i]));
                open = None;
            }
            _ => {}
        }
    }
    spans
}

/// Whether the quotation opening at byte `at` of `prose` is proposed: its
/// lead-in (the last [`LEAD_IN`] words before it, back to the end of the
/// sentence or line before) holds a word of [`PROPOSING`].
fn proposed(prose: &str, at: usize) -> bool {
    let before = &prose[..at];
    let start = before
        .char_indices()
        .rfind(|&(i, c)| c == '\n' || matches!(c, '.' | '?' | '!') && before[i + 1..].starts_with(char::is_whitespace))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let words = split(&before[start..]);
    words[words.len().saturating_sub(LEAD_IN)..].iter().any(|w| PROPOSING.contains(&w.as_str()))
}

/// Each quotation of `prose` (see [`quoted`]) with a part of
/// [`MIN_WORDS`] words or more that none of `sources` contains, trimmed,
/// in the order they appear (each once).
pub fn misquotes(prose: &str, sources: &[&str]) -> Vec<String> {
    let spans: Vec<&str> = spans(prose).into_iter().filter(|&(at, _)| !proposed(prose, at)).map(|(_, s)| s).collect();
    if spans.is_empty() {
        return Vec::new();
    }
    let haystacks: Vec<String> = sources.iter().map(|s| format!(" {} ", split(s).join(" "))).collect();
    let found = |part: &[String]| {
        let needle = format!(" {} ", part.join(" "));
        haystacks.iter().any(|h| h.contains(&needle))
    };
    let mut out: Vec<String> = Vec::new();
    for span in spans {
        let unfound = span
            .split("...")
            .flat_map(|p| p.split('…'))
            .map(split)
            .any(|part| part.len() >= MIN_WORDS && !found(&part));
        let span = span.trim().to_string();
        if unfound && !out.contains(&span) {
            out.push(span);
        }
    }
    out
}

/// The share of words a sentence of the sources must share with a
/// misquote (of the two's words together) to be [`nearest`] to it.
pub const NEAREST_SHARE: f64 = 0.5;

/// The sentence of `sources` nearest to `quote`, a misquote: a line, or a
/// sentence of one (cut after `.`, `?`, `!` and a space), without a
/// leading label (`Question:`), of at least [`MIN_WORDS`] words, sharing
/// the largest share of distinct words with it (at least
/// [`NEAREST_SHARE`] of the words of both; the first of equals). The
/// words the quotation perhaps meant, which a speech asked for again is
/// shown.
pub fn nearest(quote: &str, sources: &[&str]) -> Option<String> {
    use std::collections::HashSet;
    let quoted: HashSet<String> = split(quote).into_iter().collect();
    let mut best: Option<(f64, &str)> = None;
    for sentence in sources.iter().flat_map(|s| sentences(s)) {
        let words: HashSet<String> = split(sentence).into_iter().collect();
        if words.len() < MIN_WORDS {
            continue;
        }
        let share = quoted.intersection(&words).count() as f64 / quoted.union(&words).count() as f64;
        if share >= NEAREST_SHARE && best.is_none_or(|(b, _)| share > b) {
            best = Some((share, sentence));
        }
    }
    best.map(|(_, s)| s.to_string())
}

/// The lines of `text` cut into sentences, each trimmed and without a
/// leading label of one or two words and a colon.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut rest = line;
        while !rest.is_empty() {
            let end = rest
                .char_indices()
                .find(|&(i, c)| matches!(c, '.' | '?' | '!') && rest[i + 1..].starts_with(char::is_whitespace))
                .map_or(rest.len(), |(i, _)| i + 1);
            out.push(unlabelled(rest[..end].trim()));
            rest = &rest[end..];
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// `sentence` without a leading `Label:` or `Two words:`.
fn unlabelled(sentence: &str) -> &str {
    match sentence.split_once(": ") {
        Some((label, rest)) if label.split_whitespace().count() <= 2 && !label.contains(['"', '“']) => rest.trim(),
        _ => sentence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ITEM: &str = "Question: Why did Mila carry Pebble back to the wall?\n\
                        Answer: So that the gastropod could be reunited with its kin.";

    #[test]
    fn spans_pair_straight_and_curly_marks() {
        assert_eq!(quoted(r#"She says "one two" and “three four” then "open"#), ["one two", "three four"]);
        assert!(quoted("no quotes here").is_empty());
    }

    #[test]
    fn a_question_reworded_in_quotation_marks_is_a_misquote() {
        let prose = r#"Dana, the question "How did Mila carry Pebble back to the wall?" is unclear."#;
        assert_eq!(misquotes(prose, &[ITEM]), ["How did Mila carry Pebble back to the wall?"]);
    }

    #[test]
    fn a_wording_the_speaker_proposes_is_not_checked() {
        let proposal = r#"Dana, the question is vague. A more appropriate question would have been something like "How did Mila decide to bring Pebble back to the wall?" That asks for a reason."#;
        assert!(misquotes(proposal, &[ITEM]).is_empty());
        let better = r#"A better question: "What did Mila find under the wall?""#;
        assert!(misquotes(better, &[ITEM]).is_empty());
        // A claim that the item says it is checked: the proposing word is in
        // another sentence, or further back than the lead-in.
        let claim = r#"It would help. But the question asks "How did Mila carry Pebble back to the wall?" here."#;
        assert_eq!(misquotes(claim, &[ITEM]), ["How did Mila carry Pebble back to the wall?"]);
        let far = r#"I would say that the story's own question reads "How did Mila carry Pebble back to the wall?""#;
        assert_eq!(misquotes(far, &[ITEM]).len(), 1);
    }

    #[test]
    fn exact_quotes_in_other_case_and_punctuation_are_found() {
        let prose = r#"The answer says "the Gastropod could be reunited" — and "WHY did Mila carry Pebble"."#;
        assert!(misquotes(prose, &[ITEM]).is_empty());
    }

    #[test]
    fn short_quotes_are_not_checked_and_an_ellipsis_joins_found_parts() {
        assert!(misquotes(r#"Calling it "a gastropod" is odd."#, &[ITEM]).is_empty());
        let joined = r#"It says "Why did Mila carry ... could be reunited with its kin"."#;
        assert!(misquotes(joined, &[ITEM]).is_empty());
        let bad = r#"It says "Why did Mila carry … so it could find its family"."#;
        assert_eq!(misquotes(bad, &[ITEM]).len(), 1);
    }

    #[test]
    fn the_nearest_sentence_is_the_one_sharing_most_words() {
        let brief = "Ms. Ito: A child with few words should still be able to answer. Keep it short!";
        let sources = [ITEM, brief];
        assert_eq!(
            nearest("What did Mila carry back to the wall?", &sources).as_deref(),
            Some("Why did Mila carry Pebble back to the wall?")
        );
        assert_eq!(
            nearest("a child with few ****** should still be able ****** answer", &sources).as_deref(),
            Some("A child with few words should still be able to answer.")
        );
        assert_eq!(nearest("a better question would ask about the moon", &sources), None);
    }

    #[test]
    fn any_source_will_do_and_each_misquote_is_listed_once() {
        let said = "dana said one word answers must count";
        assert!(misquotes(r#"Dana: "one-word answers must count"."#, &[ITEM, said]).is_empty());
        let twice = r#""a snail went to school" and again "a snail went to school"."#;
        assert_eq!(misquotes(twice, &[ITEM]), ["a snail went to school"]);
    }
}
