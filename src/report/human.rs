//! Human ratings from a file (`--human FILE`): CSV or JSONL keyed by item id.
//!
//! CSV: a header row with an `id` column and one column per dimension
//! (`grammar` or `human.grammar`); a `label` (or `preference`, `winner`)
//! column holds pairwise decisions `A`, `B`, `tie` or a candidate's id.
//! Empty cells are missing ratings.
//! JSONL: one object per line, `{"id": …, "grammar": 4, …}` or
//! `{"id": …, "human": {"grammar": 4}}`, with an optional `label`.
//!
//! Scores may come one row per rater: a row with a `rater` (or `annotator`)
//! gives that person's scores of the item, kept apart from the others' (the
//! item's value per dimension is then the mean of its raters, as for an
//! item's `human_raters`).
//!
//! Pairwise labels may come one row per rater and pair: an optional `rater`
//! names the person, and `first` and `second` (or `pair`: `x vs y`, `x,y`;
//! in JSONL also an array) the pair the label is about, in the order its
//! `A` and `B` refer to. Without a pair the label is about the item (see
//! [`super::pairwise::truth`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::session::event::Scores;
use crate::stats::Preference;

/// One item's ratings from the file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HumanEntry {
    pub scores: Scores,
    /// Scores of named raters (rows with a `rater`), by rater.
    pub raters: std::collections::BTreeMap<String, Scores>,
    /// The last `A`/`B`/`tie` label of the id (label-dimension protocols).
    pub label: Option<Preference>,
    /// Every pairwise label of the id, in file order.
    pub pair_labels: Vec<PairLabel>,
}

/// One person's pairwise label, as written in the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairLabel {
    /// `A`, `B`, `tie` or a candidate id.
    pub label: String,
    /// The pair it is about (its `A` and `B`), when the row names one.
    pub pair: Option<(String, String)>,
    pub rater: Option<String>,
    /// The line it came from.
    pub line: usize,
}

/// Ratings by item id, and the problems met reading them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HumanFile {
    pub source: String,
    pub ratings: HashMap<String, HumanEntry>,
    /// `line N: …` for cells or lines that were not used.
    pub problems: Vec<String>,
}

/// Why a ratings file could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum HumanFileError {
    #[error("{}: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    #[error("{}: {message}", path.display())]
    Format { path: PathBuf, message: String },
}

const LABEL_COLUMNS: [&str; 3] = ["label", "preference", "winner"];
const RATER_COLUMNS: [&str; 2] = ["rater", "annotator"];
const PAIR_COLUMNS: [&str; 4] = ["first", "second", "pair", "candidates"];

/// A pair written as `x vs y`, `x,y`, `x|y` or `x;y`.
fn split_pair(s: &str) -> Option<(String, String)> {
    let parts: Vec<&str> =
        if s.contains(" vs ") { s.split(" vs ").collect() } else { s.split([',', '|', ';']).collect() };
    match parts.as_slice() {
        [a, b] if !a.trim().is_empty() && !b.trim().is_empty() => Some((a.trim().to_string(), b.trim().to_string())),
        _ => None,
    }
}

