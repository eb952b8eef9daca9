//! `moot sessions list|show|export`.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use super::SessionsCommand;
use super::headless::{Paint, Transcript};
use crate::engine::prompts::fmt_num;
use crate::session::event::Evaluation;
use crate::session::fold::SessionView;
use crate::session::stages::{self, with_overall};
use crate::session::{LoadedLog, default_sessions_dir, read_log};
use crate::tui::screens::home::list_status;

pub fn run(command: SessionsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SessionsCommand::List { dir } => list(&dir.unwrap_or_else(default_sessions_dir)),
        SessionsCommand::Show { session, json } => show(&session, json),
        SessionsCommand::Export { session, format, out } => export(&session, &format, out.as_deref()),
    }
}

/// A session argument: a path to a log, or an id (or id prefix) under the sessions folder.
pub fn resolve_session(arg: &str) -> anyhow::Result<PathBuf> {
    let p = Path::new(arg);
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    let dir = default_sessions_dir();
    let logs = crate::session::find_logs(&dir);
    let stem = |l: &PathBuf| l.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
    if let Some(exact) = logs.iter().find(|l| stem(l) == arg) {
        return Ok(exact.clone());
    }
    let matches: Vec<&PathBuf> = logs.iter().filter(|l| stem(l).starts_with(arg)).collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => bail!("no session \"{arg}\": not a file, and no log with that id under {}", dir.display()),
        many => bail!(
            "\"{arg}\" matches {} sessions under {}: {}",
            many.len(),
            dir.display(),
            many.iter().take(5).map(|l| stem(l)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// Load and fold a log, printing its warnings to stderr.
pub fn load_view(path: &Path) -> anyhow::Result<SessionView> {
    let log = read_log(path).with_context(|| format!("cannot read {}", path.display()))?;
    warn(&log);
    if log.events.is_empty() {
        bail!("{}", no_events(path, &log));
    }
    Ok(SessionView::from_events(&log.events))
}

/// Print what is wrong with a log to stderr: damaged lines are skipped, a
/// cut last line is ignored.
pub fn warn(log: &LoadedLog) {
    for p in &log.problems {
        eprintln!("moot: warning: {p} (line skipped)");
    }
    if let Some(p) = &log.torn {
        eprintln!("moot: note: {p}");
    }
}

/// Why a log gave nothing to show: its first problem, when it has one.
pub fn no_events(path: &Path, log: &LoadedLog) -> String {
    match log.all_problems().next() {
        Some(p) => format!("{}: no events could be read from this session log; the first problem: {p}", path.display()),
        None => format!("{}: no events in this session log", path.display()),
    }
}

fn list(dir: &Path) -> anyhow::Result<ExitCode> {
    let logs = crate::session::find_logs(dir);
    if logs.is_empty() {
        println!("no sessions under {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<26} {:<17} {:<20} {:<10} {:<12} {:<10} {:>7}",
        "SESSION", "STARTED", "PANEL", "ITEM", "PROTOCOL", "STATUS", "OVERALL"
    )?;
    let mut damaged = Vec::new();
    for path in logs {
        let log = match read_log(&path) {
            Ok(log) => log,
            Err(e) => {
                damaged.push(format!("{}: cannot read: {e}", path.display()));
                continue;
            }
        };
        if let Some(first) = log.first_damage() {
            let more = log.problems.len() - 1;
            let more = if more > 0 { format!(" (and {more} more)") } else { String::new() };
            damaged.push(format!("{first}{more}: the line is left out"));
        }
        let v = SessionView::from_events(&log.events);
        let started = v.started.map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default();
        let panel = v.panel.as_ref().map(|p| p.name.clone()).unwrap_or_default();
        let item = v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default();
        let status = list_status(&v, &path);
        let overall = v
            .aggregate
            .as_ref()
            .and_then(|a| a.overall)
            .map(|o| fmt_num((o * 100.0).round() / 100.0))
            .unwrap_or_else(|| if v.has_overall() { "—".into() } else { String::new() });
        let id = if v.session_id.is_empty() {
            path.file_stem().unwrap_or_default().to_string_lossy().to_string()
        } else {
            v.session_id.clone()
        };
        writeln!(
            out,
            "{:<26} {:<17} {:<20} {:<10} {:<12} {:<10} {:>7}",
            truncate(&id, 26),
            started,
            truncate(&panel, 20),
            truncate(&item, 10),
            v.protocol,
            status,
            overall
        )?;
    }
    for d in damaged {
        eprintln!("moot sessions: {d}");
    }
    Ok(ExitCode::SUCCESS)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { format!("{}…", s.chars().take(n - 1).collect::<String>()) }
}

fn show(arg: &str, json: bool) -> anyhow::Result<ExitCode> {
    let path = resolve_session(arg)?;
    let log = read_log(&path).with_context(|| format!("cannot read {}", path.display()))?;
    warn(&log);
    if log.events.is_empty() && log.all_problems().next().is_some() {
        bail!("{}", no_events(&path, &log));
    }
    let stdout = std::io::stdout();
    if json {
        let mut out = stdout.lock();
        for e in &log.events {
            serde_json::to_writer(&mut out, e)?;
            writeln!(out)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let paint = Paint::for_stream(stdout.is_terminal());
    let mut t = Transcript::new(stdout.lock(), paint);
    for e in &log.events {
        t.event(e)?;
    }
    t.finish()?;
    if !log.events.iter().any(|e| e.kind.type_name() == "session_ended") {
        drop(t);
        println!("\n(the session has no end: it is still running, or it was cut off)");
    }
    Ok(ExitCode::SUCCESS)
}

/// One exported row: who, which group, which stage, the scores (with
/// `overall`), who set which value, and why a result has no scores.
struct ExportRow {
    agent: String,
    group: Option<String>,
    stage: &'static str,
    scores: BTreeMap<String, f64>,
    /// Labels of categorical dimensions (an agent's evaluations; results have none).
    labels: BTreeMap<String, String>,
    set_by: BTreeMap<String, String>,
    no_result: Option<String>,
}

/// The rows of a session, stage by stage as [`crate::session::stages`] defines them:
/// per agent `initial`, `final` (SAGEval: `evaluator`, `rectified`), `human_adjusted` (and `weighted` when the
/// final evaluation has probability-weighted scores); per group and for the
/// panel `aggregate`, `human_adjusted`.
fn export_rows(v: &SessionView) -> Vec<ExportRow> {
    let mut rows = Vec::new();
    let none = BTreeMap::new;
    for a in &v.stages.agents {
        let group = Some(a.group.clone());
        let row = |stage, ev: &Option<Evaluation>, set_by: BTreeMap<String, String>| {
            ev.as_ref().map(|ev| ExportRow {
                agent: a.name.clone(),
                group: group.clone(),
                stage,
                scores: with_overall(ev),
                labels: ev.labels.clone(),
                set_by,
                no_result: None,
            })
        };
        rows.extend(row(stages::label(&v.protocol, stages::INITIAL), &a.initial, none()));
        rows.extend(row(stages::label(&v.protocol, stages::FINAL), &a.final_, none()));
        rows.extend(row(stages::HUMAN_ADJUSTED, &a.human_adjusted, a.set_by.clone()));
        if let Some(w) = a.final_.as_ref().and_then(|e| e.weighted_scores.clone()) {
            rows.push(ExportRow {
                agent: a.name.clone(),
                group: group.clone(),
                stage: stages::WEIGHTED,
                scores: w,
                labels: BTreeMap::new(),
                set_by: none(),
                no_result: None,
            });
        }
    }
    let results = v.stages.groups.iter().map(|g| ("(group result)", g)).chain([("(panel result)", &v.stages.panel)]);
    for (who, r) in results {
        for (stage, scores, labels, set_by) in [
            (stages::AGGREGATE, &r.aggregate, &r.aggregate_labels, none()),
            (stages::HUMAN_ADJUSTED, &r.human_adjusted, &r.labels, r.set_by.clone()),
        ] {
            if let Some(scores) = scores {
                rows.push(ExportRow {
                    agent: who.to_string(),
                    group: r.group.clone(),
                    stage,
                    scores: scores.clone(),
                    labels: labels.clone(),
                    set_by,
                    no_result: r.no_result.clone(),
                });
            }
        }
    }
    rows
}

/// `grammar=alice;overall=bob`.
fn set_by_cell(set_by: &BTreeMap<String, String>) -> String {
    set_by.iter().map(|(k, who)| format!("{k}={who}")).collect::<Vec<_>>().join(";")
}

/// Where an export goes: a file (`--out`), else stdout.
fn output(out: Option<&Path>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match out {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).with_context(|| format!("cannot write {}", p.display()))?,
        )),
        None => Box::new(std::io::stdout().lock()),
    })
}

fn export(arg: &str, format: &str, out_path: Option<&Path>) -> anyhow::Result<ExitCode> {
    if !matches!(format, "json" | "csv" | "html") {
        bail!("--format: unknown format \"{format}\"; valid: json, csv, html");
    }
    let path = resolve_session(arg)?;
    let v = load_view(&path)?;
    let mut out = output(out_path)?;
    if format == "html" {
        out.write_all(crate::report::html::session_page(&v).as_bytes())?;
        out.flush()?;
        if let Some(p) = out_path {
            eprintln!("moot: {} written", p.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let keys = v.score_keys();
    let rows = export_rows(&v);
    let item = v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default();
    if format == "json" {
        let arr: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "session": v.session_id,
                    "item": item,
                    "agent": r.agent,
                    "group": r.group,
                    "stage": r.stage,
                    "scores": r.scores,
                    "labels": r.labels,
                    "set_by": r.set_by,
                    "no_result": r.no_result,
                })
            })
            .collect();
        serde_json::to_writer_pretty(&mut out, &arr)?;
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut w = csv::Writer::from_writer(out);
    let mut header = vec!["session".to_string(), "item".into(), "agent".into(), "group".into(), "stage".into()];
    header.extend(keys.iter().cloned());
    header.extend(["set_by".to_string(), "no_result".to_string()]);
    w.write_record(&header)?;
    for r in &rows {
        let mut rec = vec![
            v.session_id.clone(),
            item.clone(),
            r.agent.clone(),
            r.group.clone().unwrap_or_default(),
            r.stage.to_string(),
        ];
        // A categorical dimension's column holds its label.
        rec.extend(keys.iter().map(|k| match (r.scores.get(k), r.labels.get(k)) {
            (Some(x), _) => x.to_string(),
            (None, Some(label)) => label.clone(),
            (None, None) => String::new(),
        }));
        rec.push(set_by_cell(&r.set_by));
        rec.push(r.no_result.clone().unwrap_or_default());
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(ExitCode::SUCCESS)
}
