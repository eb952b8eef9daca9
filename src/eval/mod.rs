//! Batch evaluation: a panel over the items of a dataset, several at once,
//! one session log per item in a run folder (see `docs/eval.md`).
//!
//! Every item runs through the same engine as `moot run`. Items run
//! concurrently up to a limit (providers apply their own limits on top). A
//! run can be resumed: completed items are skipped, failed, stopped and
//! incomplete ones run again after their old log is moved to `attempts/`.
//! A log file is only ever created, never overwritten, so no item is lost or
//! written twice into the same file.

pub mod batch;
pub mod pairwise;
pub mod progress;
pub mod shard;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use chrono::Utc;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::engine::{self, Bindings, Budget, Command, EngineConfig, EngineHandle, RunBudget, RunOutcome};
use crate::item::{Item, ItemProblem};
use crate::panel::Panel;
use crate::provider::retry::RetryPolicy;
use crate::session::event::{EndStatus, EventKind, Usage};
use crate::session::run_folder::{self as folder, ManifestError};
pub use crate::session::run_folder::{Counts, LogState, Manifest, Pricing, Totals};
use crate::session::selection::UnknownIds;
pub use crate::session::selection::{Selection, Shard};
pub use progress::Progress;

/// Why a batch run could not start or finish its bookkeeping.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error(transparent)]
    UnknownIds(#[from] UnknownIds),
    /// The run folder or its `run.json` could not be read or written.
    #[error(transparent)]
    Folder(#[from] ManifestError),
    #[error(
        "{} already holds a run; pass --resume to continue it (completed items are skipped), or choose another --out",
        dir.display()
    )]
    FolderInUse { dir: PathBuf },
    #[error("{} was run with panel \"{found}\", not \"{expected}\"; use another --out for a different panel", dir.display())]
    PanelMismatch { dir: PathBuf, found: String, expected: String },
    #[error(
        "{} was run with seed {found}, not {given}; resume without --seed (the run's own is kept), or use another --out",
        dir.display()
    )]
    SeedMismatch { dir: PathBuf, found: u64, given: u64 },
    #[error(
        "{} was run with other models ({who}: {found} there, {given} here); give the run's --provider and --model \
         (a stopped run prints the command that resumes it), or use another --out",
        dir.display()
    )]
    ModelsMismatch { dir: PathBuf, who: String, found: String, given: String },
    #[error("no items to run: {0}")]
    NothingSelected(String),
    #[error("{} cannot take this run: {why}", dir.display())]
    ShardConflict { dir: PathBuf, why: String },
    #[error(
        "{} is being written by another moot process: that run (or a shard with the same items) is still going; resume once it has ended",
        path.display()
    )]
    StillRunning { path: PathBuf },
}

/// Everything a batch run needs.
#[derive(Clone, Debug)]
pub struct EvalConfig {
    pub panel: Arc<Panel>,
    pub bindings: Bindings,
    /// Which provider was chosen and why (recorded in every session).
    pub provider_note: Option<String>,
    /// The data file as named by the user (recorded in `run.json`).
    pub data: String,
    /// Every usable item of the data file.
    pub items: Vec<Item>,
    /// Lines of the data file that were not usable items.
    pub bad_items: Vec<ItemProblem>,
    pub selection: Selection,
    /// The run folder.
    pub out: PathBuf,
    /// Items running at once (at least 1).
    pub concurrency: usize,
    pub resume: bool,
    pub seed: u64,
    pub pricing: Option<Pricing>,
    pub retry: RetryPolicy,
    /// What each session may spend.
    pub budget: Budget,
    /// What the whole run may spend, shared by its sessions.
    pub run_budget: Option<Arc<RunBudget>>,
    /// Where G-Eval's evaluation steps are kept (see [`EngineConfig::steps_cache`]).
    pub steps_cache: Option<PathBuf>,
}

impl EvalConfig {
    /// A configuration with defaults: concurrency 4, no resume, seed from the panel.
    pub fn new(panel: Arc<Panel>, bindings: Bindings, items: Vec<Item>, out: impl Into<PathBuf>) -> Self {
        let seed = panel.generation.seed.unwrap_or(0);
        Self {
            panel,
            bindings,
            provider_note: None,
            data: String::new(),
            items,
            bad_items: Vec::new(),
            selection: Selection::default(),
            out: out.into(),
            concurrency: 4,
            resume: false,
            seed,
            pricing: None,
            retry: RetryPolicy::default(),
            budget: Budget::default(),
            run_budget: None,
            steps_cache: None,
        }
    }
}

