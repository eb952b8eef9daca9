//! Keeping a debate speech from taking its own speaker for the member it
//! answers.
//!
//! A debate speech begins with the member it answers and the speaker's
//! "I" ("Dana, I"); the 0.5B model often went on "disagree with Amara"
//! when Amara was the one speaking (4 of the 12 speeches of a default run,
//! 25 of 96 in an eval of the rated sample; 4 of 96 for the 1.5B). While
//! the embedded model writes such a speech's prose, a token that begins
//! the speaker's own name right after the words by which a speech names
//! whom it agrees or disagrees with ([`AGREES_WITH`], perhaps then a
//! title) is written as the name of the member the speech answers: "Dana,
//! I disagree with Dana's point". The speaker's name counts whole without
//! its title, or as any word of it of three letters or more ("Okafor" for
//! "Ms. Okafor"), begun by two letters or more, or by its capital letter
//! alone where the answered member's name does not begin with it (the
//! 0.5B model wrote "Okafor" as " O", "ka", "for"; "I" and "A" are words
//! of their own, but not after a title: "Ms. I", "to" was Ms. Ito's). The
//! speaker's own title there is written as the answered
//! member's ("Mr. Lindqvist, I disagree with Ms." from Ms. Ito becomes
//! "…with Mr."), unless no other title is to be had or another member the
//! request names has the same one. There, and for any title written there
//! that the answered member lacks, the model is looked ahead
//! ([`Speaker::title_to_weigh`]): where its likeliest next piece begins the
//! answered member's name or the speaker's own, the answered member's
//! title is written instead (the 0.5B model wrote "Mr. Lindqvist, I
//! disagree with Ms. Lindqvist's first assessment" in 1 of 12 speeches in
//! each of two default runs). After a title, the answered member's
//! name goes without its title. Refusing the token instead made the model
//! write a name of no member ("Amelia") or misspell its own ("Dr. K
//! owalski").
//!
//! Only a piece that begins with a capital letter counts: "I agree with
//! it" stays, though "it" begins "Ito". A piece that could as well begin
//! the name of another member the request names (the answered one, one who
//! has spoken, a dimension) stands: "Dr. H" is Dr. Hale's as much as Dr.
//! Haddad's.
//!
//! A member's name written whole right after those words and followed by
//! a word that can only be a thing of that member's ([`OWNED`]: "first",
//! "evaluation", "point", …) gets its possessive: "I disagree with Ms.
//! Okafor first evaluation", as the 0.5B model wrote in 5 of the 12
//! speeches of a default run, goes on "…with Ms. Okafor's first
//! evaluation" ([`Speaker::possessive`]); "his", "her" or "their" there
//! ([`OWNERS_PRONOUNS`], "…with Mr. Lindqvist his first assessment", 2
//! of 12 in another run) is written as the possessive.

use crate::names::TITLES;

/// The words after which a speech names the member whose point it takes
/// up, lower-cased.
pub const AGREES_WITH: [&str; 3] = ["agree with", "agreed with", "agreeing with"];

/// Words that, right after a member's name after [`AGREES_WITH`], say a
/// thing of that member's: the name wants its possessive before them.
pub const OWNED: [&str; 22] = [
    "first",
    "last",
    "initial",
    "earlier",
    "previous",
    "evaluation",
    "evaluations",
    "assessment",
    "point",
    "points",
    "view",
    "views",
    "score",
    "scores",
    "argument",
    "comment",
    "opinion",
    "concern",
    "rating",
    "claim",
    "remark",
    "statement",
];

/// Pronouns that, right after a member's name after [`AGREES_WITH`], stand
/// for its possessive ("with Ms. Okafor her first evaluation"): written as
/// the possessive instead.
pub const OWNERS_PRONOUNS: [&str; 3] = ["his", "her", "their"];

