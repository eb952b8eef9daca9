//! Whether an LLM moderator's reason claims what its scores table does not
//! show, or says nothing. Eleven things are checked, the claims sentence by sentence (a
//! sentence ends at `.`, `!`, `?` or `;`, not at the dot of a title such as
//! "Dr."); names match whole words, without case, with or without a title
//! ("Haddad" for "Dr. Haddad"):
//!
//! 1. **Who spoke last.** A sentence says someone [`SPOKE_LAST`] ("spoke
//!    last", "last to speak", …): the member named nearest before those
//!    words must be the one the request said spoke last. It fails when
//!    another member spoke last, or nobody has spoken yet. A sentence that
//!    names nobody before the words is not checked.
//! 2. **Scores that differ.** A sentence says members disagree
//!    ([`DISAGREE`]), or says something about scores (it holds "score",
//!    "rated" or "rating") with a word of difference ([`DIFFER`]), and no
//!    negation ("no", "not", "nobody", "none", "never", "n't", …) comes
//!    before that word in its clause: it fails when every member with
//!    scores has the same scores, or when the two or more members it names
//!    all have the same scores ("furthest from the others' average" said
//!    of two members says each is far from the others, not that the two
//!    differ: only the first holds there; check 10 reads the rest).
//! 3. **Members of the group.** The reason names a member of another group
//!    of the panel.
//! 4. **Which way scores differ.** A sentence about scores says a member's
//!    are high or low ([`HIGH`], [`LOW`], or [`MORE`] and [`LESS`] before
//!    "than"; not negated): the first member it
//!    names is compared, on the dimension the sentence names (else on the
//!    mean of the row), with the other members it names (else with every
//!    other member with scores). "High" fails when that member is at or
//!    below all of them and below one; "low" when at or above all and above
//!    one. A comparison with members named after it ("higher than Ms.
//!    Ito's", "less than Dr. Mensah's") fails unless that member is above
//!    (below) every one of them: the 0.5B model called a 5 "significantly
//!    higher than Ms. Ito's (5)"; one with no member named after it
//!    ("higher than the average") is read as "high". "The highest" is said
//!    of the member named nearest before it (else the first named) and
//!    fails when any other member's is higher
//!    ("Ms. Ito's contextual consistency score is the highest, with a 4"
//!    beside Ms. Okafor's 5, from the 0.5B model); "the lowest" the same
//!    way; "the second highest" is not read. Words after [`AVERAGE`] are
//!    not read ("… from the others' average (3.5), which is lower" may say
//!    what the average is).
//! 5. **A reason, not a scores line.** The reason holds [`SCORES_LINE`],
//!    the words the discussion shows after a speech before its speaker's
//!    scores ("(Ann's scores now: grammar 4, …"): a copy of that line says
//!    nothing about the choice (the 0.5B model gave it as its reason).
//! 6. **A reason, not one word over and over.** A word with letters in it
//!    comes [`REPEATS_MAX`] times or more in a row ("Amara, Amara, Amara,
//!    Amara"): the 0.5B model, once caught in such a run, filled the
//!    reason's whole length with it. Numbers may repeat ("3, 3, 3, 3").
//! 7. **A reason, not a line of the request.** The reason holds the
//!    request's list of who may speak next ([`ELIGIBLE_LINE`]) or a row of
//!    its table (scores, then "(1 turn)" or "(2 turns"; after words, as in
//!    "has spoken least (1 turn)", a turn count is a reason): the 0.5B
//!    model gave "Ms. Okafor spoke last. Agents who may speak next: Mr.
//!    Lindqvist, Ms. Ito." and
//!    "Dr. Mensah's scores: 5, 5, 5, 5, 5 (1 turn)" as reasons. The same
//!    for words of the correction a failed reason is sent back with
//!    ([`CORRECTION_WORDS`], or a number "against" a number): sent back
//!    with "they are 4 against 4.6", the 0.5B model answered "Dana's scores
//!    are not 4 against 4.6".
//!
//! 8. **A reason for the member chosen.** The reason names the member the
//!    reply chooses (the request asks it to; [`names_choice`]): the 0.5B
//!    model chose Dr. Haddad "because Dr. Kowalski's score of 4, 5, 4, 4, 5
//!    is less than Dr. Mensah's", and Ms. Okafor because "the content is
//!    clear and concise".
//!
//! 9. **The numbers of the table's sentence.** A sentence in the form the
//!    request states what the table shows ("Ms. Ito's grammar score (4) is
//!    furthest from the others' average (3.5)"; see
//!    [`standing`](crate::engine::moderator::standing)), naming a
//!    dimension: the number after "score" must be the score there of the
//!    first member it names, and the number after [`AVERAGE`] the mean of
//!    the other members' scores there (to one decimal). The 0.5B model
//!    wrote "Dr. Haddad's answer relevancy score is furthest from the
//!    others' average (3)", its own score put as the others' average.
//!
//! 10. **How far from the others' average.** A sentence says a member's
//!     score on a dimension it names is the furthest from the others'
//!     average or the closest to it ([`FAR`] or [`NEAR`], then "from" or
//!     "to", then "average" or "mean"; not negated). A member's gap there
//!     is its score against the mean of the other members' scores. "Furthest"
//!     fails when read neither as the request's sentences mean it (of that
//!     member's dimensions, this one's gap is the widest) nor as said of the
//!     group (of the members it names, else all with scores, its gap there
//!     is the widest); "closest", which the request never says, fails when
//!     another of those members' gap there is narrower. The 0.5B model wrote
//!     "Dr. Mensah's grammar score (5) is closer to the others' average
//!     (3)", the widest gap of the group.
//!
//! 11. **Members' titles.** The reason writes a member's name with a title
//!     that is not the member's and makes no member's name ("Ms. Lindqvist"
//!     for Mr. Lindqvist, as the 0.5B model did in a reason that passed
//!     every other check).
//!
//! Checks 4, 9 and 10 read a dimension in the sentence's own words: its key's
//! words, or words that begin with their first five letters ("context
//! consistency" for `contextual_consistency`); a sentence naming two is
//! read on the one nearest before its first "score", else the first.
//!
//! Anything else (what a member argued, who has spoken least) is not
//! checked: the table does not show it.

use super::sentences::{mentions, sentences, titled, words, words_with_clauses};
use crate::names::TITLES;

