//! What a paper's table is: its blocks, statistics and rows, and the
//! figures the paper printed — read from `assets/papers/<name>.toml`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// The papers whose tables `moot report --paper` can print: `(name, TOML)`.
pub const BUNDLED: &[(&str, &str)] = &[
    ("maj-eval", include_str!("../../../assets/papers/maj-eval.toml")),
    ("collab-eval", include_str!("../../../assets/papers/collab-eval.toml")),
    ("sage-eval", include_str!("../../../assets/papers/sage-eval.toml")),
    ("masa", include_str!("../../../assets/papers/masa.toml")),
    ("prompt-opt", include_str!("../../../assets/papers/prompt-opt.toml")),
];

/// One paper: the tables of it a run can fill.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PaperSpec {
    pub name: String,
    pub title: String,
    /// What a reader of the tables should know (how values are shown…).
    #[serde(default)]
    pub notes: Vec<String>,
    #[serde(rename = "table")]
    pub tables: Vec<TableSpec>,
}

/// One table (or figure) of a paper.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// Short name, for `--paper NAME:ID`.
    pub id: String,
    /// Which table of the paper, and what it shows.
    pub caption: String,
    /// The data the paper's figures were measured on.
    pub dataset: String,
    /// Items behind the paper's figures, where it says.
    #[serde(default)]
    pub paper_n: Option<usize>,
    /// The table applies to a panel that has all of these keys (none: any
    /// panel with rows for the table's statistics).
    #[serde(default)]
    pub keys: Vec<String>,
    /// Only pairwise panels (`true`) or only score panels (`false`).
    #[serde(default)]
    pub pairwise: Option<bool>,
    /// Panels the table needs at least (a difference between two needs 2).
    #[serde(default = "one")]
    pub min_panels: usize,
    /// The table's column groups, one per dimension (empty: every key of the panel).
    #[serde(default)]
    pub blocks: Vec<BlockSpec>,
    pub statistics: Vec<StatSpec>,
    #[serde(rename = "row")]
    pub rows: Vec<RowSpec>,
    /// A line under the table: `rose` counts the lines whose last statistic is above 0.
    #[serde(default)]
    pub summary: Option<String>,
    /// The paper's own version of that line.
    #[serde(default)]
    pub paper_summary: Option<String>,
}

/// A column group: one dimension key.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BlockSpec {
    pub key: String,
    pub label: String,
}

/// One statistic (a column within each block).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatSpec {
    pub label: String,
    /// The report's metric name.
    pub metric: String,
    /// The stage of the report's row, when it is not the row's.
    #[serde(default)]
    pub stage: Option<String>,
    /// Show `value - value at this stage` (a change, without an interval).
    #[serde(default)]
    pub minus: Option<String>,
    /// Show the absolute value (the sign marked `−`).
    #[serde(default)]
    pub absolute: bool,
    /// Show as a percentage (the report's value times 100).
    #[serde(default)]
    pub percent: bool,
    /// The report's row is about the whole panel, without a stage (effort,
    /// the raters' consensus): its dimension is `dimension`, else none.
    #[serde(default)]
    pub panel_wide: bool,
    /// The report's row's dimension, when it is not the block's (pairwise: `pairwise`).
    #[serde(default)]
    pub dimension: Option<String>,
    /// Why a line has no such row, said instead of "not in the report"
    /// (a statistic only some lines have).
    #[serde(default)]
    pub missing: Option<String>,
}

fn one() -> usize {
    1
}

/// Which lines of a run one row of the paper becomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Each {
    /// One line per panel (the panel-wide rows).
    #[default]
    Panel,
    /// One line per group of the panel.
    Group,
    /// One line per agent of the panel (its own scores).
    Agent,
}

