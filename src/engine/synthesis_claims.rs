//! Whether a synthesis gives someone a score the results do not show.
//!
//! The aggregator's synthesis is shown the members' final scores, each
//! group's result and the panel's. A small model mixes them up: the 0.5B
//! wrote "It is supported by Ms. Okafor's grammar 3.7, Mr. Lindqvist's
//! answer relevancy 3.3", where 3.7 and 3.3 were the Teachers' results and
//! Ms. Okafor had given 4. The rule (documented in `docs/panels.md`, *The
//! synthesis's numbers*), sentence by sentence, lower-cased:
//!
//! - a **claim** is a score's name (a dimension's words, as the request
//!   writes them, its key's or its name's; each word may be cut to its
//!   first five letters, so "grammatical" names grammar; the last word of
//!   a name of several, alone, where no other name ends with it:
//!   "relevancy") followed by a number, with at most [`FILLER_MAX`] of the
//!   [`FILLER`] words between ("grammar 3.7", "grammar score of 4",
//!   "answer relevancy (3.3)");
//! - **whose** it is: the member, group or panel named nearest before the
//!   score's name in the sentence (a member with or without a title,
//!   "Okafor"; a group by its name; the panel by the word "panel"). A claim
//!   with nobody named before it is not read;
//! - it **holds** when the number is that one's score there, rounded as
//!   the number is written (3.7 for 3.67; 4 for 4.33). It fails otherwise,
//!   and the failure says what the score is and, when the number is
//!   another's score there, whose.

use std::fmt;

use super::prompts::GroupResult;
use super::sentences::{mentions, sentences};
use crate::panel::Panel;
use crate::session::event::Scores;

/// Words that may stand between a score's name and its number.
pub const FILLER: [&str; 16] = [
    "score", "scores", "rating", "rated", "result", "results", "average", "mean", "of", "is", "was", "at", "a", "an",
    "as", "with",
];

/// The most [`FILLER`] words between a score's name and its number.
pub const FILLER_MAX: usize = 3;

/// Letters of a score name's word that a text's word must begin with.
const STEM: usize = 5;

/// Whose scores a synthesis may give.
#[derive(Debug, Clone, PartialEq)]
pub enum Whose {
    Member,
    Group,
    Panel,
}

/// One holder of scores: a member, a group or the panel.
#[derive(Debug, Clone)]
pub struct Holder {
    pub name: String,
    pub whose: Whose,
    pub scores: Scores,
}

/// What the synthesis's request showed: the scores' names and everyone's
/// scores.
#[derive(Debug, Clone, Default)]
pub struct ResultFacts {
    /// Each score key, the words the request names it by, and the forms a
    /// text may name it by (each a list of word stems).
    keys: Vec<(String, String, Vec<Vec<String>>)>,
    holders: Vec<Holder>,
}

/// A claim that fails: what the synthesis said and what the results show.
#[derive(Debug, Clone, PartialEq)]
pub struct Misstated {
    /// Whose score it gave ("Ms. Okafor"; "the Teachers"; "the panel").
    pub whose: String,
    /// The score's name as the request writes it ("grammar").
    pub dimension: String,
    /// The number it gave, as written.
    pub said: String,
    /// The score the results show.
    pub is: f64,
    /// Another holder whose score there the number is, if any.
    pub belongs_to: Option<String>,
}

impl fmt::Display for Misstated {
    /// "Ms. Okafor's grammar 3.7: it is 4 (3.7 is the Teachers')".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}: it is {}", possessive(&self.whose), self.dimension, self.said, fmt_num(self.is))?;
        if let Some(other) = &self.belongs_to {
            write!(f, " ({} is {})", self.said, possessive(other))?;
        }
        Ok(())
    }
}

impl Misstated {
    /// The claim as the follow-up names it: "Ms. Okafor's grammar as 3.7,
    /// but it is 4 (3.7 is the Teachers')".
    pub fn note(&self) -> String {
        let mut s =
            format!("{} {} as {}, but it is {}", possessive(&self.whose), self.dimension, self.said, fmt_num(self.is));
        if let Some(other) = &self.belongs_to {
            s.push_str(&format!(" ({} is {})", self.said, possessive(other)));
        }
        s
    }
}

impl ResultFacts {
    /// The facts of `panel`'s synthesis: the members' final scores and the
    /// results of `groups`, and the panel's result when given.
    pub fn new(panel: &Panel, groups: &[GroupResult], whole: Option<&GroupResult>) -> Self {
        let mut holders = Vec::new();
        for g in groups {
            for (name, scores) in &g.members {
                holders.push(Holder { name: name.clone(), whose: Whose::Member, scores: scores.clone() });
            }
            if !g.name.is_empty() {
                holders.push(Holder { name: g.name.clone(), whose: Whose::Group, scores: g.result.clone() });
            }
        }
        if let Some(w) = whole {
            holders.push(Holder { name: "panel".into(), whose: Whose::Panel, scores: w.result.clone() });
        }
        Self { keys: key_forms(panel), holders }
    }
}