/// Words that say who spoke last; not followed by "time", "round" or
/// "turn" ("spoke last time" says something else).
pub const SPOKE_LAST: [&str; 8] = [
    "spoke last",
    "spoken last",
    "speaks last",
    "last to speak",
    "just spoke",
    "spoke most recently",
    "spoke just before",
    "was the last speaker",
];

/// Words (or their beginnings) that say members disagree.
pub const DISAGREE: [&str; 1] = ["disagree"];

/// Words (or their beginnings) that say scores differ, in a sentence about scores.
pub const DIFFER: [&str; 9] =
    ["differ", "diverg", "outlier", "furthest", "farthest", "higher", "lower", "highest", "lowest"];

/// Words (whole) that say a member's scores are high.
pub const HIGH: [&str; 3] = ["high", "higher", "highest"];

/// Words (whole) that say a member's scores are low.
pub const LOW: [&str; 3] = ["low", "lower", "lowest"];

/// Words before "highest" or "lowest" that rank a score below the top
/// ("the second highest"), which check 4 does not read.
const ORDINALS: [&str; 4] = ["second", "third", "2nd", "3rd"];

/// Words that say a member's scores are high when "than" follows them
/// ("… is more than Rafael's").
pub const MORE: [&str; 2] = ["more", "greater"];

/// Words that say a member's scores are low when "than" follows them.
pub const LESS: [&str; 2] = ["less", "fewer"];

/// Words that say a score is far from the others' average, before "from"
/// (check 10).
pub const FAR: [&str; 4] = ["furthest", "farthest", "further", "farther"];

/// Words that say a score is near the others' average, before "to" or
/// "from" (check 10).
pub const NEAR: [&str; 4] = ["closest", "nearest", "closer", "nearer"];

const NEGATIONS: [&str; 9] = ["no", "not", "nobody", "nobody's", "none", "never", "neither", "nor", "without"];

/// What the discussion writes after a speech, before the speaker's
/// scores (see `prompts::history`), lower-cased.
pub const SCORES_LINE: &str = "scores now:";

/// The words of the moderator's request before the members who may speak
/// next, lower-cased (see `prompts::moderator_messages`).
pub const ELIGIBLE_LINE: &str = "may speak next:";

/// The words before the others' mean in the request's sentences (see
/// `moderator::standing`), lower-cased (check 9).
pub const AVERAGE: &str = "others' average";

/// Words of the correction sent back with a failed reason (see
/// `prompts::moderator_retry` and [`MISMATCH`]), lower-cased.
pub const CORRECTION_WORDS: [&str; 2] = ["could not be used", "does not match the scores table"];

/// How many times in a row one word may come in a reason (check 6).
pub const REPEATS_MAX: usize = 4;

/// How an error from [`SpeakerPick`](crate::engine::verdict::SpeakerPick)
/// begins when the moderator's reason failed [`check`].
pub const MISMATCH: &str = "its reason does not match the scores table: ";

/// What a reason claimed that the table does not show, when `error` (a
/// moderator reply's) says so.
pub fn mismatch(error: &str) -> Option<&str> {
    error.strip_prefix(MISMATCH)
}

/// What the moderator's request showed.
#[derive(Debug, Clone, Default)]
pub struct TableFacts {
    /// The group's name.
    pub group: String,
    /// Every member of the group, with its scores as the table shows them
    /// (`None`: none yet).
    pub rows: Vec<(String, Option<String>)>,
    /// The table's columns, in the rows' order (score keys).
    pub keys: Vec<String>,
    /// Who the request said spoke last.
    pub last: Option<String>,
    /// The members of the panel's other groups.
    pub outsiders: Vec<String>,
}

/// `Ok` when `reason` claims nothing the table contradicts; otherwise what
/// it claims and what the table shows, to send back to the moderator.
pub fn check(reason: &str, facts: &TableFacts) -> Result<(), String> {
    let text = reason.to_lowercase().replace('’', "'");
    if let Some(name) = facts.outsiders.iter().find(|n| !mentions(&text, n).is_empty()) {
        return Err(format!("it names {name}, who is not in the {} group", facts.group));
    }
    if let Some((name, said)) = wrong_title(&text, facts) {
        return Err(format!("it calls {name} \"{said}\""));
    }
    if let Some(at) = text.find(SCORES_LINE) {
        let whose = named_last(&text[..at], facts).map_or("a member", String::as_str);
        return Err(format!("it copies the discussion's line of {whose}'s scores instead of saying why"));
    }
    if text.contains(ELIGIBLE_LINE) {
        return Err("it copies the list of who may speak next instead of saying why".into());
    }
    if CORRECTION_WORDS.iter().any(|w| text.contains(w)) || number_against_number(&text) {
        return Err("it repeats the correction it was sent instead of saying why".into());
    }
    if let Some(whose) = table_row(&text, facts) {
        return Err(format!("it copies the table's row of {whose} instead of saying why"));
    }
    if let Some(word) = repeated_word(&text) {
        // The word as the reason wrote it.
        let word = reason.split(|c: char| !c.is_alphanumeric() && c != '\'').find(|w| w.to_lowercase() == word);
        return Err(format!("it repeats \"{}\" over and over instead of saying why", word.unwrap_or_default()));
    }
    for sentence in sentences(&text) {
        spoke_last(sentence, facts)?;
        differ(sentence, facts)?;
        direction(sentence, facts)?;
        numbers(sentence, facts)?;
        nearness(sentence, facts)?;
    }
    Ok(())
}

/// Check 11: a member of the group whose name has a title, written with
/// another title ("Ms. Lindqvist" for Mr. Lindqvist) that makes no member's
/// name; the member's name and what the lower-cased `text` calls it.
fn wrong_title(text: &str, facts: &TableFacts) -> Option<(String, String)> {
    let everyone: Vec<String> =
        facts.rows.iter().map(|(n, _)| n).chain(&facts.outsiders).map(|n| n.to_lowercase()).collect();
    for (name, _) in &facts.rows {
        let Some((own, rest)) = titled(name) else { continue };
        let surname = rest.to_lowercase();
        for at in mentions(text, &surname) {
            let Some(said) = text[..at].split_whitespace().next_back().map(|w| w.trim_end_matches('.')) else {
                continue;
            };
            if said == own || !TITLES.contains(&said) || everyone.contains(&format!("{said}. {surname}")) {
                continue;
            }
            let mut title = said.to_string();
            title[..1].make_ascii_uppercase();
            return Some((name.clone(), format!("{title}. {rest}")));
        }
    }
    None
}

