//! `moot run`: one panel on one item.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

use anyhow::{Context, bail};

use super::headless::{Paint, Transcript};
use super::{ModelArgs, RunArgs};
use crate::config::registry::Registry;
use crate::engine::bindings::{self, Participant};
use crate::engine::{self, Budget, Command, EngineConfig, EngineHandle, RunOutcome};
use crate::item::{Item, ItemsFile};
use crate::panel::{ModeratorPolicy, Panel};
use crate::provider::cache::ResponseCache;
use crate::session::default_sessions_dir;
use crate::session::event::EndStatus;

/// The panel named on the command line, or the bundled sample panel.
pub fn load_panel(arg: Option<&str>) -> anyhow::Result<Panel> {
    match arg {
        Some(p) => Ok(Panel::resolve(p)?),
        None => Panel::bundled(crate::panel::DEFAULT_PANEL).context("the bundled sample panel is missing"),
    }
}

/// Apply `--moderator POLICY` to a panel.
pub fn set_moderator(panel: &mut Panel, policy: Option<&str>) -> anyhow::Result<()> {
    if let Some(m) = policy {
        panel.moderator.policy = ModeratorPolicy::parse(m).with_context(|| {
            let valid: Vec<&str> = ModeratorPolicy::ALL.iter().map(|p| p.as_str()).collect();
            format!("--moderator: unknown policy \"{m}\"; valid: {}", valid.join(", "))
        })?;
    }
    Ok(())
}

/// The item to evaluate, from `--content`, `--item` (+ `--id`), or the panel's bundled items.
pub fn load_item(panel: &Panel, args: &RunArgs) -> anyhow::Result<Item> {
    if let Some(text) = &args.content {
        if text.trim().is_empty() {
            bail!("--content is empty");
        }
        return Ok(Item::new(args.id.clone().unwrap_or_else(|| "content".into()), text.clone()));
    }
    let file: ItemsFile = match &args.item {
        Some(path) => crate::item::load_items(path)?,
        None => match bundled_items_for(panel) {
            Some(f) => f,
            None => bail!(
                "{}: no items to evaluate; pass --item FILE (JSONL, JSON or CSV) or --content TEXT",
                panel.source_display()
            ),
        },
    };
    for problem in &file.skipped {
        eprintln!("moot: warning: {problem}");
    }
    match args.id.as_deref() {
        Some(id) => Ok(file.get(id)?.clone()),
        None => file.items.first().cloned().with_context(|| format!("{}: no items", file.source)),
    }
}

/// The bundled items that go with a bundled panel (same file stem).
fn bundled_items_for(panel: &Panel) -> Option<ItemsFile> {
    let source = panel.source.as_ref()?.to_string_lossy().to_string();
    let stem = source
        .strip_prefix(crate::panel::BUNDLED_PREFIX)
        .map(str::to_string)
        .or_else(|| std::path::Path::new(&source).file_stem().map(|s| s.to_string_lossy().to_string()))?;
    ItemsFile::bundled(&stem)
}

/// Run the engine on `config`, writing the session log under `dir`, and
/// print events as they happen. Ctrl-C stops the debate (aggregation still
/// runs); a second Ctrl-C quits.
pub async fn run_headless(config: EngineConfig, dir: PathBuf, json: bool) -> anyhow::Result<RunOutcome> {
    let path = dir.join(format!("{}.jsonl", config.session_id));
    print_session(engine::start(config, &path)?, json).await
}