/// Pair columns of one row: `first` + `second`, or `pair`/`candidates`.
fn pair_of(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<(String, String)>, String> {
    match (get("first"), get("second")) {
        (Some(a), Some(b)) => return Ok(Some((a, b))),
        (Some(_), None) | (None, Some(_)) => return Err("`first` and `second` go together".into()),
        (None, None) => {}
    }
    match get("pair").or_else(|| get("candidates")) {
        Some(p) => split_pair(&p).map(Some).ok_or_else(|| format!("pair \"{p}\" is not two candidate ids")),
        None => Ok(None),
    }
}

fn dimension_name(column: &str) -> &str {
    let c = column.trim();
    c.strip_prefix("human.").unwrap_or(c)
}

/// Read a ratings file; the format follows the extension (`.csv`, else JSON lines).
pub fn load_human_file(path: &Path) -> Result<HumanFile, HumanFileError> {
    let text =
        std::fs::read_to_string(path).map_err(|error| HumanFileError::Read { path: path.to_path_buf(), error })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let is_csv = path.extension().is_some_and(|x| x.eq_ignore_ascii_case("csv"));
    let source = path.display().to_string();
    if is_csv { parse_csv(text, source) } else { parse_jsonl(text, source) }
        .map_err(|message| HumanFileError::Format { path: path.to_path_buf(), message })
}

/// Parse CSV ratings text.
pub fn parse_csv(text: &str, source: String) -> Result<HumanFile, String> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| format!("cannot read the header row: {e}"))?.clone();
    let id_col = headers
        .iter()
        .position(|h| h.trim().eq_ignore_ascii_case("id"))
        .ok_or_else(|| "no `id` column in the header row".to_string())?;
    let mut out = HumanFile { source, ..Default::default() };
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                out.problems.push(format!("{e}"));
                continue;
            }
        };
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        let Some(id) = record.get(id_col).map(str::trim).filter(|s| !s.is_empty()) else {
            out.problems.push(format!("line {line}: no id; row skipped"));
            continue;
        };
        let mut entry = HumanEntry::default();
        let column = |want: &str| -> Option<String> {
            headers
                .iter()
                .position(|h| dimension_name(h).eq_ignore_ascii_case(want))
                .and_then(|i| record.get(i))
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_string)
        };
        let rater = RATER_COLUMNS.iter().find_map(|c| column(c));
        let pair = match pair_of(&column) {
            Ok(p) => p,
            Err(e) => {
                out.problems.push(format!("line {line}: {e}; row skipped"));
                continue;
            }
        };
        for (i, cell) in record.iter().enumerate() {
            let cell = cell.trim();
            if i == id_col || cell.is_empty() {
                continue;
            }
            let name = dimension_name(headers.get(i).unwrap_or(""));
            let lower = name.to_ascii_lowercase();
            if RATER_COLUMNS.contains(&lower.as_str()) || PAIR_COLUMNS.contains(&lower.as_str()) {
                continue;
            }
            if LABEL_COLUMNS.contains(&lower.as_str()) {
                add_label(&mut entry, cell, pair.clone(), rater.clone(), line);
                continue;
            }
            match cell.parse::<f64>() {
                Ok(v) if v.is_finite() => {
                    entry.scores.insert(name.to_string(), v);
                }
                _ => {
                    out.problems.push(format!("line {line}: column `{name}`: \"{cell}\" is not a number; cell ignored"))
                }
            }
        }
        by_rater(&mut entry, rater);
        merge(&mut out, id, entry, line);
    }
    Ok(out)
}

/// A row that names its rater gives that rater's scores.
fn by_rater(entry: &mut HumanEntry, rater: Option<String>) {
    if let Some(r) = rater
        && !entry.scores.is_empty()
    {
        entry.raters.insert(r, std::mem::take(&mut entry.scores));
    }
}

