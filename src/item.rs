//! Items to evaluate, read from JSONL, JSON or CSV files (see `docs/items.md`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One candidate output, for pairwise work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: String,
    pub text: String,
}

/// One thing to evaluate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub id: String,
    /// The generated text being judged.
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// Human ratings by dimension key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human: Option<BTreeMap<String, f64>>,
    /// Several people's ratings: by rater name, then by dimension key. An
    /// item has these or `human`, not both.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub human_raters: BTreeMap<String, BTreeMap<String, f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Candidate>>,
    /// Pairwise: people's verdicts, one per rater: `A` (the first
    /// candidate), `B` (the second), `tie`, or a candidate's id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub human_labels: Vec<String>,
}

impl Item {
    /// An item of only an id and the text to judge.
    pub fn new(id: impl Into<String>, content: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            content: content.into(),
            context: None,
            reference: None,
            human: None,
            human_raters: BTreeMap::new(),
            candidates: None,
            human_labels: Vec::new(),
        }
    }
}

impl Item {
    /// The human score of `dimension`: the `human` value, else the mean of
    /// the `human_raters` who scored it; none when nobody did.
    pub fn human_value(&self, dimension: &str) -> Option<f64> {
        if let Some(h) = &self.human {
            return h.get(dimension).copied();
        }
        let vals: Vec<f64> = self.human_raters.values().filter_map(|s| s.get(dimension).copied()).collect();
        (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
    }
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

/// Items compiled into the binary: `(file stem, JSONL text)`. Each bundled
/// panel has items with the same stem.
pub const BUNDLED_ITEMS: &[(&str, &str)] = &[
    ("storybook-qa", include_str!("../assets/items/storybook-qa.jsonl")),
    // MAJ-EVAL's paper preset judges the sample panel's items.
    ("storybook-qa-paper", include_str!("../assets/items/storybook-qa.jsonl")),
    ("summary-collab", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-collab-paper", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-collab-debate", include_str!("../assets/items/summary-collab.jsonl")),
    // G-Eval's single judge scores the same summaries.
    ("summary-geval", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-geval-paper", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-geval-verified", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-chateval", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-roundtable", include_str!("../assets/items/summary-collab.jsonl")),
    ("survey-sage", include_str!("../assets/items/surveys.jsonl")),
    ("survey-sage-paper", include_str!("../assets/items/surveys.jsonl")),
    ("pairwise-summaries", include_str!("../assets/items/pairwise-summaries.jsonl")),
    // The paper preset judges the same pairs.
    ("pairwise-summaries-paper", include_str!("../assets/items/pairwise-summaries.jsonl")),
    // CollabEval's pairwise mode discusses the same pairs (those of two candidates).
    ("pairwise-collab", include_str!("../assets/items/pairwise-summaries.jsonl")),
    // The paper presets of ChatEval and the round-table judge the same
    // summaries, and their pairwise modes the same pairs.
    ("summary-chateval-paper", include_str!("../assets/items/summary-collab.jsonl")),
    ("summary-roundtable-paper", include_str!("../assets/items/summary-collab.jsonl")),
    ("pairwise-chateval", include_str!("../assets/items/pairwise-summaries.jsonl")),
    ("pairwise-roundtable", include_str!("../assets/items/pairwise-summaries.jsonl")),
];

/// Prefix of [`ItemsFile::source`] for bundled items (`bundled:storybook-qa`).
pub const BUNDLED_PREFIX: &str = "bundled:";

/// How many ids an unknown-id error lists.
const IDS_SHOWN: usize = 5;

/// The formats an items file can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemFormat {
    /// One JSON object per line (`.jsonl`, `.ndjson`).
    Jsonl,
    /// An array of objects, or a single object (`.json`).
    Json,
    /// A header row and one item per row (`.csv`).
    Csv,
}

impl ItemFormat {
    /// The format for a file name's extension, if it is a known one.
    pub fn from_path(path: &Path) -> Option<Self> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" => Some(ItemFormat::Jsonl),
            "json" => Some(ItemFormat::Json),
            "csv" => Some(ItemFormat::Csv),
            _ => None,
        }
    }
}

/// An item that was skipped, with the (1-based) line it starts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemProblem {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ItemProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The items read from one file, and the entries that were skipped.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemsFile {
    /// The file name (or `bundled:<name>`) used in messages.
    pub source: String,
    pub items: Vec<Item>,
    /// Malformed entries that were left out.
    pub skipped: Vec<ItemProblem>,
}

