//! Where a constrained reply's prose may end, and what turns it into its
//! JSON object (see `docs/local-model.md`, *Constrained evaluations*).

/// Whether the token `piece` starts the JSON object: it holds a `{` that
/// begins a line (only blanks before it), follows a colon or an opening
/// parenthesis, or sits inside an open code fence. A `{` in the middle of a
/// sentence (code under review) stays prose.
pub(super) fn starts_json(prose: &str, piece: &[u8]) -> bool {
    let Some(at) = piece.iter().position(|&b| b == b'{') else {
        return false;
    };
    let before = String::from_utf8_lossy(&piece[..at]);
    let line = format!("{}{before}", prose.rsplit('\n').next().unwrap_or(""));
    let line = line.trim();
    line.is_empty() || line.ends_with([':', '(']) || prose.matches("```").count() % 2 == 1 && line.starts_with("```")
}

/// The least prose, in tokens, that a constrained reply writes before its
/// JSON object (within its prose budget).
pub(super) const MIN_PROSE_TOKENS: u32 = 32;

/// Whether a constrained reply's prose may end: it has [`MIN_PROSE_TOKENS`],
/// a finished sentence and [`MIN_OWN_WORDS`] of its own.
pub(super) fn prose_is_enough(produced: u32, prose: &str) -> bool {
    produced >= MIN_PROSE_TOKENS && says_enough(prose)
}

/// The fewest words a constrained reply's prose writes outside quotation
/// marks (the opening words given to the model count) before it may end.
/// A speech that was its addressee's name, "I disagree with …'s first
/// evaluation of" and the item's question in quotation marks had its 16
/// tokens and a finished sentence (the quotation's `?`), and said nothing;
/// the 0.5B model's next speakers copied it, and one quoting the last
/// speaker's sentence back ("Dr. Kowalski, I said: \"…\"").
pub(super) const MIN_OWN_WORDS: usize = 15;

/// Words of `prose` outside double quotation marks (`"…"`, `“…”`; a
/// quotation still open counts as inside).
pub(super) fn own_words(prose: &str) -> usize {
    let mut inside = false;
    let mut count = 0;
    let mut in_word = false;
    for c in prose.chars() {
        match c {
            '"' => inside = !inside,
            '“' => inside = true,
            '”' => inside = false,
            _ => {}
        }
        let letter = c.is_alphanumeric();
        if letter && !in_word && !inside {
            count += 1;
        }
        in_word = letter;
    }
    count
}

/// Whether `prose` has a finished sentence and [`MIN_OWN_WORDS`].
fn says_enough(prose: &str) -> bool {
    has_finished_sentence(prose) && own_words(prose) >= MIN_OWN_WORDS
}

/// The least prose, in tokens, that a line break ends (see [`ends_paragraph`]).
pub(super) const PARAGRAPH_MIN_TOKENS: u32 = 16;

/// Whether the token `piece`, just added to `prose`, ends a constrained
/// reply's prose: a reply's words are one paragraph, so a line break ends
/// them once they hold a finished sentence, [`MIN_OWN_WORDS`] and
/// [`PARAGRAPH_MIN_TOKENS`]. Small models otherwise go on to copy the
/// discussion's lines or the instructions.
pub(super) fn ends_paragraph(produced: u32, prose: &str, piece: &[u8]) -> bool {
    produced >= PARAGRAPH_MIN_TOKENS && piece.contains(&b'\n') && says_enough(prose.trim_end())
}

/// Whether the token `piece` would break the line before the reply has a
/// finished sentence and [`MIN_OWN_WORDS`], or, as the first token after
/// opening words given to the model (`prose` not empty when nothing is
/// produced yet: "Dana, I"), would not go on with a word. Small models
/// otherwise turn there to copying the discussion's lines.
pub(super) fn breaks_line_early(produced: u32, prose: &str, piece: &[u8]) -> bool {
    if produced == 0 && !prose.is_empty() {
        let piece = String::from_utf8_lossy(piece);
        let mut chars = piece.chars();
        let first = chars.next();
        let word = match first {
            Some(' ') => chars.next().is_some_and(char::is_alphabetic),
            Some('\'' | '’') => chars.next().is_none_or(char::is_alphabetic),
            _ => false,
        };
        return !word;
    }
    piece.contains(&b'\n') && !says_enough(prose)
}

