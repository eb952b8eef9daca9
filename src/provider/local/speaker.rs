//! Keeping a debate speech from taking its own speaker for another member.
//!
//! A debate speech begins with the member it answers and the speaker's
//! "I" ("Dana, I"); the 0.5B model often went on "disagree with Amara"
//! when Amara was the one speaking (4 of the 16 speeches and drafts of a
//! default run, 30 of 115 in an eval of the rated sample; 5 of 110 for
//! the 1.5B). While
//! the embedded model writes such a speech's prose, a token is refused when
//! it would begin the speaker's own name right after the words by which
//! a speech names whom it agrees or disagrees with ([`AGREES_WITH`]): the
//! whole name without its title, or any word of it of three letters or
//! more, after a title or not ("Ms. Okafor", "Okafor"). The model's next
//! choice takes its place (most often the member it answers).

/// The words after which a speech names the member whose point it takes
/// up, lower-cased.
pub const AGREES_WITH: [&str; 3] = ["agree with ", "agreed with ", "agreeing with "];

/// Titles a name may be written with.
const TITLES: [&str; 6] = ["dr", "ms", "mr", "mrs", "prof", "st"];

/// The speaker's name, as a speech might write it after [`AGREES_WITH`].
#[derive(Debug, Default)]
pub struct OwnName {
    /// Lower-cased, without a title: the whole name, then each word of it of
    /// three letters or more.
    forms: Vec<String>,
}

impl OwnName {
    /// The forms of `name` ("Ms. Okafor": "okafor"; "Rafael Ortiz":
    /// "rafael ortiz", "rafael", "ortiz").
    pub fn new(name: &str) -> Self {
        let lower = name.to_lowercase();
        let bare = strip_title(lower.trim()).to_string();
        let mut forms = vec![bare.clone()];
        for word in bare.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3) {
            if !forms.iter().any(|f| f == word) {
                forms.push(word.to_string());
            }
        }
        forms.retain(|f| !f.is_empty());
        Self { forms }
    }

    /// Whether `piece`, written after `text`, would begin or complete the
    /// speaker's name right after [`AGREES_WITH`]: the words after the
    /// latest such phrase (a title put aside) are two letters or more of one
    /// of its forms, or the form and then no letter.
    pub fn refuses(&self, text: &str, piece: &str) -> bool {
        let joined = format!("{text}{piece}").to_lowercase();
        let Some(start) = AGREES_WITH.iter().filter_map(|p| joined.rfind(p).map(|at| at + p.len())).max() else {
            return false;
        };
        let after = joined[start..].trim_start();
        // Past the name's length, the words after the phrase are something else.
        let longest = self.forms.iter().map(String::len).max().unwrap_or(0);
        if after.len() > longest + TITLES.iter().map(|t| t.len() + 2).max().unwrap_or(0) + 1 {
            return false;
        }
        let Some(rest) = after_title(after) else { return false };
        rest.len() >= 2
            && self.forms.iter().any(|form| {
                form.starts_with(rest)
                    || rest.strip_prefix(form.as_str()).is_some_and(|tail| !tail.starts_with(char::is_alphanumeric))
            })
    }
}

/// `name` without a leading title ("ms. okafor": "okafor").
fn strip_title(name: &str) -> &str {
    match name.split_once(' ') {
        Some((first, rest)) if TITLES.contains(&first.trim_end_matches('.')) => rest.trim_start(),
        _ => name,
    }
}

/// The words of `after` past a title; `None` while they may still be one
/// ("ms", "ms.", "ms. "), so that another member's title is never refused.
fn after_title(after: &str) -> Option<&str> {
    let word: String = after.chars().take_while(|c| c.is_alphanumeric()).collect();
    if !TITLES.contains(&word.as_str()) {
        return Some(after);
    }
    let rest = after[word.len()..].trim_start_matches('.');
    if rest.trim_start().is_empty() {
        return None;
    }
    Some(rest.trim_start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speech_may_not_agree_or_disagree_with_its_own_speaker() {
        let amara = OwnName::new("Amara");
        assert!(amara.refuses("Dana, I disagree with", " Amara"));
        assert!(amara.refuses("Dana, I disagree with", " Am"), "the name begun");
        assert!(amara.refuses("Dana, I disagree with Am", "ara"), "the name continued");
        assert!(amara.refuses("Dana, I agree with", " Amara's"));
        assert!(amara.refuses("Dana, I agreed with", " AMARA"));
        assert!(!amara.refuses("Dana, I disagree with", " Dana"), "the member it answers");
        assert!(!amara.refuses("Dana, I disagree with", " a"), "one letter may begin another word");
        assert!(!amara.refuses("Dana, I disagree with", " all"), "another word");
        assert!(!amara.refuses("Dana, I disagree with", " Amaranth"), "a longer word");
        assert!(!amara.refuses("Dana, I disagree. Amara", " thinks"), "not after the phrase");
        assert!(!amara.refuses("Dana, I disagree with your point, and", " Amara"), "far from the phrase");
    }

    #[test]
    fn a_title_is_free_the_name_after_it_is_not() {
        let okafor = OwnName::new("Ms. Okafor");
        assert!(!okafor.refuses("Ms. Ito, I disagree with", " Ms"), "another member's title");
        assert!(!okafor.refuses("Ms. Ito, I disagree with Ms", "."));
        assert!(!okafor.refuses("Ms. Ito, I disagree with Ms.", " Ito"));
        assert!(okafor.refuses("Ms. Ito, I disagree with Ms.", " Ok"));
        assert!(okafor.refuses("Ms. Ito, I disagree with", " Okafor"), "the name without its title");
        let ortiz = OwnName::new("Rafael Ortiz");
        assert!(ortiz.refuses("Dana, I agree with", " Rafael"), "a word of the name");
        assert!(ortiz.refuses("Dana, I agree with", " Ortiz"));
    }
}
