//! Items to evaluate, read from JSONL, JSON or CSV files (see `docs/items.md`),
//! or from public datasets in their own formats (`datasets`, docs/datasets.md).

mod csv;
pub mod datasets;
mod json;

use csv::parse_csv;
use json::{item_from_json, json_array_element_offsets, json_message, json_type, line_of};

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
    ("storybook-qa", include_str!("../../assets/items/storybook-qa.jsonl")),
    // MAJ-EVAL's paper preset judges the sample panel's items.
    ("storybook-qa-paper", include_str!("../../assets/items/storybook-qa.jsonl")),
    ("summary-collab", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-collab-paper", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-collab-debate", include_str!("../../assets/items/summary-collab.jsonl")),
    // G-Eval's single judge scores the same summaries.
    ("summary-geval", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-geval-paper", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-geval-verified", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-chateval", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-roundtable", include_str!("../../assets/items/summary-collab.jsonl")),
    ("survey-sage", include_str!("../../assets/items/surveys.jsonl")),
    ("survey-sage-paper", include_str!("../../assets/items/surveys.jsonl")),
    ("pairwise-summaries", include_str!("../../assets/items/pairwise-summaries.jsonl")),
    // The paper preset judges the same pairs.
    ("pairwise-summaries-paper", include_str!("../../assets/items/pairwise-summaries.jsonl")),
    // CollabEval's pairwise mode discusses the same pairs (those of two candidates).
    ("pairwise-collab", include_str!("../../assets/items/pairwise-summaries.jsonl")),
    // The paper presets of ChatEval and the round-table judge the same
    // summaries, and their pairwise modes the same pairs.
    ("summary-chateval-paper", include_str!("../../assets/items/summary-collab.jsonl")),
    ("summary-roundtable-paper", include_str!("../../assets/items/summary-collab.jsonl")),
    ("pairwise-chateval", include_str!("../../assets/items/pairwise-summaries.jsonl")),
    ("pairwise-roundtable", include_str!("../../assets/items/pairwise-summaries.jsonl")),
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
    /// The format `--format` names (`jsonl`, `json`, `csv`).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.trim().to_ascii_lowercase().as_str() {
            "jsonl" | "ndjson" => Some(ItemFormat::Jsonl),
            "json" => Some(ItemFormat::Json),
            "csv" => Some(ItemFormat::Csv),
            _ => None,
        }
    }

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
    /// The extension is not one of the known formats, and the content is
    /// not a known dataset's.
    #[error(
        "{}: unknown items format; use a .jsonl, .json or .csv file, or a dataset's own file with --format ({})",
        path.display(),
        datasets::names().join(", ")
    )]
    UnknownFormat { path: PathBuf },
    /// `--format` names no format.
    #[error("unknown format \"{name}\"; known formats: {}", format_names().join(", "))]
    UnknownFormatName { name: String },
    /// A folder or bundled slice that cannot be read as asked (no dataset
    /// in the folder, several formats, the wrong `--format`).
    #[error("{}: {message}", path.display())]
    Unusable { path: PathBuf, message: String },
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

    /// Bundled items by name: a JSONL sample (`storybook-qa`) or a dataset
    /// slice in its own format (`mslr-cochrane`).
    pub fn bundled(name: &str) -> Option<ItemsFile> {
        if let Some((stem, text)) = BUNDLED_ITEMS.iter().find(|(stem, _)| *stem == name) {
            return parse_items_str(text, ItemFormat::Jsonl, &format!("{BUNDLED_PREFIX}{stem}")).ok();
        }
        datasets::bundled(name)?.load().ok()
    }
}

/// What `--format` chooses: one of moot's own formats or a dataset's.
#[derive(Debug, Clone, Copy)]
pub enum Format {
    Items(ItemFormat),
    Dataset(&'static datasets::DatasetFormat),
}

impl Format {
    /// The format called `name`, or an error listing the known ones.
    pub fn from_name(name: &str) -> Result<Format, ItemsError> {
        if let Some(f) = ItemFormat::from_name(name) {
            return Ok(Format::Items(f));
        }
        datasets::format(name)
            .map(Format::Dataset)
            .ok_or_else(|| ItemsError::UnknownFormatName { name: name.to_string() })
    }
}

/// Every name `--format` takes: moot's own formats, then the datasets'.
pub fn format_names() -> Vec<&'static str> {
    let mut names = vec!["jsonl", "json", "csv"];
    names.extend(datasets::names());
    names
}

/// Reads an items file or a dataset folder. A file in a known dataset's
/// format (recognised by its header or keys) is read as that dataset;
/// otherwise the format comes from the extension (`.jsonl`, `.ndjson`,
/// `.json`, `.csv`). Malformed entries are skipped and listed in
/// [`ItemsFile::skipped`]; it is an error only when no item is left.
pub fn load_items(path: &Path) -> Result<ItemsFile, ItemsError> {
    load_items_as(path, None)
}