/// Verbs that report speech. As the first word after opening words given
/// to the model ("Dr. Haddad, I"), they are not drawn: the 0.5B model went
/// on "said: \"…\"" and filled the speech with quotations it put in the
/// members' mouths ("Dr. Haddad, I said: \"…\" Dr. Mensah, I said: …").
const REPORTING: [&str; 7] = ["said", "say", "asked", "wrote", "stated", "quoted", "repeat"];

/// Whether the token `piece`, as the first one after opening words given to
/// the model (`prose` not empty when nothing is produced yet), is a
/// [`REPORTING`] verb.
pub(super) fn reports_speech(produced: u32, prose: &str, piece: &[u8]) -> bool {
    let piece = String::from_utf8_lossy(piece);
    let word = piece.trim_start().trim_end_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    produced == 0 && !prose.is_empty() && piece.starts_with(' ') && REPORTING.contains(&word.as_str())
}

/// Whether the token `piece` (a blank, a straight quotation mark and
/// perhaps marks after it: ` "`, ` ",`) would close the quotation that
/// `prose` ends inside, after its last word's mark, with a blank: `the
/// wall? "` for `the wall?"`. Models of the Qwen family, having drawn the
/// mark alone (`?`) rather than with the quotation mark (`?"`), go on with
/// the blank and the mark; the piece without its blank is then written
/// instead (see `generate_prose`).
pub(super) fn closes_quotation_apart(prose: &str, piece: &[u8]) -> bool {
    let mut rev = prose.chars().rev();
    piece.starts_with(b" \"")
        && !piece[2..].iter().any(|b| b.is_ascii_alphanumeric() || *b == b'"')
        && matches!(rev.next(), Some('?' | '.' | '!' | ','))
        && rev.next().is_some_and(char::is_alphanumeric)
        && prose.matches('"').count() % 2 == 1
}

/// Whether `text` holds a sentence's end: `.`, `!` or `?` followed by a
/// blank, a closing quote or bracket, or the end of the text (not a decimal
/// point or an abbreviation's dot inside a word, nor a title's: a speech
/// that was "Mr. Osei, I disagree with Mr. Osei's first evaluations,
/// pointing to the generated conclusion:" held a finished sentence, "Mr.",
/// and the 0.5B model's object followed the colon).
pub(super) fn has_finished_sentence(text: &str) -> bool {
    text.char_indices().any(|(i, c)| {
        matches!(c, '.' | '!' | '?')
            && text[..i].chars().next_back().is_some_and(char::is_alphanumeric)
            && text[i + 1..].chars().next().is_none_or(|n| n.is_whitespace() || "\"')”*".contains(n))
            && !(c == '.' && after_abbreviation(&text[..i]))
    })
}

/// Whether `before`, the text before a dot, ends with one of the
/// [`ABBREVIATIONS`], a word whose dot ends no sentence.
fn after_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| !(c.is_alphanumeric() || c == '.')).next().unwrap_or("");
    ABBREVIATIONS.contains(&word)
}

/// Whether `text` ends with a finished sentence: `.`, `!` or `?` after a
/// letter, a closing bracket or a closing quote ("… average (3.5).", "…
/// the word 'gastropod'."), perhaps followed by closing quotes or brackets
/// (not a list number such as `2.`, nor a number that may go on, `3.`).
pub(super) fn ends_sentence(text: &str) -> bool {
    let text = text.trim_end().trim_end_matches(['"', '\'', ')', '”', '*']);
    let mut rev = text.chars().rev();
    matches!(rev.next(), Some('.' | '!' | '?'))
        && rev.next().is_some_and(|c| c.is_alphabetic() || matches!(c, ')' | '"' | '\'' | '”'))
        && !(text.ends_with('.') && after_abbreviation(&text[..text.len() - 1]))
}

