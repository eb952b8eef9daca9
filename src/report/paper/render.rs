//! Printing a paper's tables: aligned for people, CSV and JSON for tools.

use std::io::{self, Write};

use super::fill::{Cell, Line, PaperReport, PaperTable};
use crate::paint::Paint;
use crate::report::format::{Footnotes, lpad, pad};

/// The CSV columns of `--paper`, in order.
pub const CSV_COLUMNS: [&str; 17] = [
    "paper",
    "table",
    "line",
    "panel",
    "group",
    "agent",
    "models",
    "block",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "undefined_reason",
    "negative",
    "paper_value",
    "paper_model",
];

pub fn write_json(report: &PaperReport, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, report).map_err(io::Error::other)?;
    writeln!(out)
}

pub fn write_csv(report: &PaperReport, out: &mut impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(CSV_COLUMNS).map_err(io::Error::other)?;
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    for t in &report.tables {
        for line in &t.lines {
            for (b, block) in t.blocks.iter().zip(&line.cells) {
                for (stat, c) in t.statistics.iter().zip(block) {
                    w.write_record([
                        report.paper.as_str(),
                        t.id.as_str(),
                        line.label.trim(),
                        line.panel.as_deref().unwrap_or(""),
                        line.group.as_deref().unwrap_or(""),
                        line.agent.as_deref().unwrap_or(""),
                        &line.models.join(";"),
                        b.key.as_str(),
                        stat.as_str(),
                        &num(c.value),
                        &num(c.ci_low),
                        &num(c.ci_high),
                        &c.n.map(|n| n.to_string()).unwrap_or_default(),
                        c.undefined_reason.as_deref().unwrap_or(""),
                        if c.negative { "true" } else { "" },
                        &num(c.paper),
                        line.paper_model.as_deref().unwrap_or(""),
                    ])
                    .map_err(io::Error::other)?;
                }
            }
        }
    }
    w.flush()
}

/// moot's value with its interval, for the table: `0.41 [0.20, 0.58]`,
/// `−0.12` for a negative shown absolute, a footnote mark when undefined.
fn moot_cell(c: &Cell, percent_like: bool, notes: &mut Footnotes, line_has_panel: bool) -> String {
    if !line_has_panel || (c.value.is_none() && c.undefined_reason.is_none()) {
        return String::new();
    }
    let digits = if percent_like { 1 } else { 2 };
    match c.value {
        Some(v) => {
            let sign = if c.negative { "−" } else { "" };
            match (c.ci_low, c.ci_high) {
                (Some(lo), Some(hi)) => format!("{sign}{v:.digits$} [{lo:.digits$}, {hi:.digits$}]"),
                _ => format!("{sign}{v:.digits$}"),
            }
        }
        None => notes.mark(c.undefined_reason.as_deref().unwrap_or("no value")),
    }
}

fn paper_cell(c: &Cell, percent_like: bool) -> String {
    match c.paper {
        Some(v) if percent_like => format!("{v:.1}"),
        Some(v) if v.fract() == 0.0 && v.abs() >= 1.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => "·".into(),
    }
}

pub fn write_table(report: &PaperReport, out: &mut impl Write, paint: Paint) -> io::Result<()> {
    writeln!(out, "{}", paint.bold(&format!("{} — {}", report.paper, report.title)))?;
    for n in &report.notes {
        writeln!(out, "  · {n}")?;
    }
    for t in &report.tables {
        writeln!(out)?;
        write_one(report, t, out, paint)?;
    }
    for u in &report.unfilled {
        writeln!(out)?;
        writeln!(out, "not filled: {u}")?;
    }
    Ok(())
}

