//! Keeping a speech from copying earlier ones as it is written.
//!
//! A request may carry texts its reply must not copy (a debate speech: the
//! earlier contributions of its discussion and its own instructions), texts
//! it may quote (the item) and names (the members', the dimensions'). While
//! the embedded model writes the reply's prose, a token is refused when it
//! would make the reply's last [`RUN`] words a run of [`RUN`] consecutive
//! words of a text not to copy, unless the run's last word
//! - is a word of a name or a number: a name is never misspelt to get
//!   round the rule, nor a score's dimension (refusing them did both);
//!   names are the members', the dimensions' and those of the texts it
//!   may quote (a word that begins with a capital letter inside a
//!   sentence there: the story's "Pebble", which the 1.5B model wrote as
//!   "Plumber" and the 0.5B as "Pepble" where a run ending in it was
//!   refused), or
//! - ends [`QUOTE`] consecutive words of a text it may quote: the run
//!   continues a quotation of the item, or
//! - is inside a quotation (after an opening double quotation mark not yet
//!   closed): a speech that quotes the item, a member's perspective or a
//!   speech word for word is quoting, not copying. Refusing it made
//!   misquotes of the guard's own: an earlier speech that led into the
//!   same quotation with the same words ("… pointing out the question
//!   \"Why") pushed the quotation's first word aside ("How did Mila carry
//!   …"), and the 0.5B model wrote "A child with few ****** should still
//!   be able ****** answer" for a brief's "few words should still be able
//!   to answer". A run of the reply's own stays refused there.
//!
//! A quotation is short: a new word is refused in one that holds
//! [`QUOTATION_LONGEST`] words, or [`QUOTATION_SENTENCE`] or more and has
//! just finished a sentence, so the model closes it and goes on in its
//! own words (the 0.5B pasted two sentences of the item's story into four
//! speeches of one debate).
//!
//! A text not to copy may also be *strict* (a speech asked for again
//! because it repeated an earlier one: that one): its runs are refused even
//! where they quote the item, so the second draft cannot copy the first's
//! unmarked quotation of the item's question and answer again (the 0.5B
//! model's Teachers did, one after the other). Names, numbers and words
//! inside quotation marks stay free: refused there, the 0.5B wrote
//! misquotes ("Mila carried Pepble back to the wall") in two runs of two.
//!
//! The reply itself is a text not to copy: a word that would repeat a run
//! of [`RUN`] words the reply already wrote is refused the same way (a name,
//! a number or a quotation still free), so a small model cannot fall into
//! a loop ("I agree with Dr. Haddad, I agree with Dr. Mensah, I agree
//! with …") that fills its budget, and a speech may still quote the item
//! twice word for word.
//!
//! A debate speech that answers a member opens with that member's name and
//! the speaker's "I" ("Mr. Lindqvist, I"); no member's name and "I" may
//! come again in it ([`CopyGuard::answering`]): the "I" after a member's
//! name and its comma (the name whole, or without its title) is refused,
//! so the speech goes on with its point. The 0.5B model wrote "Mr.
//! Lindqvist, I disagree with Mr. Lindqvist, I disagree." and "Amara, I
//! disagree with Amara, I believe …" in 2 of the 12 speeches of a default
//! run (4 of 230 speeches in its logs of that week), and, kept from that,
//! "Dr. Kowalski, I disagreed with Dr. Mensah, I disagreed with Dr.
//! Mensah".
//!
//! The second half of a hyphenated word is never refused ("well-" then
//! "organized"): refused, the model wrote "well-0".
//!
//! Words are compared as moot's repeat rule compares them (`engine::repeats`:
//! lower case, letters and digits), so a token that glues the next word onto
//! the last ("thewall") is refused like the word itself. The refused token's
//! place goes to the model's next choice; the engine's check after the
//! reply, and its one request for new words, still apply.

use std::collections::{HashMap, HashSet};

use super::prose::ends_sentence;

/// Words in a run that a reply may not copy.
pub const RUN: usize = 5;

/// Words at the end of a run that, found together in a text the reply may
/// quote, make the run a quotation.
pub const QUOTE: usize = 3;

/// The most words a quotation holds: at this many, it closes.
pub const QUOTATION_LONGEST: usize = 24;

/// The words after which a quotation closes at the end of a sentence.
pub const QUOTATION_SENTENCE: usize = 8;