/// [`load_items`] in the format `--format` names, if one does.
pub fn load_items_as(path: &Path, format: Option<&str>) -> Result<ItemsFile, ItemsError> {
    let format = format.map(Format::from_name).transpose()?;
    if path.is_dir() {
        return match format {
            Some(Format::Items(_)) => Err(ItemsError::Unusable {
                path: path.to_path_buf(),
                message: "moot's own items (.jsonl, .json, .csv) are read from a file, not a folder".into(),
            }),
            Some(Format::Dataset(f)) => datasets::load_folder(path, Some(f)),
            None => datasets::load_folder(path, None),
        };
    }
    if format.is_none() && !path.exists() && ItemFormat::from_path(path).is_none() {
        return Err(ItemsError::UnknownFormat { path: path.to_path_buf() });
    }
    let text = std::fs::read_to_string(path).map_err(|error| ItemsError::Read { path: path.to_path_buf(), error })?;
    let source = path.display().to_string();
    let format = match format {
        Some(f) => f,
        None => match datasets::detect(&text) {
            Some(f) => Format::Dataset(f),
            None => Format::Items(
                ItemFormat::from_path(path).ok_or_else(|| ItemsError::UnknownFormat { path: path.to_path_buf() })?,
            ),
        },
    };
    match format {
        Format::Items(f) => parse_items_str(&text, f, &source),
        Format::Dataset(f) => datasets::parse(f, &[datasets::SourceFile::new(source.clone(), text)], &source),
    }
}

/// Items from a command-line argument: an existing file or folder, or the
/// name of bundled items (`storybook-qa` or `bundled:storybook-qa`, or a
/// bundled dataset slice such as `mslr-cochrane`).
pub fn resolve_items(arg: &str) -> Result<ItemsFile, ItemsError> {
    resolve_items_as(arg, None)
}

/// [`resolve_items`] in the format `--format` names, if one does.
pub fn resolve_items_as(arg: &str, format: Option<&str>) -> Result<ItemsFile, ItemsError> {
    let path = Path::new(arg);
    if path.is_file() || path.is_dir() {
        let bundled = BUNDLED_ITEMS.iter().any(|(s, _)| *s == arg) || datasets::bundled(arg).is_some();
        return load_items_as(path, format).map_err(|e| match e {
            // A folder in the working directory shadows bundled items of its name.
            ItemsError::Unusable { path, message } if bundled && path.is_dir() => ItemsError::Unusable {
                path,
                message: format!("{message} (for the bundled items of that name, write {BUNDLED_PREFIX}{arg})"),
            },
            e => e,
        });
    }
    let chosen = format.map(Format::from_name).transpose()?;
    let name = arg.strip_prefix(BUNDLED_PREFIX).unwrap_or(arg);
    let stem = name.strip_suffix(".jsonl").unwrap_or(name);
    if let Some((stem, text)) = BUNDLED_ITEMS.iter().find(|(s, _)| *s == stem) {
        if !matches!(chosen, None | Some(Format::Items(ItemFormat::Jsonl))) {
            return Err(ItemsError::Unusable {
                path: PathBuf::from(arg),
                message: format!("the bundled items {stem} are moot's own JSONL; leave out --format"),
            });
        }
        return parse_items_str(text, ItemFormat::Jsonl, &format!("{BUNDLED_PREFIX}{stem}"));
    }
    if let Some(b) = datasets::bundled(name) {
        return match chosen {
            Some(Format::Dataset(f)) if f.name != b.format => Err(ItemsError::Unusable {
                path: PathBuf::from(arg),
                message: format!("the bundled slice {} is in the {} format, not {}", b.name, b.format, f.name),
            }),
            Some(Format::Items(_)) => Err(ItemsError::Unusable {
                path: PathBuf::from(arg),
                message: format!("the bundled slice {} is in the {} format", b.name, b.format),
            }),
            _ => b.load(),
        };
    }
    if arg.contains(std::path::MAIN_SEPARATOR) || arg.contains('/') || path.extension().is_some() {
        return load_items_as(path, format);
    }
    let bundled = BUNDLED_ITEMS
        .iter()
        .map(|(stem, _)| *stem)
        .chain(datasets::BUNDLED_DATASETS.iter().map(|b| b.name))
        .collect::<Vec<_>>()
        .join(", ");
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

#[cfg(test)]
mod tests {
    use super::csv::Column;
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
    fn a_quote_left_open_at_the_end_of_a_csv_file_is_reported() {
        let text = "id,content\na,\"fine, with \"\"marks\"\"\"\nb,5\" tall\n\nc,\"never closed\nd,swallowed\n";
        let file = parse_items_str(text, ItemFormat::Csv, "open.csv").expect("items");
        let ids: Vec<&str> = file.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["a", "b"], "{:?}", file.skipped);
        assert_eq!(file.items[0].content, "fine, with \"marks\"");
        assert_eq!(
            file.skipped[0].to_string(),
            "line 5: a quoted field opened on line 5 is never closed: the rest of the file was read into it"
        );
        let blank = parse_items_str("id,content\n\n\nz,\n", ItemFormat::Csv, "b.csv").expect_err("no item");
        assert!(blank.to_string().contains("line 4"), "a row after blank lines is named by its own line: {blank}");
        assert!(super::csv::unclosed_quote("id,content\na,\"x\"\n").is_none());
        assert!(super::csv::unclosed_quote("id,content\na,\"x\"\"\n").is_some(), "a doubled mark does not close");
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
        let text = include_str!("../../assets/items/pairwise-summaries.jsonl");
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