/// Who judges with what, as `run.json` records it (see [`Manifest::models`]).
fn models_of(bindings: &Bindings) -> BTreeMap<String, String> {
    let name = |b: &engine::Binding| {
        let r = b.model_ref();
        format!("{} on {}", r.model, r.provider)
    };
    let agents = bindings.agents.iter().map(|(a, b)| (format!("agent {a}"), name(b)));
    let roles = bindings.roles.iter().map(|(r, b)| (format!("[{}]", r.as_str()), name(b)));
    std::iter::once(("default".to_string(), name(&bindings.default))).chain(agents).chain(roles).collect()
}

/// The first participant whose model differs between a recorded run's
/// `before` and this one's `now`: who, the model there and here. A run
/// from before models were recorded has none to compare.
fn models_differ(
    before: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> Option<(String, String, String)> {
    if before.is_empty() {
        return None;
    }
    let who = before.keys().chain(now.keys()).find(|k| before.get(*k) != now.get(*k))?;
    let name = |m: Option<&String>| m.cloned().unwrap_or_else(|| "none".into());
    Some((who.clone(), name(before.get(who)), name(now.get(who))))
}

/// One item that did not complete.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemFailure {
    pub id: String,
    pub status: LogState,
    pub error: Option<String>,
}

/// What a batch run did.
#[derive(Debug, Clone, PartialEq)]
pub struct EvalSummary {
    pub dir: PathBuf,
    pub counts: Counts,
    /// Totals over the folder's whole history (all invocations and attempts).
    pub totals: Totals,
    /// Tokens used by this invocation.
    pub usage: Usage,
    /// Items of this invocation that failed or were stopped.
    pub failures: Vec<ItemFailure>,
    /// The run was interrupted (Ctrl-C) before every item ran.
    pub interrupted: bool,
    /// Old logs moved to `attempts/` by `--resume`.
    pub moved_aside: Vec<PathBuf>,
    /// Why the run stopped early because its budget was spent.
    pub budget_reached: Option<String>,
}

/// Result of running one item.
struct ItemResult {
    index: usize,
    state: LogState,
    session_id: Option<String>,
    error: Option<String>,
    usage: Usage,
    calls: u64,
}

