//! What a speaker is told when its speech is asked for once more because it
//! repeated an earlier one (see `engine::repeats`) or misquoted (see
//! `engine::quotes`). The request is sent again with the notes that apply
//! after it, as one message.

/// The note for a speech that repeated what `first` (the member who said
/// it first; perhaps the `speaker`) had said.
pub fn redraw_note(first: &str, speaker: &str) -> String {
    let whose = if first == speaker { "what you said before".to_string() } else { format!("what {first} said") };
    format!(
        "Your draft of this turn repeated {whose}, nearly word for word. Write the turn again in your own words: \
         answer a point someone made, or add one nobody has made, without repeating earlier turns."
    )
}

/// The note for a speech whose draft put in quotation marks words that
/// nothing the speaker was shown contains: each quotation as the draft
/// wrote it, with the sentence nearest to it that the item or the
/// discussion has (see `engine::quotes::nearest`), where one is near.
pub fn misquote_note(quotes: &[(String, Option<String>)]) -> String {
    let each = quotes
        .iter()
        .map(|(quote, nearest)| match nearest {
            Some(line) => {
                format!("\"{quote}\" is not in the item or the discussion (the nearest words there: \"{line}\")")
            }
            None => format!("\"{quote}\" is not in the item or the discussion"),
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "In your draft of this turn, {each}. Write the turn again: quote the item or another member word for word, \
         or say it in your own words without quotation marks."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_who_said_it_first() {
        assert!(redraw_note("Dana", "Rafael").contains("repeated what Dana said"));
        assert!(redraw_note("Dana", "Dana").contains("repeated what you said before"));
    }

    #[test]
    fn the_misquote_note_names_the_quotations_and_the_words_nearest_them() {
        let note = misquote_note(&[
            ("How did the fox run?".into(), Some("Why did the fox run?".into())),
            ("a red den".into(), None),
        ]);
        assert!(
            note.contains(
                r#"draft of this turn, "How did the fox run?" is not in the item or the discussion (the nearest words there: "Why did the fox run?"); "a red den" is not in the item or the discussion. Write"#
            ),
            "{note}"
        );
    }
}
