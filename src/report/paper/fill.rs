//! A paper's tables filled from a report: for each row of the paper, the
//! lines of the run that stand for it, with moot's value, interval and n
//! beside the paper's figure.

use serde::Serialize;

use super::spec::{BlockSpec, Each, PaperSpec, RowSpec, StatSpec, TableSpec};
use crate::report::{PanelSummary, Report, Row};

/// A paper's tables as a report fills them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperReport {
    pub paper: String,
    pub title: String,
    pub notes: Vec<String>,
    pub tables: Vec<PaperTable>,
    /// Tables of the paper that no panel of the report can fill, with why.
    pub unfilled: Vec<String>,
    /// Intervals: resamples and level, as the report's.
    pub bootstrap: usize,
    pub level: f64,
}

/// One table of the paper.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PaperTable {
    pub id: String,
    pub caption: String,
    /// The paper's data, and how many items its figures rest on.
    pub dataset: String,
    pub paper_n: Option<usize>,
    pub blocks: Vec<Block>,
    /// Statistic labels, in column order within each block.
    pub statistics: Vec<String>,
    pub lines: Vec<Line>,
    /// A line under the table (`ρ rose in 3 of 4 groups`), and the paper's.
    pub summary: Option<String>,
    pub paper_summary: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Block {
    pub key: String,
    pub label: String,
}

/// One line of a table: a row of the paper, as one panel, group or agent of the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    pub label: String,
    /// The report's panel; null for a line of the paper's figures alone.
    pub panel: Option<String>,
    pub group: Option<String>,
    pub agent: Option<String>,
    /// The models of moot's run (`provider/model`).
    pub models: Vec<String>,
    pub paper_model: Option<String>,
    /// Cells per block, then per statistic.
    pub cells: Vec<Vec<Cell>>,
}

/// moot's value (shown as the table shows it: absolute, in percent…) and the paper's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cell {
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undefined_reason: Option<String>,
    /// The value was negative and is shown as its absolute value.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub negative: bool,
    /// The panel a difference is taken against (`agreement_difference`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versus: Option<String>,
    pub paper: Option<f64>,
}

impl Cell {
    fn paper_only(paper: Option<f64>) -> Self {
        Cell {
            value: None,
            ci_low: None,
            ci_high: None,
            n: None,
            undefined_reason: None,
            negative: false,
            versus: None,
            paper,
        }
    }
}

/// Fill `spec`'s tables from `report`.
pub fn fill(spec: &PaperSpec, report: &Report) -> PaperReport {
    let mut out = PaperReport {
        paper: spec.name.clone(),
        title: spec.title.clone(),
        notes: spec.notes.clone(),
        tables: Vec::new(),
        unfilled: Vec::new(),
        bootstrap: report.bootstrap,
        level: report.level,
    };
    for t in &spec.tables {
        let panels: Vec<&PanelSummary> = report.panels.iter().filter(|p| applies(t, p)).collect();
        if panels.is_empty() || panels.len() < t.min_panels {
            out.unfilled.push(format!("{} ({}): {}", t.id, t.caption, needs(t)));
            continue;
        }
        out.tables.push(fill_table(t, &panels, report));
    }
    out
}

/// Whether a table is about panels like `p`.
fn applies(t: &TableSpec, p: &PanelSummary) -> bool {
    t.pairwise.is_none_or(|pw| pw == p.pairwise)
        && t.keys.iter().all(|k| p.keys.contains(k))
        && t.rows.iter().any(|r| !r.paper_only && protocol_fits(r, p))
}

fn protocol_fits(r: &RowSpec, p: &PanelSummary) -> bool {
    r.protocols.is_empty() || r.protocols.contains(&p.protocol)
}

/// What a panel needs for `t` to apply.
fn needs(t: &TableSpec) -> String {
    let mut parts = Vec::new();
    let (one, many) = match t.pairwise {
        Some(true) => ("a pairwise panel", "pairwise panels"),
        Some(false) => ("a panel of scores", "panels of scores"),
        None => ("a panel", "panels"),
    };
    parts.push(if t.min_panels > 1 { format!("{} {many} on the same items", t.min_panels) } else { one.to_string() });
    if !t.keys.is_empty() {
        parts.push(format!("with the keys {}", t.keys.join(", ")));
    }
    let mut protocols: Vec<&str> = t.rows.iter().flat_map(|r| r.protocols.iter().map(String::as_str)).collect();
    protocols.sort_unstable();
    protocols.dedup();
    if !protocols.is_empty() {
        parts.push(format!("run by {}", protocols.join(" or ")));
    }
    if parts.is_empty() { "no panel of the report has its rows".into() } else { format!("needs {}", parts.join(", ")) }
}

