//! Readers for public human-rated datasets, read from the files their
//! authors distribute (docs/datasets.md). Each reader turns its files into
//! the same [`ItemsFile`] as moot's own formats, so nothing after loading
//! knows where the items came from.
//!
//! A format is found by name (`--format mslr`) or by its content: the
//! header of a table, the keys of the first JSON object. A folder holds the
//! files of one format; formats whose files are one rater each (MSLR's
//! annotation sheets) merge them into one item per thing rated.

mod mslr;
mod mslr_pairwise;
mod mt_bench;
mod stsb;
mod summeval;
mod topical_chat;

use std::path::Path;

use serde_json::Value;

use super::json::{json_array_element_offsets, json_message, json_type, line_of};
use super::{BUNDLED_PREFIX, ItemsError, ItemsFile};

/// One file of a dataset: the name messages give it, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Self {
        Self { name: name.into(), text: text.into() }
    }

    /// The file name without its folder and extension (`… - A1`).
    pub fn stem(&self) -> &str {
        let base = self.name.rsplit(['/', '\\']).next().unwrap_or(&self.name);
        base.rsplit_once('.').map_or(base, |(stem, _)| stem)
    }
}

/// A dataset format moot reads.
pub struct DatasetFormat {
    /// The `--format` name.
    pub name: &'static str,
    /// What the files are, in one line.
    pub description: &'static str,
    /// Whether several files (one per rater) merge into one set of items.
    pub several_files: bool,
    /// Whether a file's text is of this format, by its header or keys.
    pub detect: fn(&str) -> bool,
    /// The items of the files; `source` names them all in messages (a
    /// folder, a file, `bundled:<name>`).
    pub parse: fn(&[SourceFile], &str) -> Result<ItemsFile, ItemsError>,
}

impl std::fmt::Debug for DatasetFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DatasetFormat").field("name", &self.name).finish_non_exhaustive()
    }
}

/// Every dataset format, in the order detection tries them.
pub const FORMATS: &[DatasetFormat] = &[
    mslr::FORMAT,
    mslr_pairwise::FORMAT,
    summeval::FORMAT,
    summeval::ANNOTATIONS,
    topical_chat::FORMAT,
    mt_bench::FORMAT,
    stsb::FORMAT,
];

/// The dataset format called `name`.
pub fn format(name: &str) -> Option<&'static DatasetFormat> {
    FORMATS.iter().find(|f| f.name.eq_ignore_ascii_case(name.trim()))
}

/// The dataset format a file's text is in, if any is recognised.
pub fn detect(text: &str) -> Option<&'static DatasetFormat> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    FORMATS.iter().find(|f| (f.detect)(text))
}

/// Reads `files` (one file, or a folder's) in `format`.
pub fn parse(format: &DatasetFormat, files: &[SourceFile], source: &str) -> Result<ItemsFile, ItemsError> {
    let files: Vec<SourceFile> = files
        .iter()
        .map(|f| SourceFile::new(f.name.clone(), f.text.strip_prefix('\u{feff}').unwrap_or(&f.text)))
        .collect();
    (format.parse)(&files, source)
}