/// Parse JSON-lines ratings text.
pub fn parse_jsonl(text: &str, source: String) -> Result<HumanFile, String> {
    let mut out = HumanFile { source, ..Default::default() };
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value = match serde_json::from_str(raw) {
            Ok(v) => v,
            Err(e) => {
                out.problems.push(format!("line {line}: invalid JSON: {e}"));
                continue;
            }
        };
        let Some(obj) = value.as_object() else {
            out.problems.push(format!("line {line}: expected an object"));
            continue;
        };
        let id = match obj.get("id") {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => {
                out.problems.push(format!("line {line}: no id; line skipped"));
                continue;
            }
        };
        let mut entry = HumanEntry::default();
        let text = |key: &str| -> Option<String> {
            match obj.get(key)? {
                serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
                serde_json::Value::Number(n) => Some(n.to_string()),
                serde_json::Value::Array(a) if a.len() == 2 => {
                    let ids: Vec<String> = a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
                    (ids.len() == 2).then(|| ids.join(","))
                }
                _ => None,
            }
        };
        let rater = RATER_COLUMNS.iter().find_map(|c| text(c));
        let pair = match pair_of(&text) {
            Ok(p) => p,
            Err(e) => {
                out.problems.push(format!("line {line}: {e}; line skipped"));
                continue;
            }
        };
        let scores = obj.get("human").and_then(|h| h.as_object()).unwrap_or(obj);
        for (k, v) in scores {
            let name = dimension_name(k);
            let lower = name.to_ascii_lowercase();
            if k == "id" || k == "human" || v.is_null() {
                continue;
            }
            if RATER_COLUMNS.contains(&lower.as_str()) || PAIR_COLUMNS.contains(&lower.as_str()) {
                continue;
            }
            if LABEL_COLUMNS.contains(&lower.as_str()) {
                match v.as_str().map(str::trim).filter(|s| !s.is_empty()) {
                    Some(l) => add_label(&mut entry, l, pair.clone(), rater.clone(), line),
                    None => out
                        .problems
                        .push(format!("line {line}: `{name}` must be \"A\", \"B\", \"tie\" or a candidate's id")),
                }
                continue;
            }
            match v.as_f64().filter(|x| x.is_finite()) {
                Some(x) => {
                    entry.scores.insert(name.to_string(), x);
                }
                None if obj.get("human").is_some() || v.is_number() => {
                    out.problems.push(format!("line {line}: `{name}` is not a number; ignored"))
                }
                // Other fields of a flat line (content, notes…) are not ratings.
                None => {}
            }
        }
        if let Some(l) = obj.get("label").filter(|_| obj.get("human").is_some()).and_then(|v| v.as_str()) {
            add_label(&mut entry, l.trim(), pair.clone(), rater.clone(), line);
        }
        by_rater(&mut entry, rater);
        merge(&mut out, &id, entry, line);
    }
    Ok(out)
}

/// A label cell: kept as written for pairwise reports (a candidate id is
/// checked against the session's candidates there), and as a preference
/// when it is `A`, `B` or `tie`.
fn add_label(entry: &mut HumanEntry, cell: &str, pair: Option<(String, String)>, rater: Option<String>, line: usize) {
    if let Ok(p) = cell.parse::<Preference>() {
        entry.label = Some(p);
    }
    entry.pair_labels.push(PairLabel { label: cell.to_string(), pair, rater, line });
}

