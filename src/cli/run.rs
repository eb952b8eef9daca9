//! `moot run`: one panel on one item.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, bail};

use super::RunArgs;
use super::headless::{Paint, Transcript};
use crate::engine::{self, Budget, Command, EngineConfig, EngineHandle, Recorder, RunOutcome};
use crate::item::{Item, ItemsFile};
use crate::panel::{ModeratorPolicy, Panel};
use crate::provider::cache::ResponseCache;
use crate::provider::registry::Registry;
use crate::session::event::EndStatus;
use crate::session::{SessionWriter, default_sessions_dir};

/// The name put on events a person causes: `MOOT_USER`, else `$USER`.
pub fn human_name() -> String {
    ["MOOT_USER", "USER", "USERNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "human".into())
}

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
        return Ok(Item {
            id: args.id.clone().unwrap_or_else(|| "content".into()),
            content: text.clone(),
            context: None,
            reference: None,
            human: None,
            candidates: None,
        });
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
    let writer =
        SessionWriter::create(&path).with_context(|| format!("cannot create the session log {}", path.display()))?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let recorder = Recorder::new(Some(writer), Some(tx));
    let (handle, commands) = EngineHandle::channel();
    let engine = tokio::spawn(engine::run(config, recorder, commands));
    let interrupts = tokio::spawn(forward_interrupts(handle));

    let stdout = std::io::stdout();
    let paint = Paint::for_stream(stdout.is_terminal());
    let mut transcript = Transcript::new(stdout.lock(), paint);
    while let Some(event) = rx.recv().await {
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

/// Resolves when the process is told to end other than by Ctrl-C: its
/// terminal closed (SIGHUP) or it was asked to terminate (SIGTERM).
pub async fn end_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut hangup), Ok(mut terminate)) = (signal(SignalKind::hangup()), signal(SignalKind::terminate())) {
            tokio::select! {
                _ = hangup.recv() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    std::future::pending::<()>().await
}

async fn forward_interrupts(handle: EngineHandle) {
    let author = human_name();
    let ended = end_requested();
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
                handle.send(Command::Quit { author: author.clone() });
                break;
            }
        }
    }
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

/// The engine configuration and session folder for `moot run` arguments.
pub fn build_config(args: &RunArgs) -> anyhow::Result<(EngineConfig, PathBuf)> {
    let mut panel = load_panel(args.panel.as_deref())?;
    // Cheap checks first: a wrong item id is reported before a model is loaded.
    let item = load_item(&panel, args)?;
    let mut registry = Registry::from_env()?;
    if args.cache && !args.no_cache {
        registry.set_cache(Some(ResponseCache::new(ResponseCache::default_dir())));
    }
    let (bindings, seed) = args.models.bind(&mut panel, &mut registry)?;
    let mut config = EngineConfig::new(Arc::new(panel), item, bindings);
    config.provider_note = Some(registry.default_reason.clone());
    config.seed = seed;
    if let Some(max) = args.max_cost
        && !(max.is_finite() && max > 0.0)
    {
        bail!("--max-cost must be a positive number");
    }
    config.budget = Budget { max_tokens_total: args.max_tokens_total, max_cost: args.max_cost };
    let dir = args.out.clone().unwrap_or_else(default_sessions_dir);
    Ok((config, dir))
}

pub fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let (config, dir) = build_config(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    if !args.headless {
        if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
            bail!("the live screen needs a terminal; use --headless for a printed transcript");
        }
        let ui = crate::tui::config::UiConfig::load(args.theme.as_deref())?;
        let env = crate::tui::app::Env::new(ui);
        let outcome = runtime.block_on(async {
            let mut tui = crate::tui::Tui::enter()?;
            let outcome = crate::tui::live(&mut tui, env, config, &dir).await;
            drop(tui);
            outcome
        })?;
        return Ok(report_outcome(&outcome));
    }
    let outcome = runtime.block_on(run_headless(config, dir, args.json))?;
    Ok(report_outcome(&outcome))
}