fn fill_table(t: &TableSpec, panels: &[&PanelSummary], report: &Report) -> PaperTable {
    // Blocks: the table's, else every key of the first panel.
    let blocks: Vec<BlockSpec> = if t.blocks.is_empty() {
        panels[0].keys.iter().map(|k| BlockSpec { key: k.clone(), label: k.clone() }).collect()
    } else {
        t.blocks.clone()
    };
    let mut lines = Vec::new();
    for r in &t.rows {
        if r.paper_only {
            lines.push(paper_line(r, r.label.clone(), &blocks, t.statistics.len()));
            continue;
        }
        let mut fitting: Vec<&&PanelSummary> = panels.iter().filter(|p| protocol_fits(r, p)).collect();
        if r.protocols.is_empty() {
            // A row any panel can fill (a baseline computed from the items) once.
            fitting.truncate(1);
        }
        if fitting.is_empty() && r.each == Each::Panel {
            lines.push(paper_line(r, format!("{} (not in this report)", r.label), &blocks, t.statistics.len()));
        }
        for p in fitting {
            let who: Vec<(Option<String>, Option<String>)> = match r.each {
                Each::Panel => vec![(None, None)],
                Each::Group => p.groups.iter().map(|g| (Some(g.clone()), None)).collect(),
                Each::Agent => agents_of(report, &p.name).into_iter().map(|a| (None, Some(a))).collect(),
            };
            for (group, agent) in who {
                let label = match (&group, &agent) {
                    (Some(g), _) => format!("{}{g}", indent(&r.label)),
                    (_, Some(a)) => format!("{}{a}", indent(&r.label)),
                    _ if r.label.contains("{panel}") => r.label.replace("{panel}", &p.name),
                    _ if panels.len() > 1 || r.protocols.len() > 1 => format!("{} ({})", r.label, p.name),
                    _ => r.label.clone(),
                };
                let at = Who { panel: &p.name, group: group.as_deref(), agent: agent.as_deref() };
                let cells = blocks
                    .iter()
                    .map(|b| {
                        let paper = if r.each == Each::Panel { r.paper.get(&b.key) } else { None };
                        t.statistics
                            .iter()
                            .enumerate()
                            .map(|(i, s)| {
                                let mut c = cell(report, &at, r, b, s);
                                c.paper = paper.and_then(|v| v.get(i).copied()).filter(|v| !v.is_nan());
                                c
                            })
                            .collect()
                    })
                    .collect();
                lines.push(Line {
                    label,
                    panel: Some(p.name.clone()),
                    group,
                    agent,
                    models: p.models.clone(),
                    paper_model: if r.each == Each::Panel { r.paper_model.clone() } else { None },
                    cells,
                });
            }
        }
    }
    let summary = t.summary.as_deref().and_then(|kind| summarize(kind, &lines, &t.statistics));
    PaperTable {
        id: t.id.clone(),
        caption: t.caption.clone(),
        dataset: t.dataset.clone(),
        paper_n: t.paper_n,
        blocks: blocks.iter().map(|b| Block { key: b.key.clone(), label: b.label.clone() }).collect(),
        statistics: t.statistics.iter().map(|s| s.label.clone()).collect(),
        lines,
        summary,
        paper_summary: t.paper_summary.clone(),
    }
}

/// The leading spaces of a label (sub-lines are indented under their row).
fn indent(label: &str) -> &str {
    &label[..label.len() - label.trim_start().len()]
}

/// A line of the paper's figures alone.
fn paper_line(r: &RowSpec, label: String, blocks: &[BlockSpec], stats: usize) -> Line {
    Line {
        label,
        panel: None,
        group: None,
        agent: None,
        models: Vec::new(),
        paper_model: r.paper_model.clone(),
        cells: blocks.iter().map(|b| paper_cells(r, b, stats)).collect(),
    }
}

fn paper_cells(r: &RowSpec, b: &BlockSpec, stats: usize) -> Vec<Cell> {
    let paper = r.paper.get(&b.key);
    (0..stats).map(|i| Cell::paper_only(paper.and_then(|v| v.get(i).copied()).filter(|v| !v.is_nan()))).collect()
}

/// The agents of a panel with rows of their own, in the report's order.
fn agents_of(report: &Report, panel: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in report.rows.iter().filter(|r| r.panel == panel) {
        if let Some(a) = &r.agent
            && !out.contains(a)
        {
            out.push(a.clone());
        }
    }
    out
}

/// Which lines of a panel a cell reads.
struct Who<'a> {
    panel: &'a str,
    group: Option<&'a str>,
    agent: Option<&'a str>,
}

