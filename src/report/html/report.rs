//! The page of a report: the run's panels and settings, every table of
//! `moot report` as the terminal prints it (the paper's with `--paper`),
//! every number as one table, the charts of `--plot` inline, and the items
//! with links to their session pages when those were written beside it.

use super::layout::{self, meta_list, score};
use super::markup::Html;
use super::svg;
use crate::paint::Paint;
use crate::report::build::Report;
use crate::report::format::{self, TableOptions};
use crate::report::paper::PaperReport;
use crate::report::plot::{self, PlotError};

/// One item of the run, for the index of items.
#[derive(Debug, Clone)]
pub struct ItemEntry {
    pub item: String,
    pub session: String,
    pub panel: String,
    pub status: String,
    pub started: String,
    /// The panel's result with people's changes, key by key.
    pub result: Vec<(String, f64)>,
    /// The session's page, relative to the report's page, when written.
    pub href: Option<String>,
}

/// What a report page shows.
pub struct ReportPage<'a> {
    pub report: &'a Report,
    /// The paper's tables, with `--paper`.
    pub paper: Option<&'a PaperReport>,
    /// The paths the logs were read from, as given.
    pub sources: Vec<String>,
    /// The human ratings file, with `--human`.
    pub human: Option<String>,
    /// `--agents`: each agent's own correlations in the tables.
    pub agents: bool,
    pub items: &'a [ItemEntry],
}

/// The whole page.
pub fn report_page(p: &ReportPage) -> Result<String, PlotError> {
    let mut h = Html::new();
    settings(&mut h, p);
    panels(&mut h, p.report);
    tables(&mut h, p);
    charts(&mut h, p.report)?;
    items(&mut h, p.items);
    Ok(layout::page(&format!("moot report — {}", p.sources.join(", ")), &h))
}

fn settings(h: &mut Html, p: &ReportPage) {
    let r = p.report;
    meta_list(
        h,
        &[
            ("logs from", p.sources.join(", ")),
            ("human ratings", p.human.clone().unwrap_or_else(|| "from the items and sessions".into())),
            (
                "intervals",
                if r.bootstrap == 0 {
                    "none (--bootstrap 0)".into()
                } else {
                    format!("{:.0}% bootstrap, {} resamples, seed {}", r.level * 100.0, r.bootstrap, r.seed)
                },
            ),
            ("paper", p.paper.map(|x| format!("{} — {}", x.paper, x.title)).unwrap_or_default()),
        ],
    );
    for n in &r.notes {
        h.elem("p", &[("class", "what")], &format!("note: {n}"));
    }
}

fn panels(h: &mut Html, r: &Report) {
    h.elem("h2", &[], "Panels");
    let header: Vec<String> =
        ["panel", "protocol", "dimensions", "groups", "models", "sessions", "rated items", "logs"]
            .map(String::from)
            .to_vec();
    let rows: Vec<Vec<String>> = r
        .panels
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.protocol.clone(),
                p.keys.join(", "),
                p.groups.join(", "),
                p.models.join(", "),
                p.sessions.to_string(),
                p.rated_items.to_string(),
                p.logs.iter().map(|(k, n)| format!("{n} {k}")).collect::<Vec<_>>().join(", "),
            ]
        })
        .collect();
    layout::table(h, "panels", &header, &rows);
}

fn tables(h: &mut Html, p: &ReportPage) {
    let plain = Paint { enabled: false };
    let mut text = Vec::new();
    let written = match p.paper {
        Some(paper) => crate::report::paper::render::write_table(paper, &mut text, plain),
        None => format::write_table_with(p.report, &mut text, plain, TableOptions { agents: p.agents }),
    };
    h.elem("h2", &[], if p.paper.is_some() { "The paper's tables" } else { "Tables" });
    match written {
        Ok(()) => {
            h.elem("pre", &[("class", "table")], &String::from_utf8_lossy(&text));
        }
        Err(e) => {
            h.elem("p", &[("class", "error")], &format!("the tables could not be written: {e}"));
        }
    }
    if let Some(paper) = p.paper.filter(|x| !x.unfilled.is_empty()) {
        h.elem("p", &[("class", "what")], &format!("not filled: {}", paper.unfilled.join("; ")));
    }
    let rows = &p.report.rows;
    h.open("details", &[]).elem(
        "summary",
        &[],
        &format!("every number of the report ({} rows, as --format csv)", rows.len()),
    );
    let header: Vec<String> =
        ["panel", "dimension", "group", "agent", "stage", "metric", "value", "interval", "n", "why none"]
            .map(String::from)
            .to_vec();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.panel.clone(),
                r.dimension.clone().unwrap_or_default(),
                r.group.clone().unwrap_or_default(),
                r.agent.clone().or_else(|| r.system.clone()).unwrap_or_default(),
                r.stage.map(|s| s.as_str().to_string()).unwrap_or_default(),
                r.metric.clone(),
                r.value.map(|v| format!("{v:.4}")).unwrap_or_default(),
                match (r.ci_low, r.ci_high) {
                    (Some(a), Some(b)) => format!("[{a:.3}, {b:.3}]"),
                    _ => String::new(),
                },
                r.n.map(|n| n.to_string()).unwrap_or_default(),
                r.undefined_reason.clone().unwrap_or_default(),
            ]
        })
        .collect();
    layout::table(h, "rows", &header, &cells);
    h.close("details");
}

fn charts(h: &mut Html, r: &Report) -> Result<(), PlotError> {
    let charts = plot::charts(r)?;
    if charts.is_empty() {
        return Ok(());
    }
    h.elem("h2", &[], "Charts");
    h.open("div", &[("class", "plots")]);
    for c in &charts {
        h.open("figure", &[("class", "plot")]).elem("figcaption", &[], &c.title);
        svg::image(h, &c.title, &c.svg);
        h.close("figure");
    }
    h.close("div");
    Ok(())
}

fn items(h: &mut Html, items: &[ItemEntry]) {
    if items.is_empty() {
        return;
    }
    h.elem("h2", &[], &format!("Items ({})", items.len()));
    h.open("table", &[("class", "items")]).open("tr", &[]);
    for c in ["item", "panel", "status", "started", "result", "session"] {
        h.elem("th", &[], c);
    }
    h.close("tr");
    for it in items {
        h.open("tr", &[]);
        for c in [&it.item, &it.panel, &it.status, &it.started] {
            h.elem("td", &[], c);
        }
        let result: Vec<String> = it.result.iter().map(|(k, v)| format!("{k} {}", score(*v))).collect();
        h.elem("td", &[], &result.join(", "));
        h.open("td", &[]);
        match &it.href {
            Some(href) => {
                h.elem("a", &[("href", href)], &it.session);
            }
            None => {
                h.text(&it.session);
            }
        }
        h.close("td").close("tr");
    }
    h.close("table");
}
