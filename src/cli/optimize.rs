//! `moot optimize`: the judge-prompt optimisation loop, on the live screen
//! (a person reviews every feedback and rewrite) or `--headless`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};
use clap::Args;

use super::ModelArgs;
use super::run::load_panel;
use crate::config::registry::Registry;
use crate::optimize::log::{Decision, LOG_FILE, OptKind, OptRecorder, OptStatus};
use crate::optimize::prompt::{diff, diff_counts};
use crate::optimize::view::OptView;
use crate::optimize::{Example, Objective, OptimizeConfig};
use crate::panel::Panel;
use crate::session::human_name;

#[derive(Debug, Args)]
pub struct OptimizeArgs {
    /// Panel file whose judge text (`task` and `[judge]`) is optimised.
    pub panel: String,
    /// Labelled examples (JSONL, JSON or CSV items with `human: {dimension: label}`).
    #[arg(long)]
    pub data: String,
    /// Stop once the held-out S reaches this.
    #[arg(long, default_value_t = 0.85)]
    pub threshold: f64,
    /// Iterations at most (each judges the picked and held-out examples once).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_iter: u32,
    /// Share of the examples held out for S and never shown to the feedback or rewrite models (above 0, below 1).
    #[arg(long, default_value_t = 0.3)]
    pub holdout: f64,
    /// S: agreement (1 − normalised mean absolute error), accuracy or auc (binary labels); auto:
    /// accuracy when every label is an end of the scale, else agreement.
    #[arg(long, default_value = "auto")]
    pub objective: String,
    /// The dimension whose human label is compared (default: the panel's only dimension, else `overall`).
    #[arg(long)]
    pub dimension: Option<String>,
    /// Clusters of the training examples (k-means on TF-IDF of their text).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub clusters: u32,
    /// Examples drawn from each cluster every iteration.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub per_cluster: u32,
    /// Judge runs at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: u32,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Run folder for the log (default: runs/optimize-<id>).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Where to write the chosen prompt's panel (default: beside PANEL as
    /// <name>.optimized-<id>.toml; never overwrites a file).
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Run without the screen: every rewrite is taken, progress goes to stdout.
    #[arg(long)]
    pub headless: bool,
    /// Do not answer repeated requests from the response cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Colour theme of the live screen.
    #[arg(long)]
    pub theme: Option<String>,
}

/// The labelled examples of `items` for `dimension`, with the problems found.
pub fn examples(
    items: Vec<crate::item::Item>,
    dimension: &str,
    panel: &Panel,
    source: &str,
) -> anyhow::Result<(Vec<Example>, Vec<String>)> {
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for item in items {
        match item.human.as_ref().and_then(|h| h.get(dimension)).copied() {
            Some(label) if panel.scale.contains(label) => out.push(Example { item, label }),
            Some(label) => bail!(
                "{source}: item {}: human.{dimension} = {label} is outside the panel's scale {} to {}",
                item.id,
                panel.scale.min,
                panel.scale.max
            ),
            None => skipped.push(format!("{source}: item {}: no human.{dimension} label (skipped)", item.id)),
        }
    }
    if out.len() < 2 {
        bail!("{source}: {} labelled example(s) for `{dimension}`; the loop needs at least 2", out.len());
    }
    Ok((out, skipped))
}