/// Why items could not be loaded or picked.
#[derive(Debug, thiserror::Error)]
pub enum ItemsError {
    /// The file could not be read.
    #[error("{}: cannot read items: {error}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The extension is not one of the known formats.
    #[error("{}: unknown items format; use a .jsonl, .json or .csv file", path.display())]
    UnknownFormat { path: PathBuf },
    /// The whole file is unreadable in its format (JSON syntax, CSV header…).
    #[error("{file}:{line}:{column}: {message}")]
    Malformed { file: String, line: usize, column: usize, message: String },
    /// Every entry was malformed, or there were none.
    #[error("{file}: no usable items{}", summarize(problems))]
    NoItems { file: String, problems: Vec<ItemProblem> },
    /// [`ItemsFile::get`] was asked for an id that is not there.
    #[error("{file}: no item with id \"{id}\"; available: {available}")]
    UnknownId { file: String, id: String, available: String },
    /// [`resolve_items`] found neither a file nor bundled items.
    #[error("no items file or bundled items named \"{name}\"; bundled: {bundled}")]
    NotFound { name: String, bundled: String },
}

fn summarize(problems: &[ItemProblem]) -> String {
    if problems.is_empty() {
        return " (the file is empty)".into();
    }
    let shown: Vec<String> = problems.iter().take(3).map(ToString::to_string).collect();
    let more = problems.len().saturating_sub(3);
    let more = if more > 0 { format!("; and {more} more") } else { String::new() };
    format!(": {}{more}", shown.join("; "))
}

impl ItemsFile {
    /// The item with `id`, or an error listing some of the ids there are.
    pub fn get(&self, id: &str) -> Result<&Item, ItemsError> {
        self.items.iter().find(|i| i.id == id).ok_or_else(|| {
            let mut available = self.items.iter().take(IDS_SHOWN).map(|i| i.id.as_str()).collect::<Vec<_>>().join(", ");
            if self.items.len() > IDS_SHOWN {
                available.push_str(&format!(", … ({} items in all)", self.items.len()));
            }
            ItemsError::UnknownId { file: self.source.clone(), id: id.to_string(), available }
        })
    }

    /// Bundled items by file stem (`storybook-qa`).
    pub fn bundled(name: &str) -> Option<ItemsFile> {
        let (stem, text) = BUNDLED_ITEMS.iter().find(|(stem, _)| *stem == name)?;
        parse_items_str(text, ItemFormat::Jsonl, &format!("{BUNDLED_PREFIX}{stem}")).ok()
    }
}

/// Reads an items file; the format comes from the extension (`.jsonl`,
/// `.ndjson`, `.json`, `.csv`). Malformed entries are skipped and listed in
/// [`ItemsFile::skipped`]; it is an error only when no item is left.
pub fn load_items(path: &Path) -> Result<ItemsFile, ItemsError> {
    let format = ItemFormat::from_path(path).ok_or_else(|| ItemsError::UnknownFormat { path: path.to_path_buf() })?;
    let text = std::fs::read_to_string(path).map_err(|error| ItemsError::Read { path: path.to_path_buf(), error })?;
    parse_items_str(&text, format, &path.display().to_string())
}

/// Items from a command-line argument: an existing file, or the name of
/// bundled items (`storybook-qa` or `bundled:storybook-qa`).
pub fn resolve_items(arg: &str) -> Result<ItemsFile, ItemsError> {
    let path = Path::new(arg);
    if path.is_file() {
        return load_items(path);
    }
    let name = arg.strip_prefix(BUNDLED_PREFIX).unwrap_or(arg);
    let name = name.strip_suffix(".jsonl").unwrap_or(name);
    if let Some((stem, text)) = BUNDLED_ITEMS.iter().find(|(stem, _)| *stem == name) {
        return parse_items_str(text, ItemFormat::Jsonl, &format!("{BUNDLED_PREFIX}{stem}"));
    }
    if arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/') || path.extension().is_some() {
        return load_items(path);
    }
    let bundled = BUNDLED_ITEMS.iter().map(|(stem, _)| *stem).collect::<Vec<_>>().join(", ");
    Err(ItemsError::NotFound { name: arg.to_string(), bundled })
}