/// The files of a folder that are of a dataset format, read as `format`
/// (given) or as the one format they are recognised in.
pub fn load_folder(dir: &Path, format: Option<&'static DatasetFormat>) -> Result<ItemsFile, ItemsError> {
    let source = dir.display().to_string();
    let folder_error = |message: String| ItemsError::Unusable { path: dir.to_path_buf(), message };
    let entries = std::fs::read_dir(dir).map_err(|error| ItemsError::Read { path: dir.to_path_buf(), error })?;
    let mut paths: Vec<_> = entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect();
    paths.sort();
    // (file, the format it is in); files that are not text are passed over.
    let mut found: Vec<(SourceFile, &'static DatasetFormat)> = Vec::new();
    for path in paths {
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => continue,
            Err(error) => return Err(ItemsError::Read { path, error }),
        };
        let file = SourceFile::new(path.display().to_string(), text);
        let stripped = file.text.strip_prefix('\u{feff}').unwrap_or(&file.text);
        let of = match format {
            Some(f) => (f.detect)(stripped).then_some(f),
            None => detect(stripped),
        };
        if let Some(f) = of {
            found.push((file, f));
        }
    }
    let Some((_, first)) = found.first() else {
        let what = format.map_or_else(
            || format!("a known dataset format ({})", names().join(", ")),
            |f| format!("the {} format ({})", f.name, f.description),
        );
        return Err(folder_error(format!(
            "no file in the folder is in {what}; moot's own items (.jsonl, .json, .csv) are read from a file, not a folder"
        )));
    };
    let first = *first;
    if let Some((other, f)) = found.iter().find(|(_, f)| f.name != first.name) {
        return Err(folder_error(format!(
            "the folder mixes formats: {} is {}, {} is {}; give one file, or --format",
            found[0].0.name, first.name, other.name, f.name
        )));
    }
    if !first.several_files && found.len() > 1 {
        let names: Vec<&str> = found.iter().map(|(f, _)| f.name.as_str()).collect();
        return Err(folder_error(format!(
            "the {} format reads one file, and the folder has {}: {}; give the file",
            first.name,
            found.len(),
            names.join(", ")
        )));
    }
    let files: Vec<SourceFile> = found.into_iter().map(|(f, _)| f).collect();
    parse(first, &files, &source)
}

/// The names of the dataset formats.
pub fn names() -> Vec<&'static str> {
    FORMATS.iter().map(|f| f.name).collect()
}

// ---------------------------------------------------------------------------
// Bundled slices
// ---------------------------------------------------------------------------

/// A small slice of a dataset in its native format, compiled into the binary.
#[derive(Debug)]
pub struct BundledDataset {
    /// The name `--data` takes (the bundled panel of the same name judges it).
    pub name: &'static str,
    /// Its format's name.
    pub format: &'static str,
    /// `(file name, text)`, as the dataset's authors name their files.
    pub files: &'static [(&'static str, &'static str)],
}

impl BundledDataset {
    /// Its items; the source is `bundled:<name>`.
    pub fn load(&self) -> Result<ItemsFile, ItemsError> {
        let format = format(self.format).expect("a bundled dataset names a known format");
        let files: Vec<SourceFile> = self.files.iter().map(|(n, t)| SourceFile::new(*n, *t)).collect();
        parse(format, &files, &format!("{BUNDLED_PREFIX}{}", self.name))
    }
}

/// The bundled slices (assets/datasets/, with their licences and notes).
pub const BUNDLED_DATASETS: &[BundledDataset] = &[
    BundledDataset {
        name: "mslr-cochrane",
        format: "mslr",
        files: &[
            (
                "Data for MSLR Annotation - Cochrane Subtask - A1.tsv",
                include_str!("../../../assets/datasets/mslr/Data for MSLR Annotation - Cochrane Subtask - A1.tsv"),
            ),
            (
                "Data for MSLR Annotation - Cochrane Subtask - A2.tsv",
                include_str!("../../../assets/datasets/mslr/Data for MSLR Annotation - Cochrane Subtask - A2.tsv"),
            ),
        ],
    },
    BundledDataset {
        name: "mslr-pairwise",
        format: "mslr-pairwise",
        files: &[
            (
                "sample2 - A3 - Sheet1.tsv",
                include_str!("../../../assets/datasets/mslr-pairwise/sample2 - A3 - Sheet1.tsv"),
            ),
            (
                "sample3 - A4 - Sheet1.tsv",
                include_str!("../../../assets/datasets/mslr-pairwise/sample3 - A4 - Sheet1.tsv"),
            ),
            (
                "sample5 - A5 - Sheet1.tsv",
                include_str!("../../../assets/datasets/mslr-pairwise/sample5 - A5 - Sheet1.tsv"),
            ),
        ],
    },
    BundledDataset {
        name: "summeval",
        format: "summeval",
        files: &[("summeval.json", include_str!("../../../assets/datasets/summeval/summeval.json"))],
    },
    BundledDataset {
        name: "summeval-experts",
        format: "summeval-annotations",
        files: &[(
            "model_annotations.aligned.paired.jsonl",
            include_str!("../../../assets/datasets/summeval/model_annotations.aligned.paired.jsonl"),
        )],
    },
    BundledDataset {
        name: "topical-chat",
        format: "topical-chat",
        files: &[("topical_chat.json", include_str!("../../../assets/datasets/topical-chat/topical_chat.json"))],
    },
    BundledDataset {
        name: "mt-bench",
        format: "mt-bench",
        files: &[("human_judgments.json", include_str!("../../../assets/datasets/mt-bench/human_judgments.json"))],
    },
    BundledDataset {
        name: "stsb",
        format: "stsb",
        files: &[("dev.tsv", include_str!("../../../assets/datasets/stsb/dev.tsv"))],
    },
];

