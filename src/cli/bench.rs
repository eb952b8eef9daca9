//! `moot bench`: what a person waits for in a run, measured. Runs a panel on
//! one item headless (the bundled sample panel on the embedded default model
//! unless told otherwise), with no response cache, and reports the time to
//! build the providers (fetching nothing: a missing model is an error),
//! the time from the session's start to the first agent's scores, to the
//! first evaluation of every agent, and to the end of the whole run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;

use super::ModelArgs;
use super::run::{load_item, load_panel};
use crate::config::registry::Registry;
use crate::engine::{self, EngineConfig};
use crate::session::event::{EndStatus, EventKind, Phase};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Panel file, or the name of a bundled panel (default: the bundled sample panel).
    pub panel: Option<String>,
    /// Items file (JSONL, JSON or CSV); default: the panel's bundled items.
    #[arg(long)]
    pub item: Option<PathBuf>,
    /// Which item of the file (default: the first).
    #[arg(long)]
    pub id: Option<String>,
    /// How many runs, one after another.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub runs: u32,
    /// Folder for the session logs (default: a temporary folder, removed afterwards).
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub models: ModelArgs,
}

/// The times of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Building the providers (loading a local model).
    pub setup: Duration,
    /// From the session's start to the first score on screen: the first
    /// score of a reply as it streams (or, when none streams, the first
    /// readable evaluation).
    pub first_score: Option<Duration>,
    /// To the first evaluation of every agent (the end of the initial phase).
    pub all_first: Option<Duration>,
    /// From the session's start to its end.
    pub whole: Duration,
    pub turns: u64,
    pub output_tokens: u64,
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let temp = std::env::temp_dir().join(format!("moot-bench-{}", std::process::id()));
    let dir = args.out.clone().unwrap_or_else(|| temp.clone());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let result = bench(&args, &dir);
    if args.out.is_none() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    result
}

fn bench(args: &BenchArgs, dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut out = std::io::stdout().lock();
    let mut timings = Vec::new();
    for n in 1..=args.runs {
        let started = Instant::now();
        let config = prepare(args)?;
        let setup = started.elapsed();
        if n == 1 {
            writeln!(
                out,
                "{} · {} · {}",
                config.panel.name,
                config.item.id,
                config.provider_note.as_deref().unwrap_or("default provider")
            )?;
            writeln!(
                out,
                "{:>3}  {:>8}  {:>11}  {:>13}  {:>10}  {:>5}  {:>10}",
                "run", "setup", "first score", "all evaluated", "whole run", "turns", "tokens out"
            )?;
        }
        let timing = runtime.block_on(measure(config, dir, setup))?;
        writeln!(out, "{}", row(&n.to_string(), &timing))?;
        out.flush()?;
        timings.push(timing);
    }
    if timings.len() > 1 {
        writeln!(out, "{}", row("med", &median(&timings)))?;
    }
    if let Some(dir) = &args.out {
        writeln!(out, "session logs: {}", dir.display())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The engine configuration of one run: the panel and item, providers built
/// without a response cache.
fn prepare(args: &BenchArgs) -> anyhow::Result<EngineConfig> {
    let mut panel = load_panel(args.panel.as_deref())?;
    let run_args = super::RunArgs { item: args.item.clone(), id: args.id.clone(), ..Default::default() };
    let item = load_item(&panel, &run_args)?;
    let mut registry = Registry::from_env()?;
    let (bindings, seed) = args.models.bind(&mut panel, &mut registry)?;
    let mut config = EngineConfig::new(Arc::new(panel), item, bindings);
    config.provider_note = Some(registry.default_reason.clone());
    config.seed = seed;
    Ok(config)
}

/// Run one session to its end, timing its events as they arrive.
async fn measure(config: EngineConfig, dir: &std::path::Path, setup: Duration) -> anyhow::Result<Timing> {
    let path = dir.join(format!("{}.jsonl", config.session_id));
    let start = Instant::now();
    let panel = config.panel.clone();
    let engine::Started { events: mut rx, handle: _handle, task: engine } = engine::start(config, &path)?;
    let (mut first_score, mut all_first) = (None, None);
    let mut turns = 0;
    // Replies as they stream, until the first score shows (as the live
    // screen shows it: as soon as it is written).
    let mut streaming: std::collections::HashMap<u64, String> = Default::default();
    while let Some(event) = rx.recv().await {
        if first_score.is_none()
            && let EventKind::TurnDelta { turn, text } = &event.kind
        {
            let so_far = streaming.entry(*turn).or_default();
            so_far.push_str(text);
            if engine::prompts::streaming_evaluation(&panel, so_far).is_some() {
                first_score = Some(start.elapsed());
                streaming.clear();
            }
        }
        if let EventKind::TurnCompleted { evaluation, .. } = &event.kind {
            turns += 1;
            if evaluation.is_some() {
                first_score.get_or_insert(start.elapsed());
            }
        }
        // The phase after the first evaluations starts once every agent has given one.
        if let EventKind::PhaseStarted { phase, .. } = &event.kind
            && *phase != Phase::Initial
        {
            all_first.get_or_insert(start.elapsed());
        }
    }
    let whole = start.elapsed();
    let outcome = engine.await.context("the engine stopped unexpectedly")?;
    if outcome.status == EndStatus::Failed {
        bail!("the run failed: {}", outcome.error.unwrap_or_default());
    }
    Ok(Timing { setup, first_score, all_first, whole, turns, output_tokens: outcome.usage.total.output_tokens })
}

fn secs(d: Option<Duration>) -> String {
    d.map_or_else(|| "—".to_string(), |d| format!("{:.1} s", d.as_secs_f64()))
}

fn row(label: &str, t: &Timing) -> String {
    format!(
        "{label:>3}  {:>8}  {:>11}  {:>13}  {:>10}  {:>5}  {:>10}",
        secs(Some(t.setup)),
        secs(t.first_score),
        secs(t.all_first),
        secs(Some(t.whole)),
        t.turns,
        t.output_tokens
    )
}

/// The median of each column over the runs.
pub fn median(timings: &[Timing]) -> Timing {
    fn mid<T: Copy + PartialOrd>(mut v: Vec<T>) -> Option<T> {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        v.get(v.len() / 2).copied()
    }
    Timing {
        setup: mid(timings.iter().map(|t| t.setup).collect()).unwrap_or_default(),
        first_score: mid(timings.iter().filter_map(|t| t.first_score).collect()),
        all_first: mid(timings.iter().filter_map(|t| t.all_first).collect()),
        whole: mid(timings.iter().map(|t| t.whole).collect()).unwrap_or_default(),
        turns: mid(timings.iter().map(|t| t.turns).collect()).unwrap_or_default(),
        output_tokens: mid(timings.iter().map(|t| t.output_tokens).collect()).unwrap_or_default(),
    }
}