/// Check 8: `Ok` when `reason` names `chosen`, the member the reply chose;
/// otherwise what it names instead, to send back to the moderator.
pub fn names_choice(reason: &str, chosen: &str, facts: &TableFacts) -> Result<(), String> {
    let text = reason.to_lowercase().replace('’', "'");
    if !mentions(&text, chosen).is_empty() {
        return Ok(());
    }
    let named: Vec<&str> =
        facts.rows.iter().map(|(n, _)| n.as_str()).filter(|n| !mentions(&text, n).is_empty()).collect();
    Err(if named.is_empty() {
        format!("it chooses {chosen} but does not name {chosen} or say why")
    } else {
        format!("it chooses {chosen} but speaks of {}", join_and(&named))
    })
}

/// Check 7's echo of a correction: a number, "against", a number ("4
/// against 4.6", "5 against 3.2–5").
fn number_against_number(text: &str) -> bool {
    let words = words(text);
    words.windows(3).any(|w| w[1] == "against" && [w[0], w[2]].iter().all(|n| n.parse::<f64>().is_ok()))
}

/// Check 7's table row: scores, then a turn count in brackets as the table
/// writes it ("4, 5 (2 turns"), or as the model shortened it ("(1 turn)");
/// whose row it is, as far as the reason names a member before it. A turn
/// count after words ("has spoken least (1 turn)") is a reason.
fn table_row<'a>(text: &str, facts: &'a TableFacts) -> Option<&'a str> {
    text.match_indices('(').find_map(|(at, _)| {
        let before = text[..at].trim_end();
        if !(before.ends_with(|c: char| c.is_ascii_digit() || c == '-') || before.ends_with("none yet")) {
            return None;
        }
        let mut rest = text[at + 1..].split_whitespace();
        let count = rest.next()?;
        let unit = rest.next()?.trim_end_matches([')', ',']);
        (count.parse::<u32>().is_ok() && (unit == "turn" || unit == "turns"))
            .then(|| named_last(&text[..at], facts).map_or("a member", String::as_str))
    })
}

/// Check 6: a word with letters that comes [`REPEATS_MAX`] times or more
/// in a row in the lower-cased `text`.
fn repeated_word(text: &str) -> Option<&str> {
    let words = words(text);
    words
        .windows(REPEATS_MAX)
        .find(|w| w[0].chars().any(char::is_alphabetic) && w.iter().all(|x| *x == w[0]))
        .map(|w| w[0])
}

/// Claim 1 in one sentence.
fn spoke_last(sentence: &str, facts: &TableFacts) -> Result<(), String> {
    for phrase in SPOKE_LAST {
        for (at, _) in sentence.match_indices(phrase) {
            let after = sentence[at + phrase.len()..].split_whitespace().next().unwrap_or("");
            if ["time", "round", "turn", "time,", "round,", "turn,"].contains(&after) {
                continue;
            }
            let Some(subject) = named_last(&sentence[..at], facts) else { continue };
            match &facts.last {
                Some(last) if last == subject => {}
                Some(last) => return Err(format!("it says {subject} spoke last, but {last} spoke last")),
                None => return Err(format!("it says {subject} spoke last, but nobody has spoken yet")),
            }
        }
    }
    Ok(())
}

/// The member of the group named last in the lower-cased `text`.
fn named_last<'a>(text: &str, facts: &'a TableFacts) -> Option<&'a String> {
    facts
        .rows
        .iter()
        .filter_map(|(name, _)| mentions(text, name).last().map(|&p| (p, name)))
        .max_by_key(|&(p, _)| p)
        .map(|(_, name)| name)
}

/// Claim 2 in one sentence.
fn differ(sentence: &str, facts: &TableFacts) -> Result<(), String> {
    let words = words(sentence);
    let about_scores = words.iter().any(|w| w.starts_with("score") || *w == "rated" || w.starts_with("rating"));
    let clauses = words_with_clauses(sentence);
    let claim = first_claim(&clauses, |i, word| {
        (DISAGREE.iter().any(|d| word.starts_with(d)) || about_scores && DIFFER.iter().any(|d| word.starts_with(d)))
            .then(|| FAR.contains(&word) && towards_average(&clauses, i))
    });
    let Some(from_average) = claim else { return Ok(()) };
    let scored: Vec<(&str, &str)> =
        facts.rows.iter().filter_map(|(n, s)| s.as_deref().map(|s| (n.as_str(), s))).collect();
    let named: Vec<(&str, &str)> = scored.iter().copied().filter(|(n, _)| !mentions(sentence, n).is_empty()).collect();
    let same = |rows: &[(&str, &str)]| rows.len() > 1 && rows.iter().all(|(_, s)| *s == rows[0].1);
    // "Ms. Okafor's grammar score (5) is furthest from the others' average
    // (4.5), while Mr. Lindqvist's (5) is furthest from the others'
    // average (4.5)" says each is far from the others, not that the two
    // differ (check 10 reads it).
    if named.len() > 1 && !from_average {
        if same(&named) {
            let who: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
            return Err(format!("it says scores differ, but {} have the same scores ({})", join_and(&who), named[0].1));
        }
    } else if same(&scored) {
        return Err(format!("it says scores differ, but nobody's scores differ (all are {})", scored[0].1));
    }
    Ok(())
}

