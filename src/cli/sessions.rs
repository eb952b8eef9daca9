//! `moot sessions list|show|export`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use super::SessionsCommand;
use super::headless::{Paint, Transcript};
use crate::engine::prompts::fmt_num;
use crate::session::fold::SessionView;
use crate::session::{default_sessions_dir, read_log};

pub fn run(command: SessionsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SessionsCommand::List { dir } => list(&dir.unwrap_or_else(default_sessions_dir)),
        SessionsCommand::Show { session, json } => show(&session, json),
        SessionsCommand::Export { session, format } => export(&session, &format),
    }
}

/// Every `*.jsonl` log under `dir` (run folders included), newest first by name.
pub fn find_logs(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort_by(|a, b| b.file_name().cmp(&a.file_name()));
    out
}

/// A session argument: a path to a log, or an id (or id prefix) under the sessions folder.
pub fn resolve_session(arg: &str) -> anyhow::Result<PathBuf> {
    let p = Path::new(arg);
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    let dir = default_sessions_dir();
    let logs = find_logs(&dir);
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
    for w in log.warnings() {
        eprintln!("moot: {}: {w}", path.display());
    }
    if log.events.is_empty() {
        bail!("{}: no events in this session log", path.display());
    }
    Ok(SessionView::from_events(&log.events))
}

fn list(dir: &Path) -> anyhow::Result<ExitCode> {
    let logs = find_logs(dir);
    if logs.is_empty() {
        println!("no sessions under {}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<26} {:<17} {:<20} {:<10} {:<12} {:<9} {:>7}",
        "SESSION", "STARTED", "PANEL", "ITEM", "PROTOCOL", "STATUS", "OVERALL"
    )?;
    for path in logs {
        let Ok(log) = read_log(&path) else { continue };
        let v = SessionView::from_events(&log.events);
        let started = v.started.map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default();
        let panel = v.panel.as_ref().map(|p| p.name.clone()).unwrap_or_default();
        let item = v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default();
        let status = if v.state.is_ended() { v.state.label().to_string() } else { "incomplete".into() };
        let overall = v
            .aggregate
            .as_ref()
            .and_then(|a| a.overall)
            .map(|o| fmt_num((o * 100.0).round() / 100.0))
            .unwrap_or_else(|| "—".into());
        let id = if v.session_id.is_empty() {
            path.file_stem().unwrap_or_default().to_string_lossy().to_string()
        } else {
            v.session_id.clone()
        };
        writeln!(
            out,
            "{:<26} {:<17} {:<20} {:<10} {:<12} {:<9} {:>7}",
            truncate(&id, 26),
            started,
            truncate(&panel, 20),
            truncate(&item, 10),
            v.protocol,
            status,
            overall
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n { s.to_string() } else { format!("{}…", s.chars().take(n - 1).collect::<String>()) }
}

fn show(arg: &str, json: bool) -> anyhow::Result<ExitCode> {
    let path = resolve_session(arg)?;
    let log = read_log(&path).with_context(|| format!("cannot read {}", path.display()))?;
    for w in log.warnings() {
        eprintln!("moot: {}: {w}", path.display());
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
    if !log.events.iter().any(|e| e.kind.type_name() == "session_ended") {
        drop(t);
        println!("\n(the session has no end: it is still running, or it was cut off)");
    }
    Ok(ExitCode::SUCCESS)
}

/// Who, which group, which stage, and the scores.
type ExportRow = (String, Option<String>, String, std::collections::BTreeMap<String, f64>);

/// One row per agent and stage, plus the aggregates.
fn export(arg: &str, format: &str) -> anyhow::Result<ExitCode> {
    let path = resolve_session(arg)?;
    let v = load_view(&path)?;
    let mut keys = v.dimension_keys();
    keys.push("overall".into());
    let mut rows: Vec<ExportRow> = Vec::new();
    for a in &v.agents {
        for (stage, ev) in [("initial", &a.initial), ("final", &a.final_eval.clone().or(a.latest.clone()))] {
            if let Some(ev) = ev {
                let mut s = ev.scores.clone();
                if let Some(o) = ev.overall {
                    s.insert("overall".into(), o);
                }
                rows.push((a.info.name.clone(), Some(a.info.group.clone()), stage.into(), s));
            }
        }
    }
    for g in &v.groups {
        if let Some(agg) = &g.aggregate {
            let mut s = agg.scores.clone();
            if let Some(o) = agg.overall {
                s.insert("overall".into(), o);
            }
            rows.push(("(group result)".into(), Some(g.name.clone()), "aggregate".into(), s));
        }
    }
    if let Some(agg) = &v.aggregate {
        let mut s = agg.scores.clone();
        if let Some(o) = agg.overall {
            s.insert("overall".into(), o);
        }
        rows.push(("(panel result)".into(), None, "aggregate".into(), s));
    }
    let item = v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default();
    let mut out = std::io::stdout().lock();
    match format {
        "json" => {
            let arr: Vec<serde_json::Value> = rows
                .iter()
                .map(|(who, group, stage, s)| {
                    serde_json::json!({"session": v.session_id, "item": item, "agent": who, "group": group, "stage": stage, "scores": s})
                })
                .collect();
            serde_json::to_writer_pretty(&mut out, &arr)?;
            writeln!(out)?;
        }
        "csv" => {
            let mut w = csv::Writer::from_writer(out);
            let mut header = vec!["session".to_string(), "item".into(), "agent".into(), "group".into(), "stage".into()];
            header.extend(keys.iter().cloned());
            w.write_record(&header)?;
            for (who, group, stage, s) in &rows {
                let mut rec = vec![
                    v.session_id.clone(),
                    item.clone(),
                    who.clone(),
                    group.clone().unwrap_or_default(),
                    stage.clone(),
                ];
                rec.extend(keys.iter().map(|k| s.get(k).map(|x| x.to_string()).unwrap_or_default()));
                w.write_record(&rec)?;
            }
            w.flush()?;
        }
        other => bail!("--format: unknown format \"{other}\"; valid: json, csv"),
    }
    Ok(ExitCode::SUCCESS)
}
