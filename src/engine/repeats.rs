//! Whether a speech repeats an earlier one of its discussion.
//!
//! The rule (documented in `docs/panels.md`, *Repeated speeches*): a reply's
//! words are its prose before the JSON evaluation, lower-cased and split into
//! words (letters and digits; an apostrophe inside a word stays), without
//! the member's name it opens with ("Dana, I …" counts from "I"). A speech
//! *repeats* an earlier speech or first evaluation of its group when at
//! least half of its runs of [`RUN`] consecutive words occur in that one
//! contribution. A speech of fewer than [`MIN_WORDS`] words ("I agree
//! with you.") says too little to count as a copy, and a reply that is
//! nothing but its evaluation has no words: neither repeats anything.

use std::collections::HashSet;

use super::prompts::{HistoryEntry, reply_words};
use crate::names::TITLES;

/// Words in a run compared between two speeches.
pub const RUN: usize = 4;

/// The fewest words a speech (and the contribution it repeats) has.
pub const MIN_WORDS: usize = 8;

/// The share of a speech's runs that must occur in one earlier contribution
/// for the speech to repeat it.
pub const SHARE: f64 = 0.5;

/// A reply's words under the rule: its prose, normalised, without the
/// name of a member (one of `names`) that it opens with.
pub fn words(text: &str, names: &[&str]) -> Vec<String> {
    let words = split(reply_words(text, true, true));
    let lead = names
        .iter()
        .flat_map(|n| name_forms(n))
        .filter(|form| !form.is_empty() && words.starts_with(form))
        .map(|form| form.len())
        .max()
        .unwrap_or(0);
    words[lead..].to_vec()
}

/// A name's word forms: whole (`dr haddad`), and without a title (`haddad`).
fn name_forms(name: &str) -> Vec<Vec<String>> {
    let whole = split(name);
    let mut forms = vec![whole.clone()];
    if whole.len() > 1 && TITLES.contains(&whole[0].as_str()) {
        forms.push(whole[1..].to_vec());
    }
    forms
}