/// Who writes a debate speech, and whom it answers.
#[derive(Debug, Default)]
pub struct Speaker {
    /// The speaker's name lower-cased, without a title: the whole name, then
    /// each word of it of three letters or more.
    forms: Vec<String>,
    /// The same forms of the other names the request knows (`names`, the
    /// answered member's): a piece that may begin one of them stands.
    others: Vec<String>,
    /// The member the speech answers, as the panel writes the name.
    answers: String,
    /// The speaker's title, lower-cased, without its dot ("ms").
    title: Option<String>,
    /// The same of the other names the request knows, the answered
    /// member's among them.
    other_titles: Vec<String>,
    /// Every name the request knows that begins with a capital letter (the
    /// speaker's, the answered member's, the others), lower-cased, whole
    /// and without its title: what may take a possessive.
    owners: Vec<String>,
}

impl Speaker {
    /// `None` without a member answered, or when that is the speaker.
    /// `names`: other names the speech may write (members', dimensions').
    pub fn new(speaker: &str, answers: Option<&str>, names: &[String]) -> Option<Self> {
        let answers = answers.map(str::trim).filter(|a| !a.is_empty() && !a.eq_ignore_ascii_case(speaker.trim()))?;
        let other_names = || {
            names.iter().map(String::as_str).chain([answers]).filter(|n| !n.trim().eq_ignore_ascii_case(speaker.trim()))
        };
        Some(Self {
            forms: forms(speaker),
            others: other_names().flat_map(forms).collect(),
            answers: answers.to_string(),
            title: bare_title(speaker),
            other_titles: other_names().filter_map(bare_title).collect(),
            owners: names
                .iter()
                .map(String::as_str)
                .chain([answers, speaker])
                .map(str::trim)
                .filter(|n| n.starts_with(char::is_uppercase))
                .flat_map(|n| {
                    let lower = n.to_lowercase();
                    let bare = split_title(&lower).1.to_string();
                    [lower, bare]
                })
                .collect(),
        })
    }

    /// What to write instead of `piece` after `text`, where `text` ends with
    /// [`AGREES_WITH`] and a member's name (with its title or without), and
    /// the piece is a word of [`OWNED`]: the possessive, then the piece
    /// ("'s first"). `None` where the piece stands.
    pub fn possessive(&self, text: &str, piece: &str) -> Option<String> {
        let word = piece.strip_prefix(' ')?;
        // "with Mr. Lindqvist his first assessment": the pronoun is the
        // possessive.
        let pronoun = OWNERS_PRONOUNS.contains(&word);
        if !(OWNED.contains(&word) || pronoun) || text.ends_with(char::is_whitespace) {
            return None;
        }
        let lower = text.to_lowercase();
        let start = after_agrees_with(&lower)?;
        let named = lower[start..].trim();
        let capital = text[start..].trim_start().starts_with(char::is_uppercase);
        (capital && self.owners.iter().any(|o| o == named))
            .then(|| if pronoun { "'s".to_string() } else { format!("'s{piece}") })
    }

    /// What to write instead of `piece` after `text`, where the piece begins
    /// the speaker's name right after [`AGREES_WITH`] (and perhaps a
    /// title): the answered member's name, with the piece's leading blank
    /// and whatever followed the whole name in the piece ("'s"); after a
    /// title, the name without its title. `None` where the piece stands.
    pub fn instead(&self, text: &str, piece: &str) -> Option<String> {
        // Between the phrase and the piece: blanks, perhaps a title.
        let (begun, between) = word_after_phrase(text, piece)?;
        let between = between.as_str();
        let typed_title = between.trim_end_matches('.');
        if !(between.is_empty() || TITLES.contains(&typed_title)) {
            return None;
        }
        let blank = &piece[..piece.len() - begun.len()];
        let lead = begun.to_lowercase();
        let word = first_word(begun);
        if between.is_empty() && self.title.as_deref() == Some(word.as_str()) {
            return self.title_instead(blank, begun.get(word.len()..).unwrap_or(""));
        }
        // One letter alone begins a name where it is not a word of its own.
        match word.chars().collect::<Vec<_>>()[..] {
            [] => return None,
            // After a title "I" is no word of its own: "Ms. I" began "Ito".
            [c] if (matches!(c, 'i' | 'a') && between.is_empty()) || lead.len() != c.len_utf8() => return None,
            _ => {}
        }
        // The piece begins a form, and no other name's; or holds a form
        // whole and then something else.
        let after_name = self.forms.iter().find_map(|form| {
            if form.starts_with(&lead) {
                Some("")
            } else {
                lead.strip_prefix(form.as_str()).filter(|tail| !tail.starts_with(char::is_alphanumeric))
            }
        })?;
        if after_name.is_empty() && self.others.iter().any(|other| other.starts_with(&lead)) {
            return None;
        }
        let bare = split_title(&self.answers).1;
        let tail = piece.get(piece.len().saturating_sub(after_name.len())..).unwrap_or("");
        let name = if between.is_empty() { &self.answers[..] } else { bare };
        Some(format!("{blank}{name}{tail}"))
    }