/// One row of the paper's table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowSpec {
    pub label: String,
    /// Panels of these protocols fill the row (none: any panel the table applies to).
    #[serde(default)]
    pub protocols: Vec<String>,
    /// The report's stage (`aggregate`, `initial`, `rouge_l`…); none for rows without one.
    #[serde(default)]
    pub stage: Option<String>,
    #[serde(default)]
    pub each: Each,
    /// A line of the paper's figures alone (a condition the run's panels do not name).
    #[serde(default)]
    pub paper_only: bool,
    /// The model behind the paper's figures.
    #[serde(default)]
    pub paper_model: Option<String>,
    /// The paper's figures: per block key, one per statistic (`nan`: not reported).
    #[serde(default)]
    pub paper: BTreeMap<String, Vec<f64>>,
}

/// Why a paper could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum PaperError {
    #[error("no paper table named \"{name}\"; known: {known}")]
    Unknown { name: String, known: String },
    #[error("paper {paper} has no table \"{table}\"; its tables: {known}")]
    UnknownTable { paper: String, table: String, known: String },
    #[error("assets/papers/{name}.toml: {message}")]
    Invalid { name: String, message: String },
}

/// The names `--paper` accepts.
pub fn known() -> String {
    BUNDLED.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

/// The paper named `name` (`maj-eval`), or `name:table` for one of its tables.
pub fn load(arg: &str) -> Result<PaperSpec, PaperError> {
    let (name, table) = match arg.split_once(':') {
        Some((n, t)) => (n.trim(), Some(t.trim())),
        None => (arg.trim(), None),
    };
    let (_, text) = BUNDLED
        .iter()
        .find(|(n, _)| *n == name)
        .ok_or_else(|| PaperError::Unknown { name: name.to_string(), known: known() })?;
    let mut spec = parse(name, text)?;
    if let Some(t) = table {
        let ids = spec.tables.iter().map(|t| t.id.clone()).collect::<Vec<_>>().join(", ");
        spec.tables.retain(|x| x.id == t);
        if spec.tables.is_empty() {
            return Err(PaperError::UnknownTable { paper: name.to_string(), table: t.to_string(), known: ids });
        }
    }
    Ok(spec)
}

/// Parse and check one paper's TOML.
pub fn parse(name: &str, text: &str) -> Result<PaperSpec, PaperError> {
    let invalid = |message: String| PaperError::Invalid { name: name.to_string(), message };
    let spec: PaperSpec = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
    for t in &spec.tables {
        for r in &t.rows {
            for (key, values) in &r.paper {
                if !t.blocks.iter().any(|b| &b.key == key) {
                    return Err(invalid(format!("table {}: row \"{}\": no block \"{key}\"", t.id, r.label)));
                }
                if values.len() != t.statistics.len() {
                    return Err(invalid(format!(
                        "table {}: row \"{}\": {} figures for {key}, the table has {} statistics",
                        t.id,
                        r.label,
                        values.len(),
                        t.statistics.len()
                    )));
                }
            }
        }
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bundled_paper_parses() {
        for (name, text) in BUNDLED {
            let spec = parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(spec.name, *name);
            assert!(!spec.tables.is_empty(), "{name}");
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = load("maj").expect_err("unknown").to_string();
        assert!(err.contains("maj-eval") && err.contains("collab-eval"), "{err}");
        let err = load("maj-eval:nope").expect_err("unknown table").to_string();
        assert!(err.contains("mslr") && err.contains("storysparkqa"), "{err}");
        assert_eq!(load("maj-eval:mslr").expect("one table").tables.len(), 1);
    }

    #[test]
    fn figures_must_match_the_statistics() {
        let text = r#"
name = "x"
title = "x"
[[table]]
id = "t"
caption = "c"
dataset = "d"
blocks = [{ key = "a", label = "A" }]
statistics = [{ label = "r", metric = "pearson" }]
[[table.row]]
label = "row"
paper.a = [0.1, 0.2]
"#;
        let err = parse("x", text).expect_err("two figures for one statistic").to_string();
        assert!(err.contains("2 figures for a, the table has 1 statistics"), "{err}");
    }
}