/// Whether the token `piece` would end a reply's prose, or turn it into the
/// JSON object before the prose said anything: it holds a `{` (small models
/// also open the object after a parenthesis or a word), or it opens a code
/// fence (where the object usually follows).
pub(super) fn ends_prose(prose: &str, piece: &[u8]) -> bool {
    if piece.contains(&b'{') {
        return true;
    }
    let Some(at) = piece.iter().position(|&b| b == b'`') else {
        return false;
    };
    let last_line = prose.rsplit('\n').next().unwrap_or("");
    let text = format!("{last_line}{}", String::from_utf8_lossy(piece));
    let tick = last_line.len() + String::from_utf8_lossy(&piece[..at]).len();
    let line_start = text[..tick].rfind('\n').map_or(0, |i| i + 1);
    text[line_start..].trim_start().starts_with("``")
}

/// Fewest characters a JSON string value of a constrained reply holds
/// before a finished sentence closes it (see [`string_may_close`]).
pub(super) const STRING_SENTENCE_MIN: usize = 40;

/// Where a scan of JSON text, a character at a time, stands with its
/// strings.
#[derive(Default)]
pub(super) struct JsonStrings {
    /// Inside a string.
    pub(super) inside: bool,
    /// Just after a backslash inside a string.
    pub(super) escaped: bool,
}

impl JsonStrings {
    /// Takes the next character; whether it belongs to a string (its
    /// quotes included).
    pub(super) fn take(&mut self, c: char) -> bool {
        if self.inside {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                '"' => self.inside = false,
                _ => {}
            }
            true
        } else {
            self.inside = c == '"';
            self.inside
        }
    }
}

/// Words whose dot does not end a sentence.
const ABBREVIATIONS: [&str; 10] = ["Mr", "Mrs", "Ms", "Dr", "Prof", "St", "e.g", "i.e", "etc", "vs"];

/// Where the string that the JSON text `json` ends inside begins (the byte
/// after its opening mark), and the mark before it (`:` for a member's
/// value, `[` or `,` in an array, `{` or `,` for a key); `None` outside a
/// string or just after a backslash in one.
fn open_string(json: &str) -> Option<(usize, char)> {
    let (mut strings, mut start, mut before) = (JsonStrings::default(), 0, ' ');
    let mut last_mark = ' ';
    for (i, c) in json.char_indices() {
        let opening = !strings.inside && c == '"';
        if strings.take(c) {
            if opening {
                (start, before) = (i + 1, last_mark);
            }
        } else if !c.is_whitespace() {
            last_mark = c;
        }
    }
    (strings.inside && !strings.escaped).then_some((start, before))
}

/// Whether the JSON text `json` (an object being written) ends inside a
/// string value that holds at least [`STRING_SENTENCE_MIN`] characters and
/// ends a sentence: the value is closed there rather than left to run on
/// to its `maxLength`, where it would be cut in the middle of the next one.
pub(super) fn string_may_close(json: &str) -> bool {
    value_closes(json, ends_sentence)
}

/// Whether the JSON text `json` ends inside a string value that
/// [`string_may_close`] would close if the dot after its last number ended
/// the sentence ("… her grammar score is 5."): a word, a blank, a whole
/// number and a dot. The number may yet go on ("3.5"); the caller closes
/// the value only where the model's likeliest next token is a blank, so
/// that a reason like "Ms. Ito's score is 5. She …" ends at "5." instead of
/// running on to its `maxLength`.
pub(super) fn string_may_close_after_number(json: &str) -> bool {
    value_closes(json, |text| {
        let Some(digits) = text.strip_suffix('.') else { return false };
        let number = digits.trim_end_matches(|c: char| c.is_ascii_digit());
        number.len() < digits.len()
            && number.strip_suffix(' ').is_some_and(|words| words.ends_with(char::is_alphabetic))
    })
}

/// [`string_may_close`] with `ends` as the test of the sentence's end.
fn value_closes(json: &str, ends: impl Fn(&str) -> bool) -> bool {
    let Some((start, ':')) = open_string(json) else {
        return false;
    };
    let text = &json[start..];
    let trimmed = text.trim_end();
    // Only a sentence of the value's own: not one inside a quotation
    // ("the question 'What did Ben find?") nor one a quotation closes
    // ("the question 'What did Ben find?'"), where the value goes on.
    if trimmed.chars().count() < STRING_SENTENCE_MIN
        || !trimmed.ends_with(['.', '!', '?'])
        || !ends(trimmed)
        || quotation_open(trimmed)
    {
        return false;
    }
    !after_abbreviation(&trimmed[..trimmed.len() - 1])
}