fn write_one(report: &PaperReport, t: &PaperTable, out: &mut impl Write, paint: Paint) -> io::Result<()> {
    writeln!(out, "{}", paint.bold(&t.caption))?;
    let paper_n = t.paper_n.map(|n| format!(", n = {n}")).unwrap_or_default();
    writeln!(out, "  paper: {}{paper_n}", t.dataset)?;
    let mut models: Vec<String> = Vec::new();
    for l in t.lines.iter().filter(|l| l.panel.is_some()) {
        let m = format!(
            "{} — {}",
            l.panel.as_deref().unwrap_or(""),
            if l.models.is_empty() { "no model recorded".into() } else { l.models.join(", ") }
        );
        if !models.contains(&m) {
            models.push(m);
        }
    }
    for m in &models {
        writeln!(out, "  moot:  {m}")?;
    }
    if report.bootstrap > 0 {
        writeln!(
            out,
            "  intervals: {:.0}% bootstrap, {} resamples; paper figures in the second column of each pair (· not reported)",
            report.level * 100.0,
            report.bootstrap
        )?;
    }
    let mut notes = Footnotes::default();
    let percent_like: Vec<bool> = t.statistics.iter().map(|s| s.contains('%')).collect();
    let label_w =
        t.lines.iter().map(|l| unicode_width::UnicodeWidthStr::width(l.label.as_str())).max().unwrap_or(4).max(4);
    for (bi, block) in t.blocks.iter().enumerate() {
        if t.blocks.len() > 1 || block.label != "Pairwise" {
            writeln!(out, "  {}", paint.bold(&block.label))?;
        }
        // Render every cell first to size the columns.
        let rendered: Vec<Vec<(String, String)>> = t
            .lines
            .iter()
            .map(|l: &Line| {
                l.cells[bi]
                    .iter()
                    .zip(&percent_like)
                    .map(|(c, &p)| (moot_cell(c, p, &mut notes, l.panel.is_some()), paper_cell(c, p)))
                    .collect()
            })
            .collect();
        let widths: Vec<(usize, usize)> = (0..t.statistics.len())
            .map(|i| {
                let mw =
                    rendered.iter().map(|r| unicode_width::UnicodeWidthStr::width(r[i].0.as_str())).max().unwrap_or(0);
                let pw =
                    rendered.iter().map(|r| unicode_width::UnicodeWidthStr::width(r[i].1.as_str())).max().unwrap_or(0);
                let head = unicode_width::UnicodeWidthStr::width(t.statistics[i].as_str());
                (mw.max(head), pw.max(5))
            })
            .collect();
        let n_w = 4;
        let mut head = format!("    {}  {}", pad("", label_w), lpad("n", n_w));
        for (s, (mw, pw)) in t.statistics.iter().zip(&widths) {
            head.push_str(&format!("  {}  {}", lpad(s, *mw), lpad("paper", *pw)));
        }
        writeln!(out, "{}", paint.dim(head.trim_end()))?;
        for (l, cells) in t.lines.iter().zip(&rendered) {
            let n = l.cells[bi].iter().find_map(|c| c.n).map(|n| n.to_string()).unwrap_or_default();
            let mut line = format!("    {}  {}", pad(&l.label, label_w), lpad(&n, n_w));
            for ((m, p), (mw, pw)) in cells.iter().zip(&widths) {
                line.push_str(&format!("  {}  {}", lpad(m, *mw), lpad(p, *pw)));
            }
            writeln!(out, "{}", line.trim_end())?;
        }
    }
    let paper_models: Vec<String> =
        t.lines.iter().filter_map(|l| l.paper_model.as_ref().map(|m| format!("{}: {m}", l.label.trim()))).collect();
    if !paper_models.is_empty() {
        writeln!(out, "  paper's models — {}", paper_models.join("; "))?;
    }
    if let Some(s) = &t.summary {
        writeln!(out, "  {s}")?;
    }
    if let Some(s) = &t.paper_summary {
        writeln!(out, "  paper: {s}")?;
    }
    for (i, reason) in notes.reasons().iter().enumerate() {
        writeln!(out, "  [{}] {reason}", i + 1)?;
    }
    Ok(())
}