/// Claim 4 in one sentence.
fn direction(sentence: &str, facts: &TableFacts) -> Result<(), String> {
    let words = words(sentence);
    if !words.iter().any(|w| w.starts_with("score") || *w == "scored" || *w == "rated" || w.starts_with("rating")) {
        return Ok(());
    }
    // A word after the others' average may say what the average is.
    let before_average = sentence.find(AVERAGE).map_or(sentence, |at| &sentence[..at]);
    let clauses = words_with_clauses(before_average);
    let claim = first_claim(&clauses, |i, word| {
        let than = clauses.get(i + 1).is_some_and(|(next, _)| *next == "than");
        // "The highest" says more than "high"; "the second highest" is not checked.
        let superlative =
            (word == HIGH[2] || word == LOW[2]).then(|| word.as_ptr() as usize - sentence.as_ptr() as usize);
        let ranked = i > 0 && ORDINALS.contains(&clauses[i - 1].0);
        // "Higher than Ms. Ito's" compares with the members named after it:
        // a tie is not higher.
        let kind = if let Some(at) = superlative {
            Claim::Most(at)
        } else if than && (word == HIGH[1] || word == LOW[1] || MORE.contains(&word) || LESS.contains(&word)) {
            Claim::Than
        } else {
            Claim::Plain
        };
        if ranked && superlative.is_some() {
            None
        } else if HIGH.contains(&word) || (than && MORE.contains(&word)) {
            Some((true, kind))
        } else if LOW.contains(&word) || (than && LESS.contains(&word)) {
            Some((false, kind))
        } else {
            None
        }
    });
    let Some((high, kind)) = claim else { return Ok(()) };
    let superlative = if let Claim::Most(at) = kind { Some(at) } else { None };
    // The column the sentence names, else the row's mean.
    let column = column_named(sentence, &facts.keys);
    let value = |row: &str| -> Option<f64> {
        match column {
            Some(c) => cell(row, c),
            None => {
                let known: Vec<f64> = row.split(',').filter_map(|c| c.trim().parse::<f64>().ok()).collect();
                (!known.is_empty()).then(|| known.iter().sum::<f64>() / known.len() as f64)
            }
        }
    };
    let mut named: Vec<(usize, &str, f64)> = facts
        .rows
        .iter()
        .filter_map(|(n, s)| Some((mentions(sentence, n).first().copied()?, n.as_str(), value(s.as_deref()?)?)))
        .collect();
    named.sort_by_key(|&(at, ..)| at);
    // A comparison with no member named after the first ("higher than the
    // average", "than the others'") is read as "high".
    let kind = match kind {
        Claim::Than if named.len() < 2 || sentence.contains("average") || sentence.contains("mean") => Claim::Plain,
        kind => kind,
    };
    let every_other = |subject: &str| -> Vec<f64> {
        facts.rows.iter().filter(|(n, _)| n != subject).filter_map(|(_, s)| value(s.as_deref()?)).collect()
    };
    let (subject, own, others) = match superlative {
        // "The highest" is said of the member named nearest before it (else
        // the first named), against every other member with scores.
        Some(word_at) => {
            let Some(&(_, subject, own)) = named.iter().rev().find(|(at, ..)| *at < word_at).or(named.first()) else {
                return Ok(());
            };
            (subject, own, every_other(subject))
        }
        None => {
            let Some(&(_, subject, own)) = named.first() else { return Ok(()) };
            let others =
                if named.len() > 1 { named[1..].iter().map(|&(.., v)| v).collect() } else { every_other(subject) };
            (subject, own, others)
        }
    };
    let (Some(lo), Some(hi)) = (others.iter().copied().reduce(f64::min), others.iter().copied().reduce(f64::max))
    else {
        return Ok(());
    };
    let on = column.map(|c| format!(" on {}", facts.keys[c])).unwrap_or_default();
    let range = if lo == hi { fmt(lo) } else { format!("{}–{}", fmt(lo), fmt(hi)) };
    let (fails, said) = match (high, kind) {
        (true, Claim::Plain) => (own <= lo && own < hi, "high"),
        (false, Claim::Plain) => (own >= hi && own > lo, "low"),
        (true, Claim::Than) => (own <= hi, "higher"),
        (false, Claim::Than) => (own >= lo, "lower"),
        (true, Claim::Most(_)) => (own < hi, "the highest"),
        (false, Claim::Most(_)) => (own > lo, "the lowest"),
    };
    if fails {
        return Err(format!("it says {subject}'s scores are {said}{on}, but they are {} against {range}", fmt(own)));
    }
    Ok(())
}

/// What a sentence of check 4 says of a member's scores.
#[derive(Clone, Copy)]
enum Claim {
    /// "High", "low": at least one other is lower (higher).
    Plain,
    /// "Higher than", "more than", "lower than", "less than": above (below)
    /// every member compared with, a tie failing.
    Than,
    /// "The highest", "the lowest", with where the word is in the sentence:
    /// no other is higher (lower).
    Most(usize),
}

/// Check 9 in one sentence.
fn numbers(sentence: &str, facts: &TableFacts) -> Result<(), String> {
    let Some(column) = column_named(sentence, &facts.keys) else { return Ok(()) };
    let key = &facts.keys[column];
    let named: Vec<(usize, &str, Option<f64>)> = facts
        .rows
        .iter()
        .filter_map(|(n, s)| {
            Some((mentions(sentence, n).first().copied()?, n.as_str(), s.as_deref().and_then(|s| cell(s, column))))
        })
        .collect();
    let Some(&(_, subject, own)) = named.iter().min_by_key(|(at, ..)| *at) else { return Ok(()) };
    // Either way of rounding to one decimal.
    let near = |claimed: f64, actual: f64| (claimed - actual).abs() <= 0.051;
    if let (Some(claimed), Some(own)) = (number_after(sentence, "score"), own)
        && !near(claimed, own)
    {
        return Err(format!("it says {subject}'s {key} score is {}, but it is {}", fmt(claimed), fmt(own)));
    }
    let others: Vec<f64> =
        facts.rows.iter().filter(|(n, _)| n != subject).filter_map(|(_, s)| cell(s.as_deref()?, column)).collect();
    if let Some(claimed) = number_after(sentence, AVERAGE).or_else(|| number_after(sentence, "others average"))
        && !others.is_empty()
    {
        let mean = others.iter().sum::<f64>() / others.len() as f64;
        if !near(claimed, mean) {
            return Err(format!("it says the others' average on {key} is {}, but it is {}", fmt(claimed), fmt(mean)));
        }
    }
    Ok(())
}