/// Each score key with the words the request names it by and the forms a
/// text may name it by.
fn key_forms(panel: &Panel) -> Vec<(String, String, Vec<Vec<String>>)> {
    let stems = |text: &str| -> Vec<String> {
        text.to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.chars().take(STEM).collect())
            .collect()
    };
    let mut keys: Vec<(String, String, Vec<Vec<String>>)> = panel
        .score_keys()
        .into_iter()
        .map(|key| {
            let dim = panel.dimensions.iter().find(|d| d.key == key);
            let words = dim.map_or(key.replace('_', " "), |d| d.label().trim().replace('_', " ").to_lowercase());
            let mut forms = vec![stems(&key), stems(&words)];
            if let Some(d) = dim {
                forms.push(stems(&d.name));
            }
            forms.retain(|f| !f.is_empty());
            forms.dedup();
            (key, words, forms)
        })
        .collect();
    // A long name's last word alone, where no other key's name ends with it.
    let lasts: Vec<Vec<String>> = keys
        .iter()
        .map(|(_, _, forms)| forms.iter().filter(|f| f.len() > 1).filter_map(|f| f.last().cloned()).collect())
        .collect();
    for (i, (_, _, forms)) in keys.iter_mut().enumerate() {
        for last in &lasts[i] {
            let shared = lasts.iter().enumerate().any(|(j, other)| j != i && other.contains(last));
            if !shared && !forms.iter().any(|f| f.len() == 1 && &f[0] == last) {
                forms.push(vec![last.clone()]);
            }
        }
    }
    keys
}

/// The claims of `text` that the results do not hold, in order.
pub fn check(text: &str, facts: &ResultFacts) -> Vec<Misstated> {
    let text = text.to_lowercase().replace('’', "'");
    let mut out = Vec::new();
    for sentence in sentences(&text) {
        let tokens = tokens(sentence);
        // Where each holder is named: (token index, holder).
        let mut named: Vec<(usize, usize)> = Vec::new();
        for (h, holder) in facts.holders.iter().enumerate() {
            for at in mentions(sentence, &holder.name) {
                if let Some(i) = tokens.iter().position(|t| t.0 >= at) {
                    named.push((i, h));
                }
            }
        }
        for (start, end, key) in key_mentions(&tokens, &facts.keys) {
            let Some((said, value)) = number_after(&tokens, end) else { continue };
            let Some(&(_, h)) = named.iter().filter(|(i, _)| *i < start).max_by_key(|(i, _)| *i) else { continue };
            let holder = &facts.holders[h];
            let Some(&is) = holder.scores.get(&facts.keys[key].0) else { continue };
            if written_as(is, &said, value) {
                continue;
            }
            let belongs_to = facts
                .holders
                .iter()
                .find(|o| o.scores.get(&facts.keys[key].0).is_some_and(|&v| written_as(v, &said, value)))
                .map(display_name);
            let m =
                Misstated { whose: display_name(holder), dimension: facts.keys[key].1.clone(), said, is, belongs_to };
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    out
}

/// How a holder is named in a failure: "Ms. Okafor", "the Teachers", "the
/// panel".
fn display_name(h: &Holder) -> String {
    match h.whose {
        Whose::Member => h.name.clone(),
        Whose::Group | Whose::Panel => format!("the {}", h.name),
    }
}

/// "Ms. Okafor's", "the Teachers'".
fn possessive(name: &str) -> String {
    if name.ends_with('s') { format!("{name}'") } else { format!("{name}'s") }
}

/// Whether `value`, rounded to as many decimals as `said` has, is `number`.
fn written_as(value: f64, said: &str, number: f64) -> bool {
    let decimals = said.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let scale = 10f64.powi(decimals);
    ((value * scale).round() / scale - number).abs() < 1e-9
}

/// The sentence's words: (byte start, the word). A number keeps its
/// decimal point ("3.7"); an apostrophe inside a word stays.
fn tokens(sentence: &str) -> Vec<(usize, &str)> {
    let chars: Vec<(usize, char)> = sentence.char_indices().collect();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (k, &(i, c)) in chars.iter().enumerate() {
        let next = chars.get(k + 1).map(|&(_, n)| n);
        let prev = k.checked_sub(1).map(|p| chars[p].1);
        let inside = c.is_alphanumeric()
            || (c == '\'' && start.is_some() && next.is_some_and(char::is_alphanumeric))
            || (c == '.'
                && start.is_some()
                && prev.is_some_and(|p| p.is_ascii_digit())
                && next.is_some_and(|n| n.is_ascii_digit()));
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, &sentence[s..i]));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, &sentence[s..]));
    }
    out
}