/// Whether a JSON string value's text (escapes as written) ends inside a
/// quotation: an escaped `\"`, a curly `“` or a single `'` opened and not
/// closed. A single mark opens after a blank or a bracket and closes after
/// a non-blank before a blank, a mark or the end; one between two letters
/// is an apostrophe (`Ben's`). A single mark opened more than
/// [`QUOTATION_MAX`] characters back was no quotation (`rock 'n roll`).
fn quotation_open(text: &str) -> bool {
    let escaped = text.matches("\\\"").count();
    let curly = text.matches('“').count() > text.matches('”').count();
    let chars: Vec<char> = text.chars().collect();
    let mut single = None;
    for (i, &c) in chars.iter().enumerate() {
        if c != '\'' {
            continue;
        }
        let before = i.checked_sub(1).map(|j| chars[j]);
        let after = chars.get(i + 1).copied();
        let opens =
            before.is_none_or(|b| b.is_whitespace() || "([".contains(b)) && after.is_some_and(|a| !a.is_whitespace());
        let closes = before.is_some_and(|b| !b.is_whitespace()) && after.is_none_or(|a| !a.is_alphanumeric());
        match single {
            None if opens => single = Some(i),
            Some(_) if closes => single = None,
            _ => {}
        }
    }
    escaped % 2 == 1 || curly || single.is_some_and(|at| chars.len() - at <= QUOTATION_MAX)
}

/// The longest quotation in a string value that keeps it open (see
/// [`quotation_open`]): longer than the sample's longest line (107 characters).
const QUOTATION_MAX: usize = 160;

/// Whether the token `piece`, written after the JSON text `json`, would
/// close a string value where the model meant to open a quotation inside
/// it: a quotation mark after a blank (`in the "garden wall"`), which the
/// grammar reads as the string's end and so cuts the value after "the".
/// A value's string follows a `:` or a `[`; keys are not asked.
pub(super) fn opens_quote_in_string(json: &str, piece: &[u8]) -> bool {
    let Some(at) = piece.iter().position(|&b| b == b'"') else {
        return false;
    };
    if !matches!(open_string(json), Some((_, ':' | '['))) {
        return false;
    }
    let before = &piece[..at];
    let blank_before = if before.is_empty() {
        json.ends_with(char::is_whitespace)
    } else {
        before.iter().all(u8::is_ascii_whitespace)
    };
    blank_before && !json.ends_with('"')
}

/// What a reply written in headed paragraphs (the request's `sections`)
/// does after a piece: go on, begin the next section with its heading, or
/// end.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum SectionStep<'a> {
    Go,
    Next(&'a str),
    End,
}