/// Adds a row's values to its id. Several rows of one id are expected for
/// pairwise labels (one per rater or pair); a score given again replaces the
/// earlier one, with a problem noted.
fn merge(out: &mut HumanFile, id: &str, entry: HumanEntry, line: usize) {
    let slot = out.ratings.entry(id.to_string()).or_default();
    if entry.scores.keys().any(|k| slot.scores.contains_key(k)) {
        out.problems.push(format!("line {line}: id \"{id}\" appears again; its values replace the earlier ones"));
    }
    slot.scores.extend(entry.scores);
    for (rater, scores) in entry.raters {
        let mine = slot.raters.entry(rater.clone()).or_default();
        if scores.keys().any(|k| mine.contains_key(k)) {
            out.problems
                .push(format!("line {line}: id \"{id}\" rated again by {rater}; the values replace the earlier ones"));
        }
        mine.extend(scores);
    }
    if entry.label.is_some() {
        slot.label = entry.label;
    }
    slot.pair_labels.extend(entry.pair_labels);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_with_prefixes_labels_and_bad_cells() {
        let text = "id,human.grammar,overall,label,notes\nq1,4,3.5,A,\nq2,,2,tie,\nq3,high,1,B,x\n";
        let f = parse_csv(text, "r.csv".into()).unwrap();
        assert_eq!(f.ratings["q1"].scores, Scores::from([("grammar".into(), 4.0), ("overall".into(), 3.5)]));
        assert_eq!(f.ratings["q1"].label, Some(Preference::A));
        assert_eq!(f.ratings["q2"].scores.get("grammar"), None);
        assert_eq!(f.ratings["q2"].label, Some(Preference::Tie));
        assert_eq!(f.ratings["q3"].scores.get("grammar"), None);
        assert!(f.problems.iter().any(|p| p.contains("line 4") && p.contains("grammar")), "{:?}", f.problems);
        assert!(f.problems.iter().any(|p| p.contains("notes")), "{:?}", f.problems);
    }

    #[test]
    fn jsonl_flat_and_nested() {
        let text =
            "{\"id\":\"q1\",\"grammar\":5,\"content\":\"text\"}\n{\"id\":\"q2\",\"human\":{\"grammar\":2}}\nnot json\n";
        let f = parse_jsonl(text, "r.jsonl".into()).unwrap();
        assert_eq!(f.ratings["q1"].scores, Scores::from([("grammar".into(), 5.0)]));
        assert_eq!(f.ratings["q2"].scores, Scores::from([("grammar".into(), 2.0)]));
        assert_eq!(f.problems.len(), 1);
        assert!(f.problems[0].starts_with("line 3"));
    }

    #[test]
    fn pairwise_rows_per_rater_and_pair() {
        let text = "id,first,second,label,rater\np1,sys-a,sys-b,A,ann\np1,sys-a,sys-b,sys-b,bob\np2,,,tie,\n";
        let f = parse_csv(text, "r.csv".into()).unwrap();
        assert!(f.problems.is_empty(), "{:?}", f.problems);
        let p1 = &f.ratings["p1"].pair_labels;
        assert_eq!(p1.len(), 2);
        assert_eq!(p1[1].label, "sys-b");
        assert_eq!(p1[1].pair, Some(("sys-a".into(), "sys-b".into())));
        assert_eq!(p1[1].rater.as_deref(), Some("bob"));
        assert_eq!(f.ratings["p2"].pair_labels[0].pair, None);
        let j = "{\"id\":\"p1\",\"pair\":[\"y\",\"x\"],\"label\":\"B\",\"rater\":3}\n{\"id\":\"p1\",\"pair\":\"x vs y\",\"label\":\"tie\"}\n";
        let f = parse_jsonl(j, "r.jsonl".into()).unwrap();
        assert!(f.problems.is_empty(), "{:?}", f.problems);
        let p1 = &f.ratings["p1"].pair_labels;
        assert_eq!(p1[0].pair, Some(("y".into(), "x".into())));
        assert_eq!(p1[0].rater.as_deref(), Some("3"));
        assert_eq!(p1[1].pair, Some(("x".into(), "y".into())));
    }

    #[test]
    fn scores_of_named_raters_are_kept_apart() {
        let text = "id,rater,grammar,fluency\nq1,ann,4,3\nq1,bob,2,\nq1,ann,5,\nq2,,3,3\n";
        let f = parse_csv(text, "r.csv".into()).expect("parse");
        let q1 = &f.ratings["q1"];
        assert!(q1.scores.is_empty(), "a rater's row is not the item's own value");
        assert_eq!(q1.raters["ann"], Scores::from([("grammar".into(), 5.0), ("fluency".into(), 3.0)]));
        assert_eq!(q1.raters["bob"], Scores::from([("grammar".into(), 2.0)]));
        assert_eq!(f.ratings["q2"].scores, Scores::from([("grammar".into(), 3.0), ("fluency".into(), 3.0)]));
        assert_eq!(f.problems, ["line 4: id \"q1\" rated again by ann; the values replace the earlier ones"]);
        let j = "{\"id\":\"q1\",\"rater\":\"cal\",\"grammar\":1}\n{\"id\":\"q1\",\"annotator\":\"dee\",\"human\":{\"grammar\":2}}\n";
        let f = parse_jsonl(j, "r.jsonl".into()).expect("parse");
        assert_eq!(f.ratings["q1"].raters.len(), 2);
        assert_eq!(f.ratings["q1"].raters["dee"]["grammar"], 2.0);
    }

    #[test]
    fn csv_without_id_is_an_error() {
        assert!(parse_csv("item,grammar\nq1,3\n", "r.csv".into()).is_err());
    }
}