/// The bundled slice called `name`.
pub fn bundled(name: &str) -> Option<&'static BundledDataset> {
    BUNDLED_DATASETS.iter().find(|b| b.name == name)
}

// ---------------------------------------------------------------------------
// Shared by the readers
// ---------------------------------------------------------------------------

/// One row of a tab-separated file: its 1-based line and its cells.
pub(super) struct TsvRow {
    pub line: usize,
    pub cells: Vec<String>,
}

/// The rows of a tab-separated file, quotes taken as text (the files are
/// spreadsheet exports that quote nothing, and their comments hold quotes).
/// Blank lines are left out; `\r\n` ends a line as `\n` does.
pub(super) fn tsv_rows(text: &str) -> Vec<TsvRow> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| TsvRow { line: i + 1, cells: l.split('\t').map(str::to_string).collect() })
        .collect()
}

/// The first line of `text`, without a byte-order mark or line end.
pub(super) fn first_line(text: &str) -> &str {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    text.lines().next().unwrap_or("")
}

/// A file's header cells, trimmed, and where each required one is; a
/// missing one is an error naming the file and the column.
pub(super) fn header_positions(
    header: &[String],
    required: &[(&str, &str)],
    file: &str,
) -> Result<Vec<usize>, ItemsError> {
    required
        .iter()
        .map(|(name, short)| {
            header.iter().position(|h| h.trim() == *name).ok_or_else(|| ItemsError::Malformed {
                file: file.to_string(),
                line: 1,
                column: 1,
                message: format!(
                    "the header has no column `{name}`{}; columns: {}",
                    if short.is_empty() { String::new() } else { format!(" ({short})") },
                    header.iter().map(|h| h.trim()).collect::<Vec<_>>().join(" | ")
                ),
            })
        })
        .collect()
}

/// The rater a file holds, from its name: the last ` - `-separated part
/// that is `A` and digits (`… - Cochrane Subtask - A1.tsv` → `A1`,
/// `sample2 - A3 - Sheet1.tsv` → `A3`), else the whole name.
pub(super) fn rater_of(file: &SourceFile) -> String {
    let stem = file.stem();
    stem.rsplit(" - ")
        .map(str::trim)
        .find(|p| p.len() > 1 && p.starts_with('A') && p[1..].bytes().all(|b| b.is_ascii_digit()))
        .unwrap_or(stem.trim())
        .to_string()
}

/// One entry of a JSON dataset: the line it starts on, and its value or
/// why it is not JSON.
pub(super) type JsonEntry = (usize, Result<Value, String>);

/// The entries of a JSON array (with the line each starts on) or of a JSON
/// Lines file (a line that is not JSON is an entry in error). A file that
/// starts like an array but is not valid JSON is an error for the whole file.
pub(super) fn json_entries(text: &str, file: &str) -> Result<Vec<JsonEntry>, ItemsError> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        let value: Value = serde_json::from_str(text).map_err(|e| ItemsError::Malformed {
            file: file.to_string(),
            line: e.line(),
            column: e.column(),
            message: format!("invalid JSON: {}", json_message(&e)),
        })?;
        let Value::Array(values) = value else { unreachable!("starts with [") };
        let starts = json_array_element_offsets(text);
        return Ok(values
            .into_iter()
            .enumerate()
            .map(|(i, v)| (starts.get(i).map_or(1, |&at| line_of(text, at)), Ok(v)))
            .collect());
    }
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v = serde_json::from_str::<Value>(l)
                .map_err(|e| format!("invalid JSON at column {}: {}", e.column(), json_message(&e)));
            (i + 1, v)
        })
        .collect())
}