    /// What to write instead of the speaker's own title, written where the
    /// answered member's name belongs ("Ms. Ito, I agree with Mr." from
    /// Mr. Lindqvist): the answered member's title, with the piece's blank
    /// and what followed the title in it (`tail`, "."). `None` where the
    /// answered member has no title or the title may be another name's
    /// (the answered member's own among them).
    fn title_instead(&self, blank: &str, tail: &str) -> Option<String> {
        let own = self.title.as_deref()?;
        if self.other_titles.iter().any(|t| t == own) {
            return None;
        }
        self.answered_title(blank, tail)
    }

    /// The answered member's title written in a piece's place: with the
    /// piece's `blank` and what followed the title in it (`tail`, ".").
    fn answered_title(&self, blank: &str, tail: &str) -> Option<String> {
        let (title, _) = split_title(&self.answers);
        Some(format!("{blank}{}{tail}", title?.trim_end_matches('.')))
    }

    /// Where `piece`, right after [`AGREES_WITH`] in `text`, is a title the
    /// answered member does not have ("Mr. Lindqvist, I disagree with Ms."
    /// from Ms. Ito, whose title Ms. Okafor shares): the answered member's
    /// title to write instead, should the model go on with the answered
    /// member's name ([`Speaker::names_answered`]). The caller looks ahead to
    /// see. `None` where the piece is no such title, or the answered member
    /// has none.
    pub fn title_to_weigh(&self, text: &str, piece: &str) -> Option<String> {
        let (begun, between) = word_after_phrase(text, piece)?;
        if !between.is_empty() {
            return None;
        }
        let word = first_word(begun);
        let tail = &begun[word.len()..];
        let answered = bare_title(&self.answers)?;
        if !TITLES.contains(&word.as_str()) || word == answered || !(tail.is_empty() || tail == ".") {
            return None;
        }
        self.answered_title(&piece[..piece.len() - begun.len()], tail)
    }

    /// Whether `piece`, the model's likeliest after a title, begins the
    /// answered member's name, or the speaker's own (which [`Speaker::instead`]
    /// writes as the answered member's), and the name of no other member
    /// the request knows: "Lind" or "Ito" after "…disagree with Ms." from
    /// Ms. Ito answering Mr. Lindqvist, not "Ok" (Ms. Okafor).
    pub fn names_answered(&self, piece: &str) -> bool {
        let begun = piece.trim_start();
        if !begun.starts_with(char::is_uppercase) {
            return false;
        }
        let lead = first_word(begun);
        // After a title, "I" begins a name ("Ito") as any letter does.
        if lead.is_empty() {
            return false;
        }
        let answered = forms(&self.answers);
        let begins = |form: &String| form.starts_with(&lead) || lead.starts_with(form.as_str());
        let third = self.others.iter().filter(|o| !answered.contains(o)).any(|o| o.starts_with(&lead));
        (answered.iter().any(begins) || self.forms.iter().any(begins)) && !third
    }
}

/// Where `piece` after `text` begins a word with a capital letter
/// (a name's; "it" may begin "Ito" or be a word) after [`AGREES_WITH`] and
/// a blank: the piece without its blank, and what lies between the phrase
/// and the piece, lower-cased and trimmed. The capital is checked first:
/// this runs for every token of a speech's prose, and most begin with none.
fn word_after_phrase<'p>(text: &str, piece: &'p str) -> Option<(&'p str, String)> {
    let begun = piece.trim_start();
    if !begun.starts_with(char::is_uppercase) {
        return None;
    }
    let lower = text.to_lowercase();
    let rest = &lower[after_agrees_with(&lower)?..];
    if !(rest.ends_with(char::is_whitespace) || piece.starts_with(char::is_whitespace)) {
        return None;
    }
    Some((begun, rest.trim().to_string()))
}