pub fn run(args: OptimizeArgs) -> anyhow::Result<ExitCode> {
    let mut panel = load_panel(Some(&args.panel))?;
    if !(args.holdout > 0.0 && args.holdout < 1.0) {
        bail!("--holdout: {} must be above 0 and below 1 (S is measured on the held-out split)", args.holdout);
    }
    let dimension = match &args.dimension {
        Some(d) if d == "overall" || panel.dimensions.iter().any(|x| &x.key == d) => d.clone(),
        Some(d) => bail!(
            "--dimension: the panel has no dimension `{d}`; its dimensions: {}",
            panel.dimension_keys().join(", ")
        ),
        None if panel.dimensions.len() == 1 => panel.dimensions[0].key.clone(),
        None => "overall".into(),
    };
    let file = crate::item::resolve_items(&args.data)?;
    for problem in &file.skipped {
        eprintln!("moot optimize: {}: {problem} (skipped)", file.source);
    }
    let (examples, skipped) = examples(file.items, &dimension, &panel, &file.source)?;
    for s in skipped {
        eprintln!("moot optimize: {s}");
    }
    let labels: Vec<f64> = examples.iter().map(|e| e.label).collect();
    let objective = match args.objective.as_str() {
        "auto" => Objective::auto(&labels, &panel.scale),
        name => Objective::parse(name).with_context(|| {
            format!("--objective: unknown objective \"{name}\"; valid: auto, {}", Objective::NAMES.join(", "))
        })?,
    };
    objective.check(&labels, &panel.scale).map_err(|e| anyhow::anyhow!("--objective: {e}"))?;

    let mut registry = Registry::from_env()?;
    if !args.no_cache {
        registry.set_cache(Some(crate::provider::cache::ResponseCache::new(
            crate::provider::cache::ResponseCache::default_dir(),
        )));
    }
    let (bindings, seed) = args.models.bind(&mut panel, &mut registry)?;
    let run_id = crate::session::new_session_id();
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(format!("optimize-{run_id}")));
    let output = args.output.clone().unwrap_or_else(|| crate::optimize::output::default_output(&panel, &run_id, &out));
    if panel.source.as_deref() == Some(output.as_path()) {
        bail!("--output: {} is the input panel; moot optimize never overwrites it", output.display());
    }
    let config = OptimizeConfig {
        run_id,
        panel: Arc::new(panel),
        panel_arg: args.panel.clone(),
        data: args.data.clone(),
        examples,
        dimension,
        objective,
        threshold: args.threshold,
        max_iter: args.max_iter,
        holdout: args.holdout,
        clusters: args.clusters as usize,
        per_cluster: args.per_cluster as usize,
        seed,
        bindings,
        retry: crate::provider::retry::RetryPolicy::default(),
        concurrency: args.concurrency as usize,
        review: !args.headless,
        author: human_name(),
        output: Some(output),
    };
    let log = out.join(LOG_FILE);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if args.headless {
        return runtime.block_on(headless(config, log));
    }
    let env = super::screen_env(args.theme.as_deref())?;
    runtime.block_on(async {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let rec = OptRecorder::new(Some(&log), Some(tx)).with_context(|| format!("creating {}", log.display()))?;
        let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = tokio::spawn(crate::optimize::optimize(config, rec, rx));
        let mut tui = crate::tui::Tui::enter()?;
        let screen = crate::tui::optimize::live(&mut tui, env, events, commands.clone()).await;
        drop(tui);
        // Whatever happened to the screen, the loop ends with its best prompt
        // and the log with `optimize_ended`.
        if screen.is_err() {
            let _ = commands.send(crate::optimize::OptCommand::Stop { choose: None });
        }
        drop(commands);
        let outcome = task.await?;
        println!("{}", summary(&outcome, &log));
        screen?;
        Ok(exit_code(outcome.status))
    })
}

fn status_word(status: OptStatus) -> &'static str {
    match status {
        OptStatus::Completed => "completed",
        OptStatus::Stopped => "stopped",
        OptStatus::Failed => "failed",
    }
}

fn exit_code(status: OptStatus) -> ExitCode {
    match status {
        OptStatus::Completed | OptStatus::Stopped => ExitCode::SUCCESS,
        OptStatus::Failed => ExitCode::from(1),
    }
}

