//! People's pairwise labels, mapped onto the pairs a session compared.
//!
//! A label is `A`, `B`, `tie` (any case) or a candidate's id; a label equal
//! to a candidate's id names that candidate, otherwise `A` and `B` name a
//! position. What the position refers to depends on where the label is:
//!
//! - **item labels** (`human_label`/`human_labels`, or a `--human` row
//!   without a pair): a verdict on the whole item. `A` and `B` name the
//!   item's first and second candidate, which the rater judged best; on a
//!   pair the best candidate wins, and a pair without it gets no label from
//!   this rater. `tie`: no candidate is better, so every pair is a tie.
//! - **pair labels** (a `--human` row naming the pair, `first`/`second` or
//!   `pair`): `A` and `B` name the file's first and second candidate of the
//!   pair, in the file's order, whatever order the log has.
//!
//! Either way the result is a preference in the log's orientation: `A` when
//! the log's `first` wins, `B` when its `second` wins.

use crate::stats::Preference;

/// What a label says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Said {
    Tie,
    /// A position of the label's own order (0: A, 1: B).
    Position(usize),
    Candidate(String),
}

fn read(raw: &str, ids: &[&str]) -> Option<Said> {
    let t = raw.trim();
    if let Some(id) = ids.iter().find(|id| **id == t) {
        return Some(Said::Candidate((*id).to_string()));
    }
    match t.to_ascii_lowercase().as_str() {
        "a" => Some(Said::Position(0)),
        "b" => Some(Said::Position(1)),
        "tie" => Some(Said::Tie),
        _ => None,
    }
}

/// Why a label cannot be used on a session's pairs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelError(pub String);

/// An item label (see the module notes) on the log's pair (`first`,
/// `second`): `Ok(None)` when the rater's best candidate is in neither place.
pub fn item_label_on_pair(
    raw: &str,
    candidates: &[String],
    first: &str,
    second: &str,
) -> Result<Option<Preference>, LabelError> {
    let ids: Vec<&str> = candidates.iter().map(String::as_str).collect();
    let best = match read(raw, &ids) {
        Some(Said::Tie) => return Ok(Some(Preference::Tie)),
        Some(Said::Candidate(id)) => id,
        Some(Said::Position(p)) => match candidates.get(p) {
            Some(id) => id.clone(),
            None => return Err(LabelError(format!("\"{raw}\": the item has no candidate in that place"))),
        },
        None => {
            return Err(LabelError(format!(
                "\"{raw}\" is not A, B, tie or one of the candidates ({})",
                ids.join(", ")
            )));
        }
    };
    Ok(if best == first {
        Some(Preference::A)
    } else if best == second {
        Some(Preference::B)
    } else {
        None
    })
}

/// A pair label given for the file's pair (`file_first`, `file_second`),
/// on the log's pair (`first`, `second`): `Ok(None)` when the file's pair is
/// another pair.
pub fn pair_label_on_pair(
    raw: &str,
    (file_first, file_second): (&str, &str),
    first: &str,
    second: &str,
) -> Result<Option<Preference>, LabelError> {
    let same = (file_first, file_second) == (first, second);
    let reversed = (file_first, file_second) == (second, first);
    if !same && !reversed {
        return Ok(None);
    }
    let winner = match read(raw, &[file_first, file_second]) {
        Some(Said::Tie) => return Ok(Some(Preference::Tie)),
        Some(Said::Candidate(id)) => id,
        Some(Said::Position(0)) => file_first.to_string(),
        Some(Said::Position(_)) => file_second.to_string(),
        None => {
            return Err(LabelError(format!(
                "\"{raw}\" is not A, B, tie, {file_first} or {file_second} (the row's pair)"
            )));
        }
    };
    Ok(Some(if winner == first { Preference::A } else { Preference::B }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Preference::{A, B, Tie};

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn item_labels_follow_the_items_order_not_the_logs() {
        let c = ids(&["sys-short", "sys-lead"]);
        // A names the item's first candidate, sys-short.
        assert_eq!(item_label_on_pair("A", &c, "sys-short", "sys-lead"), Ok(Some(A)));
        assert_eq!(item_label_on_pair("a", &c, "sys-lead", "sys-short"), Ok(Some(B)));
        assert_eq!(item_label_on_pair("sys-lead", &c, "sys-short", "sys-lead"), Ok(Some(B)));
        assert_eq!(item_label_on_pair("tie", &c, "sys-short", "sys-lead"), Ok(Some(Tie)));
        assert!(item_label_on_pair("C", &c, "sys-short", "sys-lead").is_err());
    }

    #[test]
    fn the_best_of_three_says_nothing_about_the_other_pair() {
        let c = ids(&["lead", "para", "short"]);
        assert_eq!(item_label_on_pair("lead", &c, "lead", "short"), Ok(Some(A)));
        assert_eq!(item_label_on_pair("lead", &c, "para", "short"), Ok(None));
        assert_eq!(item_label_on_pair("B", &c, "lead", "para"), Ok(Some(B)));
    }

    #[test]
    fn an_id_that_looks_like_a_position_is_the_candidate() {
        let c = ids(&["B", "A"]);
        assert_eq!(item_label_on_pair("A", &c, "B", "A"), Ok(Some(B)));
    }

    #[test]
    fn pair_labels_follow_the_files_order() {
        assert_eq!(pair_label_on_pair("A", ("y", "x"), "x", "y"), Ok(Some(B)));
        assert_eq!(pair_label_on_pair("B", ("y", "x"), "x", "y"), Ok(Some(A)));
        assert_eq!(pair_label_on_pair("x", ("y", "x"), "x", "y"), Ok(Some(A)));
        assert_eq!(pair_label_on_pair("tie", ("x", "y"), "x", "y"), Ok(Some(Tie)));
        assert_eq!(pair_label_on_pair("A", ("x", "z"), "x", "y"), Ok(None));
        assert!(pair_label_on_pair("z", ("x", "y"), "x", "y").is_err());
    }
}