/// The letters and digits `begun` opens with, lower-cased ("ms" for
/// "Ms.", "ito" for "Ito's").
fn first_word(begun: &str) -> String {
    begun.chars().take_while(|c| c.is_alphanumeric()).collect::<String>().to_lowercase()
}

/// Where the last of [`AGREES_WITH`]'s phrases in the lower-cased `text`
/// ends, if it has one.
fn after_agrees_with(lower: &str) -> Option<usize> {
    AGREES_WITH.iter().filter_map(|p| lower.rfind(p).map(|at| at + p.len())).max()
}

/// A name's title lower-cased, without its dot ("ms" for "Ms. Okafor").
fn bare_title(name: &str) -> Option<String> {
    split_title(name.trim()).0.map(|t| t.trim_end_matches('.').to_lowercase())
}

/// A name lower-cased, without a title: the whole name, then each word of
/// it of three letters or more.
fn forms(name: &str) -> Vec<String> {
    let lower = name.to_lowercase();
    let (_, bare) = split_title(lower.trim());
    let mut forms = vec![bare.to_string()];
    for word in bare.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().count() >= 3) {
        if !forms.iter().any(|f| f == word) {
            forms.push(word.to_string());
        }
    }
    forms.retain(|f| !f.is_empty());
    forms
}