/// Run the configured items; stop starting new ones and quit running ones
/// when `cancel` fires (their logs end with status `stopped`).
pub async fn run_eval(
    config: EvalConfig,
    progress: Option<Arc<Progress>>,
    cancel: CancellationToken,
) -> Result<EvalSummary, EvalError> {
    let dir = config.out.clone();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |error| EvalError::Folder(ManifestError::Io { path, error })
    };
    let selected = config.selection.apply(&config.items)?;
    if selected.is_empty() {
        return Err(EvalError::NothingSelected(describe_selection(&config)));
    }

    // The folder: new, or (with --resume) an earlier run of the same panel.
    // Shards of one run share a folder, each with a manifest of its own.
    let shard = config.selection.shard;
    let manifest_name = shard::manifest_name(shard);
    let models = models_of(&config.bindings);
    shard::check_folder(&dir, shard, config.resume, &config.panel.name, &models)?;
    let previous = if dir.exists() { shard::load(&dir, &manifest_name)? } else { None };
    // A shard's log names are those of the whole data file, whichever shard runs.
    let stems = match shard {
        Some(_) => {
            let all: HashMap<&str, String> =
                config.items.iter().map(|i| i.id.as_str()).zip(folder::log_stems(&config.items)).collect();
            selected.iter().map(|i| all.get(i.id.as_str()).cloned().unwrap_or_else(|| i.id.clone())).collect()
        }
        None => folder::log_stems(&selected),
    };
    let holds_mine = match shard {
        Some(_) => stems.iter().any(|s| dir.join(format!("{s}.jsonl")).exists()),
        None => folder::holds_a_run(&dir),
    };
    if !config.resume && (previous.is_some() || holds_mine) {
        return Err(EvalError::FolderInUse { dir });
    }
    if let Some(prev) = &previous
        && prev.panel.name != config.panel.name
    {
        return Err(EvalError::PanelMismatch {
            dir,
            found: prev.panel.name.clone(),
            expected: config.panel.name.clone(),
        });
    }
    if let Some(prev) = &previous {
        if prev.seed != config.seed {
            return Err(EvalError::SeedMismatch { dir, found: prev.seed, given: config.seed });
        }
        if let Some((who, found, given)) = models_differ(&prev.models, &models) {
            return Err(EvalError::ModelsMismatch { dir, who, found, given });
        }
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;

    let mut entries = previous.as_ref().map(|p| p.items.clone()).unwrap_or_default();
    let mut counts = Counts { items: selected.len(), bad_items: config.bad_items.len(), ..Counts::default() };
    let mut to_run: Vec<usize> = Vec::new();
    let mut moved_aside = Vec::new();
    for (i, (item, stem)) in selected.iter().zip(&stems).enumerate() {
        let file = format!("{stem}.jsonl");
        let path = dir.join(&file);
        let entry = entries.entry(item.id.clone()).or_insert_with(|| folder::ItemEntry {
            file: file.clone(),
            status: "not_started".into(),
            session_id: None,
            error: None,
            attempts: 0,
        });
        entry.file = file;
        if path.exists() {
            let state = folder::log_state(&path).map_err(io(&path))?;
            if state == LogState::Completed {
                entry.status = state.as_str().into();
                counts.already_done += 1;
                continue;
            }
            if crate::session::writer::being_written(&path) {
                return Err(EvalError::StillRunning { path });
            }
            moved_aside.push(folder::move_aside(&dir, stem).map_err(io(&path))?);
        }
        to_run.push(i);
    }

    let started = Utc::now();
    let mut manifest = Manifest {
        moot_version: env!("CARGO_PKG_VERSION").to_string(),
        panel: folder::PanelRef {
            name: config.panel.name.clone(),
            protocol: config.panel.protocol.kind.as_str().to_string(),
            source: config.panel.source.as_ref().map(|p| p.display().to_string()),
        },
        data: config.data.clone(),
        started: previous.as_ref().map(|p| p.started).unwrap_or(started),
        ended: None,
        status: "running".into(),
        selection: config.selection.clone(),
        concurrency: config.concurrency,
        seed: config.seed,
        provider: config.provider_note.clone(),
        models,
        pricing: config.pricing,
        counts,
        totals: previous.as_ref().map(|p| p.totals).unwrap_or_default(),
        bad_items: config.bad_items.iter().map(Into::into).collect(),
        items: entries,
        invocations: previous.as_ref().map(|p| p.invocations.clone()).unwrap_or_default(),
    };
    manifest.invocations.push(folder::Invocation {
        started,
        ended: None,
        resume: config.resume,
        ran: 0,
        interrupted: false,
    });
    shard::save(&dir, &manifest_name, &manifest)?;

    let progress = progress.unwrap_or_else(|| Arc::new(Progress::new(to_run.len(), config.pricing)));
    progress.set_total(to_run.len());
    let results = run_items(&config, &selected, &stems, &to_run, &progress, &cancel).await;

    // Fold the results into the manifest.
    let mut usage = Usage::default();
    let mut calls = 0;
    let mut failures = Vec::new();
    let mut ran = 0;
    for r in &results {
        let item = &selected[r.index];
        ran += 1;
        usage.add(&r.usage);
        calls += r.calls;
        if let Some(e) = manifest.items.get_mut(&item.id) {
            e.status = r.state.as_str().into();
            e.session_id = r.session_id.clone();
            e.error = r.error.clone();
            e.attempts += 1;
        }
        if r.state != LogState::Completed {
            failures.push(ItemFailure { id: item.id.clone(), status: r.state, error: r.error.clone() });
        }
    }
    let mut counts = manifest.counts;
    for r in &results {
        match r.state {
            LogState::Completed => counts.completed += 1,
            LogState::Stopped => counts.stopped += 1,
            LogState::Failed | LogState::Incomplete => counts.failed += 1,
        }
    }
    counts.completed += counts.already_done;
    counts.not_started = to_run.len() - ran;
    let interrupted = cancel.is_cancelled();
    let budget_reached = config.run_budget.as_ref().and_then(|b| b.exceeded());
    let mut totals = manifest.totals;
    totals.input_tokens += usage.input_tokens;
    totals.output_tokens += usage.output_tokens;
    totals.calls += calls;
    if let Some(p) = config.pricing {
        totals.cost = Some(totals.cost.unwrap_or(0.0) + p.cost_of(&usage));
    }
    let ended = Utc::now();
    manifest.counts = counts;
    manifest.totals = totals;
    manifest.ended = Some(ended);
    manifest.status = if interrupted {
        "interrupted"
    } else if budget_reached.is_some() {
        "budget_reached"
    } else if counts.completed == counts.items {
        "completed"
    } else {
        "incomplete"
    }
    .into();
    if let Some(inv) = manifest.invocations.last_mut() {
        inv.ended = Some(ended);
        inv.ran = ran;
        inv.interrupted = interrupted;
    }
    shard::save(&dir, &manifest_name, &manifest)?;
    Ok(EvalSummary { dir, counts, totals, usage, failures, interrupted, moved_aside, budget_reached })
}