/// The first object of a JSON array or JSON Lines file, read without
/// parsing the rest (for detection).
pub(super) fn first_json_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    let trimmed = text.trim_start();
    let value = if let Some(rest) = trimmed.strip_prefix('[') {
        let mut stream = serde_json::Deserializer::from_str(rest.trim_start()).into_iter::<Value>();
        stream.next()?.ok()?
    } else {
        let line = trimmed.lines().next()?;
        serde_json::from_str::<Value>(line).ok()?
    };
    match value {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

/// Whether a JSON object is one of moot's own items (those are never read
/// as a dataset, whatever other keys they carry).
pub(super) fn is_moot_item(obj: &serde_json::Map<String, Value>) -> bool {
    obj.contains_key("content") || obj.contains_key("candidates")
}

/// A required string field of an entry.
pub(super) fn text_field(obj: &serde_json::Map<String, Value>, key: &str) -> Result<String, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(format!("missing `{key}`")),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("`{key}` must be a string, found {}", json_type(other))),
    }
}

/// A required id part: a string or an integer.
pub(super) fn id_field(obj: &serde_json::Map<String, Value>, key: &str) -> Result<String, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Err(format!("missing `{key}`")),
        Some(v) => super::json::id_from_json(v, key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raters_come_from_file_names() {
        let r = |n: &str| rater_of(&SourceFile::new(n, ""));
        assert_eq!(r("data/Annotations/Data for MSLR Annotation - Cochrane Subtask - A1.tsv"), "A1");
        assert_eq!(r("sample2 - A3 - Sheet1.tsv"), "A3");
        assert_eq!(r("/tmp/ann.tsv"), "ann");
        assert_eq!(r("A - B.tsv"), "A - B");
    }

    #[test]
    fn every_format_has_a_unique_name_and_a_description() {
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), FORMATS.len());
        for f in FORMATS {
            assert!(!f.description.is_empty(), "{}", f.name);
            assert!(!["jsonl", "json", "csv"].contains(&f.name), "{} is one of moot's own formats", f.name);
        }
        assert_eq!(format("MSLR").map(|f| f.name), Some("mslr"));
    }

    #[test]
    fn every_bundled_slice_loads_without_problems() {
        for b in BUNDLED_DATASETS {
            let file = b.load().unwrap_or_else(|e| panic!("{}: {e}", b.name));
            assert!(file.skipped.is_empty(), "{}: {:?}", b.name, file.skipped);
            assert!(file.items.len() >= 8, "{}: {} items", b.name, file.items.len());
            for (name, text) in b.files {
                let found = detect(text).map(|f| f.name);
                assert_eq!(found, Some(b.format), "{}: {name} is recognised as its format", b.name);
            }
        }
    }

    #[test]
    fn json_entries_give_lines() {
        let text = "[\n {\"a\": 1},\n\n {\"a\": 2}\n]";
        let e = json_entries(text, "x.json").unwrap();
        assert_eq!(e.iter().map(|(l, _)| *l).collect::<Vec<_>>(), [2, 4]);
        let e = json_entries("{\"a\": 1}\n\n{oops\n", "x.jsonl").unwrap();
        assert_eq!(e.iter().map(|(l, _)| *l).collect::<Vec<_>>(), [1, 3]);
        assert!(e[1].1.as_ref().is_err_and(|m| m.starts_with("invalid JSON at column 2")));
        let err = json_entries("[\n {\"a\": 1},\n {\"a\" 2}\n]", "bad.json").unwrap_err();
        assert!(err.to_string().starts_with("bad.json:3:"), "{err}");
        assert_eq!(first_json_object("  [ {\"k\": 1}, {\"k\": 2} ]").map(|m| m.len()), Some(1));
        assert_eq!(first_json_object("{\"k\": 1}\n{\"j\": 2}").and_then(|m| m.get("k").cloned()), Some(1.into()));
        assert!(first_json_object("[1, 2]").is_none());
    }
}