/// Parses items text in `format`; `source` names it in messages.
pub fn parse_items_str(text: &str, format: ItemFormat, source: &str) -> Result<ItemsFile, ItemsError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut collector = Collector::default();
    match format {
        ItemFormat::Jsonl => {
            for (i, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let entry = serde_json::from_str::<serde_json::Value>(line)
                    .map_err(|e| format!("invalid JSON at column {}: {}", e.column(), json_message(&e)))
                    .and_then(|v| item_from_json(&v));
                collector.push(i + 1, entry);
            }
        }
        ItemFormat::Json => {
            let value: serde_json::Value = serde_json::from_str(text).map_err(|e| ItemsError::Malformed {
                file: source.to_string(),
                line: e.line(),
                column: e.column(),
                message: format!("invalid JSON: {}", json_message(&e)),
            })?;
            match value {
                serde_json::Value::Array(values) => {
                    let starts = json_array_element_offsets(text);
                    for (i, v) in values.iter().enumerate() {
                        let line = starts.get(i).map_or(1, |&at| line_of(text, at));
                        collector.push(line, item_from_json(v));
                    }
                }
                serde_json::Value::Object(_) => {
                    let at = text.len() - text.trim_start().len();
                    collector.push(line_of(text, at), item_from_json(&value));
                }
                other => {
                    return Err(ItemsError::Malformed {
                        file: source.to_string(),
                        line: 1,
                        column: 1,
                        message: format!(
                            "expected an array of item objects or one item object, found {}",
                            json_type(&other)
                        ),
                    });
                }
            }
        }
        ItemFormat::Csv => parse_csv(text, source, &mut collector)?,
    }
    collector.finish(source)
}

/// Keeps the good items, drops duplicates and records problems.
#[derive(Default)]
struct Collector {
    items: Vec<Item>,
    lines: Vec<usize>,
    skipped: Vec<ItemProblem>,
}

impl Collector {
    fn push(&mut self, line: usize, entry: Result<Item, String>) {
        match entry {
            Ok(item) => {
                if let Some(pos) = self.items.iter().position(|i| i.id == item.id) {
                    let message = format!("duplicate id \"{}\" (first on line {})", item.id, self.lines[pos]);
                    self.skipped.push(ItemProblem { line, message });
                } else {
                    self.items.push(item);
                    self.lines.push(line);
                }
            }
            Err(message) => self.skipped.push(ItemProblem { line, message }),
        }
    }

    fn finish(self, source: &str) -> Result<ItemsFile, ItemsError> {
        if self.items.is_empty() {
            return Err(ItemsError::NoItems { file: source.to_string(), problems: self.skipped });
        }
        Ok(ItemsFile { source: source.to_string(), items: self.items, skipped: self.skipped })
    }
}

/// serde_json's message without its trailing "at line L column C".
fn json_message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

