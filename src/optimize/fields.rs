//! One field of the items as written in the data file, by item id: what
//! `--cluster-by` groups the examples by (`source`, the dataset each came
//! from). Items keep only the fields moot reads, so the field is read from
//! the file again: a key of each JSON object (JSON, JSONL, bundled items)
//! or a CSV column; strings as they are, numbers and booleans as written.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::item::{BUNDLED_ITEMS, BUNDLED_PREFIX, ItemFormat};

/// Each item's value of `field` in the items `arg` names (a file or bundled
/// items, as `--data` takes them), by item id; items without it are absent.
pub fn values(arg: &str, field: &str) -> Result<BTreeMap<String, String>, String> {
    let path = Path::new(arg);
    let (text, format) = if path.is_file() {
        let format = ItemFormat::from_path(path).ok_or_else(|| format!("{arg}: unknown items format"))?;
        (std::fs::read_to_string(path).map_err(|e| format!("{arg}: {e}"))?, format)
    } else {
        let name = arg.strip_prefix(BUNDLED_PREFIX).unwrap_or(arg);
        let name = name.strip_suffix(".jsonl").unwrap_or(name);
        let (_, text) =
            BUNDLED_ITEMS.iter().find(|(stem, _)| *stem == name).ok_or_else(|| format!("{arg}: no such items"))?;
        (text.to_string(), ItemFormat::Jsonl)
    };
    let mut out = BTreeMap::new();
    match format {
        ItemFormat::Jsonl => {
            for line in text.lines().filter(|l| !l.trim().is_empty()) {
                if let Ok(v) = serde_json::from_str::<Value>(line) {
                    insert(&mut out, &v, field);
                }
            }
        }
        ItemFormat::Json => match serde_json::from_str::<Value>(&text).map_err(|e| format!("{arg}: {e}"))? {
            Value::Array(items) => items.iter().for_each(|v| insert(&mut out, v, field)),
            v => insert(&mut out, &v, field),
        },
        ItemFormat::Csv => {
            let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
            let headers = reader.headers().map_err(|e| format!("{arg}: {e}"))?.clone();
            let column = |name: &str| headers.iter().position(|h| h.trim() == name);
            let (Some(id), Some(at)) = (column("id"), column(field)) else {
                return Ok(out);
            };
            for record in reader.records().flatten() {
                if let (Some(id), Some(v)) = (record.get(id), record.get(at).map(str::trim).filter(|v| !v.is_empty())) {
                    out.insert(id.trim().to_string(), v.to_string());
                }
            }
        }
    }
    Ok(out)
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn insert(out: &mut BTreeMap<String, String>, item: &Value, field: &str) {
    if let (Some(id), Some(v)) = (item.get("id").and_then(scalar), item.get(field).and_then(scalar)) {
        out.insert(id, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_read_from_json_lines_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let jsonl = dir.path().join("d.jsonl");
        std::fs::write(
            &jsonl,
            "{\"id\": \"a\", \"content\": \"x\", \"source\": \"nq\"}\n{\"id\": 2, \"content\": \"y\"}\n",
        )
        .unwrap();
        let v = values(jsonl.to_str().unwrap(), "source").unwrap();
        assert_eq!(v, BTreeMap::from([("a".to_string(), "nq".to_string())]));
        let csv = dir.path().join("d.csv");
        std::fs::write(&csv, "id,content,source\na,x,hotpot\nb,y,\n").unwrap();
        let v = values(csv.to_str().unwrap(), "source").unwrap();
        assert_eq!(v, BTreeMap::from([("a".to_string(), "hotpot".to_string())]));
    }
}
