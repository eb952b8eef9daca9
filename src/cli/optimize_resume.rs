//! `moot optimize --resume RUN`: go on with an interrupted optimisation, with
//! the options its log recorded, in the same log.

use std::process::ExitCode;

use anyhow::bail;

use super::ModelArgs;
use super::optimize::{OptimizeArgs, configure, launch};
use crate::optimize::log::OptKind;
use crate::optimize::resume::{differs, interrupted, log_path};

pub fn run(args: OptimizeArgs) -> anyhow::Result<ExitCode> {
    let run = args.resume.clone().unwrap_or_default();
    if args.models.provider.is_some() || args.models.model.is_some() || args.models.moderator.is_some() {
        bail!("--resume: the run goes on with the providers, models and moderator its log recorded; give none");
    }
    if args.models.seed.is_some() {
        bail!("--resume: the run goes on with the seed its log recorded; give no --seed");
    }
    let log = log_path(&run)?;
    let run = interrupted(&log)?;
    if run.review == args.headless {
        let (was, now) =
            if run.review { ("on the live screen", "without --headless") } else { ("--headless", "with --headless") };
        bail!("--resume: {} ran {was}, where its decisions were taken; resume it {now}", log.display());
    }
    let o = &run.options;
    // Relative paths (the run folder, the output panel) mean what they meant.
    let log = std::path::absolute(&log)?;
    std::env::set_current_dir(&o.dir)
        .map_err(|e| anyhow::anyhow!("--resume: the run's folder {}: {e}", o.dir.display()))?;
    let first = run.events.first().map(|e| e.kind.clone());
    let Some(OptKind::OptimizeStarted { panel, data, .. }) = first.clone() else {
        bail!("{}: does not begin with optimize_started", log.display());
    };
    let again = OptimizeArgs {
        panel: Some(o.panel.clone()),
        data: Some(o.data.clone()),
        resume: None,
        threshold: o.threshold,
        max_iter: o.max_iter,
        holdout: o.holdout,
        objective: o.objective.clone(),
        dimension: o.dimension.clone(),
        clusters: o.clusters,
        cluster_by: o.cluster_by.clone(),
        per_cluster: o.per_cluster,
        test: o.test,
        few_shot: o.few_shot,
        judge_temperature: o.judge_temperature,
        preset: o.preset.clone(),
        concurrency: args.concurrency,
        models: ModelArgs {
            provider: o.provider.clone(),
            model: o.model.clone(),
            moderator: o.moderator.clone(),
            seed: Some(o.seed),
        },
        out: Some(o.out.clone()),
        output: Some(o.output.clone()),
        headless: args.headless,
        no_cache: args.no_cache || o.no_cache,
        theme: args.theme.clone(),
    };
    let kept = Kept { run_id: run.run_id.clone(), panel_arg: panel, data, options: o.clone() };
    let (config, _) = configure(&again, Some(&kept))?;
    let now = crate::optimize::opening(&config).map_err(|e| anyhow::anyhow!("{}: {e}", log.display()))?;
    if let Some(why) = first.as_ref().and_then(|f| differs(f, &now)) {
        bail!("{}: cannot resume: {why}; the run read {} and {}", log.display(), o.panel, o.data);
    }
    if run.torn {
        eprintln!("moot optimize: {}: ignored an incomplete last line", log.display());
    }
    eprintln!("moot optimize: resuming {} from {} events of {}", run.run_id, run.events.len(), log.display());
    launch(config, log, &again, Some(run.events))
}

/// What a resumed run keeps of the interrupted one.
pub(super) struct Kept {
    pub run_id: String,
    /// `panel` and `data` as the log names them.
    pub panel_arg: String,
    pub data: String,
    pub options: crate::optimize::resume::RunOptions,
}

/// The options to record: as given, with the seed and paths the run resolved.
pub(super) fn options_of(
    args: &OptimizeArgs,
    panel: &str,
    data: &str,
    seed: u64,
    out: &std::path::Path,
    output: &std::path::Path,
) -> crate::optimize::resume::RunOptions {
    use crate::optimize::resume::absolute;
    crate::optimize::resume::RunOptions {
        panel: absolute(panel),
        data: absolute(data),
        threshold: args.threshold,
        max_iter: args.max_iter,
        holdout: args.holdout,
        objective: args.objective.clone(),
        dimension: args.dimension.clone(),
        clusters: args.clusters,
        cluster_by: args.cluster_by.clone(),
        per_cluster: args.per_cluster,
        test: args.test,
        few_shot: args.few_shot,
        judge_temperature: args.judge_temperature,
        preset: args.preset.clone(),
        concurrency: args.concurrency,
        provider: args.models.provider.clone(),
        model: args.models.model.clone(),
        moderator: args.models.moderator.clone(),
        seed,
        out: out.to_path_buf(),
        output: output.to_path_buf(),
        dir: std::env::current_dir().unwrap_or_default(),
        no_cache: args.no_cache,
    }
}