fn find<'r>(
    report: &'r Report,
    at: &Who<'_>,
    dimension: Option<&str>,
    stage: Option<&str>,
    metric: &str,
) -> Option<&'r Row> {
    report.rows.iter().find(|r| {
        r.panel == at.panel
            && r.metric == metric
            && r.dimension.as_deref() == dimension
            && r.stage.map(|s| s.as_str()) == stage
            && r.agent.as_deref() == at.agent
            && (at.agent.is_some() || r.group.as_deref() == at.group)
    })
}

fn cell(report: &Report, at: &Who<'_>, r: &RowSpec, b: &BlockSpec, s: &StatSpec) -> Cell {
    let stage = match s.stage.as_deref() {
        Some("none") => None,
        Some(st) => Some(st),
        None => r.stage.as_deref(),
    };
    if s.panel_wide && (at.group.is_some() || at.agent.is_some()) {
        // A group's or an agent's line has no panel-wide figure of its own.
        return Cell::paper_only(None);
    }
    let (dimension, stage, at) = if s.panel_wide {
        (s.dimension.as_deref(), None, Who { panel: at.panel, group: None, agent: None })
    } else {
        (Some(s.dimension.as_deref().unwrap_or(&b.key)), stage, Who { ..*at })
    };
    let mut c = Cell::paper_only(None);
    let Some(row) = find(report, &at, dimension, stage, &s.metric) else {
        c.undefined_reason = Some(s.missing.clone().unwrap_or_else(|| "not in the report".into()));
        return c;
    };
    c.n = row.n;
    c.undefined_reason = row.undefined_reason.clone();
    c.versus = row.versus.clone();
    let mut value = row.value;
    let (mut lo, mut hi) = (row.ci_low, row.ci_high);
    if let Some(minus) = &s.minus {
        let base = find(report, &at, dimension, Some(minus.as_str()), &s.metric);
        value = match (value, base.and_then(|b| b.value)) {
            (Some(v), Some(w)) => Some(v - w),
            _ => None,
        };
        (lo, hi) = (None, None);
        if value.is_none() && c.undefined_reason.is_none() {
            c.undefined_reason = Some(format!("no value at the {minus} stage"));
        }
    }
    if s.absolute
        && let Some(v) = value
        && v < 0.0
    {
        c.negative = true;
        value = Some(-v);
        (lo, hi) = (hi.map(|h| -h), lo.map(|l| -l));
    }
    let scale = if s.percent { 100.0 } else { 1.0 };
    c.value = value.map(|v| v * scale);
    c.ci_low = lo.map(|v| v * scale);
    c.ci_high = hi.map(|v| v * scale);
    c
}

