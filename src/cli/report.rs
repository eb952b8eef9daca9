//! `moot report`: agreement with human ratings from run folders and session logs.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use anyhow::Context;

use super::ReportArgs;
use super::headless::Paint;
use crate::report::format::{self, Format};
use crate::report::{ReportOptions, build_report, collect_logs, load_human_file, load_records};

pub fn run(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let format: Format = args.format.parse().map_err(anyhow::Error::msg)?;
    // A wrong paper name is known before any log is read.
    let paper = args.paper.as_deref().map(crate::report::paper::load).transpose()?;
    let files = collect_logs(&args.paths)?;
    if files.is_empty() {
        anyhow::bail!("no session logs (*.jsonl) in {}", describe(&args.paths));
    }
    let mut options = ReportOptions { bootstrap: args.bootstrap, seed: args.seed, ..ReportOptions::default() };
    options.pricing = super::eval::pricing(args.price_input, args.price_output)?
        .or_else(|| args.paths.iter().filter(|p| p.is_dir()).find_map(|p| crate::report::load::folder_pricing(p)));
    let loaded = load_records(&files, options.threads);
    for p in &loaded.problems {
        eprintln!("moot report: warning: {p} (skipped)");
    }
    let bad: usize = loaded.records.iter().map(|r| r.bad_lines).sum();
    if bad > 0 {
        eprintln!("moot report: warning: {bad} lines in the logs were not valid events and were skipped");
    }
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
    let report = build_report(loaded.records, human.as_ref(), &options);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let written = if let Some(spec) = &paper {
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
            Format::Table => render::write_table(&filled, &mut out, Paint::for_stream(std::io::stdout().is_terminal())),
            Format::Csv => render::write_csv(&filled, &mut out),
            Format::Json => render::write_json(&filled, &mut out),
        }
    } else {
        match format {
            Format::Table => format::write_table_with(
                &report,
                &mut out,
                Paint::for_stream(std::io::stdout().is_terminal()),
                format::TableOptions { agents: args.agents },
            ),
            Format::Csv => format::write_csv(&report, &mut out),
            Format::Json => format::write_json(&report, &mut out),
        }
    };
    match written.and_then(|()| out.flush()) {
        Ok(()) => {}
        // A closed pipe (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        Err(e) => return Err(e).context("writing the report"),
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

fn describe(paths: &[std::path::PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}