/// Where the tokens name a score: (first token, the token after, key index).
/// Where two forms begin at one token, the longer counts.
fn key_mentions(tokens: &[(usize, &str)], keys: &[(String, String, Vec<Vec<String>>)]) -> Vec<(usize, usize, usize)> {
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let best = keys
            .iter()
            .enumerate()
            .flat_map(|(k, (_, _, forms))| forms.iter().map(move |f| (k, f)))
            .filter(|(_, form)| {
                tokens.len() - i >= form.len()
                    && form.iter().zip(&tokens[i..]).all(|(stem, (_, word))| word.starts_with(stem.as_str()))
            })
            .max_by_key(|(_, form)| form.len());
        match best {
            Some((k, form)) => {
                out.push((i, i + form.len(), k));
                i += form.len();
            }
            None => i += 1,
        }
    }
    out
}

/// The number after token `from`, past at most [`FILLER_MAX`] filler words:
/// as written, and its value.
fn number_after(tokens: &[(usize, &str)], from: usize) -> Option<(String, f64)> {
    for (_, word) in tokens.iter().skip(from).take(FILLER_MAX + 1) {
        if let Ok(v) = word.parse::<f64>()
            && word.chars().next().is_some_and(|c| c.is_ascii_digit())
        {
            return Some((word.to_string(), v));
        }
        if !FILLER.contains(word) {
            return None;
        }
    }
    None
}

fn fmt_num(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scores(pairs: &[(&str, f64)]) -> Scores {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    /// The sample panel's Teachers after the default run of 2026-12-03 on
    /// the 0.5B model, whose synthesis gave their results as members'.
    fn teachers() -> (Panel, ResultFacts) {
        let panel = Panel::bundled("storybook-qa").unwrap();
        let member = |g, r, c, e| {
            scores(&[
                ("grammar", g),
                ("answer_relevancy", r),
                ("contextual_consistency", c),
                ("educational_appropriateness", e),
            ])
        };
        let group = GroupResult {
            name: "Teachers".into(),
            result: member(3.0 + 2.0 / 3.0, 3.0 + 1.0 / 3.0, 4.0, 4.0 + 1.0 / 3.0),
            human: Vec::new(),
            members: vec![
                ("Mr. Lindqvist".into(), member(3.0, 3.0, 4.0, 3.0)),
                ("Ms. Ito".into(), member(4.0, 4.0, 4.0, 5.0)),
                ("Ms. Okafor".into(), member(4.0, 3.0, 4.0, 5.0)),
            ],
        };
        let whole = GroupResult { result: member(3.9, 4.2, 4.1, 4.4), ..GroupResult::default() };
        let facts = ResultFacts::new(&panel, &[group], Some(&whole));
        (panel, facts)
    }

    #[test]
    fn a_groups_result_given_as_a_members_score_fails_and_says_whose_it_is() {
        let (_, facts) = teachers();
        let text = "Agreement: The panel found that the content is clear. It is supported by Ms. Okafor's grammar \
                    3.7, Mr. Lindqvist's answer relevancy 3.3, Ms. Ito's contextual consistency 4, and educational \
                    appropriateness 4.3.";
        let wrong: Vec<String> = check(text, &facts).iter().map(ToString::to_string).collect();
        assert_eq!(
            wrong,
            [
                "Ms. Okafor's grammar 3.7: it is 4 (3.7 is the Teachers')",
                "Mr. Lindqvist's answer relevancy 3.3: it is 3 (3.3 is the Teachers')",
                "Ms. Ito's educational appropriateness 4.3: it is 5 (4.3 is the Teachers')",
            ]
        );
    }

    #[test]
    fn scores_given_to_their_holders_hold_however_they_are_written() {
        let (_, facts) = teachers();
        for text in [
            "The Teachers' grammar score of 3.7 is the lowest; Ms. Okafor gave grammar 4.",
            "Okafor's grammatical rating is 4, while the panel's relevancy is 4.2.",
            "Mr. Lindqvist rated answer relevancy (3) below the others.",
            // Rounded as written: 3.67 is "3.7" and "4".
            "The Teachers gave grammar 4 overall.",
            // Nobody named before the number: not read.
            "Grammar 2.5 was nowhere to be seen.",
            // A number that is not a score's.
            "Ms. Ito thinks children aged 3 to 8 will follow it.",
        ] {
            assert_eq!(check(text, &facts), Vec::new(), "{text}");
        }
    }

    #[test]
    fn the_panels_result_and_a_number_nobody_gave_are_checked_too() {
        let (_, facts) = teachers();
        let wrong = check("The panel's contextual consistency is 3.5.", &facts);
        assert_eq!(wrong.len(), 1);
        assert_eq!(wrong[0].to_string(), "the panel's contextual consistency 3.5: it is 4.1");
        assert_eq!(wrong[0].belongs_to, None);
    }
}