/// A name's title, if it has one, and the name without it ("Ms. Okafor":
/// "Ms.", "Okafor").
fn split_title(name: &str) -> (Option<&str>, &str) {
    match name.split_once(' ') {
        Some((first, rest)) if TITLES.contains(&first.trim_end_matches('.').to_lowercase().as_str()) => {
            (Some(first), rest.trim_start())
        }
        _ => (None, name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speech_answers_the_member_it_began_with_not_its_own_speaker() {
        let amara = Speaker::new("Amara", Some("Dana"), &[]).unwrap();
        assert_eq!(amara.instead("Dana, I disagree with", " Amara").as_deref(), Some(" Dana"));
        assert_eq!(amara.instead("Dana, I disagree with", " Am").as_deref(), Some(" Dana"), "the name begun");
        assert_eq!(amara.instead("Dana, I disagree with ", "Amara's").as_deref(), Some("Dana's"));
        assert_eq!(amara.instead("Dana, I agreed with", " Amara,").as_deref(), Some(" Dana,"));
        assert_eq!(amara.instead("Dana, I disagree with", " Dana"), None, "the member it answers");
        assert_eq!(amara.instead("Dana, I disagree with", " a"), None, "one letter may begin another word");
        assert_eq!(amara.instead("Dana, I disagree with", " A"), None, "'A' is a word of its own");
        assert_eq!(amara.instead("Dana, I disagree with", " all"), None);
        assert_eq!(amara.instead("Dana, I disagree with", " am"), None, "a name begins with a capital");
        let ito = Speaker::new("Ms. Ito", Some("Ms. Okafor"), &[]).unwrap();
        assert_eq!(ito.instead("Ms. Okafor, I agree with", " it"), None, "'it' is a word");
        assert_eq!(ito.instead("Ms. Okafor, I agree with", " Ito").as_deref(), Some(" Ms. Okafor"));
        assert_eq!(amara.instead("Dana, I disagree with", " Amaranth"), None, "a longer word");
        assert_eq!(amara.instead("Dana, I disagree. Amara", " thinks"), None, "not after the phrase");
        assert_eq!(amara.instead("Dana, I disagree with your point, and", " Amara"), None);
        assert_eq!(amara.instead("Dana, I disagree with Am", "ara"), None, "the name begun before");
        assert!(Speaker::new("Amara", Some("Amara"), &[]).is_none() && Speaker::new("Amara", None, &[]).is_none());
    }

    #[test]
    fn after_a_title_the_answered_members_name_goes_without_it() {
        let okafor = Speaker::new("Ms. Okafor", Some("Ms. Ito"), &[]).unwrap();
        assert_eq!(okafor.instead("Ms. Ito, I disagree with", " Ms"), None, "a title is free");
        assert_eq!(okafor.instead("Ms. Ito, I disagree with Ms.", " Ito"), None);
        assert_eq!(okafor.instead("Ms. Ito, I disagree with Ms.", " Ok").as_deref(), Some(" Ito"));
        assert_eq!(okafor.instead("Ms. Ito, I disagree with", " Okafor").as_deref(), Some(" Ms. Ito"));
        // The name's capital letter alone, as the 0.5B model began it.
        assert_eq!(okafor.instead("Ms. Ito, I disagree with Ms.", " O").as_deref(), Some(" Ito"));
        assert_eq!(okafor.instead("Ms. Ito, I disagree with Ms.", " o"), None, "a lower-case letter");
        assert_eq!(okafor.instead("Ms. Ito, I disagree with Ms. O", "ka"), None, "the letter is out");
        let ito = Speaker::new("Ms. Ito", Some("Ms. Okafor"), &[]).unwrap();
        assert_eq!(ito.instead("Ms. Okafor, I disagree with", " I"), None, "'I' is a word of its own");
        // After a title it begins a name: the 0.5B model wrote "Ito" as " I", "to".
        assert_eq!(ito.instead("Ms. Okafor, I disagree with Ms.", " I").as_deref(), Some(" Okafor"));
        let haddad = Speaker::new("Dr. Haddad", Some("Dr. Hale"), &[]).unwrap();
        assert_eq!(haddad.instead("Dr. Hale, I agree with Dr.", " H"), None, "the answered member's initial");
        // Another title than the answered member's: the right member all the same.
        let lindqvist = Speaker::new("Mr. Lindqvist", Some("Ms. Okafor"), &[]).unwrap();
        assert_eq!(lindqvist.instead("Ms. Okafor, I disagree with Mr.", " Lindqvist").as_deref(), Some(" Okafor"));
        assert_eq!(lindqvist.instead("Ms. Okafor, I agree with", " Lind").as_deref(), Some(" Ms. Okafor"));
        assert_eq!(lindqvist.instead("Ms. Okafor, I agree with", " L").as_deref(), Some(" Ms. Okafor"));
        // The speaker's own title, where the answered member has another.
        let ito = Speaker::new("Ms. Ito", Some("Mr. Lindqvist"), &[]).unwrap();
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with", " Ms").as_deref(), Some(" Mr"));
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with", " Ms.").as_deref(), Some(" Mr."));
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with Mr.", " Ito").as_deref(), Some(" Lindqvist"));
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with", " Mr"), None, "the answered member's title");
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with", " Dr"), None, "another title");
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with", " Msgr"), None, "a longer word");
        let okafor = vec!["Ms. Okafor".to_string()];
        let ito = Speaker::new("Ms. Ito", Some("Mr. Lindqvist"), &okafor).unwrap();
        assert_eq!(ito.instead("Mr. Lindqvist, I disagree with", " Ms"), None, "Ms. Okafor's title too");
        let ito = Speaker::new("Ms. Ito", Some("Dana"), &[]).unwrap();
        assert_eq!(ito.instead("Dana, I disagree with", " Ms"), None, "no title to write instead");
        let ortiz = Speaker::new("Rafael Ortiz", Some("Dana"), &[]).unwrap();
        assert_eq!(ortiz.instead("Dana, I agree with", " R").as_deref(), Some(" Dana"));
        assert_eq!(ortiz.instead("Dana, I agree with", " Rafael").as_deref(), Some(" Dana"), "a word of the name");
        assert_eq!(ortiz.instead("Dana, I agree with", " Ortiz").as_deref(), Some(" Dana"));
    }

    #[test]
    fn a_title_the_answered_member_lacks_is_weighed_by_the_name_that_follows() {
        let names: Vec<String> = ["Ms. Okafor", "Grammar"].map(String::from).into();
        let ito = Speaker::new("Ms. Ito", Some("Mr. Lindqvist"), &names).unwrap();
        let text = "Mr. Lindqvist, I disagree with";
        assert_eq!(ito.title_to_weigh(text, " Ms").as_deref(), Some(" Mr"));
        assert_eq!(ito.title_to_weigh(text, " Ms.").as_deref(), Some(" Mr."));
        assert_eq!(ito.title_to_weigh(&format!("{text} "), "Dr").as_deref(), Some("Mr"), "any title not his");
        assert_eq!(ito.title_to_weigh(text, " Mr"), None, "the answered member's own");
        assert_eq!(ito.title_to_weigh(text, " Msgr"), None, "a longer word");
        assert_eq!(ito.title_to_weigh(text, " ms"), None, "no capital");
        assert_eq!(ito.title_to_weigh("Mr. Lindqvist, I disagree with Ms.", " Ms"), None, "a title written");
        assert_eq!(ito.title_to_weigh("Mr. Lindqvist, I disagree. Then", " Ms"), None, "not after the words");
        let to_dana = Speaker::new("Ms. Ito", Some("Dana"), &names).unwrap();
        assert_eq!(to_dana.title_to_weigh("Dana, I agree with", " Ms"), None, "Dana has no title");
        // What comes after the title decides.
        assert!(ito.names_answered(" Lindqvist") && ito.names_answered(" Lind") && ito.names_answered(" L"));
        assert!(ito.names_answered(" Ito"), "the speaker's own name is written as his");
        assert!(!ito.names_answered(" Okafor") && !ito.names_answered(" O"), "Ms. Okafor's name");
        assert!(!ito.names_answered("."), "no name yet");
        assert!(!ito.names_answered(" lind"), "no capital");
        assert!(ito.names_answered(" I"), "after a title, \"I\" begins Ito");
        assert!(!ito.names_answered(" Grace"), "another word");
    }

    #[test]
    fn a_members_name_before_a_thing_of_theirs_gets_its_possessive() {
        let names: Vec<String> = ["Ms. Ito", "Grammar"].map(String::from).into();
        let lindqvist = Speaker::new("Mr. Lindqvist", Some("Ms. Okafor"), &names).unwrap();
        let text = "Ms. Okafor, I disagree with Ms. Okafor";
        assert_eq!(lindqvist.possessive(text, " first").as_deref(), Some("'s first"));
        assert_eq!(lindqvist.possessive(text, " evaluation").as_deref(), Some("'s evaluation"));
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with Okafor", " point").as_deref(), Some("'s point"));
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with Ms. Ito", " view").as_deref(), Some("'s view"));
        assert_eq!(lindqvist.possessive(text, " her").as_deref(), Some("'s"), "the pronoun is the possessive");
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with Ms. Ito", " his").as_deref(), Some("'s"));
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with her", " first"), None);
        assert_eq!(lindqvist.possessive(text, " because"), None, "not a thing of hers");
        assert_eq!(lindqvist.possessive(text, "'s"), None, "the possessive written");
        assert_eq!(lindqvist.possessive(text, " firstly"), None, "a longer word");
        assert_eq!(lindqvist.possessive("Ms. Okafor, I disagree with her", " first"), None, "not a name");
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with Dana", " point"), None, "no member");
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with grammar", " score"), None, "no capital");
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree. Ms. Okafor", " first"), None, "not after the words");
        assert_eq!(lindqvist.possessive("Ms. Okafor, I agree with Ms. Okafor ", "first"), None);
    }

    #[test]
    fn a_piece_that_may_begin_another_name_stands() {
        let names: Vec<String> = ["Dana", "Rafael Ortiz", "Rosa", "Grammar"].map(String::from).into();
        let ortiz = Speaker::new("Rafael Ortiz", Some("Dana"), &names).unwrap();
        assert_eq!(ortiz.instead("Dana, I agree with", " R"), None, "Rosa's initial too");
        assert_eq!(ortiz.instead("Dana, I agree with", " Ra").as_deref(), Some(" Dana"), "only Rafael's");
        assert_eq!(ortiz.instead("Dana, I agree with", " Rafael").as_deref(), Some(" Dana"));
        assert_eq!(ortiz.instead("Dana, I agree with", " O").as_deref(), Some(" Dana"));
        let dana = Speaker::new("Dana", Some("Dr. Danso"), &names).unwrap();
        assert_eq!(dana.instead("Dr. Danso, I agree with", " Dan"), None, "the answered member's too");
        assert_eq!(dana.instead("Dr. Danso, I agree with", " Dana").as_deref(), Some(" Dr. Danso"));
    }
}