/// What a reply may not copy: for each run of `RUN - 1` words of a text
/// not to copy, the words that followed it there.
#[derive(Debug, Default)]
pub struct CopyGuard {
    next: HashMap<Vec<String>, HashSet<String>>,
    /// Words of names, free wherever they come.
    names: HashSet<String>,
    /// Every [`QUOTE`] words in a row of a text it may quote.
    quotes: HashSet<Vec<String>>,
    /// The members' names (each as words, whole and without a title) that
    /// may not be followed by "i" after a speech's opening.
    reopeners: Vec<Vec<String>>,
}

impl CopyGuard {
    /// The guard for `avoid` (texts not to copy), `quotable` (texts it may
    /// quote) and `names`; with nothing to avoid it still keeps the reply
    /// from repeating itself.
    pub fn new(avoid: &[String], quotable: &[String], names: &[String]) -> Self {
        let quotes: HashSet<Vec<String>> =
            quotable.iter().flat_map(|t| words(t).windows(QUOTE).map(<[String]>::to_vec).collect::<Vec<_>>()).collect();
        let names: HashSet<String> =
            names.iter().flat_map(|n| words(n)).chain(quotable.iter().flat_map(|t| proper_names(t))).collect();
        let mut guard = Self { next: HashMap::new(), names, quotes, reopeners: Vec::new() };
        for text in avoid {
            guard.refuse(text, false);
        }
        guard
    }

    /// The guard with `texts` not to copy even where they quote the item
    /// (names, numbers and words inside quotation marks stay free).
    pub fn strict(mut self, texts: &[String]) -> Self {
        for text in texts {
            self.refuse(text, true);
        }
        self
    }

    /// The guard of a speech that opens by answering `answers` ("Dana, I"):
    /// no name of `members` (nor the answered member's) and "I" may come
    /// again in it. Without `answers` there is no such opening to keep to.
    pub fn answering(mut self, answers: Option<&str>, members: &[String]) -> Self {
        let Some(answered) = answers else { return self };
        for name in members.iter().map(String::as_str).chain([answered]) {
            let whole = words(name);
            let bare = match whole.split_first() {
                Some((title, rest)) if !rest.is_empty() && crate::names::TITLES.contains(&title.as_str()) => {
                    Some(rest.to_vec())
                }
                _ => None,
            };
            for form in [Some(whole), bare].into_iter().flatten().filter(|f| !f.is_empty()) {
                if !self.reopeners.contains(&form) {
                    self.reopeners.push(form);
                }
            }
        }
        self
    }

    /// Whether a new word beginning with `start` after `before` is the "I"
    /// of a member's name and "I" again, past the speech's opening. The
    /// comma between is not among the words: "Dana I" reads as "Dana, I".
    fn reopens(&self, text: &str, before: &[String], start: &str) -> bool {
        start == "i"
            && text.trim_end().ends_with(',')
            && self.reopeners.iter().any(|name| before.len() > name.len() + 1 && before.ends_with(name))
    }

    /// Adds the runs of `text` to those refused: each but one that ends in
    /// a name or a number, or (unless `strict`) in a quotation of the item.
    fn refuse(&mut self, text: &str, strict: bool) {
        for run in words(text).windows(RUN) {
            let last = &run[RUN - 1];
            if !is_free(&self.names, last) && (strict || !self.quotes.contains(&run[RUN - QUOTE..])) {
                self.next.entry(run[..RUN - 1].to_vec()).or_default().insert(last.clone());
            }
        }
    }

    /// Whether `piece`, written after `text`, would copy a run: it starts
    /// or continues the run's last word (as a word of its own, or glued to
    /// the word before it).
    pub fn refuses(&self, text: &str, piece: &str) -> bool {
        let lead = alnum_prefix(piece);
        if lead.is_empty() {
            return false;
        }
        if continues_compound(text, piece) {
            return false;
        }
        let before = words(text);
        let in_word = text.chars().last().is_some_and(char::is_alphanumeric);
        let starts_word = !piece.starts_with(char::is_alphanumeric);
        if starts_word || !in_word {
            // A new word: the last complete words and its beginning.
            let lead_in = format!("{text}{}", &piece[..piece.find(char::is_alphanumeric).unwrap_or(piece.len())]);
            let open = open_quotation(&lead_in);
            return open.is_some_and(|at| quotation_is_whole(&lead_in[at..]))
                || self.would_complete(&before, &lead, open.is_some())
                || open.is_none() && self.reopens(&lead_in, &before, &lead);
        }
        // The piece continues the word in progress …
        let (last, complete) = before.split_last().expect("a word in progress");
        let grown = format!("{last}{lead}");
        let lead_in = text.trim_end_matches(char::is_alphanumeric);
        let quoting = quoting(lead_in);
        // … or glues a new word onto a finished one.
        self.would_complete(complete, &grown, quoting) || self.would_complete(&before, &lead, quoting)
    }

