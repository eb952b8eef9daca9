//! `moot report`: agreement with human ratings from run folders and session logs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::ReportArgs;
use super::headless::Paint;
use crate::report::format::{self, Format};
use crate::report::html::report::ItemEntry;
use crate::report::html::{file_stem, session_page};
use crate::report::{ItemRecord, ReportOptions, build_report, collect_logs, load_human_file, load_records};

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let format: Format = args.format.parse().map_err(anyhow::Error::msg)?;
    // A wrong paper name is known before any log is read.
    let paper = args.paper.as_deref().map(crate::report::paper::load).transpose()?;
    let files = collect_logs(&args.paths)?;
    if files.is_empty() {
        anyhow::bail!("no session logs (*.jsonl) in {}", describe(&args.paths));
    }
    let mut options = ReportOptions { bootstrap: args.bootstrap, seed: args.seed, ..ReportOptions::default() };
    options.pricing = super::eval::pricing(args.price_input, args.price_output)?;
    if options.pricing.is_none() {
        for dir in args.paths.iter().filter(|p| p.is_dir()) {
            match crate::report::load::folder_pricing(dir) {
                Ok(Some(p)) => {
                    options.pricing = Some(p);
                    break;
                }
                Ok(None) => {}
                Err(why) => eprintln!("moot report: warning: {why}"),
            }
        }
    }
    let loaded = load_records(&files, options.threads);
    for p in &loaded.problems {
        eprintln!("moot report: warning: {p} (skipped)");
    }
    report_bad_lines(&loaded.records);
    if loaded.records.is_empty() {
        anyhow::bail!("none of the {} files in {} is a readable session log", files.len(), describe(&args.paths));
    }
    let human = match &args.human {
        Some(path) => {
            let h = load_human_file(path)?;
            for p in &h.problems {
                eprintln!("moot report: {}: {p}", h.source);
            }
            Some(h)
        }
        None => None,
    };
    let items = if format == Format::Html { html_items(&loaded.records) } else { Vec::new() };
    let report = build_report(loaded.records, human.as_ref(), &options);
    let stdout = std::io::stdout();
    let to_terminal = args.out.is_none() && stdout.is_terminal();
    let page_dir = args.out.as_deref().filter(|p| format == Format::Html && is_folder(p));
    let mut out: Box<dyn Write> = match (&args.out, page_dir) {
        (_, Some(dir)) => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            let path = dir.join("index.html");
            Box::new(std::io::BufWriter::new(
                std::fs::File::create(&path).with_context(|| format!("cannot write {}", path.display()))?,
            ))
        }
        (Some(file), None) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(file).with_context(|| format!("cannot write {}", file.display()))?,
        )),
        (None, None) => Box::new(stdout.lock()),
    };
    let mut items = items;
    if let Some(dir) = page_dir {
        let written = write_session_pages(&mut items, dir)?;
        eprintln!("moot report: {written} session pages written to {}", dir.join("sessions").display());
    }
    let items: Vec<ItemEntry> = items.into_iter().map(|(entry, _)| entry).collect();
    let written = if format == Format::Html {
        let filled = paper.as_ref().map(|spec| crate::report::paper::fill(spec, &report));
        let page = crate::report::html::report::report_page(&crate::report::html::report::ReportPage {
            report: &report,
            paper: filled.as_ref(),
            sources: args.paths.iter().map(|p| p.display().to_string()).collect(),
            human: args.human.as_ref().map(|p| p.display().to_string()),
            agents: args.agents,
            items: &items,
        })?;
        out.write_all(page.as_bytes())
    } else if let Some(spec) = &paper {
        let filled = crate::report::paper::fill(spec, &report);
        if filled.tables.is_empty() {
            anyhow::bail!(
                "no table of {} can be filled from {}:\n  {}",
                spec.name,
                describe(&args.paths),
                filled.unfilled.join("\n  ")
            );
        }
        use crate::report::paper::render;
        match format {
            Format::Table => render::write_table(&filled, &mut out, Paint::for_stream(to_terminal)),
            Format::Csv => render::write_csv(&filled, &mut out),
            Format::Json | Format::Html => render::write_json(&filled, &mut out),
        }
    } else {
        match format {
            Format::Table => format::write_table_with(
                &report,
                &mut out,
                Paint::for_stream(to_terminal),
                format::TableOptions { agents: args.agents },
            ),
            Format::Csv => format::write_csv(&report, &mut out),
            Format::Json | Format::Html => format::write_json(&report, &mut out),
        }
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => {}
        // A closed pipe (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e).context("writing the report"),
    }
    drop(out);
    if let Some(p) = &args.out {
        let page = if page_dir.is_some() { p.join("index.html") } else { p.clone() };
        eprintln!("moot report: {} written", page.display());
    }
    if format != Format::Table {
        for p in &report.panels {
            let sources: Vec<String> = p.human_sources.iter().map(|(k, v)| format!("{k} {v}")).collect();
            eprintln!(
                "moot report: {}: {} sessions, {} rated items; human values by source: {}",
                p.name,
                p.sessions,
                p.rated_items,
                if sources.is_empty() { "none".into() } else { sources.join(", ") }
            );
        }
        for n in &report.notes {
            eprintln!("moot report: note: {n}");
        }
    }
    if let Some(dir) = &args.plot {
        let files = crate::report::plot::write_plots(&report, dir)?;
        eprintln!("moot report: {} charts written to {}", files.len(), dir.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// `--out` names a folder: it is one, or it ends with a separator.
fn is_folder(p: &Path) -> bool {
    p.is_dir() || p.as_os_str().to_string_lossy().ends_with(std::path::MAIN_SEPARATOR)
}

/// The items of the run for the report page's index, in the order read.
fn html_items(records: &[ItemRecord]) -> Vec<(ItemEntry, PathBuf)> {
    records
        .iter()
        .map(|r| {
            let result = r.adjusted.as_ref().or(r.aggregate.as_ref());
            let result = r
                .panel
                .keys
                .iter()
                .zip(result.map(|v| v.to_vec()).unwrap_or_default())
                .filter_map(|(k, v)| v.map(|v| (k.clone(), v)))
                .collect();
            let entry = ItemEntry {
                item: r.item_id.clone(),
                session: r.session_id.clone(),
                panel: r.panel.name.clone(),
                status: r.status.as_str().to_string(),
                started: r.started.map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default(),
                result,
                href: None,
            };
            (entry, r.source.clone())
        })
        .collect()
}

/// Each item's session page under `dir/sessions/`, linked from its row;
/// returns how many were written.
fn write_session_pages(items: &mut [(ItemEntry, PathBuf)], dir: &Path) -> anyhow::Result<usize> {
    let sessions = dir.join("sessions");
    std::fs::create_dir_all(&sessions).with_context(|| format!("cannot create {}", sessions.display()))?;
    let mut taken = std::collections::HashSet::new();
    let mut written = 0;
    for (entry, source) in items.iter_mut() {
        let log = match crate::session::read_log(source) {
            Ok(log) if !log.events.is_empty() => log,
            _ => continue,
        };
        let view = crate::session::fold::SessionView::from_events(&log.events);
        let base = file_stem(if entry.session.is_empty() { &entry.item } else { &entry.session });
        let mut name = format!("{base}.html");
        let mut n = 1;
        while !taken.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}.html");
        }
        let path = sessions.join(&name);
        std::fs::write(&path, session_page(&view)).with_context(|| format!("cannot write {}", path.display()))?;
        entry.href = Some(format!("sessions/{name}"));
        written += 1;
    }
    Ok(written)
}

/// How many damaged lines are named one by one; the rest are counted.
const NAMED_BAD_LINES: usize = 20;

/// Name the lines of the logs that were skipped, and last lines cut by a crash.
fn report_bad_lines(records: &[ItemRecord]) {
    let problems: Vec<_> = records.iter().flat_map(|r| &r.bad_lines).collect();
    for p in problems.iter().take(NAMED_BAD_LINES) {
        if p.is_torn() {
            eprintln!("moot report: note: {p}");
        } else {
            eprintln!("moot report: warning: {p} (line skipped)");
        }
    }
    if problems.len() > NAMED_BAD_LINES {
        eprintln!("moot report: warning: {} more lines of the logs were skipped", problems.len() - NAMED_BAD_LINES);
    }
}

fn describe(paths: &[std::path::PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