/// Lower-cased words of letters and digits; an apostrophe between two
/// letters stays in its word (`don't`).
pub(crate) fn split(text: &str) -> Vec<String> {
    let text = text.replace(['’', '‘'], "'");
    let mut out = Vec::new();
    let mut word = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let inner_apostrophe = c == '\'' && !word.is_empty() && chars.get(i + 1).is_some_and(|n| n.is_alphanumeric());
        if c.is_alphanumeric() || inner_apostrophe {
            word.extend(c.to_lowercase());
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Whether `speech` repeats `earlier` (both as [`words`] gives them).
pub fn repeats(speech: &[String], earlier: &[String]) -> bool {
    if speech.len() < MIN_WORDS || earlier.len() < MIN_WORDS {
        return false;
    }
    let theirs: HashSet<&[String]> = earlier.windows(RUN).collect();
    let ours: HashSet<&[String]> = speech.windows(RUN).collect();
    let shared = ours.iter().filter(|r| theirs.contains(*r)).count();
    shared as f64 >= SHARE * ours.len() as f64
}

/// The hashed runs of [`RUN`] words of `words`, each once.
fn run_set(words: &[String]) -> HashSet<u64> {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let hasher = BuildHasherDefault::<DefaultHasher>::default();
    words.windows(RUN).map(|run| hasher.hash_one(run)).collect()
}

/// One contribution as the rule reads it, worked out once.
#[derive(Debug, Clone)]
struct Said {
    agent: String,
    /// How many words it has.
    len: usize,
    /// Its words joined by spaces (what a speech may not copy).
    text: String,
    runs: HashSet<u64>,
}

/// A group's contributions so far, to check a new speech against. A
/// discussion keeps one and [`extends`](Self::extend) it as its history
/// grows, so that each contribution is read once, not once per later speech.
#[derive(Debug, Clone, Default)]
pub struct Earlier {
    names: Vec<String>,
    /// Each speech and first evaluation with words.
    said: Vec<Said>,
    /// History entries read so far.
    seen: usize,
}

impl Earlier {
    /// None yet; `names` are the group's members (a speech's opening name
    /// is not counted).
    pub fn new(names: &[&str]) -> Self {
        Self { names: names.iter().map(|n| n.to_string()).collect(), said: Vec::new(), seen: 0 }
    }

    /// The speeches and first evaluations of `history`.
    pub fn of(history: &[HistoryEntry], names: &[&str]) -> Self {
        let mut earlier = Self::new(names);
        earlier.extend(history);
        earlier
    }

    /// Reads the entries of `history` (the same group's, which only grows)
    /// after those read before.
    pub fn extend(&mut self, history: &[HistoryEntry]) {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        for e in history.iter().skip(self.seen) {
            if let HistoryEntry::Speech { agent, text, .. } | HistoryEntry::Initial { agent, text, .. } = e {
                let w = words(text, &names);
                if !w.is_empty() {
                    self.said.push(Said { agent: agent.clone(), len: w.len(), text: w.join(" "), runs: run_set(&w) });
                }
            }
        }
        self.seen = self.seen.max(history.len());
    }

    /// The group's members.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The contributions' words, one text each (what a speech may not copy).
    pub fn texts(&self) -> Vec<String> {
        self.said.iter().map(|s| s.text.clone()).collect()
    }

    /// The earliest contribution that `reply` repeats, if any ([`repeats`],
    /// on hashed runs): who made it, and its words (as
    /// [`texts`](Self::texts) gives them).
    pub fn repeated(&self, reply: &str) -> Option<(&str, &str)> {
        let names: Vec<&str> = self.names.iter().map(String::as_str).collect();
        let speech = words(reply, &names);
        if speech.len() < MIN_WORDS {
            return None;
        }
        let ours = run_set(&speech);
        self.said
            .iter()
            .filter(|s| s.len >= MIN_WORDS)
            .find(|s| ours.iter().filter(|r| s.runs.contains(*r)).count() as f64 >= SHARE * ours.len() as f64)
            .map(|s| (s.agent.as_str(), s.text.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAMES: [&str; 3] = ["Dana", "Rafael", "Dr. Haddad"];

    fn w(text: &str) -> Vec<String> {
        words(text, &NAMES)
    }

    #[test]
    fn words_leave_out_the_opening_name_and_the_evaluation() {
        assert_eq!(w("Dana, I don’t agree.\n{\"grammar\": 4}"), ["i", "don't", "agree"]);
        assert_eq!(w("Dr. Haddad, I agree."), ["i", "agree"]);
        assert_eq!(w("Haddad, I agree."), ["i", "agree"], "the name without its title");
        assert_eq!(w("I agree with Dana."), ["i", "agree", "with", "dana"], "a name inside is kept");
        assert_eq!(w("Rafael's point: 'yes'"), ["rafael's", "point", "yes"], "not an address");
        assert!(w("{\"grammar\": 4}").is_empty(), "the evaluation alone has no words");
    }

    #[test]
    fn a_copy_after_another_name_repeats_and_a_shared_quote_does_not() {
        let first = w("Dana, I asked: So Pebble could find its family. No, one-word answers must count.");
        let copy = w("Rafael, I asked: so Pebble could find its family. No, one-word answers must count!");
        assert!(repeats(&copy, &first));
        // The same quote of the item, with words of one's own around it.
        let a = w("Dana, I think \"so Pebble could find its family\" is clear for a four-year-old at bedtime.");
        let b = w("Rafael, I like that \"so Pebble could find its family\" matches what the story says.");
        assert!(!repeats(&b, &a));
        // Half of the runs is enough: a copy with a sentence added.
        let longer =
            w("Dana, I asked: so Pebble could find its family. No, one-word answers must count. It fits the page.");
        assert!(repeats(&longer, &first));
        // Eight words are the least that can repeat.
        let agree = |name: &str| w(&format!("{name}, I agree with you about the den here."));
        assert!(repeats(&agree("Dana"), &agree("Rafael")));
        assert!(!repeats(&w("Dana, I agree with you."), &w("Rafael, I agree with you.")), "too short to count");
        assert!(!repeats(&[], &first));
    }

    impl Earlier {
        fn repeated_by(&self, reply: &str) -> Option<&str> {
            self.repeated(reply).map(|(agent, _)| agent)
        }
    }

    #[test]
    fn earlier_names_who_said_it_first() {
        let history = vec![
            HistoryEntry::Initial { agent: "Dana".into(), evaluation: None, text: "{\"grammar\": 5}".into() },
            HistoryEntry::Speech {
                agent: "Rafael".into(),
                round: None,
                text: "Dana, I think the answer names the wall where Pebble hid.".into(),
                evaluation: None,
            },
            HistoryEntry::Comment { author: "kim".into(), text: "the answer names the wall where Pebble hid".into() },
        ];
        let earlier = Earlier::of(&history, &NAMES);
        assert_eq!(earlier.repeated_by("Rafael, I think the answer names the wall where Pebble hid."), Some("Rafael"));
        assert_eq!(
            earlier.repeated("Dana, I think the answer names the wall where Pebble hid!").map(|(_, text)| text),
            Some("i think the answer names the wall where pebble hid")
        );
        assert_eq!(earlier.repeated_by("Rafael, I would add that a four-year-old knows the word den."), None);
        assert_eq!(Earlier::default().repeated_by("Anything at all, said twice."), None);
        // Read as the history grows, the same answers.
        let mut grown = Earlier::new(&NAMES);
        grown.extend(&history[..1]);
        assert_eq!(grown.repeated_by("Rafael, I think the answer names the wall where Pebble hid."), None);
        grown.extend(&history);
        assert_eq!(grown.repeated_by("Rafael, I think the answer names the wall where Pebble hid."), Some("Rafael"));
        assert_eq!(grown.texts(), earlier.texts());
    }
}
