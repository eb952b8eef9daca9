//! Printing a report: an aligned table for people, CSV and JSON for tools.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::build::{Report, Row, Stage};
use crate::paint::Paint;

/// Output formats of `moot report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Csv,
    Json,
    /// One self-contained page (see [`crate::report::html`]).
    Html,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "table" => Ok(Format::Table),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            "html" => Ok(Format::Html),
            other => Err(format!("unknown format \"{other}\"; valid: table, csv, json, html")),
        }
    }
}

/// Write the rows as a JSON array.
pub fn write_json(report: &Report, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &report.rows).map_err(io::Error::other)?;
    writeln!(out)
}

/// The CSV columns, in order.
pub const CSV_COLUMNS: [&str; 16] = [
    "panel",
    "dimension",
    "group",
    "stage",
    "metric",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "dropped",
    "undefined_reason",
    "sources",
    "agent",
    "system",
    "raters",
    "versus",
];

/// Write the rows as CSV with a header.
pub fn write_csv(report: &Report, out: &mut impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_COLUMNS).map_err(io::Error::other)?;
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let int = |v: Option<usize>| v.map(|x| x.to_string()).unwrap_or_default();
    for r in &report.rows {
        let sources = r
            .sources
            .as_ref()
            .map(|s| s.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";"))
            .unwrap_or_default();
        w.write_record([
            r.panel.as_str(),
            r.dimension.as_deref().unwrap_or(""),
            r.group.as_deref().unwrap_or(""),
            r.stage.map(Stage::as_str).unwrap_or(""),
            r.metric.as_str(),
            &num(r.value),
            &num(r.ci_low),
            &num(r.ci_high),
            &int(r.n),
            &int(r.dropped),
            r.undefined_reason.as_deref().unwrap_or(""),
            &sources,
            r.agent.as_deref().unwrap_or(""),
            r.system.as_deref().unwrap_or(""),
            &r.raters.as_ref().map(|r| r.join(";")).unwrap_or_default(),
            r.versus.as_deref().unwrap_or(""),
        ])
        .map_err(io::Error::other)?;
    }
    w.flush()
}

/// Dimension, group, stage and metric of a row.
type RowKey<'a> = (Option<&'a str>, Option<&'a str>, Option<Stage>, &'a str);

/// Undefined reasons, numbered in order of first use.
#[derive(Default)]
pub(crate) struct Footnotes {
    reasons: Vec<String>,
}

impl Footnotes {
    pub(crate) fn mark(&mut self, reason: &str) -> String {
        let i = match self.reasons.iter().position(|r| r == reason) {
            Some(i) => i,
            None => {
                self.reasons.push(reason.to_string());
                self.reasons.len() - 1
            }
        };
        format!("—[{}]", i + 1)
    }

    /// The reasons, in the order of their marks.
    pub(crate) fn reasons(&self) -> &[String] {
        &self.reasons
    }
}

pub(crate) fn pad(s: &str, width: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(s);
    format!("{s}{}", " ".repeat(width.saturating_sub(w)))
}

pub(crate) fn lpad(s: &str, width: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(s);
    format!("{}{s}", " ".repeat(width.saturating_sub(w)))
}

/// A value with its interval: `0.612 [0.480, 0.720]`.
pub(crate) fn value_cell(row: Option<&Row>, notes: &mut Footnotes) -> String {
    let Some(row) = row else { return String::new() };
    match (row.value, &row.undefined_reason) {
        (Some(v), _) => match (row.ci_low, row.ci_high) {
            (Some(lo), Some(hi)) => format!("{v:.3} [{lo:.2}, {hi:.2}]"),
            _ => format!("{v:.3}"),
        },
        (None, Some(reason)) => notes.mark(reason),
        (None, None) => "—".into(),
    }
}

pub(crate) fn short_cell(row: Option<&Row>, notes: &mut Footnotes) -> String {
    let Some(row) = row else { return String::new() };
    match (row.value, &row.undefined_reason) {
        (Some(v), _) => format!("{v:.3}"),
        (None, Some(reason)) => notes.mark(reason),
        (None, None) => "—".into(),
    }
}

fn fmt_amount(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// What the table shows beyond its default sections.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableOptions {
    /// Add a section with each agent's own agreement with the humans.
    pub agents: bool,
}