/// Check 10 in one sentence.
fn nearness(sentence: &str, facts: &TableFacts) -> Result<(), String> {
    let clauses = words_with_clauses(sentence);
    let far = first_claim(&clauses, |i, word| {
        if !towards_average(&clauses, i) {
            None
        } else if FAR.contains(&word) {
            Some(true)
        } else if NEAR.contains(&word) {
            Some(false)
        } else {
            None
        }
    });
    let Some(far) = far else { return Ok(()) };
    let Some(column) = column_named(sentence, &facts.keys) else { return Ok(()) };
    let scored: Vec<(usize, &str, &str)> = facts
        .rows
        .iter()
        .filter_map(|(n, s)| {
            Some((mentions(sentence, n).first().copied().unwrap_or(usize::MAX), n.as_str(), s.as_deref()?))
        })
        .collect();
    // A member's gap on a column: its score against the others' mean there.
    let gap = |who: &str, c: usize| -> Option<(f64, f64, f64)> {
        let own = cell(scored.iter().find(|(_, n, _)| *n == who)?.2, c)?;
        let others: Vec<f64> = scored.iter().filter(|(_, n, _)| *n != who).filter_map(|(_, _, s)| cell(s, c)).collect();
        if others.is_empty() {
            return None;
        }
        let mean = others.iter().sum::<f64>() / others.len() as f64;
        Some(((own - mean).abs(), own, mean))
    };
    let Some(&(at, subject, _)) = scored.iter().min_by_key(|(at, ..)| *at) else { return Ok(()) };
    if at == usize::MAX {
        return Ok(());
    }
    let Some((own_gap, own, mean)) = gap(subject, column) else { return Ok(()) };
    // Wider or narrower than `own_gap`, beyond rounding.
    let beaten = |g: f64| if far { g > own_gap + 0.051 } else { g < own_gap - 0.051 };
    // "Furthest" read as the request's sentences mean it: this member's
    // widest gap.
    let pick = |a: &(usize, f64), b: &(usize, f64)| if far { a.1.total_cmp(&b.1) } else { b.1.total_cmp(&a.1) };
    let wider = (0..facts.keys.len()).filter_map(|c| gap(subject, c).map(|(g, ..)| (c, g))).filter(|&(_, g)| beaten(g));
    let other_column = wider.max_by(pick);
    if far && other_column.is_none() {
        return Ok(());
    }
    // Read as said of the group: the members it names, else all.
    let named: Vec<&str> =
        scored.iter().filter(|(a, n, _)| *a != usize::MAX && *n != subject).map(|(_, n, _)| *n).collect();
    let group: Vec<&str> =
        if named.is_empty() { scored.iter().map(|(_, n, _)| *n).filter(|n| *n != subject).collect() } else { named };
    let Some((rival, rival_gap)) = group
        .iter()
        .enumerate()
        .filter_map(|(i, n)| gap(n, column).map(|(g, ..)| (i, g)))
        .filter(|&(_, g)| beaten(g))
        .max_by(pick)
        .map(|(i, g)| (group[i], g))
    else {
        return Ok(());
    };
    let key = &facts.keys[column];
    let said = if far { "furthest from" } else { "closest to" };
    let also = match other_column {
        Some((c, g)) if far => format!(", and {subject}'s {} is {} away", facts.keys[c], fmt(g)),
        _ => String::new(),
    };
    Err(format!(
        "it says {subject}'s {key} score is {said} the others' average, but it is {} against {} ({} away); \
         {rival}'s is {} away{also}",
        fmt(own),
        fmt(mean),
        fmt(own_gap),
        fmt(rival_gap),
    ))
}

/// Whether the word at `i` is followed by "from" or "to" and, later, by
/// "average" or "mean" ("furthest from the others' average").
fn towards_average(clauses: &[(&str, bool)], i: usize) -> bool {
    matches!(clauses.get(i + 1), Some(("from" | "to", _)))
        && clauses[i + 1..].iter().any(|(w, _)| *w == "average" || *w == "mean")
}

/// What `claim` finds at the first word of `clauses` (its index, the word)
/// with no negation before it in its clause ("no", "not", "…n't", …): a
/// negated claim is passed over.
fn first_claim<T>(clauses: &[(&str, bool)], mut claim: impl FnMut(usize, &str) -> Option<T>) -> Option<T> {
    let mut clause_start = 0;
    for (i, &(word, ends_clause)) in clauses.iter().enumerate() {
        if let Some(found) = claim(i, word)
            && !clauses[clause_start..i].iter().any(|(w, _)| NEGATIONS.contains(w) || w.ends_with("n't"))
        {
            return Some(found);
        }
        if ends_clause {
            clause_start = i + 1;
        }
    }
    None
}

/// The number right after `words` in `sentence` ("score (4)", "average of
/// 3.5", "average is 3"), if any.
fn number_after(sentence: &str, words: &str) -> Option<f64> {
    let at = sentence.find(words)? + words.len();
    let rest = sentence[at..].trim_start();
    let rest = ["(", "of ", "is ", "at "].iter().find_map(|p| rest.strip_prefix(p)).unwrap_or(rest).trim_start();
    let end = rest.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok()
}

/// Letters of a dimension's word that a sentence's word must begin with
/// (all of a shorter one): "context consistency" names
/// `contextual_consistency`, "grammatical" `grammar`.
const KEY_STEM: usize = 5;

/// The table's column that a lower-cased sentence names: a key's words (or
/// their first [`KEY_STEM`] letters) in a row. A sentence naming two, the
/// one nearest before its first "score" ("Ms. Ito's answer relevancy score
/// (3) is lower than her grammar one"), else the first it names.
fn column_named(sentence: &str, keys: &[String]) -> Option<usize> {
    let words = words(sentence);
    let stem = |w: &str| w.chars().take(KEY_STEM).collect::<String>();
    // Each naming: (the word after it, its column).
    let mut named: Vec<(usize, usize)> = Vec::new();
    for (column, key) in keys.iter().enumerate() {
        let parts: Vec<String> = key.to_lowercase().split(['_', ' ']).filter(|p| !p.is_empty()).map(stem).collect();
        if parts.is_empty() {
            continue;
        }
        for at in 0..words.len().saturating_sub(parts.len() - 1) {
            if parts.iter().zip(&words[at..]).all(|(part, word)| word.starts_with(part.as_str())) {
                named.push((at + parts.len(), column));
            }
        }
    }
    let score = words.iter().position(|w| w.starts_with("score"));
    let before = score.and_then(|s| named.iter().filter(|(end, _)| *end <= s).max_by_key(|(end, _)| *end));
    before.or_else(|| named.iter().min_by_key(|(end, _)| *end)).map(|&(_, column)| column)
}

/// A row's score in `column` ("4, -, 3.5": `-` has none).
fn cell(row: &str, column: usize) -> Option<f64> {
    row.split(',').nth(column)?.trim().parse().ok()
}

fn fmt(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.1}") }
}