/// Print a started session's events as they happen (a transcript, or JSON
/// lines), and on stderr when its log cannot be written and when it can again.
pub async fn print_session(started: engine::Started, json: bool) -> anyhow::Result<RunOutcome> {
    let engine::Started { events: mut rx, handle, task: engine } = started;
    let mut log_status = handle.log_status().unwrap_or_else(|| tokio::sync::watch::channel(None).1);
    let session: Arc<OnceLock<String>> = Arc::default();
    let interrupts = tokio::spawn(forward_interrupts(handle, session.clone()));

    let stdout = std::io::stdout();
    let paint = Paint::for_stream(stdout.is_terminal());
    let mut transcript = Transcript::new(stdout.lock(), paint);
    let mut status_open = true;
    loop {
        let event = tokio::select! {
            event = rx.recv() => event,
            changed = log_status.changed(), if status_open => {
                match changed {
                    Ok(()) => match log_status.borrow_and_update().clone() {
                        Some(why) => eprintln!("moot: {why} — paused, retrying"),
                        None => eprintln!("moot: the log is written again; going on"),
                    },
                    Err(_) => status_open = false,
                }
                continue;
            }
        };
        let Some(event) = event else { break };
        if let crate::session::EventKind::SessionStarted { session_id, .. } = &event.kind {
            let _ = session.set(session_id.clone());
        }
        if json {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            serde_json::to_writer(&mut out, &event)?;
            writeln!(out)?;
        } else {
            // A closed stdout (a pipe to `head`) must not stop the run or lose the log.
            let _ = transcript.event(&event);
        }
    }
    drop(transcript);
    interrupts.abort();
    let outcome = engine.await.context("the engine stopped unexpectedly")?;
    Ok(outcome)
}

/// Ctrl-C stops the debate (twice: quits). The terminal closing or the
/// process being told to terminate (SIGHUP, SIGTERM) is no person's choice:
/// the process ends at once and leaves the session unfinished, every event
/// so far in its log, for `moot run --resume`.
pub(crate) async fn forward_interrupts(handle: EngineHandle, session: Arc<OnceLock<String>>) {
    let author = crate::session::human_name();
    let ended = crate::signals::end_requested();
    tokio::pin!(ended);
    let mut count = 0;
    loop {
        tokio::select! {
            r = tokio::signal::ctrl_c() => {
                if r.is_err() {
                    break;
                }
                count += 1;
                if count == 1 {
                    eprintln!("\nmoot: stopping the debate; the aggregation still runs (Ctrl-C again to quit now)");
                    handle.send(Command::Stop { author: author.clone() });
                } else {
                    eprintln!("\nmoot: quitting");
                    handle.send(Command::Quit { author: author.clone() });
                }
            }
            () = &mut ended => {
                match session.get() {
                    Some(id) => eprintln!(
                        "\nmoot: told to end; session {id} is left unfinished: go on with `moot run --resume {id}`"
                    ),
                    None => eprintln!("\nmoot: told to end before the session started"),
                }
                drop(handle);
                std::process::exit(129);
            }
        }
    }
}

/// A run on the live screen: `prepare` builds it on a thread of its own
/// while the screen shows its progress, then `live` runs what it built;
/// the outcome's exit code, or 3 (saying `cancelled`) when the person left
/// before it began.
pub(crate) fn on_screen<T: Send + 'static>(
    runtime: &tokio::runtime::Runtime,
    theme: Option<&str>,
    title: &str,
    prepare: impl FnOnce(crate::model::ProgressSink) -> anyhow::Result<T> + Send + 'static,
    live: impl AsyncFnOnce(&mut crate::tui::Tui, crate::tui::app::Env, T) -> anyhow::Result<RunOutcome>,
    cancelled: &str,
) -> anyhow::Result<ExitCode> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        bail!("the live screen needs a terminal; use --headless for a printed transcript");
    }
    let env = crate::tui::app::Env::new(crate::tui::config::UiConfig::load(theme)?);
    let outcome = runtime.block_on(async {
        let mut tui = crate::tui::Tui::enter()?;
        let outcome = match crate::tui::prepare(&mut tui, &env, title, prepare).await {
            Ok(Some(built)) => live(&mut tui, env, built).await.map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(e),
        };
        drop(tui);
        outcome
    })?;
    Ok(match outcome {
        Some(outcome) => report_outcome(&outcome),
        None => {
            eprintln!("moot: {cancelled}");
            ExitCode::from(3)
        }
    })
}