/// After `piece`, written last in `text`: where the piece broke a line
/// (only blanks after its line break) and the paragraph of the latest
/// section heading in `text` holds a finished sentence, that section is
/// done. The next heading follows, or, after the last, the reply ends. The
/// headings count in order, each after the one before it, wherever the
/// model wrote them. A text that has not reached the first heading goes on
/// as it will.
pub(super) fn section_step<'s>(text: &str, piece: &[u8], sections: &'s [String]) -> SectionStep<'s> {
    if sections.is_empty() || !piece.contains(&b'\n') || !text.rsplit('\n').next().unwrap_or("").trim().is_empty() {
        return SectionStep::Go;
    }
    let (mut body_from, mut current) = (0, None);
    for (i, heading) in sections.iter().enumerate() {
        match text[body_from..].find(heading.as_str()) {
            Some(at) => {
                body_from += at + heading.len();
                current = Some(i);
            }
            None => break,
        }
    }
    match current {
        Some(i) if has_finished_sentence(&text[body_from..]) => {
            sections.get(i + 1).map_or(SectionStep::End, |next| SectionStep::Next(next))
        }
        _ => SectionStep::Go,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_section_ends_at_a_line_break_after_a_finished_sentence() {
        let sections: Vec<String> = ["Agreement:", "Disagreement:", "Overall:"].map(String::from).to_vec();
        let step = |text: &str, piece: &str| section_step(text, piece.as_bytes(), &sections);
        // A line break before the first sentence is finished goes on.
        assert_eq!(step("Agreement:\n", "\n"), SectionStep::Go);
        assert_eq!(step("Agreement: The panel agrees on grammar\n", "\n"), SectionStep::Go);
        // After a finished sentence the next heading follows.
        assert_eq!(step("Agreement: All agree on grammar.\n\n", ".\n\n"), SectionStep::Next("Disagreement:"));
        assert_eq!(step("Agreement: All agree.\n\nDisagreement: Ann differs.\n", "\n"), SectionStep::Next("Overall:"));
        // The model's own heading counts, wherever it wrote it.
        assert_eq!(step("Agreement: All agree. Disagreement: Ann differs.\n", "\n"), SectionStep::Next("Overall:"));
        // After the last section's paragraph the reply ends.
        let whole = "Agreement: All agree.\n\nDisagreement: Ann differs.\n\nOverall: Good.\n";
        assert_eq!(step(whole, "\n"), SectionStep::End);
        // Not at a piece without a line break, nor where words follow it.
        assert_eq!(step("Agreement: All agree.", "."), SectionStep::Go);
        assert_eq!(step("Agreement: All agree.\nThe", ".\nThe"), SectionStep::Go);
        // A heading out of order is no section; before the first, nothing is.
        assert_eq!(step("Overall: Good.\n", "\n"), SectionStep::Go);
        assert_eq!(section_step("Fine.\n", b"\n", &[]), SectionStep::Go);
    }

    #[test]
    fn a_quotation_is_closed_against_its_last_mark() {
        let open = "The question \"Why did Mila carry Pebble back to the wall?";
        assert!(closes_quotation_apart(open, b" \""));
        assert!(closes_quotation_apart("The answer \"So that it could find its kin.", b" \""));
        assert!(!closes_quotation_apart(open, b"\""), "already closed against it");
        assert!(closes_quotation_apart(open, b" \","), "a mark after it");
        assert!(!closes_quotation_apart(open, b" \"I"), "a quotation that opens");
        assert!(!closes_quotation_apart(open, b" \"\""), "two marks");
        assert!(!closes_quotation_apart("The question \"Why did Mila carry Pebble", b" \""), "no mark before");
        assert!(!closes_quotation_apart("I said \"no\" and asked why?", b" \""), "no quotation open");
        assert!(!closes_quotation_apart("Mila asked why?", b" \""), "nothing quoted before");
    }

    #[test]
    fn prose_ends_only_after_enough_of_it() {
        assert!(has_finished_sentence("The answer fits the story. It"));
        assert!(has_finished_sentence("Is it right?"));
        assert!(has_finished_sentence("He said \"no.\" Then"));
        assert!(!has_finished_sentence("The score is 3.5 out of"));
        assert!(!has_finished_sentence("Here is my evaluation:"));
        assert!(!has_finished_sentence("..."));
        assert!(
            !has_finished_sentence("Mr. Osei, I disagree with Dr. Lindgren's evaluations, pointing to the conclusion:"),
            "a title's dot ends no sentence"
        );
        assert!(!has_finished_sentence("Mrs. Duarte and Prof. Ng, e.g. the"));
        assert!(has_finished_sentence("Ask Mr. Osei, the doctor. Then"), "a sentence after a title still ends");
        assert!(has_finished_sentence("It is a dream."), "a word that ends like a title is a word");
        let sentence = "The answer fits the story, and a child of five could say it back in a word or two.";
        assert!(!prose_is_enough(MIN_PROSE_TOKENS - 1, sentence));
        assert!(prose_is_enough(MIN_PROSE_TOKENS, sentence));
        assert!(!prose_is_enough(MIN_PROSE_TOKENS * 4, "a long clause with no end yet"));
        assert!(!prose_is_enough(MIN_PROSE_TOKENS * 4, "The answer fits the story."), "too few words of its own");
        // A line break after a finished sentence ends the paragraph.
        let para = "Dana, I disagree: the answer names the wall, but the story never says the snail wanted it.\n";
        assert!(ends_paragraph(PARAGRAPH_MIN_TOKENS, para, b".\n"));
        assert!(!ends_paragraph(PARAGRAPH_MIN_TOKENS - 1, para, b".\n"), "too short");
        assert!(!ends_paragraph(PARAGRAPH_MIN_TOKENS, "BEGIN DEBATE\n", b"\n"), "no sentence yet");
        assert!(!ends_paragraph(PARAGRAPH_MIN_TOKENS, "Dana, I disagree.", b"."), "no line break");
        // A sentence that is mostly a quotation has too few words of its own.
        let quoting = "Mr. Lindqvist, I disagree with Ms. Okafor first evaluation of \"Why did Mila carry Pebble back \
                       to the wall?\"";
        assert_eq!(own_words(quoting), 10);
        assert!(!ends_paragraph(PARAGRAPH_MIN_TOKENS * 2, quoting, b"\n"));
        assert!(breaks_line_early(PARAGRAPH_MIN_TOKENS * 2, quoting, b"\n"));
        assert!(!prose_is_enough(MIN_PROSE_TOKENS * 2, quoting));
        assert_eq!(own_words("Dr. Haddad, I said: “Mila carried Pebble back” and \"it moved"), 5, "an open mark");
        // After opening words, a word comes next; no line breaks before the first sentence ends.
        assert!(!breaks_line_early(0, "Dana, I", b" disagree"));
        assert!(!breaks_line_early(0, "Dana, I", b"'m"));
        assert!(breaks_line_early(0, "Dana, I", b" \xe2\x80\x94"), "an em dash");
        assert!(breaks_line_early(0, "Dana, I", b":"));
        assert!(breaks_line_early(0, "Dana, I", b"\n"));
        assert!(!breaks_line_early(0, "", b"BEGIN"), "no opening words: any start");
        // Nor does it report what was said.
        assert!(reports_speech(0, "Dr. Haddad, I", b" said"));
        assert!(reports_speech(0, "Dr. Haddad, I", b" asked:"));
        assert!(!reports_speech(0, "Dr. Haddad, I", b" disagree"));
        assert!(!reports_speech(0, "Dr. Haddad, I", b" saw"));
        assert!(!reports_speech(4, "Dr. Haddad, I think you", b" said"), "later it may");
        assert!(!reports_speech(0, "", b" said"), "no opening words");
        assert!(breaks_line_early(3, "Dana, I think", b"\n"));
        assert!(breaks_line_early(9, "Dana, I think it fits. ", b"\n"), "too few words of its own");
        assert!(!breaks_line_early(9, &format!("{sentence} "), b"\n"));
        // Near the budget, prose stops at the end of a sentence, not a list number.
        assert!(ends_sentence("It reads well. "));
        assert!(ends_sentence("He said \"fine.\""));
        assert!(!ends_sentence("Steps:\n2."));
        assert!(!ends_sentence("It scores 3.5"));
        assert!(!ends_sentence("It scores 3."), "the number may go on");
        assert!(ends_sentence("Ms. Ito's grammar score (4) is furthest from the others' average (3.5)."));
        assert!(ends_sentence("It uses the word 'gastropod'."));
        assert!(!ends_sentence("I agree with Dr."), "a title");
        // What the prose may not turn to before it is long enough.
        assert!(ends_prose("", b"{"));
        assert!(ends_prose("Fine.\n", b"```"));
        assert!(ends_prose("Fine.", b"\n```json"));
        assert!(ends_prose("Fine.\n`", b"``"));
        assert!(ends_prose("The evaluation as one object", b" ({"));
        assert!(!ends_prose("Use the `", b"let"));
        assert!(!ends_prose("Fine", b" `code`"));
        assert!(!ends_prose("Fine", b" words"));
    }

    #[test]
    fn a_string_value_closes_at_a_sentence_end_once_it_says_something() {
        let open = r#"{"grammar": 4, "justification": "#;
        let long = "The answer names the wall where Mila found Pebble.";
        assert!(string_may_close(&format!("{open}\"{long}")));
        assert!(string_may_close(&format!("{open}\"{long} ")));
        assert!(!string_may_close(&format!("{open}\"{long} It")), "a new sentence has begun");
        assert!(!string_may_close(&format!("{open}\"Fine.")), "too short to close");
        assert!(!string_may_close(&format!("{open}\"{long}\"")), "already closed");
        assert!(!string_may_close(&format!("{open}\"The question Mila asks matches what Mr.")), "an abbreviation");
        assert!(!string_may_close(&format!("{open}\"The answer reads well and scores 3.")), "a number");
        let standing = "Ms. Ito's grammar score (4) is furthest from the others' average (3.5).";
        assert!(string_may_close(&format!("{open}\"{standing}")), "a sentence that ends with a bracket");
        assert!(!string_may_close(r#"{"The answer names the wall where Mila found Pebble."#), "a key");
        assert!(
            string_may_close(&format!(r#"{open}"He said \"no\" and the answer names the wall where Mila found it."#)),
            "escaped quotes stay inside"
        );
    }

    #[test]
    fn a_string_value_may_close_after_a_whole_number_that_ends_its_sentence() {
        let open = r#"{"next": "Ms. Ito", "reason": "#;
        let scored = "Ms. Ito's grammar score, the panel's lowest, is 5.";
        assert!(!string_may_close(&format!("{open}\"{scored}")), "the number may go on");
        assert!(string_may_close_after_number(&format!("{open}\"{scored}")));
        assert!(!string_may_close_after_number(&format!("{open}\"{scored} She")), "a new sentence has begun");
        assert!(!string_may_close_after_number(&format!("{open}\"Her score is 5.")), "too short to close");
        let list = "The reasons to hear Ms. Ito next are these: 1.";
        assert!(!string_may_close_after_number(&format!("{open}\"{list}")), "a list's number");
        let decimal = "Ms. Ito's grammar score is above the panel's average of 3.5.";
        assert!(!string_may_close_after_number(&format!("{open}\"{decimal}")), "a decimal ends with its digits");
        let quoted = "The question 'How many stones did Mila carry? She carried 5.";
        assert!(!string_may_close_after_number(&format!("{open}\"{quoted}")), "inside a quotation");
        assert!(!string_may_close_after_number(r#"{"Ms. Ito's grammar score, the panel's lowest, is 5."#), "a key");
    }

    #[test]
    fn a_string_value_does_not_close_inside_a_quotation_or_at_its_end() {
        let open = r#"{"next": "Ms. Ito", "reason": "#;
        let asked = "The question 'What did Ben find under his pillow in the morning?";
        assert!(!string_may_close(&format!("{open}\"{asked}")), "a single quotation still open");
        assert!(!string_may_close(&format!("{open}\"{asked}'")), "the quotation's sentence, not the value's");
        assert!(string_may_close(&format!("{open}\"{asked}' is one a child can answer.")), "the value's own sentence");
        let escaped = r#"The question \"What did Ben find under his pillow?"#;
        assert!(!string_may_close(&format!("{open}\"{escaped}")), "an escaped quotation still open");
        assert!(!string_may_close(&format!("{open}\"The question “What did Ben find under his pillow?")), "curly");
        let apostrophes = "Ms. Ito's point about Ben's pillow is the children's view.";
        assert!(string_may_close(&format!("{open}\"{apostrophes}")), "apostrophes are no quotations");
        assert!(string_may_close(&format!("{open}\"The parents' view differs from the teachers' on relevancy.")));
        let stray = format!("Amara hums 'n {} and the answer fits.", "the answer names the wall ".repeat(7));
        assert!(string_may_close(&format!("{open}\"{stray}")), "a mark long ago was no quotation");
    }

    #[test]
    fn a_quotation_mark_after_a_blank_inside_a_value_is_a_quotation_not_its_end() {
        let open = r#"{"grammar": 4, "justification": "This pair suits a young child in the"#;
        assert!(opens_quote_in_string(open, b" \""), "a blank and the mark in one token");
        assert!(opens_quote_in_string(open, b" \"garden"));
        assert!(opens_quote_in_string(&format!("{open} "), b"\""), "the blank written before");
        assert!(!opens_quote_in_string(open, b"\""), "after a word: the value's end");
        assert!(!opens_quote_in_string(&format!("{open}."), b"\","), "after a full stop");
        assert!(!opens_quote_in_string(open, b" garden"), "no mark");
        assert!(opens_quote_in_string(r#"{"quotes": ["It says"#, b" \""), "a string in an array");
        assert!(!opens_quote_in_string(r#"{"grammar": 4, "#, b" \""), "outside a string: a key begins");
        assert!(!opens_quote_in_string(r#"{"reason": ""#, b"\""), "an empty value may close");
        assert!(!opens_quote_in_string(r#"{"reason": "He said \"#, b"\""), "escaped");
    }
}