/// "A, B and C".
fn join_and(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(rows: &[(&str, Option<&str>)], last: Option<&str>) -> TableFacts {
        TableFacts {
            group: "Teachers".into(),
            rows: rows.iter().map(|(n, s)| (n.to_string(), s.map(str::to_string))).collect(),
            keys: ["grammar", "answer_relevancy", "contextual_consistency", "educational_appropriateness", "overall"]
                .map(String::from)
                .to_vec(),
            last: last.map(str::to_string),
            outsiders: vec!["Dana".into(), "Dr. Haddad".into()],
        }
    }

    const SAME: &str = "5, 5, 5, 5, 5";

    #[test]
    fn who_spoke_last_must_be_who_the_table_says() {
        let f = facts(
            &[("Ms. Okafor", Some(SAME)), ("Mr. Lindqvist", Some(SAME)), ("Ms. Ito", Some(SAME))],
            Some("Ms. Okafor"),
        );
        let err = check("Ms. Ito spoke last, and it aligns with Mr. Lindqvist's expertise.", &f).unwrap_err();
        assert_eq!(err, "it says Ms. Ito spoke last, but Ms. Okafor spoke last");
        assert!(check("Ito is the member who spoke last.", &f).is_err(), "a name without its title");
        assert!(check("Mr. Lindqvist should answer Ms. Okafor, who spoke last.", &f).is_ok());
        assert!(check("Since Okafor just spoke, Ms. Ito answers her.", &f).is_ok());
        assert!(check("Someone spoke last; Ms. Ito answers.", &f).is_ok(), "nobody named before the words");
        assert!(check("Ms. Ito spoke last time about pacing.", &f).is_ok(), "not a claim about the last turn");
        let fresh = facts(&[("Ms. Okafor", None), ("Ms. Ito", None)], None);
        assert_eq!(
            check("Ms. Ito is the agent who spoke last.", &fresh).unwrap_err(),
            "it says Ms. Ito spoke last, but nobody has spoken yet"
        );
    }

    #[test]
    fn scores_said_to_differ_must_differ_in_the_table() {
        let all_same = facts(&[("Dana", Some(SAME)), ("Rafael", Some(SAME)), ("Amara", None)], None);
        let mut f = all_same.clone();
        f.outsiders.clear();
        let err = check("Dana is the agent whose scores differ most.", &f).unwrap_err();
        assert_eq!(err, "it says scores differ, but nobody's scores differ (all are 5, 5, 5, 5, 5)");
        assert!(check("Rafael disagrees with Amara on the wording.", &f).is_err(), "a disagreement");
        assert!(check("Nobody's scores differ, so Amara, who has spoken least, goes next.", &f).is_ok());
        assert!(check("The scores do not differ; Rafael has not answered yet.", &f).is_ok());
        assert!(check("Amara brings a different view of the story.", &f).is_ok(), "not about scores");
        assert!(check("Rafael scored the lowest, indicating he has spoken the least.", &f).is_err());
        assert!(check("Rafael, whose point nobody answered, goes next.", &f).is_ok());
        // Two members named: their own rows decide.
        let split = facts(
            &[("Ms. Okafor", Some(SAME)), ("Mr. Lindqvist", Some(SAME)), ("Ms. Ito", Some("4, 5, 5, 5, 5"))],
            None,
        );
        assert_eq!(
            check("Ms. Okafor's scores differ from Mr. Lindqvist's.", &split).unwrap_err(),
            "it says scores differ, but Ms. Okafor and Mr. Lindqvist have the same scores (5, 5, 5, 5, 5)"
        );
        assert!(check("Ms. Ito's grammar score is lower than the others'.", &split).is_ok());
        assert!(check("Ms. Ito disagrees with Ms. Okafor.", &split).is_ok());
        assert!(check("Ms. Okafor rated it higher than Ms. Ito.", &split).is_ok());
        // Each far from the others' average: not a claim that the two differ.
        let both = "Ms. Okafor's grammar score (5) is furthest from the others' average (4.5), while Mr. Lindqvist's \
                    grammar score (5) is furthest from the others' average (4.5).";
        assert_eq!(check(both, &split), Ok(()));
        let everyone = "Dana's grammar score is furthest from the others' average, and Rafael's too.";
        assert!(check(everyone, &f).is_err(), "nobody's scores differ at all");
    }

    #[test]
    fn scores_said_to_be_high_or_low_must_be_so() {
        let mut f = facts(
            &[
                ("Dr. Haddad", Some(SAME)),
                ("Dr. Mensah", Some("4, 4, 5, 4, 4")),
                ("Dr. Kowalski", Some("5, 5, 5, 5, 5")),
                ("Ms. Ito", Some("1, 4, 3, 5, 3")),
            ],
            None,
        );
        f.outsiders.clear();
        assert_eq!(
            check("Dr. Haddad's current scores are very low, so he needs a nuanced view.", &f).unwrap_err(),
            "it says Dr. Haddad's scores are low, but they are 5 against 3.2–5"
        );
        assert_eq!(
            check("Ms. Ito's score is the highest among the agents.", &f).unwrap_err(),
            "it says Ms. Ito's scores are the highest, but they are 3.2 against 4.2–5"
        );
        // "The highest" fails where "high" would not: one other is higher.
        assert_eq!(
            check("Dr. Mensah's contextual consistency score is the highest, with a 5 out of 5.", &f),
            Ok(()),
            "tied with the highest"
        );
        assert_eq!(
            check("Dr. Mensah's grammar score is the highest, with a 4 out of 5.", &f).unwrap_err(),
            "it says Dr. Mensah's scores are the highest on grammar, but they are 4 against 1–5"
        );
        assert!(check("Dr. Mensah's grammar score is high.", &f).is_ok(), "above one of them");
        assert_eq!(
            check("Dr. Kowalski's grammar score is 5, and Ms. Ito's grammar score is the lowest.", &f),
            Ok(()),
            "said of the member named nearest before it"
        );
        assert!(check("Dr. Mensah's grammar score is the lowest of the group.", &f).is_err(), "Ms. Ito's 1");
        assert!(check("Dr. Mensah's grammar score is the second lowest.", &f).is_ok(), "a rank not read");
        assert!(check("Dr. Mensah's scores are lower than Dr. Haddad's.", &f).is_ok());
        assert!(check("Dr. Haddad scored higher than Dr. Mensah.", &f).is_ok());
        // A comparison with a member is strict: a tie is not higher (the 0.5B
        // model's "significantly higher than Ms. Ito's (5)" of a 5).
        assert_eq!(
            check(
                "Dr. Kowalski's educational appropriateness score (5) is significantly higher than Ms. Ito's (5).",
                &f
            )
            .unwrap_err(),
            "it says Dr. Kowalski's scores are higher on educational_appropriateness, but they are 5 against 5"
        );
        assert!(check("Dr. Kowalski's grammar score is lower than Dr. Haddad's.", &f).is_err(), "5 against 5");
        assert!(check("Dr. Mensah's grammar score is higher than the group's average.", &f).is_ok(), "read as high");
        assert!(check("Dr. Mensah's grammar score is higher than the others'.", &f).is_ok(), "read as high");
        assert!(check("Ms. Ito's grammar score is the lowest.", &f).is_ok(), "on the column named");
        assert!(
            check("Ms. Ito's educational appropriateness score is low.", &f).is_err(),
            "5 on that column, the highest"
        );
        assert!(check("Ms. Ito's score is not low.", &f).is_ok(), "negated");
        assert!(check("Ms. Ito has a high opinion of the story.", &f).is_ok(), "not about scores");
        assert_eq!(
            check("Dr. Kowalski's score of 5, 5, 5, 5, 5 is less than Dr. Mensah's.", &f).unwrap_err(),
            "it says Dr. Kowalski's scores are lower, but they are 5 against 4.2"
        );
        assert!(check("Ms. Ito's grammar score is more than Dr. Mensah's.", &f).is_err(), "1 against 4");
        assert!(check("Dr. Mensah's grammar score is greater than Ms. Ito's.", &f).is_ok());
        assert!(check("Ms. Ito's score matters more to the children than Dr. Haddad's.", &f).is_ok(), "not \"than\"");
        let average = "Ms. Ito's grammar score (1) is furthest from the others' average (4.7), which is higher.";
        assert!(check(average, &f).is_ok(), "what the average is");
    }

    #[test]
    fn the_numbers_of_the_tables_sentence_must_be_the_tables() {
        let mut f = facts(
            &[
                ("Dr. Haddad", Some("5, 3, 5, 5, 4")),
                ("Dr. Mensah", Some("5, 5, 5, 5, 5")),
                ("Dr. Kowalski", Some("4, 6, -, 5, 4")),
            ],
            None,
        );
        f.outsiders.clear();
        let ok = "Dr. Haddad's answer relevancy score (3) is furthest from the others' average (5.5).";
        assert!(check(ok, &f).is_ok());
        assert_eq!(
            check("Dr. Haddad's answer relevancy score is furthest from the others' average (3).", &f).unwrap_err(),
            "it says the others' average on answer_relevancy is 3, but it is 5.5"
        );
        assert_eq!(
            check("Dr. Haddad's answer relevancy score (5) is furthest from the others' average (5.5).", &f)
                .unwrap_err(),
            "it says Dr. Haddad's answer_relevancy score is 5, but it is 3"
        );
        // A member without a score there is left out of the others' average.
        let one = "Dr. Mensah's contextual consistency score (5) is furthest from the others' average (5).";
        assert!(check(one, &f).is_ok());
        // Rounded as the request's sentences are: 13/3 is 4.3.
        f.rows[2].1 = Some("4, 4, 4, 4, 4".into());
        f.rows.push(("Ms. Ito".into(), Some("4, 4, 4, 4, 4".into())));
        assert!(check("Dr. Mensah's grammar score (5) is furthest from the others' average (4.3).", &f).is_ok());
        assert!(check("Dr. Mensah's grammar score of 5 is furthest from the others' average of 4.3.", &f).is_ok());
        // Two dimensions: the one before "score"; a dimension in other words.
        let two = "Dr. Haddad's answer relevancy score (3) is lowest, and his grammar is fine.";
        assert!(check(two, &f).is_ok(), "read on answer relevancy, not on grammar (5)");
        assert_eq!(
            check("On grammar, Dr. Haddad's answer relevancy score (5) stands out.", &f).unwrap_err(),
            "it says Dr. Haddad's answer_relevancy score is 5, but it is 3"
        );
        assert_eq!(
            check("Dr. Haddad's context consistency score (3) is furthest from the others' average (5).", &f)
                .unwrap_err(),
            "it says Dr. Haddad's contextual_consistency score is 3, but it is 5"
        );
        assert!(check("Dr. Haddad's grammatical score (5) is furthest from the others' average (4.3).", &f).is_ok());
        // No dimension named, no member named, or no number: nothing to check.
        assert!(check("Dr. Haddad's score is furthest from the others' average (2).", &f).is_ok());
        assert!(check("The grammar score is furthest from the others' average (2).", &f).is_ok());
        assert!(check("Dr. Haddad's grammar score is furthest from the others' average.", &f).is_ok());
    }

    #[test]
    fn furthest_from_or_closest_to_the_average_must_be_so() {
        let mut f = facts(
            &[
                ("Ms. Okafor", Some("4, 1, 4, 4, 4")),
                ("Mr. Lindqvist", Some("4, 4, 4, 4, 4")),
                ("Ms. Ito", Some("2, 4, 4, 4, 4")),
            ],
            None,
        );
        f.outsiders.clear();
        // The request's own sentence, and the group's widest gap.
        assert!(check("Ms. Okafor's answer relevancy score (1) is furthest from the others' average (4).", &f).is_ok());
        assert!(check("Ms. Ito's grammar score (2) is furthest from the others' average (4).", &f).is_ok());
        // Neither Ms. Okafor's widest gap nor the group's.
        assert_eq!(
            check("Ms. Okafor's grammar score is furthest from the others' average.", &f).unwrap_err(),
            "it says Ms. Okafor's grammar score is furthest from the others' average, but it is 4 against 3 (1 \
             away); Ms. Ito's is 2 away, and Ms. Okafor's answer_relevancy is 3 away"
        );
        // As the 0.5B model wrote it: the widest gap said to be the closest.
        assert_eq!(
            check("Ms. Ito's grammar score (2) is closer to the others' average (4), so she goes next.", &f)
                .unwrap_err(),
            "it says Ms. Ito's grammar score is closest to the others' average, but it is 2 against 4 (2 away); \
             Mr. Lindqvist's is 1 away"
        );
        assert!(check("Mr. Lindqvist's grammar score is nearest to the mean.", &f).is_ok(), "a tie with Ms. Okafor");
        // Compared with the members it names.
        assert!(check("Ms. Okafor's grammar score is closer to the average than Ms. Ito's.", &f).is_ok());
        assert!(check("Ms. Ito's grammar score is closer to the average than Mr. Lindqvist's.", &f).is_err());
        // Not a claim: negated, no average, no dimension, an adverb.
        assert!(check("Ms. Ito's grammar score is not the closest to the others' average.", &f).is_ok());
        assert!(check("Ms. Ito's grammar score is closest to Mr. Lindqvist's.", &f).is_ok());
        assert!(check("Ms. Ito's score is closest to the others' average.", &f).is_ok());
        assert!(check("Further, Ms. Ito's grammar score differs from the average.", &f).is_ok());
    }

    #[test]
    fn members_of_other_groups_are_not_in_the_debate() {
        let f = facts(&[("Ms. Okafor", Some(SAME)), ("Ms. Ito", Some(SAME))], Some("Ms. Ito"));
        assert_eq!(
            check("Dana raised a point about bedtime.", &f).unwrap_err(),
            "it names Dana, who is not in the Teachers group"
        );
        assert!(check("Haddad would disagree.", &f).is_err());
        assert!(check("Ms. Okafor should answer Ms. Ito's point about pacing.", &f).is_ok());
    }

    #[test]
    fn a_member_is_named_with_its_own_title() {
        let f = facts(
            &[("Ms. Okafor", Some(SAME)), ("Mr. Lindqvist", Some("3, 4, 2, 2, 4")), ("Ms. Ito", None)],
            Some("Ms. Ito"),
        );
        assert_eq!(
            check("Ms. Lindqvist's answer relevancy score (4) is furthest from the others' average (5).", &f)
                .unwrap_err(),
            "it calls Mr. Lindqvist \"Ms. Lindqvist\""
        );
        assert!(check("Dr. Lindqvist should answer.", &f).is_err());
        assert!(check("Mr Lindqvist should answer Ms. Ito.", &f).is_ok(), "a title without its dot");
        assert!(check("Lindqvist should answer Ms. Ito.", &f).is_ok(), "no title");
        assert!(check("Ms. Ito answers the lindqvist method.", &f).is_ok(), "no title before it");
        let mut two = f.clone();
        two.outsiders.push("Dr. Lindqvist".into());
        assert_eq!(wrong_title("dr. lindqvist should answer.", &two), None, "another member's name");
    }

    #[test]
    fn a_copy_of_a_scores_line_is_no_reason() {
        let f = facts(&[("Ms. Okafor", Some(SAME)), ("Ms. Ito", Some("4, 5, 5, 5, 5"))], Some("Ms. Ito"));
        assert_eq!(
            check("Ms. Okafor's scores now: grammar 4, overall 5 (confidence 0.50)", &f).unwrap_err(),
            "it copies the discussion's line of Ms. Okafor's scores instead of saying why"
        );
        assert_eq!(
            check("Scores now: grammar 4.", &f).unwrap_err(),
            "it copies the discussion's line of a member's scores instead of saying why"
        );
        assert!(check("Ms. Okafor's scores now differ from Ms. Ito's on grammar.", &f).is_ok(), "no colon: a claim");
    }

    #[test]
    fn a_copy_of_the_requests_lines_is_no_reason() {
        let f = facts(&[("Ms. Okafor", Some(SAME)), ("Dr. Mensah", Some("4, 5, 5, 5, 5"))], Some("Ms. Okafor"));
        assert_eq!(
            check("Ms. Okafor spoke last. Agents who may speak next: Dr. Mensah.", &f).unwrap_err(),
            "it copies the list of who may speak next instead of saying why"
        );
        assert_eq!(
            check("Ms. Okafor spoke last. Dr. Mensah's scores: 4, 5, 5, 5, 5 (1 turn) — the item earns them.", &f)
                .unwrap_err(),
            "it copies the table's row of Dr. Mensah instead of saying why"
        );
        assert_eq!(
            check("4, 5, 5, 5, 5 (2 turns, finished)", &f).unwrap_err(),
            "it copies the table's row of a member instead of saying why"
        );
        assert!(check("Dr. Mensah (2 votes behind) should answer; he may speak next.", &f).is_ok());
        assert!(check("Dr. Mensah has had one turn (the fewest).", &f).is_ok());
        assert!(check("Dr. Mensah has spoken least (1 turn).", &f).is_ok(), "a turn count after words");
        for echo in [
            "Dr. Mensah's scores are not 4 against 4.6, indicating his preference.",
            "Dr. Mensah's reason does not match the scores table, so he spoke last.",
        ] {
            assert_eq!(check(echo, &f).unwrap_err(), "it repeats the correction it was sent instead of saying why");
        }
        assert!(check("Dr. Mensah argued against Ms. Okafor's 5.", &f).is_ok());
    }

    #[test]
    fn one_word_over_and_over_is_no_reason() {
        let f = facts(&[("Amara", Some(SAME)), ("Rafael", Some("4, 5, 5, 5, 5"))], Some("Rafael"));
        assert_eq!(
            check("Rafael, Amara, Amara, Amara, Amara, Amara, Ama", &f).unwrap_err(),
            "it repeats \"Amara\" over and over instead of saying why"
        );
        assert!(check("Amara, Amara, Amara: she has not spoken yet.", &f).is_ok(), "three times is allowed");
        assert!(check("Rafael's scores of 3, 3, 3, 3, 3 differ from Amara's.", &f).is_ok(), "numbers repeat");
    }

    #[test]
    fn a_reason_names_the_member_chosen() {
        let f = facts(
            &[("Dr. Haddad", Some(SAME)), ("Dr. Kowalski", Some("4, 5, 4, 4, 5")), ("Dr. Mensah", Some(SAME))],
            None,
        );
        assert!(names_choice("Dr. Haddad has not answered Dr. Mensah yet.", "Dr. Haddad", &f).is_ok());
        assert!(names_choice("Haddad has not spoken.", "Dr. Haddad", &f).is_ok(), "without the title");
        assert_eq!(
            names_choice("Dr. Kowalski's score of 4, 5, 4, 4, 5 is less than Dr. Mensah's.", "Dr. Haddad", &f)
                .unwrap_err(),
            "it chooses Dr. Haddad but speaks of Dr. Kowalski and Dr. Mensah"
        );
        assert_eq!(
            names_choice("The content is clear and concise.", "Dr. Haddad", &f).unwrap_err(),
            "it chooses Dr. Haddad but does not name Dr. Haddad or say why"
        );
        assert!(names_choice("Dr. Haddadi should go.", "Dr. Haddad", &f).is_err(), "whole words");
    }

    #[test]
    fn sentences_end_after_a_mark_but_not_after_a_title() {
        assert_eq!(
            sentences("ms. ito spoke. dr. haddad agrees; fine!"),
            ["ms. ito spoke", "dr. haddad agrees", "fine"]
        );
        assert_eq!(sentences("the score is 4.5 here"), ["the score is 4.5 here"]);
    }
}