/// Exit code and a one-line reason for an outcome.
pub fn report_outcome(outcome: &RunOutcome) -> ExitCode {
    if let Some(p) = &outcome.log_path {
        eprintln!("moot: session log: {}", p.display());
    }
    match outcome.status {
        EndStatus::Completed => ExitCode::SUCCESS,
        EndStatus::Stopped => {
            eprintln!("moot: session stopped: {}", outcome.reason.as_deref().unwrap_or("stopped"));
            ExitCode::from(3)
        }
        EndStatus::Failed => {
            eprintln!("moot: session failed: {}", outcome.error.as_deref().unwrap_or("unknown error"));
            ExitCode::from(1)
        }
    }
}

/// What `moot run` arguments name, checked before any provider is built or
/// model loaded: a bad panel, item or flag is reported at once.
pub struct RunPlan {
    panel: Panel,
    item: Item,
    cache: bool,
    budget: Budget,
    dir: PathBuf,
    blind: bool,
}

impl RunPlan {
    /// Read the panel and item and check the flags of `args`.
    pub fn new(args: &RunArgs) -> anyhow::Result<Self> {
        let panel = load_panel(args.panel.as_deref())?;
        if args.blind && !panel.protocol.blind() {
            bail!(
                "--blind works with pairwise panels (it hides which system wrote which candidate); {} is {}",
                panel.source_display(),
                panel.protocol.kind.as_str()
            );
        }
        if args.blind && args.headless {
            bail!("--blind needs the live screen: a printed transcript would show the verdicts at once");
        }
        let item = load_item(&panel, args)?;
        Ok(Self {
            panel,
            item,
            cache: args.cache && !args.no_cache,
            budget: args.budget.budget(),
            dir: args.out.clone().unwrap_or_else(default_sessions_dir),
            blind: args.blind,
        })
    }

    /// The panel's title, for a screen shown while the providers are built.
    pub fn title(&self) -> String {
        format!("{} · {}", self.panel.name, self.item.id)
    }

    /// Build the providers (fetching and loading a local model if the panel
    /// uses one, with its progress sent to `progress` when given) and return
    /// the engine configuration and session folder.
    pub fn bind(
        mut self,
        models: &ModelArgs,
        progress: Option<crate::model::ProgressSink>,
    ) -> anyhow::Result<(EngineConfig, PathBuf)> {
        let mut registry = Registry::from_env()?;
        if self.cache {
            registry.set_cache(Some(ResponseCache::new(ResponseCache::default_dir())));
        }
        if let Some(sink) = progress {
            registry.set_progress(sink);
        }
        let (bindings, seed) = models.bind(&mut self.panel, &mut registry)?;
        let note = provider_note(&registry, &self.panel, models, self.budget.max_cost.is_some());
        let mut config = EngineConfig::new(Arc::new(self.panel), self.item, bindings);
        config.provider_note = Some(note);
        config.steps_cache = Some(crate::engine::stages::StepsCache::default_dir());
        config.seed = seed;
        config.budget = self.budget;
        config.blind = self.blind;
        Ok((config, self.dir))
    }
}

/// The providers that `panel`'s participants use with these overrides, each once.
pub fn used_providers(registry: &Registry, panel: &Panel, models: &ModelArgs) -> Vec<String> {
    let mut names: Vec<String> =
        bindings::choices(registry, panel, models.provider.as_deref(), models.model.as_deref())
            .into_iter()
            .filter(|c| c.participant != Participant::Default)
            .map(|c| c.provider)
            .collect();
    names.sort();
    names.dedup();
    names
}

/// Providers that `panel` uses (with these overrides) but that have no
/// prices configured, so their calls carry no cost.
pub fn unpriced_providers(registry: &Registry, panel: &Panel, models: &ModelArgs) -> Vec<String> {
    let mut names = used_providers(registry, panel, models);
    names.retain(|name| registry.config().providers.get(name).and_then(|pc| pc.prices()).is_none());
    names
}