/// Each agent's own scores against the humans: per dimension, agent and
/// stage, the three correlations with their intervals.
fn write_agent_rows(
    out: &mut impl Write,
    panel: &super::build::PanelSummary,
    rows: &[&Row],
    paint: Paint,
    notes: &mut Footnotes,
) -> io::Result<()> {
    type AgentKey<'a> = (&'a str, &'a str, Stage, &'a str);
    let index: BTreeMap<AgentKey, &Row> = rows
        .iter()
        .filter_map(|r| Some(((r.dimension.as_deref()?, r.agent.as_deref()?, r.stage?, r.metric.as_str()), *r)))
        .collect();
    let mut agents: Vec<(&str, Option<&str>)> = Vec::new();
    for r in rows {
        if let Some(a) = r.agent.as_deref()
            && !agents.iter().any(|(n, _)| *n == a)
        {
            agents.push((a, r.group.as_deref()));
        }
    }
    writeln!(out)?;
    writeln!(out, "{}", paint.bold("Each agent against human ratings"))?;
    let dim_w = panel.keys.iter().map(|k| k.len()).max().unwrap_or(9).max(9);
    let agent_w = agents.iter().map(|(a, _)| a.len()).max().unwrap_or(5).max(5);
    let group_w = panel.groups.iter().map(|g| g.len()).max().unwrap_or(5).max(5);
    writeln!(
        out,
        "{}",
        paint.dim(&format!(
            "{} {} {} {} {} {} {} {}",
            pad("dimension", dim_w),
            pad("agent", agent_w),
            pad("group", group_w),
            pad("stage", 7),
            lpad("n", 5),
            pad("pearson", 22),
            pad("spearman", 22),
            pad("kendall τ-b", 22)
        ))
    )?;
    for key in &panel.keys {
        let mut first_dim = true;
        for (agent, group) in &agents {
            let mut first_agent = true;
            for stage in [Stage::Initial, Stage::Final] {
                let get = |m: &str| index.get(&(key.as_str(), *agent, stage, m)).copied();
                let Some(p) = get("pearson") else { continue };
                let line = format!(
                    "{} {} {} {} {} {} {} {}",
                    pad(if first_dim { key.as_str() } else { "" }, dim_w),
                    pad(if first_agent { agent } else { "" }, agent_w),
                    pad(if first_agent { group.unwrap_or("") } else { "" }, group_w),
                    pad(super::sage::stage_label(&panel.protocol, stage), 7),
                    lpad(&p.n.map(|n| n.to_string()).unwrap_or_default(), 5),
                    pad(&value_cell(Some(p), notes), 22),
                    pad(&value_cell(get("spearman"), notes), 22),
                    pad(&value_cell(get("kendall_tau_b"), notes), 22),
                );
                writeln!(out, "{}", line.trim_end())?;
                first_dim = false;
                first_agent = false;
            }
        }
    }
    Ok(())
}

/// The pairwise rows of a panel, judges' included.
fn all_pairwise<'a>(report: &'a Report, panel: &str) -> Vec<&'a Row> {
    report
        .rows
        .iter()
        .filter(|r| r.panel == panel && r.dimension.as_deref() == Some(super::pairwise::DIMENSION))
        .collect()
}

/// Write the report as aligned tables; colour when `paint` is enabled.
pub fn write_table(report: &Report, out: &mut impl Write, paint: Paint) -> io::Result<()> {
    write_table_with(report, out, paint, TableOptions::default())
}