fn line_of(text: &str, at: usize) -> usize {
    text.as_bytes()[..at.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

/// Byte offsets where the elements of the top-level JSON array in `text`
/// start. `text` must be valid JSON.
fn json_array_element_offsets(text: &str) -> Vec<usize> {
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
fn id_from_json(v: &serde_json::Value, field: &str) -> Result<String, String> {
    match v {
        serde_json::Value::String(s) if !s.trim().is_empty() => Ok(s.clone()),
        serde_json::Value::String(_) => Err(format!("`{field}` is empty")),
        serde_json::Value::Number(n) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        other => Err(format!("`{field}` must be a string or an integer, found {}", json_type(other))),
    }
}

fn optional_string(obj: &serde_json::Map<String, serde_json::Value>, key: &str) -> Result<Option<String>, String> {
    match obj.get(key) {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("`{key}` must be a string, found {}", json_type(other))),
    }
}

/// `human_label` (one rater) or `human_labels` (several): each `A`, `B`,
/// `tie` or the id of one of the item's candidates.
fn human_labels(
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
fn item_from_json(v: &serde_json::Value) -> Result<Item, String> {
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
fn scores_from_json(v: &serde_json::Value, field: &str) -> Result<BTreeMap<String, f64>, String> {
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
fn human_raters(
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

/// What a CSV column holds.
enum Column {
    Id,
    Content,
    Context,
    Reference,
    Human(String),
    /// `human_raters.<rater>.<dimension>`.
    Rater(String, String),
    Candidate(String),
    Ignored,
}

impl Column {
    fn from_header(name: &str) -> Column {
        let name = name.trim();
        let suffix = |prefix: &str| {
            [".", "_"]
                .iter()
                .find_map(|sep| name.strip_prefix(&format!("{prefix}{sep}")))
                .filter(|rest| !rest.is_empty())
                .map(str::to_string)
        };
        match name {
            "id" => Column::Id,
            "content" => Column::Content,
            "context" => Column::Context,
            "reference" => Column::Reference,
            _ => {
                if let Some(rest) = name.strip_prefix("human_raters.") {
                    match rest.split_once('.') {
                        Some((rater, dim)) if !rater.is_empty() && !dim.is_empty() => {
                            Column::Rater(rater.to_string(), dim.to_string())
                        }
                        _ => Column::Ignored,
                    }
                } else if let Some(dim) = suffix("human") {
                    Column::Human(dim)
                } else if let Some(id) = suffix("candidate") {
                    Column::Candidate(id)
                } else {
                    Column::Ignored
                }
            }
        }
    }
}

fn parse_csv(text: &str, source: &str, collector: &mut Collector) -> Result<(), ItemsError> {
    let malformed =
        |line: usize, message: String| ItemsError::Malformed { file: source.to_string(), line, column: 1, message };
    let mut reader = csv::ReaderBuilder::new().flexible(true).has_headers(true).from_reader(text.as_bytes());
    let headers = reader.headers().map_err(|e| malformed(1, format!("cannot read the CSV header: {e}")))?.clone();
    let columns: Vec<Column> = headers.iter().map(Column::from_header).collect();
    for required in ["id", "content"] {
        if !headers.iter().any(|h| h.trim() == required) {
            let found = headers.iter().collect::<Vec<_>>().join(", ");
            return Err(malformed(1, format!("the CSV header has no `{required}` column (columns: {found})")));
        }
    }
    for record in reader.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line() as usize);
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    return Err(malformed(line, format!("cannot read CSV: {e}")));
                }
                collector.push(line, Err(format!("malformed CSV row: {e}")));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line() as usize);
        if record.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        let entry = if record.len() != headers.len() {
            Err(format!("row has {} fields, the header has {}", record.len(), headers.len()))
        } else {
            item_from_csv(&columns, &record)
        };
        collector.push(line, entry);
    }
    Ok(())
}

fn item_from_csv(columns: &[Column], record: &csv::StringRecord) -> Result<Item, String> {
    let (mut id, mut content, mut context, mut reference) = (None, None, None, None);
    let mut human = BTreeMap::new();
    let mut raters: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    let mut candidates = Vec::new();
    let mut bad_score = None;
    for (column, cell) in columns.iter().zip(record.iter()) {
        let present = !cell.trim().is_empty();
        match column {
            Column::Id if present => id = Some(cell.trim().to_string()),
            Column::Content if present => content = Some(cell.to_string()),
            Column::Context if present => context = Some(cell.to_string()),
            Column::Reference if present => reference = Some(cell.to_string()),
            Column::Human(dim) if present => match cell.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    human.insert(dim.clone(), x);
                }
                _ => {
                    bad_score.get_or_insert_with(|| format!("human score for `{dim}` is not a number: \"{cell}\""));
                }
            },
            Column::Rater(rater, dim) if present => match cell.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => {
                    raters.entry(rater.clone()).or_default().insert(dim.clone(), x);
                }
                _ => {
                    bad_score
                        .get_or_insert_with(|| format!("`human_raters.{rater}.{dim}` is not a number: \"{cell}\""));
                }
            },
            Column::Candidate(cid) if present => candidates.push(Candidate { id: cid.clone(), text: cell.to_string() }),
            _ => {}
        }
    }
    let id = id.ok_or("missing `id`")?;
    let content = content.ok_or_else(|| format!("item \"{id}\": missing `content`"))?;
    if let Some(e) = bad_score {
        return Err(format!("item \"{id}\": {e}"));
    }
    if !human.is_empty() && !raters.is_empty() {
        return Err(format!("item \"{id}\": has both `human` and `human_raters` scores; give one of them"));
    }
    Ok(Item {
        id,
        content,
        context,
        reference,
        human: (!human.is_empty()).then_some(human),
        human_raters: raters,
        candidates: (!candidates.is_empty()).then_some(candidates),
        human_labels: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_element_offsets_skip_strings_and_nesting() {
        let text = r#"[ {"a": "x, ]\" [y"}, [1, [2]] ,
  3, "s,t" ]"#;
        let starts = json_array_element_offsets(text);
        let firsts: Vec<char> = starts.iter().map(|&i| text[i..].chars().next().unwrap_or(' ')).collect();
        assert_eq!(firsts, ['{', '[', '3', '"']);
        assert_eq!(line_of(text, starts[2]), 2);
        assert!(json_array_element_offsets("[]").is_empty());
        assert!(json_array_element_offsets("[ \n ]").is_empty());
    }

    #[test]
    fn csv_header_names() {
        assert!(matches!(Column::from_header("human.grammar"), Column::Human(d) if d == "grammar"));
        assert!(matches!(Column::from_header(" human_answer_relevancy "), Column::Human(d) if d == "answer_relevancy"));
        assert!(matches!(Column::from_header("candidate_b"), Column::Candidate(c) if c == "b"));
        assert!(matches!(Column::from_header("human"), Column::Ignored));
        assert!(
            matches!(Column::from_header("human_raters.ann.grammar"), Column::Rater(r, d) if r == "ann" && d == "grammar")
        );
        assert!(matches!(Column::from_header("human_raters.ann"), Column::Ignored));
        assert!(matches!(Column::from_header("human_"), Column::Ignored));
        assert!(matches!(Column::from_header("ID"), Column::Ignored));
    }

    #[test]
    fn byte_order_mark_is_ignored() {
        let file = parse_items_str("\u{feff}{\"id\": \"a\", \"content\": \"x\"}\n", ItemFormat::Jsonl, "bom.jsonl")
            .expect("item");
        assert_eq!(file.items[0].id, "a");
        let file = parse_items_str("\u{feff}id,content\nb,y\n", ItemFormat::Csv, "bom.csv").expect("item");
        assert_eq!(file.items[0].id, "b");
    }
    #[test]
    fn pairwise_items_need_no_content() {
        let text = include_str!("../assets/items/pairwise-summaries.jsonl");
        let file = parse_items_str(text, ItemFormat::Jsonl, "pairwise-summaries.jsonl").expect("items");
        assert_eq!(file.items.len(), 10, "{:?}", file.skipped);
        assert!(file.items.iter().all(|i| i.candidates.as_ref().is_some_and(|c| c.len() >= 2)));
        let one = "{\"id\": \"x\", \"candidates\": [{\"id\": \"s\", \"text\": \"t\"}]}\n";
        let err = parse_items_str(one, ItemFormat::Jsonl, "one.jsonl").expect_err("one candidate is not a pair");
        assert!(format!("{err:?}").contains("missing `content`"), "{err:?}");
    }

    #[test]
    fn several_raters_in_json_and_csv() {
        let text = concat!(
            "{\"id\": \"a\", \"content\": \"x\", \"human_raters\": {\"ann\": {\"grammar\": 4}, \"bob\": {\"grammar\": 2, \"fluency\": null}}}\n",
            "{\"id\": \"b\", \"content\": \"x\", \"human\": {\"grammar\": 4}, \"human_raters\": {\"ann\": {\"grammar\": 4}}}\n",
            "{\"id\": \"c\", \"content\": \"x\", \"human_raters\": {\"ann\": {\"grammar\": \"high\"}}}\n",
            "{\"id\": \"d\", \"content\": \"x\", \"human_raters\": [4, 2]}\n",
        );
        let file = parse_items_str(text, ItemFormat::Jsonl, "r.jsonl").expect("items");
        assert_eq!(file.items.len(), 1);
        let raters = &file.items[0].human_raters;
        assert_eq!(raters["ann"]["grammar"], 4.0);
        assert_eq!(raters["bob"].len(), 1, "a null score is left out");
        assert_eq!(file.items[0].human, None, "the raters are not averaged into `human`");
        let msgs: Vec<String> = file.skipped.iter().map(ToString::to_string).collect();
        assert_eq!(msgs[0], "line 2: item \"b\": has both `human` and `human_raters`; give one of them");
        assert_eq!(msgs[1], "line 3: item \"c\": `human_raters.ann.grammar` must be a number, found a string");
        assert_eq!(msgs[2], "line 4: item \"d\": `human_raters` must be an object, found an array");

        let csv = "id,content,human_raters.ann.grammar,human_raters.bob.grammar\na,x,4,\nb,y,3,five\n";
        let file = parse_items_str(csv, ItemFormat::Csv, "r.csv").expect("items");
        assert_eq!(file.items[0].human_raters.len(), 1, "an empty cell is not a rating");
        assert_eq!(file.items[0].human_raters["ann"]["grammar"], 4.0);
        assert_eq!(
            file.skipped[0].to_string(),
            "line 3: item \"b\": `human_raters.bob.grammar` is not a number: \"five\""
        );
        let mut two = Item::new("m", "x");
        two.human_raters.insert("ann".into(), BTreeMap::from([("grammar".into(), 4.0)]));
        two.human_raters.insert("bob".into(), BTreeMap::from([("grammar".into(), 1.0), ("fluency".into(), 3.0)]));
        assert_eq!(two.human_value("grammar"), Some(2.5), "the mean of the raters who scored it");
        assert_eq!(two.human_value("fluency"), Some(3.0));
        assert_eq!(two.human_value("style"), None);
        let both = "id,content,human.grammar,human_raters.ann.grammar\na,x,4,3\n";
        let err = parse_items_str(both, ItemFormat::Csv, "both.csv").expect_err("both");
        assert!(err.to_string().contains("both `human` and `human_raters`"), "{err}");
    }
}