fn describe_selection(config: &EvalConfig) -> String {
    let s = &config.selection;
    let mut parts = vec![format!("{} usable items in {}", config.items.len(), config.data)];
    if let Some(ids) = &s.ids {
        parts.push(format!("--ids with {} ids", ids.len()));
    }
    if let Some(sh) = s.shard {
        parts.push(format!("--shard {sh}"));
    }
    if let Some(l) = s.limit {
        parts.push(format!("--limit {l}"));
    }
    parts.join(", ")
}

/// Run the chosen items with at most `concurrency` at once.
async fn run_items(
    config: &EvalConfig,
    items: &[Item],
    stems: &[String],
    to_run: &[usize],
    progress: &Arc<Progress>,
    cancel: &CancellationToken,
) -> Vec<ItemResult> {
    let permits = Arc::new(Semaphore::new(config.concurrency.max(1)));
    let handles: Arc<Mutex<HashMap<usize, EngineHandle>>> = Arc::default();
    // Quit every running session when the run is cancelled.
    let quitter = {
        let handles = handles.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            cancel.cancelled().await;
            let author = crate::session::human_name();
            for h in handles.lock().unwrap_or_else(|e| e.into_inner()).values() {
                h.send(Command::Quit { author: author.clone() });
            }
        })
    };
    let mut tasks = tokio::task::JoinSet::new();
    for &index in to_run {
        let permit = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            p = permits.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        // A spent run budget starts nothing more; running sessions stop on their own.
        if config.run_budget.as_ref().is_some_and(|b| b.exceeded().is_some()) {
            break;
        }
        progress.start_clock();
        progress.running.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let path = config.out.join(format!("{}.jsonl", stems[index]));
        let mut engine_config = EngineConfig::new(config.panel.clone(), items[index].clone(), config.bindings.clone());
        engine_config.session_id = format!("{}-{}", crate::session::new_session_id(), stems[index]);
        engine_config.seed = config.seed;
        engine_config.provider_note = config.provider_note.clone();
        engine_config.retry = config.retry;
        engine_config.budget = config.budget;
        engine_config.run_budget = config.run_budget.clone();
        engine_config.steps_cache = config.steps_cache.clone();
        let progress = progress.clone();
        let handles = handles.clone();
        let cancel = cancel.clone();
        tasks.spawn(async move {
            let register = |handle: EngineHandle| {
                handles.lock().unwrap_or_else(|e| e.into_inner()).insert(index, handle.clone());
                if cancel.is_cancelled() {
                    // Cancelled before the session was registered: quit at once.
                    handle.send(Command::Quit { author: crate::session::human_name() });
                }
            };
            let result = run_one(index, engine_config, &path, register, &progress).await;
            handles.lock().unwrap_or_else(|e| e.into_inner()).remove(&index);
            let counter = match result.state {
                LogState::Completed => &progress.done,
                // Only a Ctrl-C or a run budget stops an item of a batch run.
                LogState::Stopped => &progress.stopped,
                _ => &progress.failed,
            };
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            progress.running.fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
            drop(permit);
            result
        });
    }
    let mut results = Vec::with_capacity(to_run.len());
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok(r) => results.push(r),
            // A panicking session must not take the others down; its log stays incomplete.
            Err(e) => tracing::error!("an item's task ended abnormally: {e}"),
        }
    }
    quitter.abort();
    results.sort_by_key(|r| r.index);
    results
}