    /// Whether the run ending with `words` and a word beginning with `start`
    /// is guarded: it copies a text not to copy (unless `quoting`), or
    /// `words` themselves.
    fn would_complete(&self, words: &[String], start: &str, quoting: bool) -> bool {
        if words.len() < RUN - 1 {
            return false;
        }
        let tail = &words[words.len() - (RUN - 1)..];
        !quoting && self.next.get(tail).is_some_and(|ends| ends.iter().any(|w| w.starts_with(start)))
            || words.windows(RUN).any(|run| {
                let last = &run[RUN - 1];
                run[..RUN - 1] == *tail
                    && last.starts_with(start)
                    && !is_free(&self.names, last)
                    && !self.quotes.contains(&run[RUN - QUOTE..])
            })
    }
}

/// Whether `piece` writes the second half of a hyphenated word whose first
/// half ends `text` ("well-" then "organized"): that is never refused, as
/// refusing it split the word (the 0.5B's synthesis wrote "well-0." for a
/// "well-organized" it had written before). The words after it are checked
/// as ever.
fn continues_compound(text: &str, piece: &str) -> bool {
    let mut tail = text.chars().rev();
    piece.starts_with(char::is_alphanumeric) && tail.next() == Some('-') && tail.next().is_some_and(char::is_alphabetic)
}

/// Whether a word written after `lead_in` is inside a quotation.
fn quoting(lead_in: &str) -> bool {
    open_quotation(lead_in).is_some()
}

/// Whether a new word would go on with a quotation that has said enough
/// (`quoted`, from its opening mark to the word): one of
/// [`QUOTATION_LONGEST`] words, or of [`QUOTATION_SENTENCE`] or more that
/// has finished a sentence (the word would begin another). Such a
/// quotation closes instead; the 0.5B model pasted two sentences of the
/// item's story into four speeches of one debate, each marked as
/// repeating the first.
fn quotation_is_whole(quoted: &str) -> bool {
    let count = words(quoted).len();
    // Marks of emphasis after the sentence's end open no new sentence.
    let said = quoted.trim_end_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_'));
    count >= QUOTATION_LONGEST || count >= QUOTATION_SENTENCE && ends_sentence(said)
}

/// Where the quotation that `lead_in` ends inside opens: its opening mark
/// (`“`, or a straight `"` of odd count) that nothing closed.
fn open_quotation(lead_in: &str) -> Option<usize> {
    let straight = (lead_in.matches('"').count() % 2 == 1).then(|| lead_in.rfind('"')).flatten();
    let curly = lead_in.rfind('“').filter(|&open| lead_in.rfind('”').is_none_or(|close| close < open));
    straight.into_iter().chain(curly).max()
}

/// The words of `text` that begin with a capital letter inside a
/// sentence, lower-cased: after another word on the line, not after `.`,
/// `!`, `?` or `:`, and not opening a quotation or a bracket ("Mila",
/// "Pebble" in "She named it Pebble"; not "She", "Question" or "So" in
/// "Answer: So that …"). "I" is no name.
fn proper_names(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut after_word = false;
        for token in line.split_whitespace() {
            let bare = token.trim_start_matches(|c: char| !c.is_alphanumeric());
            let opens = bare.len() < token.len();
            let first = bare.chars().next();
            if after_word && !opens && first.is_some_and(char::is_uppercase) && bare.chars().nth(1).is_some() {
                out.extend(words(bare).into_iter().take(1));
            }
            after_word = !token.ends_with(['.', '!', '?', ':']);
        }
    }
    out
}