/// `rose`: how many lines' last statistic (a change) is above zero.
fn summarize(kind: &str, lines: &[Line], stats: &[StatSpec]) -> Option<String> {
    match kind {
        "rose" => {
            let last = stats.len().checked_sub(1)?;
            let label = stats.first().map_or("the value", |s| s.label.split_whitespace().next().unwrap_or("the value"));
            let (mut up, mut all) = (0, 0);
            for line in lines {
                for block in &line.cells {
                    if let Some(v) = block.get(last).and_then(|c| c.value) {
                        all += 1;
                        if v > 0.0 {
                            up += 1;
                        }
                    }
                }
            }
            Some(format!("{label} rose in {up} of {all} (group, dimension) cells with a value at both stages"))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::Stage;

    fn panel(name: &str, protocol: &str, keys: &[&str], groups: &[&str]) -> PanelSummary {
        PanelSummary {
            name: name.into(),
            protocol: protocol.into(),
            pairwise: false,
            keys: keys.iter().map(|k| k.to_string()).collect(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            models: vec!["local/tiny".into()],
            logs: BTreeMap::new(),
            sessions: 5,
            duplicates: 0,
            rated_items: 5,
            human_sources: BTreeMap::new(),
            unrated_keys: Vec::new(),
            rater_items: 0,
            raters: Vec::new(),
        }
    }

    fn row(panel: &str, key: Option<&str>, group: Option<&str>, stage: Option<Stage>, metric: &str, v: f64) -> Row {
        let mut r = Row::new(panel, key, group, stage, metric).with_n(5, None);
        r.value = Some(v);
        r.ci_low = Some(v - 0.1);
        r.ci_high = Some(v + 0.1);
        r
    }

    fn report(panels: Vec<PanelSummary>, rows: Vec<Row>) -> Report {
        Report { panels, rows, distributions: Vec::new(), notes: Vec::new(), bootstrap: 100, seed: 0, level: 0.95 }
    }

    const SPEC: &str = r#"
name = "p"
title = "A paper"
[[table]]
id = "t"
caption = "Table 1"
dataset = "d"
keys = ["a"]
blocks = [{ key = "a", label = "A" }]
statistics = [
  { label = "ρ", metric = "spearman", absolute = true },
  { label = "Acc %", metric = "accuracy", percent = true },
  { label = "Rounds", metric = "rounds", panel_wide = true },
  { label = "change", metric = "spearman", stage = "final", minus = "initial" },
]
summary = "rose"
[[table.row]]
label = "Method"
protocols = ["m"]
stage = "aggregate"
paper_model = "Big"
paper.a = [0.4, 50.0, 2.0, nan]
[[table.row]]
label = "  group"
protocols = ["m"]
stage = "aggregate"
each = "group"
[[table.row]]
label = "Baseline"
protocols = ["other"]
stage = "aggregate"
paper.a = [0.1, 10.0, 1.0, nan]
[[table]]
id = "u"
caption = "Table 2"
dataset = "d"
keys = ["zzz"]
blocks = [{ key = "zzz", label = "Z" }]
statistics = [{ label = "r", metric = "pearson" }]
[[table.row]]
label = "Method"
protocols = ["m"]
"#;

    #[test]
    fn cells_come_from_the_report_rows_as_the_paper_shows_them() {
        let spec = super::super::spec::parse("p", SPEC).expect("spec");
        let rows = vec![
            row("P", Some("a"), None, Some(Stage::Aggregate), "spearman", -0.3),
            row("P", Some("a"), None, Some(Stage::Aggregate), "accuracy", 0.25),
            row("P", None, None, None, "rounds", 1.5),
            row("P", Some("a"), None, Some(Stage::Final), "spearman", 0.5),
            row("P", Some("a"), None, Some(Stage::Initial), "spearman", 0.2),
            row("P", Some("a"), Some("G1"), Some(Stage::Aggregate), "spearman", 0.6),
            row("P", Some("a"), Some("G1"), Some(Stage::Final), "spearman", 0.1),
            row("P", Some("a"), Some("G1"), Some(Stage::Initial), "spearman", 0.3),
        ];
        let filled = fill(&spec, &report(vec![panel("P", "m", &["a", "overall"], &["G1", "G2"])], rows));
        assert_eq!(filled.tables.len(), 1);
        assert_eq!(filled.unfilled.len(), 1, "table u needs the key zzz: {:?}", filled.unfilled);
        assert!(filled.unfilled[0].contains("zzz"), "{:?}", filled.unfilled);
        let t = &filled.tables[0];
        let labels: Vec<&str> = t.lines.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["Method", "  G1", "  G2", "Baseline (not in this report)"]);
        let m = &t.lines[0].cells[0];
        assert_eq!(m[0].value, Some(0.3), "ρ shown absolute");
        assert!(m[0].negative);
        let close = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 1e-12);
        assert!(close(m[0].ci_low, 0.2) && close(m[0].ci_high, 0.4), "the interval mirrored: {:?}", m[0]);
        assert_eq!(m[0].paper, Some(0.4));
        assert_eq!(m[1].value, Some(25.0), "accuracy in percent");
        assert!(close(m[1].ci_low, 15.0) && close(m[1].ci_high, 35.0), "{:?}", m[1]);
        assert_eq!(m[2].value, Some(1.5), "a panel-wide row");
        assert!((m[3].value.unwrap() - 0.3).abs() < 1e-12, "final minus initial");
        assert_eq!((m[3].ci_low, m[3].paper), (None, None), "a change has no interval; nan is no figure");
        assert_eq!(t.lines[0].paper_model.as_deref(), Some("Big"));
        assert_eq!(t.lines[0].models, ["local/tiny"]);
        let g1 = &t.lines[1].cells[0];
        assert_eq!(g1[0].value, Some(0.6));
        assert_eq!(g1[0].paper, None, "groups have no paper figure");
        assert!((g1[3].value.unwrap() + 0.2).abs() < 1e-12);
        let g2 = &t.lines[2].cells[0];
        assert_eq!(g2[0].undefined_reason.as_deref(), Some("not in the report"));
        let baseline = &t.lines[3];
        assert_eq!(baseline.panel, None);
        assert_eq!(baseline.cells[0][0].paper, Some(0.1));
        assert_eq!(t.summary.as_deref(), Some("ρ rose in 1 of 2 (group, dimension) cells with a value at both stages"));
    }

    #[test]
    fn a_table_applies_only_to_fitting_panels() {
        let spec = super::super::spec::parse("p", SPEC).expect("spec");
        let mut pw = panel("P", "m", &["a"], &[]);
        pw.pairwise = true;
        let mut t = spec.tables[0].clone();
        assert!(applies(&t, &panel("P", "m", &["a"], &[])));
        assert!(!applies(&t, &panel("P", "x", &["a"], &[])), "no row is run by protocol x");
        assert!(!applies(&t, &panel("P", "m", &["b"], &[])), "key a is missing");
        t.pairwise = Some(false);
        assert!(!applies(&t, &pw));
    }
}