/// The engine's task of one item, aborted if the item's own task is dropped
/// (when the whole run is), as the engine would be if it ran there.
struct EngineTask(tokio::task::JoinHandle<RunOutcome>);

impl Drop for EngineTask {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Run one item's session to its end; `register` receives its handle once
/// it has started.
async fn run_one(
    index: usize,
    config: EngineConfig,
    path: &Path,
    register: impl FnOnce(EngineHandle),
    progress: &Arc<Progress>,
) -> ItemResult {
    let pairwise = config.panel.protocol.compares_pairs();
    let engine::Started { events: mut rx, handle, task } = match engine::start(config, path) {
        Ok(started) => started,
        Err(e) => {
            return ItemResult {
                index,
                state: LogState::Failed,
                session_id: None,
                error: Some(crate::errors::error_text(&e)),
                usage: Usage::default(),
                calls: 0,
            };
        }
    };
    let mut task = EngineTask(task);
    // While the session's log cannot be written, the session waits, paused;
    // the progress lines say so.
    let watcher = handle.log_status().map(|mut status| {
        let progress = progress.clone();
        tokio::spawn(async move {
            while status.changed().await.is_ok() {
                let why = status.borrow_and_update().clone();
                progress.set_blocked(index, why);
            }
        })
    });
    register(handle);
    // Live token counts for the progress line; reconciled with the engine's
    // own totals when the session ends.
    let live: Arc<Mutex<(bool, Usage)>> = Arc::default();
    let counter = {
        let (progress, live) = (progress.clone(), live.clone());
        tokio::spawn(async move {
            while let Some(ev) = rx.recv().await {
                if let EventKind::TurnCompleted { usage, .. } = &ev.kind {
                    let mut l = live.lock().unwrap_or_else(|e| e.into_inner());
                    if l.0 {
                        return;
                    }
                    l.1.add(usage);
                    progress.add_usage(usage);
                }
            }
        })
    };
    let outcome = match (&mut task.0).await {
        Ok(outcome) => outcome,
        // A panic in the session ends its item's task too, as if it had run there.
        Err(e) => std::panic::resume_unwind(e.try_into_panic().unwrap_or_else(|e| Box::new(e.to_string()))),
    };
    {
        let mut l = live.lock().unwrap_or_else(|e| e.into_inner());
        l.0 = true;
        // What the session counted that its turns did not (calls outside turns).
        let (total, seen) = (&outcome.usage.total, &l.1);
        let left = |all: Option<u64>, counted: Option<u64>| Some(all.unwrap_or(0).saturating_sub(counted.unwrap_or(0)));
        progress.add_usage(&Usage {
            input_tokens: total.input_tokens.saturating_sub(seen.input_tokens),
            output_tokens: total.output_tokens.saturating_sub(seen.output_tokens),
            batch_input_tokens: left(total.batch_input_tokens, seen.batch_input_tokens),
            batch_output_tokens: left(total.batch_output_tokens, seen.batch_output_tokens),
            ..Usage::default()
        });
    }
    counter.abort();
    if let Some(w) = watcher {
        w.abort();
    }
    progress.set_blocked(index, None);
    // The item's decisions as its log recorded them, for the running tally.
    if pairwise && let Some(comparisons) = pairwise::comparisons_of_log(path) {
        progress.add_pairwise(&comparisons);
    }
    ItemResult {
        index,
        state: outcome.status.into(),
        session_id: Some(outcome.session_id),
        error: match outcome.status {
            EndStatus::Failed => outcome.error.or(Some("failed".into())),
            EndStatus::Stopped => outcome.reason.or(Some("stopped".into())),
            EndStatus::Completed => None,
        },
        usage: outcome.usage.total,
        calls: outcome.usage.calls,
    }
}