/// A word of a name or a number: never refused.
fn is_free(names: &HashSet<String>, word: &str) -> bool {
    names.contains(word) || word.chars().all(|c| c.is_ascii_digit())
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
    fn a_speech_does_not_open_a_second_time() {
        let g = guard().answering(Some("Mr. Lindqvist"), &["Dr. Mensah".into(), "Dana".into()]);
        assert!(!g.refuses("Mr. Lindqvist,", " I"), "the opening itself");
        assert!(g.refuses("Mr. Lindqvist, I disagree with Mr. Lindqvist,", " I"), "the opening again");
        assert!(g.refuses("Mr. Lindqvist, I disagree with Mr. Lindqvist", ", I"), "its comma and I in one piece");
        assert!(!g.refuses("Mr. Lindqvist, I disagree with Mr. Lindqvist,", " who"), "another word");
        assert!(!g.refuses("Mr. Lindqvist, I disagree with Mr. Lindqvist,", " Ito"), "a word beginning with i");
        assert!(g.refuses("Mr. Lindqvist, I disagree with Dr. Mensah,", " I"), "another member's name and I");
        assert!(g.refuses("Mr. Lindqvist, I disagree with Mensah,", " I"), "a name without its title");
        assert!(g.refuses("Mr. Lindqvist, I agree with Dana,", " I"), "a name without a title");
        assert!(!g.refuses("Mr. Lindqvist, I agree with Dana and", " I"), "no comma: 'Dana and I'");
        assert!(!g.refuses("Mr. Lindqvist, I read the story,", " I"), "no name before it");
        assert!(!g.refuses("Mr. Lindqvist, I read \"Mr. Lindqvist,", " I"), "inside a quotation");
        assert!(!guard().refuses("Mr. Lindqvist, I disagree with Mr. Lindqvist,", " I"), "no member answered");
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
    fn the_first_word_of_a_quotation_of_the_item_is_free() {
        let g = CopyGuard::new(
            &["Ms. Ito, I disagree, pointing out the question \"Why did Mila carry Pebble back?\"".into()],
            &["Question: Why did Mila carry Pebble back to the wall?".into()],
            &[],
        );
        let text = "Dana, I disagree, pointing out the question";
        assert!(g.refuses(text, " why"), "not a quotation: the copied run");
        assert!(!g.refuses(&format!("{text} \""), "Why"), "after an opening mark");
        assert!(!g.refuses(text, " \"Why"), "the mark and the word in one piece");
        assert!(!g.refuses(&format!("{text} “"), "Why"), "a curly mark");
        assert!(!g.refuses(&format!("{text} \"W"), "hy"), "the word continued");
        // A closing mark opens nothing.
        assert!(g.refuses("\"Dana, I disagree, pointing out the question\"", " why"));
    }

    #[test]
    fn a_quotation_closes_after_a_sentence_of_eight_words_or_at_twenty_four() {
        let g = CopyGuard::new(&[], &[], &[]);
        let story = "Pebble moved so slowly that Mila counted to one hundred while it crossed the leaf.";
        let lead = "I disagree, pointing to the story:";
        assert!(g.refuses(&format!("{lead} \"{story}"), " In"), "a sentence of 15 words said");
        assert!(g.refuses(&format!("{lead} \"{story} "), "In"), "the blank written before");
        assert!(!g.refuses(&format!("{lead} \"{story}"), "\""), "its closing mark");
        assert!(!g.refuses(&format!("{lead} \"{story}\""), " It"), "closed, the speech goes on");
        let unfinished = story.trim_end_matches("af.");
        assert!(!g.refuses(&format!("{lead} \"{unfinished}"), "af"), "a word in progress goes on");
        assert!(!g.refuses(&format!("{lead} \"{unfinished}"), "af."), "and ends the sentence");
        assert!(!g.refuses(&format!("{lead} “Why did Mila carry Pebble?"), " So"), "a sentence of five words");
        assert!(!g.refuses(&format!("{lead} \"Ask Mr. Osei and Dr. Lindgren and Ms. Ito and Mr."), " Ng"), "a title");
        let quoted = |n: usize| format!("{lead} \"{}", (1..=n).map(|i| format!("w{i}")).collect::<Vec<_>>().join(" "));
        assert!(g.refuses(&quoted(24), " and"), "24 words");
        assert!(!g.refuses(&quoted(23), " and"), "23 words");
        assert!(g.refuses(&format!("{lead} “{story}"), " In"), "a curly mark");
        assert!(g.refuses(&format!("{lead} \"{story} **"), "In"), "emphasis");
    }

    #[test]
    fn a_quotation_may_copy_a_member_word_for_word() {
        let g = CopyGuard::new(
            &["A child with few words should still be able to answer; one-word answers must count.".into()],
            &[],
            &[],
        );
        let text = "I disagree: a child with few words";
        assert!(g.refuses(text, " should"), "the brief's run, outside a quotation");
        assert!(!g.refuses("I disagree with \"a child with few words", " should"), "inside one");
        assert!(!g.refuses("I disagree with “a child with few words", " should"), "inside a curly one");
        assert!(!g.refuses("I disagree with \"a child with few words should still be able", " to"));
        // A closed quotation is no quotation.
        assert!(g.refuses("She said \"no\" and: a child with few words", " should"));
        assert!(g.refuses("She said “no” and: a child with few words", " should"));
        // The reply's own runs stay refused inside a quotation.
        let own = CopyGuard::new(&[], &[], &[]);
        assert!(own.refuses("we go to the park, \"we go to the", " park"));
    }

    #[test]
    fn a_strict_text_is_refused_even_as_an_unmarked_quotation_of_the_item() {
        let item = "Question: Why did Mila carry Pebble back to the wall? Answer: So that it could find its family.";
        let repeated =
            "Ms. Ito, Question: Why did Mila carry Pebble back to the wall? Answer: So that it could find its family.";
        let loose = CopyGuard::new(&[repeated.into()], &[item.into()], &["Ms. Ito".into()]);
        let strict = CopyGuard::new(&[repeated.into()], &[item.into()], &["Ms. Ito".into()]).strict(&[repeated.into()]);
        let text = "Dana, Question: Why did Mila carry Pebble";
        assert!(!loose.refuses(text, " back"), "a quotation of the item may copy a loose text");
        assert!(strict.refuses(text, " back"), "not a strict one");
        assert!(!strict.refuses("Dana, \"Why did Mila carry Pebble", " back"), "inside quotation marks it is free");
        assert!(!strict.refuses("Dana, Question: Why did Mila carry", " Pebble"), "a name of the item");
        assert!(!strict.refuses("Dana, the question is why Mila", " carried"), "other words stand");
        // Names and numbers stay free in a strict text too.
        let scores = CopyGuard::new(&[], &[], &["Ms. Ito".into()]).strict(&["I agree with Ms. Ito on 4".into()]);
        assert!(!scores.refuses("I agree with Ms.", " Ito"));
        assert!(!scores.refuses("agree with Ms. Ito on", " 4"));
    }

    #[test]
    fn the_names_of_the_texts_it_may_quote_are_free() {
        let story = "Mila found a snail. She named it Pebble.\nQuestion: Why did Mila carry \"Pebble\" back?\n\
                     Answer: So that I could see it.";
        assert_eq!(proper_names(story), ["pebble", "mila"]);
        let said = "I think the story states that Pebble was happy and sleepy.";
        let g = CopyGuard::new(&[said.into()], &[story.into()], &[]);
        assert!(!g.refuses("I think the story states that", " Pebble"), "a name of the story");
        assert!(g.refuses("story states that Pebble was happy", " and"), "the words after it");
        assert!(g.refuses("I think the story states", " that"), "other words");
        let before = CopyGuard::new(&[said.into()], &[], &[]);
        assert!(before.refuses("I think the story states that", " Pebble"), "not a name without the story");
    }

    #[test]
    fn a_hyphenated_word_is_never_split() {
        let g = CopyGuard::new(&[], &[], &[]);
        let text = "The story is well-organized and clear. The story is well-";
        assert!(!g.refuses(text, "organized"), "its second half is free");
        assert!(!g.refuses(text, "organ"), "and a beginning of it");
        assert!(g.refuses("The story is well organized and clear. The story is well ", "organized"), "no hyphen");
        assert!(
            g.refuses("The story is well-organized and clear. The story is well-organized", " and"),
            "not what follows"
        );
        assert!(g.refuses("The story is well organized. The story is well", " organized"), "no hyphen: a run");
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
    fn a_reply_may_not_repeat_a_run_of_its_own() {
        let g = CopyGuard::new(&[], &[], &["Dr. Haddad".into(), "Dr. Mensah".into(), "Dr. Kowalski".into()]);
        let looping = "Dr. Kowalski, I disagree with Dr. Haddad, I agree with Dr. Haddad, I agree with Dr. Mensah, \
                       I agree with Dr. Kowalski, I agree with Dr. Haddad";
        assert!(!g.refuses(looping, ","), "punctuation alone is never refused");
        assert!(g.refuses(looping, ", I"), "'agree with dr haddad i' came before");
        assert!(!g.refuses(looping, " because"), "a new word");
        // Names and numbers stay free: "with Dr. Mensah" again is allowed.
        assert!(!g.refuses("I agree with Dr. Mensah and then with Dr.", " Mensah"));
        assert!(!g.refuses("grammar 4 and overall 4, grammar 4 and overall", " 4"));
        // Four words again are not a run; a quotation of the item repeated is
        // free, a run of the reply's own again is not.
        assert!(!g.refuses("the snail went home. Then the snail went", " away"));
        let item = CopyGuard::new(&[], &["So that the gastropod could be reunited with its kin.".into()], &[]);
        assert!(!item.refuses("It says the gastropod could be reunited, and the gastropod could be", " reunited"));
        assert!(item.refuses("the snail went home slowly, and the snail went home", " slowly"));
    }
}