/// [`write_table`] with the optional sections of `options`.
pub fn write_table_with(report: &Report, out: &mut impl Write, paint: Paint, options: TableOptions) -> io::Result<()> {
    if report.panels.is_empty() {
        writeln!(out, "No sessions to report on.")?;
    }
    let mut notes = Footnotes::default();
    for (pi, panel) in report.panels.iter().enumerate() {
        if pi > 0 {
            writeln!(out)?;
        }
        let all_rows: Vec<&Row> = report.rows.iter().filter(|r| r.panel == panel.name).collect();
        let (agent_rows, rows): (Vec<&Row>, Vec<&Row>) = all_rows.into_iter().partition(|r| r.agent.is_some());
        let logs: Vec<String> = panel.logs.iter().map(|(k, v)| format!("{v} {k}")).collect();
        writeln!(out, "{}", paint.bold(&format!("{} ({})", panel.name, panel.protocol)))?;
        let mut line = format!("{} sessions used; logs read: {}", panel.sessions, logs.join(", "));
        if panel.duplicates > 0 {
            line.push_str(&format!("; {} older logs of the same items left out", panel.duplicates));
        }
        writeln!(out, "{line}")?;
        let sources: Vec<String> = ["item", "session", "file"]
            .iter()
            .filter_map(|s| panel.human_sources.get(*s).map(|n| format!("{s} {n}")))
            .collect();
        // A pairwise panel's people give labels, counted in its own section.
        if !panel.pairwise {
            writeln!(
                out,
                "human ratings: {} of {} items rated; values used by source: {} (later sources win: item < session < file)",
                panel.rated_items,
                panel.sessions,
                if sources.is_empty() { "none".to_string() } else { sources.join(", ") }
            )?;
        }
        if panel.rater_items > 0 && !panel.pairwise {
            writeln!(
                out,
                "{}",
                paint.dim(&format!(
                    "{} items rated by named raters (human_raters): the agreement table uses the mean of each item's raters",
                    panel.rater_items
                ))
            )?;
        }
        if !panel.unrated_keys.is_empty() && panel.rated_items > 0 {
            writeln!(out, "{}", paint.dim(&format!("not rated by humans: {}", panel.unrated_keys.join(", "))))?;
        }

        // Correlations and scale agreement.
        let has_scale = rows.iter().any(|r| r.metric == "accuracy");
        let index: BTreeMap<RowKey, &Row> = rows
            .iter()
            .map(|r| ((r.dimension.as_deref(), r.group.as_deref(), r.stage, r.metric.as_str()), *r))
            .collect();
        let get = |d: &str, g: Option<&str>, s: Stage, m: &str| index.get(&(Some(d), g, Some(s), m)).copied();
        let rated: Vec<&String> = panel
            .keys
            .iter()
            .filter(|k| rows.iter().any(|r| r.dimension.as_ref() == Some(*k) && r.metric == "pearson"))
            .collect();
        if !rated.is_empty() {
            writeln!(out)?;
            writeln!(
                out,
                "{}",
                paint.bold(&format!(
                    "Agreement with human ratings ({:.0}% bootstrap intervals, {} resamples, seed {})",
                    report.level * 100.0,
                    report.bootstrap,
                    report.seed
                ))
            )?;
            let dim_w = rated.iter().map(|k| k.len()).max().unwrap_or(9).max(9);
            let group_w = panel.groups.iter().map(|g| g.len()).max().unwrap_or(10).max(10);
            let mut header = format!(
                "{} {} {} {} {} {} {} {}",
                pad("dimension", dim_w),
                pad("group", group_w),
                pad("stage", 14),
                lpad("n", 5),
                pad("pearson", 22),
                pad("Δ", 7),
                pad("spearman", 22),
                pad("kendall τ-b", 22)
            );
            if has_scale {
                header.push_str(&format!(" {} {}", pad("accuracy", 8), pad("κ quad", 8)));
            }
            writeln!(out, "{}", paint.dim(&header))?;
            for key in &rated {
                let mut first_dim = true;
                let groups: Vec<Option<&str>> =
                    std::iter::once(None).chain(panel.groups.iter().map(|g| Some(g.as_str()))).collect();
                for g in groups {
                    let mut first_group = true;
                    // ROUGE-L against the reference, where items have one, with the panel-wide stages.
                    let rouge = g.is_none().then_some(Stage::RougeL);
                    for stage in Stage::ALL.into_iter().chain(rouge) {
                        let Some(p) = get(key, g, stage, "pearson") else { continue };
                        let delta = if stage == Stage::Final {
                            match (get(key, g, Stage::Initial, "pearson").and_then(|r| r.value), p.value) {
                                (Some(a), Some(b)) => {
                                    let d = b - a;
                                    let s = format!("{}{:.3}", if d >= 0.0 { "+" } else { "−" }, d.abs());
                                    let s = pad(&s, 7);
                                    if d > 0.0 {
                                        paint.green(&s)
                                    } else if d < 0.0 {
                                        paint.red(&s)
                                    } else {
                                        s
                                    }
                                }
                                _ => pad("", 7),
                            }
                        } else {
                            pad("", 7)
                        };
                        let mut line = format!(
                            "{} {} {} {} {} {} {} {}",
                            pad(if first_dim { key.as_str() } else { "" }, dim_w),
                            pad(if first_group { g.unwrap_or("all agents") } else { "" }, group_w),
                            pad(super::sage::stage_label(&panel.protocol, stage), 14),
                            lpad(&p.n.map(|n| n.to_string()).unwrap_or_default(), 5),
                            pad(&value_cell(Some(p), &mut notes), 22),
                            delta,
                            pad(&value_cell(get(key, g, stage, "spearman"), &mut notes), 22),
                            pad(&value_cell(get(key, g, stage, "kendall_tau_b"), &mut notes), 22),
                        );
                        if has_scale {
                            line.push_str(&format!(
                                " {} {}",
                                pad(&short_cell(get(key, g, stage, "accuracy"), &mut notes), 8),
                                pad(&short_cell(get(key, g, stage, "cohen_kappa_quadratic"), &mut notes), 8)
                            ));
                        }
                        writeln!(out, "{}", line.trim_end())?;
                        first_dim = false;
                        first_group = false;
                    }
                }
            }
            let dropped: usize =
                rows.iter().filter(|r| r.metric == "pearson").filter_map(|r| r.dropped).max().unwrap_or(0);
            if dropped > 0 {
                writeln!(
                    out,
                    "{}",
                    paint.dim(&format!(
                        "missing ratings or scores: pairwise deletion; up to {dropped} items dropped per row (see `dropped` in CSV/JSON)"
                    ))
                )?;
            }
        } else if panel.sessions > 0 && !panel.pairwise {
            writeln!(out, "{}", paint.yellow("no human ratings joined: add a `human` field to the items, rate in the live screen, or pass --human FILE"))?;
        }

        if options.agents && !agent_rows.is_empty() {
            write_agent_rows(out, panel, &agent_rows, paint, &mut notes)?;
        }

        // Agreement among agents.
        let alpha_rows: Vec<&&Row> = rows.iter().filter(|r| r.metric == "krippendorff_alpha_interval").collect();
        if !alpha_rows.is_empty() {
            writeln!(out)?;
            writeln!(out, "{}", paint.bold("Agreement among agents (Krippendorff's α, initial → final)"))?;
            let dim_w = panel.keys.iter().map(|k| k.len()).max().unwrap_or(9).max(9);
            let group_w = panel.groups.iter().map(|g| g.len()).max().unwrap_or(10).max(10);
            writeln!(
                out,
                "{}",
                paint.dim(&format!(
                    "{} {} {} {}",
                    pad("dimension", dim_w),
                    pad("group", group_w),
                    pad("interval", 26),
                    pad("ordinal", 26)
                ))
            )?;
            for key in &panel.keys {
                let groups: Vec<Option<&str>> =
                    std::iter::once(None).chain(panel.groups.iter().map(|g| Some(g.as_str()))).collect();
                let mut first = true;
                for g in groups {
                    let cell = |metric: &str, notes: &mut Footnotes| {
                        let a = get(key, g, Stage::Initial, metric);
                        let b = get(key, g, Stage::Final, metric);
                        let text = format!("{} → {}", short_cell(a, notes), short_cell(b, notes));
                        let padded = pad(&text, 26);
                        match (a.and_then(|r| r.value), b.and_then(|r| r.value)) {
                            (Some(x), Some(y)) if y > x => paint.green(&padded),
                            (Some(x), Some(y)) if y < x => paint.red(&padded),
                            _ => padded,
                        }
                    };
                    let line = format!(
                        "{} {} {} {}",
                        pad(if first { key } else { "" }, dim_w),
                        pad(g.unwrap_or("all agents"), group_w),
                        cell("krippendorff_alpha_interval", &mut notes),
                        cell("krippendorff_alpha_ordinal", &mut notes)
                    );
                    writeln!(out, "{}", line.trim_end())?;
                    first = false;
                }
            }
        }

        super::binary_table::write_table(panel, &rows, out, paint, &mut notes)?;
        super::raters_table::write_table(panel, &rows, out, paint, &mut notes)?;

        // Pairwise decisions.
        let label_rows: Vec<&&Row> = rows.iter().filter(|r| r.dimension.as_deref() == Some("label")).collect();
        if !label_rows.is_empty() {
            writeln!(out)?;
            writeln!(out, "{}", paint.bold("Pairwise decisions"))?;
            for r in label_rows {
                writeln!(
                    out,
                    "{} {} {} {}",
                    pad(r.group.as_deref().unwrap_or("all agents"), 14),
                    pad(r.stage.map(Stage::as_str).unwrap_or(""), 8),
                    pad(&r.metric, 28),
                    value_cell(Some(r), &mut notes)
                )?;
            }
        }

        let pairwise_rows: Vec<&Row> = all_pairwise(report, &panel.name);
        if !pairwise_rows.is_empty() {
            super::pairwise::table::write_table(report, &pairwise_rows, out, paint, &mut notes)?;
        }

        let own: Vec<&Row> = report.rows.iter().filter(|r| r.panel == panel.name).collect();
        super::versus_table::write_table(&own, out, paint, &mut notes)?;

        let sage_rows: Vec<&Row> = rows.iter().copied().filter(|r| r.metric.starts_with("sage_")).collect();
        super::sage::write_table(&sage_rows, &panel.keys, out, paint)?;

        // Cost and effort.
        let effort = |g: Option<&str>, m: &str| {
            rows.iter()
                .find(|r| r.dimension.is_none() && r.group.as_deref() == g && r.metric == m)
                .and_then(|r| r.value)
        };
        if panel.sessions > 0 {
            writeln!(out)?;
            writeln!(out, "{}", paint.bold("Cost and effort (mean per item)"))?;
            let mut parts = Vec::new();
            for (m, label) in [
                ("turns_per_item", "turns"),
                ("debate_turns_per_item", "debate turns"),
                ("rounds_per_item", "rounds"),
                ("rounds_with_first_per_item", "rounds counting the first evaluations"),
                ("calls_per_item", "calls"),
                ("tokens_per_item", "tokens"),
            ] {
                if let Some(v) = effort(None, m) {
                    parts.push(format!("{label} {}", fmt_amount(v)));
                }
            }
            if let Some(v) = effort(None, "cached_input_tokens_per_item") {
                let share = effort(None, "cached_input_share").map(|s| format!(", {:.0}% of the prompt", s * 100.0));
                parts.push(format!("cached prompt tokens {}{}", fmt_amount(v), share.unwrap_or_default()));
            }
            if let Some(v) = effort(None, "duration_ms_per_item") {
                parts.push(format!("time {:.1} s", v / 1000.0));
            }
            if let Some(v) = effort(None, "cost_per_item") {
                parts.push(format!("cost {v:.4}"));
            }
            writeln!(out, "{}", parts.join(" · "))?;
            let mut totals = Vec::new();
            if let Some(v) = effort(None, "tokens_total") {
                totals.push(format!("tokens {}", fmt_amount(v)));
            }
            if let Some(v) = effort(None, "cost_total") {
                totals.push(format!("cost {v:.2}"));
            }
            if let Some(v) = effort(None, "overrides_total").filter(|v| *v > 0.0) {
                totals.push(format!("human overrides {v:.0}"));
            }
            writeln!(out, "totals: {}", totals.join(" · "))?;
            for g in &panel.groups {
                let t = effort(Some(g), "turns_per_item").map(fmt_amount).unwrap_or_else(|| "—".into());
                let k = effort(Some(g), "tokens_per_item").map(fmt_amount).unwrap_or_else(|| "—".into());
                writeln!(out, "  {}: turns {t} · tokens {k}", g)?;
            }
        }
    }
    if !notes.reasons.is_empty() {
        writeln!(out)?;
        for (i, r) in notes.reasons.iter().enumerate() {
            writeln!(out, "{}", paint.dim(&format!("[{}] undefined: {r}", i + 1)))?;
        }
    }
    for n in &report.notes {
        writeln!(out, "{}", paint.yellow(&format!("note: {n}")))?;
    }
    Ok(())
}
