//! `moot run --resume SESSION`: go on with an interrupted session in its own log.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;

use super::run::{print_session, report_outcome};
use super::{ModelArgs, RunArgs};
use crate::config::registry::Registry;
use crate::engine::journal::Journal;
use crate::engine::{self, Budget, EngineConfig, RunOutcome};
use crate::provider::cache::ResponseCache;
use crate::session::event::{EventKind, StepsSource};

/// An interrupted session, read and checked, with its run rebuilt from its log.
pub struct Resumable {
    pub path: PathBuf,
    pub journal: Arc<Journal>,
    /// What was wrong with the log's lines (a torn last line, which is removed).
    pub warnings: Vec<String>,
}

impl Resumable {
    /// Find the session (an id, a unique prefix of one, or a log's path)
    /// and read its log; a log that ended, or that cannot be written, is
    /// refused with why.
    pub fn open(arg: &str) -> anyhow::Result<Self> {
        let path = super::sessions::resolve_session(arg)?;
        let resumable = Self::at(&path)?;
        for w in &resumable.warnings {
            eprintln!("moot: {w}");
        }
        Ok(resumable)
    }

    /// The session whose log is at `path`.
    pub fn at(path: &Path) -> anyhow::Result<Self> {
        if crate::session::writer::being_written(path) {
            anyhow::bail!(
                "{} is being written by another moot process: its session is still running; resume it once that process has ended",
                path.display()
            );
        }
        let log = crate::session::read_log(path).with_context(|| format!("cannot read {}", path.display()))?;
        let warnings = log.warnings();
        let journal = Journal::new(log.events).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        crate::session::writer::check_dir(dir).map_err(anyhow::Error::msg)?;
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .with_context(|| format!("cannot write the session log {}", path.display()))?;
        Ok(Self { path: path.to_path_buf(), journal: Arc::new(journal), warnings })
    }

    /// The run as the log recorded it, bound to its providers (the ones it
    /// names, or `--provider`/`--model`).
    pub fn bind(&self, models: &ModelArgs, cache: bool, budget: Budget) -> anyhow::Result<EngineConfig> {
        let recorded = self.journal.recorded().map_err(|e| anyhow::anyhow!("{}: {e}", self.path.display()))?;
        let mut registry = Registry::from_env()?;
        if cache {
            registry.set_cache(Some(ResponseCache::new(ResponseCache::default_dir())));
        }
        let bindings = if models.provider.is_some() || models.model.is_some() {
            crate::engine::bindings::bind(
                &mut registry,
                &recorded.panel,
                models.provider.as_deref(),
                models.model.as_deref(),
            )?
        } else {
            crate::engine::bindings::bind_recorded(&mut registry, &recorded.agents, &recorded.roles).with_context(
                || "binding the recorded session's providers (name others with --provider and --model)".to_string(),
            )?
        };
        let events = self.journal.events();
        let mut config = EngineConfig::new(Arc::new(recorded.panel), recorded.item, bindings);
        config.session_id = recorded.session_id;
        config.seed = recorded.seed;
        config.provider_note = recorded.provider_note;
        config.budget = budget;
        config.blind = events.iter().any(|e| matches!(e.kind, EventKind::BlindOrder { .. }));
        // Steps the log has as generated must not come from the cache now
        // (they would be the same steps, recorded otherwise).
        let generated =
            events.iter().any(|e| matches!(e.kind, EventKind::EvaluationSteps { source: StepsSource::Generated, .. }));
        if !generated {
            config.steps_cache = Some(crate::engine::stages::StepsCache::default_dir());
        }
        Ok(config)
    }
}

/// `moot run --resume SESSION`.
pub fn run(arg: &str, args: &RunArgs) -> anyhow::Result<ExitCode> {
    let resumable = Resumable::open(arg)?;
    let cache = args.cache && !args.no_cache;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if !args.headless {
        let title = format!("resuming {}", resumable.path.display());
        let (models, budget) = (args.models.clone(), args.budget.budget());
        let for_binding =
            Resumable { path: resumable.path.clone(), journal: resumable.journal.clone(), warnings: Vec::new() };
        return super::run::on_screen(
            &runtime,
            args.theme.as_deref(),
            &title,
            move |_| for_binding.bind(&models, cache, budget),
            async |tui, env, config: EngineConfig| {
                crate::tui::live_resumed(tui, env, config, resumable.journal, &resumable.path).await
            },
            "stopped before the session went on; its log is as it was",
        );
    }
    let config = resumable.bind(&args.models, cache, args.budget.budget())?;
    // Nobody can press resume here: a session left paused goes on.
    resumable.journal.unpause_at_end(&crate::session::human_name());
    let outcome = runtime.block_on(resume_headless(config, resumable.journal, &resumable.path, args.json))?;
    Ok(report_outcome(&outcome))
}

/// Resume headless: print the old log's transcript, then the new events as they happen.
pub async fn resume_headless(
    config: EngineConfig,
    journal: Arc<Journal>,
    path: &Path,
    json: bool,
) -> anyhow::Result<RunOutcome> {
    print_session(engine::resume(config, journal, path)?, json).await
}