fn summary(outcome: &crate::optimize::OptOutcome, log: &std::path::Path) -> String {
    let mut s = format!("moot optimize: {} — {}", status_word(outcome.status), outcome.reason);
    if let Some(best) = outcome.best {
        let held = outcome.iterations.iter().find(|r| r.iteration == best).and_then(|r| r.holdout);
        s.push_str(&format!("\nresult: iteration {best}, held-out S {}", fmt_s(held)));
    }
    if let Some(p) = &outcome.output {
        s.push_str(&format!("\npanel written to {}", p.display()));
    }
    if let Some(e) = &outcome.error {
        s.push_str(&format!("\nerror: {e}"));
    }
    s.push_str(&format!(
        "\nlog: {} (moot replay {})",
        log.display(),
        log.parent().map_or(String::new(), |p| p.display().to_string())
    ));
    s
}

pub fn fmt_s(s: Option<f64>) -> String {
    s.map_or("—".into(), |v| format!("{v:.3}"))
}

/// One stdout line per step, from the same events the screen folds.
pub fn progress_line(view: &OptView, kind: &OptKind) -> Option<String> {
    Some(match kind {
        OptKind::OptimizeStarted { run_id, train, holdout, objective, threshold, .. } => format!(
            "optimize {run_id}: {} training examples in clusters, {} held out; S = {objective} on the held-out split, \
             threshold {threshold}",
            train.len(),
            holdout.len()
        ),
        OptKind::ExamplesPicked { iteration, picks } => {
            format!(
                "iteration {iteration}: {} examples picked: {}",
                picks.len(),
                picks.iter().map(|p| p.id.as_str()).collect::<Vec<_>>().join(", ")
            )
        }
        OptKind::Scored { iteration, picked, holdout, failures, .. } => format!(
            "iteration {iteration}: S picked {}, held-out {}{}",
            fmt_s(*picked),
            fmt_s(*holdout),
            if *failures > 0 { format!(" ({failures} judge failures)") } else { String::new() }
        ),
        OptKind::FeedbackWritten { iteration, text, by, author } => {
            let who = if by == "human" {
                format!("edited by {}", author.as_deref().unwrap_or("human"))
            } else {
                "written".into()
            };
            format!("iteration {iteration}: feedback {who} ({} words)", text.split_whitespace().count())
        }
        OptKind::RewriteProposed { iteration, prompt } => {
            let before = view.iteration(*iteration).map(|i| i.prompt.clone()).unwrap_or_default();
            let (added, removed) = diff_counts(&diff(&before, prompt));
            format!("iteration {iteration}: rewrite proposed (+{added} −{removed} words)")
        }
        OptKind::RewriteFailed { iteration, error, .. } => {
            format!("iteration {iteration}: rewrite unreadable: {error}")
        }
        OptKind::RewriteDecided { iteration, decision, author, .. } => {
            let what = match decision {
                Decision::Accepted => "accepted",
                Decision::Edited => "edited and accepted",
                Decision::Rejected => "rejected",
            };
            format!("iteration {iteration}: rewrite {what} ({author})")
        }
        OptKind::CallFailed { iteration, role, error } => format!("iteration {iteration}: {role} call failed: {error}"),
        OptKind::OptimizeEnded { status, reason, .. } => format!("ended {}: {reason}", status_word(*status)),
        _ => return None,
    })
}

async fn headless(config: OptimizeConfig, log: PathBuf) -> anyhow::Result<ExitCode> {
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let rec = OptRecorder::new(Some(&log), Some(tx)).with_context(|| format!("creating {}", log.display()))?;
    let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(crate::optimize::optimize(config, rec, rx));
    let ctrl_c = tokio::spawn({
        let commands = commands.clone();
        async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\nmoot optimize: stopping with the best prompt so far");
                let _ = commands.send(crate::optimize::OptCommand::Stop { choose: None });
            }
        }
    });
    let mut view = OptView::default();
    while let Some(e) = events.recv().await {
        if let Some(line) = progress_line(&view, &e.kind) {
            println!("{line}");
        }
        view.apply(&e);
    }
    ctrl_c.abort();
    let outcome = task.await?;
    if let Some(e) = &outcome.write_error {
        eprintln!("moot optimize: {e}");
    }
    println!("{}", summary(&outcome, &log));
    Ok(exit_code(outcome.status))
}