/// Where some participant judges on the embedded model's default tier
/// (no model named by the panel, the config or `--model`) while the larger
/// one exists: say so, with the flag that picks it.
fn better_judge_hint(registry: &Registry, panel: &Panel, models: &ModelArgs) -> Option<String> {
    let on_default = bindings::choices(registry, panel, models.provider.as_deref(), models.model.as_deref())
        .into_iter()
        .filter(|c| c.participant != Participant::Default)
        .any(|c| {
            let config = registry.config();
            let local = config.kind_of(&c.provider) == Some(crate::config::ProviderKind::Local);
            let pc = config.providers.get(&c.provider);
            let named = !c.model.is_empty() || pc.is_some_and(|pc| pc.model.is_some() || pc.model_path.is_some());
            local && !named
        });
    (on_default && crate::model::default_model() == crate::model::DEFAULT_MODEL)
        .then(|| format!("a better judge: --model {} (about half the speed)", crate::model::BETTER_MODEL))
}

/// The note on the chosen provider shown in the header (and the headless
/// transcript) and recorded in the log, with a warning when `--max-cost` is
/// set but some provider has no prices (its calls would count as free, so
/// the limit might never be reached).
pub fn provider_note(registry: &Registry, panel: &Panel, models: &ModelArgs, max_cost: bool) -> String {
    let mut note = registry.default_reason.clone();
    if let Some(hint) = better_judge_hint(registry, panel, models) {
        note.push_str("; ");
        note.push_str(&hint);
    }
    for warning in panel.warnings() {
        note.push_str("; warning: ");
        note.push_str(&warning);
    }
    if max_cost {
        let unpriced = unpriced_providers(registry, panel, models);
        if !unpriced.is_empty() {
            let warning = format!(
                "--max-cost: no prices for {} (input_price/output_price in moot.toml); their calls count as free",
                unpriced.join(", ")
            );
            note.push_str("; warning: ");
            note.push_str(&warning);
        }
    }
    note
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    if let Some(session) = &args.resume {
        return super::resume::run(session, &args);
    }
    let plan = RunPlan::new(&args)?;
    // Before any model is loaded or called: the log must be writable.
    crate::session::writer::check_dir(&plan.dir).map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if !args.headless {
        let title = plan.title();
        let models = args.models.clone();
        // Providers are built (and a local model fetched and loaded) with
        // the screen already open, so its progress is drawn there.
        return on_screen(
            &runtime,
            args.theme.as_deref(),
            &title,
            move |sink| plan.bind(&models, Some(sink)),
            async |tui, env, (config, dir): (EngineConfig, PathBuf)| crate::tui::live(tui, env, config, &dir).await,
            "stopped before the session started; nothing was recorded",
        );
    }
    let (config, dir) = plan.bind(&args.models, None)?;
    let outcome = runtime.block_on(run_headless(config, dir, args.json))?;
    Ok(report_outcome(&outcome))
}

#[cfg(test)]
mod better_judge_tests {
    use super::*;

    fn registry(vars: &'static [(&'static str, &'static str)]) -> Registry {
        Registry::with_env(move |k| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.to_string()))
    }

    /// On the embedded default tier the note names the larger one; with a
    /// model named, or another provider, it says nothing of it.
    #[test]
    fn the_note_offers_the_larger_tier_only_on_the_default_one() {
        let panel = crate::panel::Panel::bundled("storybook-qa").expect("panel");
        let local = registry(&[]);
        let hint = format!("a better judge: --model {}", crate::model::BETTER_MODEL);
        let note = provider_note(&local, &panel, &ModelArgs::default(), false);
        if crate::model::default_model() == crate::model::DEFAULT_MODEL {
            assert!(note.contains(&hint), "{note}");
        } else {
            assert!(!note.contains(&hint), "the larger tier is already the default here: {note}");
        }
        let named = ModelArgs { model: Some("smollm2-135m".into()), ..ModelArgs::default() };
        assert!(!provider_note(&local, &panel, &named, false).contains(&hint));
        let server = registry(&[("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")]);
        assert!(!provider_note(&server, &panel, &ModelArgs::default(), false).contains(&hint));
    }
}
