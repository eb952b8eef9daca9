//! Human ratings from a file (`--human FILE`): CSV or JSONL keyed by item id.
//!
//! CSV: a header row with an `id` column and one column per dimension
//! (`grammar` or `human.grammar`); a `label` (or `preference`) column holds
//! pairwise decisions `A`, `B` or `tie`. Empty cells are missing ratings.
//! JSONL: one object per line, `{"id": …, "grammar": 4, …}` or
//! `{"id": …, "human": {"grammar": 4}}`, with an optional `label`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::session::event::Scores;
use crate::stats::Preference;

/// One item's ratings from the file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HumanEntry {
    pub scores: Scores,
    pub label: Option<Preference>,
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
        for (i, cell) in record.iter().enumerate() {
            let cell = cell.trim();
            if i == id_col || cell.is_empty() {
                continue;
            }
            let name = dimension_name(headers.get(i).unwrap_or(""));
            if LABEL_COLUMNS.contains(&name.to_ascii_lowercase().as_str()) {
                match cell.parse::<Preference>() {
                    Ok(p) => entry.label = Some(p),
                    Err(e) => out.problems.push(format!("line {line}: column `{name}`: {}", e.reason)),
                }
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
        merge(&mut out, id, entry, line);
    }
    Ok(out)
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
        let scores = obj.get("human").and_then(|h| h.as_object()).unwrap_or(obj);
        for (k, v) in scores {
            let name = dimension_name(k);
            if k == "id" || k == "human" || v.is_null() {
                continue;
            }
            if LABEL_COLUMNS.contains(&name.to_ascii_lowercase().as_str()) {
                match v.as_str().map(str::parse::<Preference>) {
                    Some(Ok(p)) => entry.label = Some(p),
                    _ => out.problems.push(format!("line {line}: `{name}` must be \"A\", \"B\" or \"tie\"")),
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
            match l.parse::<Preference>() {
                Ok(p) => entry.label = Some(p),
                Err(e) => out.problems.push(format!("line {line}: label: {}", e.reason)),
            }
        }
        merge(&mut out, &id, entry, line);
    }
    Ok(out)
}

fn merge(out: &mut HumanFile, id: &str, entry: HumanEntry, line: usize) {
    if out.ratings.contains_key(id) {
        out.problems.push(format!("line {line}: id \"{id}\" appears again; its values replace the earlier ones"));
    }
    let slot = out.ratings.entry(id.to_string()).or_default();
    slot.scores.extend(entry.scores);
    if entry.label.is_some() {
        slot.label = entry.label;
    }
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
    fn csv_without_id_is_an_error() {
        assert!(parse_csv("item,grammar\nq1,3\n", "r.csv".into()).is_err());
    }
}
