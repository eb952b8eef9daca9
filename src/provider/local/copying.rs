//! Keeping a speech from copying earlier ones as it is written.
//!
//! A request may carry texts its reply must not copy (a debate speech: the
//! earlier contributions of its discussion and its own instructions), texts
//! it may quote (the item) and names (the members', the dimensions'). While
//! the embedded model writes the reply's prose, a token is refused when it
//! would make the reply's last [`RUN`] words a run of [`RUN`] consecutive
//! words of a text not to copy, unless the run's last word
//! - is a word of a name or a number: a name is never misspelt to get
//!   round the rule, nor a score's dimension (refusing them did both), or
//! - ends [`QUOTE`] consecutive words of a text it may quote: the run
//!   continues a quotation of the item.
//!
//! Words are compared as moot's repeat rule compares them (`engine::repeats`:
//! lower case, letters and digits), so a token that glues the next word onto
//! the last ("thewall") is refused like the word itself. The refused token's
//! place goes to the model's next choice; the engine's check after the
//! reply, and its one request for new words, still apply.

use std::collections::{HashMap, HashSet};

/// Words in a run that a reply may not copy.
pub const RUN: usize = 5;

/// Words at the end of a run that, found together in a text the reply may
/// quote, make the run a quotation.
pub const QUOTE: usize = 3;

/// What a reply may not copy: for each run of `RUN - 1` words of a text
/// not to copy, the words that followed it there.
#[derive(Debug, Default)]
pub struct CopyGuard {
    next: HashMap<Vec<String>, HashSet<String>>,
}

impl CopyGuard {
    /// The guard for `avoid` (texts not to copy), `quotable` (texts it may
    /// quote) and `names`; `None` when nothing is long enough to guard.
    pub fn new(avoid: &[String], quotable: &[String], names: &[String]) -> Option<Self> {
        let quotes: HashSet<Vec<String>> =
            quotable.iter().flat_map(|t| words(t).windows(QUOTE).map(<[String]>::to_vec).collect::<Vec<_>>()).collect();
        let names: HashSet<String> = names.iter().flat_map(|n| words(n)).collect();
        let mut next: HashMap<Vec<String>, HashSet<String>> = HashMap::new();
        for text in avoid {
            for run in words(text).windows(RUN) {
                let last = &run[RUN - 1];
                let free = names.contains(last) || last.chars().all(|c| c.is_ascii_digit());
                if !free && !quotes.contains(&run[RUN - QUOTE..]) {
                    next.entry(run[..RUN - 1].to_vec()).or_default().insert(run[RUN - 1].clone());
                }
            }
        }
        (!next.is_empty()).then_some(Self { next })
    }

    /// Whether `piece`, written after `text`, would copy a run: it starts
    /// or continues the run's last word (as a word of its own, or glued to
    /// the word before it).
    pub fn refuses(&self, text: &str, piece: &str) -> bool {
        let lead = alnum_prefix(piece);
        if lead.is_empty() {
            return false;
        }
        let before = words(text);
        let in_word = text.chars().last().is_some_and(char::is_alphanumeric);
        let starts_word = !piece.starts_with(char::is_alphanumeric);
        if starts_word || !in_word {
            // A new word: the last complete words and its beginning.
            return self.would_complete(&before, &lead);
        }
        // The piece continues the word in progress …
        let (last, complete) = before.split_last().expect("a word in progress");
        let grown = format!("{last}{lead}");
        // … or glues a new word onto a finished one.
        self.would_complete(complete, &grown) || self.would_complete(&before, &lead)
    }

    /// Whether the run ending with `words` and a word beginning with `start` is guarded.
    fn would_complete(&self, words: &[String], start: &str) -> bool {
        if words.len() < RUN - 1 {
            return false;
        }
        self.next.get(&words[words.len() - (RUN - 1)..]).is_some_and(|ends| ends.iter().any(|w| w.starts_with(start)))
    }
}

/// A text's words: lower case, runs of letters and digits (an apostrophe
/// inside a word splits it, as it does not matter here).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn alnum_prefix(piece: &str) -> String {
    piece
        .trim_start_matches(|c: char| !c.is_alphanumeric())
        .chars()
        .take_while(|c| c.is_alphanumeric())
        .collect::<String>()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> CopyGuard {
        CopyGuard::new(
            &[
                "Mila carried the snail back to the wall so it could find its family.".into(),
                "I disagree with Dr. Mensah about the grammar score.".into(),
                "Scores: grammar 4, answer relevancy 5, overall 4.".into(),
            ],
            &["In the evening, Mila carried Pebble back to the wall so it could find its family.".into()],
            &["Dr. Mensah".into(), "answer_relevancy".into()],
        )
        .unwrap()
    }

    #[test]
    fn the_fifth_word_of_a_copied_run_is_refused_whole_partial_or_glued() {
        let g = guard();
        let text = "I think Mila carried the snail";
        assert!(g.refuses(text, " back"), "the run 'mila carried the snail back'");
        assert!(g.refuses(text, " ba"), "the word begun");
        assert!(g.refuses("I think Mila carried the snail ba", "ck"), "the word continued");
        assert!(g.refuses("I think Mila carried the snail", "back"), "glued: 'snailback'");
        assert!(!g.refuses(text, " home"), "another word");
        assert!(!g.refuses(text, ","), "punctuation alone");
        assert!(!g.refuses("Mila carried the", " snail"), "four words are not a run");
    }

    #[test]
    fn a_quotation_of_the_item_may_be_continued() {
        let g = guard();
        // "to the wall so" ends in "the wall so", which the item holds.
        assert!(!g.refuses("It says back to the wall", " so"));
        // "snail back to the": "back to the" is in the item too.
        assert!(!g.refuses("Mila carried the snail back to", " the"));
        // "the snail back": not a quotation.
        assert!(g.refuses("Mila carried the snail", " back"));
    }

    #[test]
    fn a_name_or_a_number_is_never_refused() {
        let g = guard();
        assert!(!g.refuses("I disagree with Dr.", " Mensah"));
        assert!(!g.refuses("My scores: grammar 4, answer relevancy", " 5"));
        // A word after them is.
        assert!(g.refuses("with Dr. Mensah about the", " grammar"));
    }

    #[test]
    fn nothing_to_guard_is_no_guard() {
        assert!(CopyGuard::new(&["Too short.".into()], &[], &[]).is_none());
        assert!(CopyGuard::new(&[], &[], &[]).is_none());
    }
}
