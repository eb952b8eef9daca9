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
    #[arg(required_unless_present = "resume", conflicts_with = "resume")]
    pub panel: Option<String>,
    /// Labelled examples (JSONL, JSON or CSV items with `human: {dimension: label}`).
    #[arg(long, required_unless_present = "resume", conflicts_with = "resume")]
    pub data: Option<String>,
    /// Go on with an interrupted run (its folder, its optimize.jsonl or its id), with the options
    /// its log recorded: what the log holds is not asked of a model again.
    #[arg(long, value_name = "RUN")]
    pub resume: Option<String>,
    /// Stop once the held-out S reaches this.
    #[arg(long, default_value_t = 0.85, conflicts_with = "resume")]
    pub threshold: f64,
    /// Iterations at most (each judges the picked and held-out examples once) [default: 10].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "resume")]
    pub max_iter: Option<u32>,
    /// Share of the examples held out for S and never shown to the feedback or rewrite models (above 0, below 1).
    #[arg(long, default_value_t = 0.3, conflicts_with = "resume")]
    pub holdout: f64,
    /// S: agreement (1 − normalised mean absolute error), pearson (Pearson r), accuracy or auc (binary
    /// labels); auto: accuracy when every label is an end of the scale, else agreement (with --preset
    /// paper: auc, else pearson, the paper's metrics).
    #[arg(long, default_value = "auto", conflicts_with = "resume")]
    pub objective: String,
    /// The dimension whose human label is compared (default: the panel's only dimension, else `overall`).
    #[arg(long, conflicts_with = "resume")]
    pub dimension: Option<String>,
    /// Clusters of the training examples (k-means on TF-IDF of their text) [default: 4; paper: 3].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "resume")]
    pub clusters: Option<u32>,
    /// Cluster the training examples by this item field instead (one cluster per value, e.g. `source`,
    /// the dataset an example comes from, as the paper's experiments do); --clusters is then unused.
    #[arg(long, value_name = "FIELD", conflicts_with = "resume")]
    pub cluster_by: Option<String>,
    /// Examples drawn from each cluster every iteration [default: 2; paper: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000), conflicts_with = "resume")]
    pub per_cluster: Option<u32>,
    /// Share of the examples set apart as the test split before the loop (0: none): the chosen,
    /// initial and few-shot prompts are scored on it after the loop, apart from the held-out S that
    /// chose the prompt [default: 0; paper preset: 0.3].
    #[arg(long, conflicts_with = "resume")]
    pub test: Option<f64>,
    /// Also score the paper's few-shot baseline: the initial prompt with the first iteration's picked
    /// examples and their labels (on the test split, else the held-out one) [paper preset: on].
    #[arg(long, conflicts_with = "resume")]
    pub few_shot: bool,
    /// The judges' temperature, over the panel's (an agent's own still wins) [paper preset: 0].
    #[arg(long, conflicts_with = "resume")]
    pub judge_temperature: Option<f32>,
    /// `paper`: the paper's settings for every option not given (10 iterations, 3 clusters, 1 example
    /// per cluster, AUC or Pearson, judges at temperature 0, the few-shot baseline, a test split).
    #[arg(long, value_name = "PRESET", value_parser = ["moot", "paper"], default_value = "moot", conflicts_with = "resume")]
    pub preset: String,
    /// Judge runs at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: u32,
    #[command(flatten)]
    pub models: ModelArgs,
    /// Run folder for the log (default: runs/optimize-<id>).
    #[arg(long, conflicts_with = "resume")]
    pub out: Option<PathBuf>,
    /// Where to write the chosen prompt's panel (default: beside PANEL as
    /// <name>.optimized-<id>.toml; never overwrites a file).
    #[arg(long, conflicts_with = "resume")]
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
        // Several raters: the label is the mean of those who scored the dimension.
        let field = if item.human.is_none() && !item.human_raters.is_empty() {
            format!("the mean of human_raters' {dimension}")
        } else {
            format!("human.{dimension}")
        };
        match item.human_value(dimension) {
            Some(label) if panel.scale.contains(label) => out.push(Example { item, label }),
            Some(label) => bail!(
                "{source}: item {}: {field} = {label} is outside the panel's scale {} to {}",
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

/// The options a preset sets, as a run takes them: those given on the
/// command line, else the preset's.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub max_iter: u32,
    pub clusters: u32,
    pub per_cluster: u32,
    pub test: f64,
    pub few_shot: bool,
    pub judge_temperature: Option<f32>,
    /// The objective `auto` names: moot's or the paper's choice for the labels.
    pub paper_objective: bool,
}

impl Settings {
    /// moot's defaults, or (`paper`) the paper's values: ten iterations, one
    /// example from each of three clusters, judges at temperature 0, the
    /// few-shot baseline, AUC or Pearson. The paper has no test split (it
    /// reports on its datasets' validation sets); moot sets 30% apart.
    pub fn of(args: &OptimizeArgs) -> Self {
        let paper = args.preset == "paper";
        Self {
            max_iter: args.max_iter.unwrap_or(10),
            clusters: args.clusters.unwrap_or(if paper { 3 } else { 4 }),
            per_cluster: args.per_cluster.unwrap_or(if paper { 1 } else { 2 }),
            test: args.test.unwrap_or(if paper { 0.3 } else { 0.0 }),
            few_shot: args.few_shot || paper,
            judge_temperature: args.judge_temperature.or(paper.then_some(0.0)),
            paper_objective: paper,
        }
    }
}

/// Every judge at `temperature`, but one that sets its own.
pub fn judges_at(panel: &mut Panel, temperature: f32) {
    for group in &mut panel.groups {
        for agent in &mut group.agents {
            agent.model.temperature.get_or_insert(temperature);
        }
    }
}

pub fn run(args: OptimizeArgs) -> anyhow::Result<ExitCode> {
    if args.resume.is_some() {
        return super::optimize_resume::run(args);
    }
    let (config, log) = configure(&args, None)?;
    launch(config, log, &args, None)
}

/// The run's configuration and its log's path, from the command line (or,
/// resuming, from the options the log recorded).
pub(super) fn configure(
    args: &OptimizeArgs,
    kept: Option<&super::optimize_resume::Kept>,
) -> anyhow::Result<(OptimizeConfig, PathBuf)> {
    let panel_arg = args.panel.clone().context("PANEL is required")?;
    let data = args.data.clone().context("--data is required")?;
    let mut panel = load_panel(Some(&panel_arg))?;
    let settings = Settings::of(args);
    if !(args.holdout > 0.0 && args.holdout < 1.0) {
        bail!("--holdout: {} must be above 0 and below 1 (S is measured on the held-out split)", args.holdout);
    }
    if !(0.0..1.0).contains(&settings.test) || args.holdout + settings.test >= 1.0 {
        bail!(
            "--test: {} must be at least 0, below 1, and leave training examples beside --holdout {}",
            settings.test,
            args.holdout
        );
    }
    if let Some(t) = settings.judge_temperature {
        if !(0.0..=2.0).contains(&t) {
            bail!("--judge-temperature: {t} must be from 0 to 2");
        }
        judges_at(&mut panel, t);
    }
    let dimension = match &args.dimension {
        Some(d) if panel.score_keys().contains(d) => d.clone(),
        Some(d) => {
            bail!("--dimension: the panel has no dimension `{d}`; its dimensions: {}", panel.score_keys().join(", "))
        }
        None if panel.dimensions.len() == 1 => panel.dimensions[0].key.clone(),
        None if panel.has_overall() => "overall".into(),
        None => bail!(
            "--dimension: the panel has no overall score (`overall = false`): name one of its dimensions: {}",
            panel.dimension_keys().join(", ")
        ),
    };
    let file = crate::item::resolve_items(&data)?;
    for problem in &file.skipped {
        eprintln!("moot optimize: {}: {problem} (skipped)", file.source);
    }
    let (examples, skipped) = examples(file.items, &dimension, &panel, &file.source)?;
    for s in skipped {
        eprintln!("moot optimize: {s}");
    }
    if settings.test > 0.0 && examples.len() < 3 {
        bail!("--test: {} labelled example(s); a test split needs at least 3", examples.len());
    }
    let cluster_by = match &args.cluster_by {
        Some(field) => {
            let values =
                crate::optimize::fields::values(&data, field).map_err(|e| anyhow::anyhow!("--cluster-by: {e}"))?;
            let values = examples
                .iter()
                .map(|e| {
                    values.get(&e.item.id).cloned().with_context(|| {
                        format!("--cluster-by: item {} has no `{field}` (every example needs one)", e.item.id)
                    })
                })
                .collect::<anyhow::Result<Vec<String>>>()?;
            Some(crate::optimize::ClusterBy { field: field.clone(), values })
        }
        None => None,
    };
    let labels: Vec<f64> = examples.iter().map(|e| e.label).collect();
    let objective = match args.objective.as_str() {
        "auto" if settings.paper_objective => Objective::paper(&labels, &panel.scale),
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
    let run_id = kept.map_or_else(crate::session::new_session_id, |k| k.run_id.clone());
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("runs").join(format!("optimize-{run_id}")));
    let output = args.output.clone().unwrap_or_else(|| crate::optimize::output::default_output(&panel, &run_id, &out));
    if panel.source.as_deref() == Some(output.as_path()) {
        bail!("--output: {} is the input panel; moot optimize never overwrites it", output.display());
    }
    let options = match kept {
        Some(k) => k.options.clone(),
        None => super::optimize_resume::options_of(args, &panel_arg, &data, seed, &out, &output),
    };
    let config = OptimizeConfig {
        run_id,
        panel: Arc::new(panel),
        panel_arg: kept.map_or(panel_arg, |k| k.panel_arg.clone()),
        data: kept.map_or(data.clone(), |k| k.data.clone()),
        examples,
        dimension,
        objective,
        threshold: args.threshold,
        max_iter: settings.max_iter,
        holdout: args.holdout,
        clusters: settings.clusters as usize,
        per_cluster: settings.per_cluster as usize,
        seed,
        bindings,
        retry: crate::provider::retry::RetryPolicy::default(),
        concurrency: args.concurrency as usize,
        review: !args.headless,
        author: human_name(),
        output: Some(output),
        design: crate::optimize::Design {
            test: settings.test,
            cluster_by,
            few_shot: settings.few_shot,
            preset: (args.preset == "paper").then(|| "paper".into()),
            options: Some(options),
        },
    };
    Ok((config, out.join(LOG_FILE)))
}

/// Run the loop (new, or going on with `resume`'s log events) on the screen or headless.
pub(super) fn launch(
    config: OptimizeConfig,
    log: PathBuf,
    args: &OptimizeArgs,
    resume: Option<Vec<crate::optimize::OptEvent>>,
) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if args.headless {
        return runtime.block_on(headless(config, log, resume));
    }
    let env = super::screen_env(args.theme.as_deref())?;
    runtime.block_on(async {
        let (tx, events) = tokio::sync::mpsc::unbounded_channel();
        let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
        let task = start(config, &log, resume, tx, rx)?;
        let mut tui = crate::tui::Tui::enter()?;
        let screen = crate::tui::optimize::live(&mut tui, env, events, commands.clone()).await;
        drop(tui);
        if matches!(screen, Ok(crate::tui::optimize::Left::HungUp)) && !task.is_finished() {
            // The terminal closed (an SSH link dropped) or the system is going
            // down: no person chose to stop, so the run is left without its
            // end, every event so far in its log, for `--resume`.
            let dir = log.parent().unwrap_or(&log).display().to_string();
            eprintln!(
                "moot optimize: the terminal closed or moot was told to end; the run in {dir} is left unfinished: go on with `moot optimize --resume {dir}`"
            );
            std::process::exit(129);
        }
        // Otherwise, whatever happened to the screen, the loop ends with its
        // best prompt and the log with `optimize_ended`.
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
        s.push_str(&format!("\nresult: iteration {best}, held-out S {} (the score that chose it)", fmt_s(held)));
        match outcome.test {
            Some(t) => s.push_str(&format!("; test S {} (the score to report)", fmt_s(Some(t)))),
            None => s.push_str("; no test split (--test), so no score apart from the selection"),
        }
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
        OptKind::OptimizeStarted { run_id, train, holdout, objective, threshold, test, cluster_by, preset, .. } => {
            let clusters = train.iter().map(|e| e.cluster + 1).max().unwrap_or(0);
            let by = cluster_by.as_ref().map_or("by their text".to_string(), |f| format!("by `{f}`"));
            format!(
                "optimize {run_id}{}: {} training examples in {clusters} clusters {by}, {} held out{}; S = {objective} \
                 on the held-out split, threshold {threshold}",
                preset.as_ref().map_or(String::new(), |p| format!(" ({p} preset)")),
                train.len(),
                holdout.len(),
                if test.is_empty() { String::new() } else { format!(", {} for the test split", test.len()) },
            )
        }
        OptKind::ConditionScored { condition, iteration, split, score, error, .. } => {
            let split = match split {
                crate::optimize::Split::Test => "test",
                _ => "held-out",
            };
            let which = iteration.map_or(String::new(), |i| format!(" (iteration {i})"));
            let why = error.as_ref().filter(|_| score.is_none()).map_or(String::new(), |e| format!(" ({e})"));
            format!("{split} S of the {}{which}: {}{why}", condition.label(), fmt_s(*score))
        }
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

/// Spawn the loop writing to `log`: a new log, or the interrupted one it goes on with.
fn start(
    config: OptimizeConfig,
    log: &std::path::Path,
    resume: Option<Vec<crate::optimize::OptEvent>>,
    tx: tokio::sync::mpsc::UnboundedSender<crate::optimize::OptEvent>,
    rx: tokio::sync::mpsc::UnboundedReceiver<crate::optimize::OptCommand>,
) -> anyhow::Result<tokio::task::JoinHandle<crate::optimize::OptOutcome>> {
    Ok(match resume {
        None => {
            let rec = OptRecorder::new(Some(log), Some(tx)).with_context(|| format!("creating {}", log.display()))?;
            tokio::spawn(crate::optimize::optimize(config, rec, rx))
        }
        Some(old) => {
            let rec = OptRecorder::resume(log, old, Some(tx)).with_context(|| format!("opening {}", log.display()))?;
            tokio::spawn(crate::optimize::optimize_resumed(config, rec, rx))
        }
    })
}

async fn headless(
    config: OptimizeConfig,
    log: PathBuf,
    resume: Option<Vec<crate::optimize::OptEvent>>,
) -> anyhow::Result<ExitCode> {
    let (tx, mut events) = tokio::sync::mpsc::unbounded_channel();
    let (commands, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = start(config, &log, resume, tx, rx)?;
    let dir = log.parent().unwrap_or(&log).display().to_string();
    let ctrl_c = tokio::spawn({
        let commands = commands.clone();
        async move {
            let ended = crate::signals::end_requested();
            tokio::pin!(ended);
            let mut stopping = false;
            loop {
                tokio::select! {
                    r = tokio::signal::ctrl_c(), if !stopping => {
                        stopping = true;
                        if r.is_ok() {
                            eprintln!("\nmoot optimize: stopping with the best prompt so far");
                            let _ = commands.send(crate::optimize::OptCommand::Stop { choose: None });
                        }
                    }
                    // SIGHUP, SIGTERM: no person's stop; the run is left to resume.
                    () = &mut ended => {
                        eprintln!(
                            "\nmoot optimize: told to end; the run in {dir} is left unfinished: go on with `moot optimize --resume {dir}`"
                        );
                        std::process::exit(129);
                    }
                }
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
