//! Items in JSON and JSON Lines: each item object read and checked, with
//! messages naming the field.

use std::collections::BTreeMap;

use super::{Candidate, Item};

/// serde_json's message without its trailing "at line L column C".
pub(super) fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

pub(super) fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

pub(super) fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Byte offsets where the elements of the top-level JSON array in `text`
/// start. `text` must be valid JSON.
pub(super) fn json_array_element_offsets(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let (mut depth, mut in_string, mut escaped, mut expecting) = (0usize, false, false, false);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if b.is_ascii_whitespace() {
            continue;
        }
        if depth == 1 && expecting && b != b']' {
            starts.push(i);
            expecting = false;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth == 1 {
                    expecting = true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expecting = true,
            _ => {}
        }
    }
    starts
}

/// An id from a JSON string or integer.
pub(super) fn id_from_json(v: &serde_json::Value, field: &str) -> Result<String, String> {
    match v {
        serde_json::Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        serde_json::Value::String(_) => Err(format!("`{field}` is empty")),
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        other => Err(format!("`{field}` must be a string or an integer, found {}", json_type(other))),
    }
}

pub(super) fn optional_string(
    obj: &serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` must be a string, found {}", json_type(other))),
    }
}

/// `human_label` (one rater) or `human_labels` (several): each `A`, `B`,
/// `tie` or the id of one of the item's candidates.
pub(super) fn human_labels(
    obj: &serde_json::Map<String, serde_json::Value>,
    candidates: Option<&[Candidate]>,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut take = |field: String, v: &serde_json::Value| -> Result<(), String> {
        let s = v.as_str().ok_or_else(|| format!("`{field}` must be a string, found {}", json_type(v)))?.trim();
        let known = matches!(s.to_ascii_lowercase().as_str(), "a" | "b" | "tie")
            || candidates.is_some_and(|c| c.iter().any(|c| c.id == s));
        if !known {
            return Err(format!("`{field}`: \"{s}\" is not A, B, tie or the id of one of the item's candidates"));
        }
        out.push(s.to_string());
        Ok(())
    };
    match obj.get("human_label") {
        None | Some(serde_json::Value::Null) => {}
        Some(v) => take("human_label".into(), v)?,
    }
    match obj.get("human_labels") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(list)) => {
            for (i, v) in list.iter().enumerate() {
                take(format!("human_labels[{i}]"), v)?;
            }
        }
        Some(other) => return Err(format!("`human_labels` must be an array of strings, found {}", json_type(other))),
    }
    Ok(out)
}

/// Builds an item from one JSON value, or says what is wrong with it.
pub(super) fn item_from_json(v: &serde_json::Value) -> Result<Item, String> {
    let obj = v.as_object().ok_or_else(|| format!("expected an item object, found {}", json_type(v)))?;
    let id = match obj.get("id") {
        None | Some(serde_json::Value::Null) => return Err("missing `id`".into()),
        Some(v) => id_from_json(v, "id")?,
    };
    let content = match obj.get("content") {
        // Pairwise items carry their texts in `candidates` instead.
        None | Some(serde_json::Value::Null)
            if obj.get("candidates").and_then(|c| c.as_array()).is_some_and(|c| c.len() >= 2) =>
        {
            String::new()
        }
        None | Some(serde_json::Value::Null) => {
            return Err(format!("item \"{id}\": missing `content`"));
        }
        Some(serde_json::Value::String(s)) if s.trim().is_empty() => {
            return Err(format!("item \"{id}\": `content` is empty"));
        }
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!("item \"{id}\": `content` must be a string, found {}", json_type(other)));
        }
    };
    let with_id = |e: String| format!("item \"{id}\": {e}");
    let context = optional_string(obj, "context").map_err(with_id)?;
    let reference = optional_string(obj, "reference").map_err(with_id)?;
    let human = match obj.get("human") {
        None | Some(serde_json::Value::Null) => None,
        Some(v) => Some(scores_from_json(v, "human").map_err(with_id)?),
    };
    let human_raters = human_raters(obj).map_err(with_id)?;
    if human.is_some() && !human_raters.is_empty() {
        return Err(with_id("has both `human` and `human_raters`; give one of them".into()));
    }
    let candidates = match obj.get("candidates") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Array(list)) => {
            let mut candidates = Vec::with_capacity(list.len());
            for (i, c) in list.iter().enumerate() {
                let c = c
                    .as_object()
                    .ok_or_else(|| with_id(format!("`candidates[{i}]` must be an object, found {}", json_type(c))))?;
                let cid = match c.get("id") {
                    None | Some(serde_json::Value::Null) => {
                        return Err(with_id(format!("`candidates[{i}]`: missing `id`")));
                    }
                    Some(v) => id_from_json(v, &format!("candidates[{i}].id")).map_err(with_id)?,
                };
                let text = match c.get("text") {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    None | Some(serde_json::Value::Null) => {
                        return Err(with_id(format!("`candidates[{i}]`: missing `text`")));
                    }
                    Some(other) => {
                        return Err(with_id(format!(
                            "`candidates[{i}].text` must be a string, found {}",
                            json_type(other)
                        )));
                    }
                };
                candidates.push(Candidate { id: cid, text });
            }
            Some(candidates)
        }
        Some(other) => {
            return Err(with_id(format!("`candidates` must be an array, found {}", json_type(other))));
        }
    };
    let human_labels = human_labels(obj, candidates.as_deref()).map_err(with_id)?;
    Ok(Item { id, content, context, reference, human, human_raters, candidates, human_labels })
}

/// Scores by dimension key from a JSON object; `field` names it in messages.
pub(super) fn scores_from_json(v: &serde_json::Value, field: &str) -> Result<BTreeMap<String, f64>, String> {
    let m = v.as_object().ok_or_else(|| format!("`{field}` must be an object, found {}", json_type(v)))?;
    let mut scores = BTreeMap::new();
    for (dim, score) in m {
        match score {
            serde_json::Value::Null => {}
            serde_json::Value::Number(n) => {
                let x = n
                    .as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| format!("`{field}.{dim}` is not a usable number"))?;
                scores.insert(dim.clone(), x);
            }
            other => return Err(format!("`{field}.{dim}` must be a number, found {}", json_type(other))),
        }
    }
    Ok(scores)
}

/// `human_raters`: `{"rater": {"dim": score, …}, …}`. A rater with no
/// score is left out.
pub(super) fn human_raters(
    obj: &serde_json::Map<String, serde_json::Value>,
) -> Result<BTreeMap<String, BTreeMap<String, f64>>, String> {
    let mut out = BTreeMap::new();
    match obj.get("human_raters") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(raters)) => {
            for (rater, scores) in raters {
                if rater.trim().is_empty() {
                    return Err("`human_raters` has a rater with an empty name".into());
                }
                if scores.is_null() {
                    continue;
                }
                let scores = scores_from_json(scores, &format!("human_raters.{rater}"))?;
                if !scores.is_empty() {
                    out.insert(rater.clone(), scores);
                }
            }
        }
        Some(other) => return Err(format!("`human_raters` must be an object, found {}", json_type(other))),
    }
    Ok(out)
}
