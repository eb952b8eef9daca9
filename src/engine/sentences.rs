//! Reading the claims of a model's prose: its sentences, their words and
//! clauses, and where a member is named. Shared by the checks of a
//! moderator's reasons ([`super::reasons`]) and of a synthesis's numbers
//! ([`super::synthesis_claims`]). Texts are lower-cased by the caller.

use crate::names::TITLES;

/// Where `name` occurs in the lower-cased `text` as whole words, whole or
/// without its title: the byte offsets of its starts.
pub(crate) fn mentions(text: &str, name: &str) -> Vec<usize> {
    let name = name.to_lowercase();
    let mut forms = vec![name.clone()];
    if let Some((_, rest)) = titled(&name) {
        forms.push(rest.to_string());
    }
    let mut out = Vec::new();
    for form in forms.iter().filter(|f| !f.is_empty()) {
        for (i, m) in text.match_indices(form.as_str()) {
            let before = text[..i].chars().next_back();
            let after = text[i + m.len()..].chars().next();
            if !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric) {
                out.push(i);
            }
        }
    }
    out.sort_unstable();
    out
}

/// A name's title (lower-cased, without its dot) and the rest of it, when
/// it begins with one of [`TITLES`] ("Dr. Haddad": `dr`, "Haddad").
pub(crate) fn titled(name: &str) -> Option<(String, &str)> {
    let (title, rest) = name.split_once(' ')?;
    let title = title.trim_end_matches('.').to_lowercase();
    TITLES.contains(&title.as_str()).then_some((title, rest.trim()))
}

/// The sentences of the lower-cased `text`: split after `.`, `!`, `?` or
/// `;` followed by a blank or the end, except the dot of a title.
pub(crate) fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?' | ';') {
            continue;
        }
        if chars.get(k + 1).is_some_and(|&(_, n)| !n.is_whitespace()) {
            continue;
        }
        let word = text[start..i].rsplit(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
        if c == '.' && TITLES.contains(&word) {
            continue;
        }
        out.push(&text[start..i]);
        start = i + c.len_utf8();
    }
    out.push(&text[start..]);
    out.into_iter().map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// The words of a lower-cased sentence (letters, digits, apostrophes).
pub(crate) fn words(sentence: &str) -> Vec<&str> {
    words_with_clauses(sentence).into_iter().map(|(w, _)| w).collect()
}

/// Each word, and whether a clause ends after it (a comma, colon or dash).
pub(crate) fn words_with_clauses(sentence: &str) -> Vec<(&str, bool)> {
    let mut out: Vec<(&str, bool)> = Vec::new();
    let mut start = None;
    for (i, c) in sentence.char_indices() {
        let inside = c.is_alphanumeric() || c == '\'' || c == '’';
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((&sentence[s..i], false));
                start = None;
            }
            _ => {}
        }
        if matches!(c, ',' | ':' | '—' | '(' | ')')
            && let Some(last) = out.last_mut()
        {
            last.1 = true;
        }
    }
    if let Some(s) = start {
        out.push((&sentence[s..], false));
    }
    out
}
