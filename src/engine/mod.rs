//! The engine runs a judging protocol for one item.
//!
//! It never touches the terminal: everything it does is an [`Event`] handed to
//! a [`Recorder`] (which writes the session log and feeds observers), and it
//! takes human [`Command`]s on a channel, applied at once to its state and
//! acted on at safe points (between turns). A stop cancels the turns in flight.
//!
//! [`Event`]: crate::session::Event

pub mod aggregate;
pub mod bindings;
pub mod command;
pub mod consensus;
mod discussion;
pub mod moderator;
pub mod parse;
pub mod prompts;
pub mod recorder;
pub mod trim;
pub(crate) mod verdict;
pub mod weighted;

mod commands;
pub mod protocols;
mod runtime;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

pub use crate::provider::binding::{Binding, Bindings};
pub use command::Command;
pub use recorder::Recorder;

use crate::item::Item;
use crate::panel::Panel;
use crate::provider::retry::RetryPolicy;
use crate::session::SessionWriter;
use crate::session::event::{EndStatus, Usage, UsageTotals};
use runtime::Run;

/// Limits on what one session may spend; reaching one stops the debate
/// (like a human stop: turns in flight are cancelled, aggregation still runs)
/// with the reason recorded in `stop_requested` (author `budget`) and
/// `session_ended.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Budget {
    /// Input plus output tokens over all calls.
    pub max_tokens_total: Option<u64>,
    /// Cost over all calls, at the providers' configured prices.
    pub max_cost: Option<f64>,
}

impl Budget {
    /// Why `used` has reached this budget, if it has.
    pub fn exceeded(&self, used: &Usage) -> Option<String> {
        self.exceeded_as(used, "budget", "--max-tokens-total", "--max-cost")
    }

    /// No limit set.
    pub fn is_unlimited(&self) -> bool {
        self.max_tokens_total.is_none() && self.max_cost.is_none()
    }

    fn exceeded_as(&self, used: &Usage, what: &str, tokens_flag: &str, cost_flag: &str) -> Option<String> {
        if let Some(max) = self.max_tokens_total
            && used.total() >= max
        {
            return Some(format!("{what}: {} tokens used, limit {max} ({tokens_flag})", used.total()));
        }
        if let (Some(max), Some(cost)) = (self.max_cost, used.cost)
            && cost >= max
        {
            return Some(format!("{what}: cost {cost:.4} reached the limit {max} ({cost_flag})"));
        }
        None
    }
}

/// A budget shared by every session of a batch run (`moot eval
/// --run-max-tokens`, `--run-max-cost`). Each session adds its calls; once
/// the budget is reached, every running session stops its debate after its
/// current turn (aggregation still runs, as with [`Budget`]) and no new item
/// starts.
#[derive(Debug)]
pub struct RunBudget {
    limits: Budget,
    /// Prices for calls whose provider has none configured (`moot eval --price-input/--price-output`).
    fallback: Option<crate::provider::pricing::Prices>,
    used: std::sync::Mutex<Usage>,
}

impl RunBudget {
    pub fn new(limits: Budget, fallback: Option<crate::provider::pricing::Prices>) -> Self {
        Self { limits, fallback, used: std::sync::Mutex::new(Usage::default()) }
    }

    /// Count one call; returns why the run's budget is reached, if it is.
    pub fn add(&self, usage: &Usage) -> Option<String> {
        let mut usage = *usage;
        if usage.cost.is_none() {
            usage.cost = self.fallback.map(|p| p.cost(&usage));
        }
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.add(&usage);
        self.reason(&used)
    }

    /// Why the run's budget is reached, if it is.
    pub fn exceeded(&self) -> Option<String> {
        self.reason(&self.used())
    }

    /// What the run's sessions have used so far.
    pub fn used(&self) -> Usage {
        *self.used.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn reason(&self, used: &Usage) -> Option<String> {
        self.limits.exceeded_as(used, "run budget", "--run-max-tokens", "--run-max-cost")
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub panel: Arc<Panel>,
    pub item: Item,
    pub session_id: String,
    pub seed: u64,
    pub bindings: Bindings,
    pub retry: RetryPolicy,
    /// Which provider was chosen by default and why (shown in headers).
    pub provider_note: Option<String>,
    /// After aggregation, keep the session open for overrides and ratings until
    /// a `Quit` command arrives or the command channel closes (interactive use).
    pub linger: bool,
    /// Failed turns in a row, within one group, before the run gives up.
    pub max_consecutive_failures: u32,
    /// Spending limits of the session.
    pub budget: Budget,
    /// The budget of the batch run this session belongs to, if any.
    pub run_budget: Option<Arc<RunBudget>>,
    /// Where G-Eval keeps evaluation steps between runs (`None`: written anew each run).
    pub steps_cache: Option<std::path::PathBuf>,
    /// Pairwise, `moot run --blind`: the screen hides the systems' names and
    /// the judges' verdicts until a person has labelled each pair; the run
    /// records the screen order it drew (`blind_order`).
    pub blind: bool,
}

impl EngineConfig {
    pub fn new(panel: Arc<Panel>, item: Item, bindings: Bindings) -> Self {
        let seed = panel.generation.seed.unwrap_or(0);
        Self {
            panel,
            item,
            session_id: crate::session::new_session_id(),
            seed,
            bindings,
            retry: RetryPolicy::default(),
            provider_note: None,
            linger: false,
            max_consecutive_failures: 3,
            budget: Budget::default(),
            run_budget: None,
            steps_cache: None,
            blind: false,
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub session_id: String,
    pub status: EndStatus,
    pub error: Option<String>,
    pub reason: Option<String>,
    pub usage: UsageTotals,
    /// The panel-wide result (overrides applied): scores with `overall`.
    pub result: Option<BTreeMap<String, f64>>,
    pub log_path: Option<std::path::PathBuf>,
}

/// Sends commands to a running engine.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: UnboundedSender<Command>,
}

impl EngineHandle {
    /// A handle and the receiver to pass to [`run`].
    pub fn channel() -> (Self, UnboundedReceiver<Command>) {
        let (tx, rx) = unbounded_channel();
        (Self { tx }, rx)
    }
    /// Send a command; false when the engine has finished.
    pub fn send(&self, command: Command) -> bool {
        self.tx.send(command).is_ok()
    }
}

/// Run the panel's protocol on the item to the end, recording every event.
pub async fn run(config: EngineConfig, recorder: Recorder, mut commands: UnboundedReceiver<Command>) -> RunOutcome {
    let started = Instant::now();
    let linger = config.linger;
    let run = Arc::new(Run::new(config, recorder));
    run.emit_session_started();

    let protocol = async {
        if let Some(why) = unjudgeable(&run) {
            run.fail(why);
        } else {
            protocols::run(&run).await;
        }
        if linger && !run.quit.is_cancelled() {
            run.quit.cancelled().await;
        }
    };
    let mut commands_open = true;
    tokio::pin!(protocol);
    loop {
        tokio::select! {
            biased;
            cmd = commands.recv(), if commands_open => match cmd {
                Some(cmd) => run.apply_command(cmd),
                None => {
                    commands_open = false;
                    // Nobody can send a Quit any more: stop lingering.
                    if linger {
                        run.finish_lingering();
                    }
                }
            },
            () = &mut protocol => break,
        }
    }
    // Commands that arrived while the protocol was finishing.
    while let Ok(cmd) = commands.try_recv() {
        run.apply_command(cmd);
    }
    run.finish(started.elapsed())
}

/// A session started by [`start`]: its events as they are recorded, the
/// handle that steers it, and the task that runs it to its end.
pub struct Started {
    pub events: UnboundedReceiver<crate::session::Event>,
    pub handle: EngineHandle,
    pub task: tokio::task::JoinHandle<RunOutcome>,
}

/// Start a session of `config` on a task of its own. Its log is created at
/// `log_path` (never over an existing file); every event is written there
/// before it is passed on to [`Started::events`].
pub fn start(config: EngineConfig, log_path: &Path) -> anyhow::Result<Started> {
    let writer = SessionWriter::create(log_path)
        .with_context(|| format!("cannot create the session log {}", log_path.display()))?;
    let (tx, events) = unbounded_channel();
    let recorder = Recorder::new(Some(writer), Some(tx));
    let (handle, commands) = EngineHandle::channel();
    let task = tokio::spawn(run(config, recorder, commands));
    Ok(Started { events, handle, task })
}

/// Why the item cannot be judged by the panel's protocol: pairwise judging
/// needs two or more candidates; the others judge the item's `content`.
fn unjudgeable(run: &Run) -> Option<String> {
    let item = run.item();
    let candidates = item.candidates.as_ref().map_or(0, Vec::len);
    if run.panel.protocol == crate::panel::Protocol::Pairwise {
        return (candidates < 2).then(|| {
            format!("item \"{}\" has {candidates} candidate(s): pairwise judging compares two or more", item.id)
        });
    }
    if run.panel.protocol.compares_pairs() {
        return (candidates != 2).then(|| {
            format!(
                "item \"{}\" has {candidates} candidate(s): {}'s pairwise mode (`mode = \"pairwise\"`) discusses \
                 exactly two (the pairwise protocol compares more)",
                item.id,
                run.panel.protocol.kind.as_str()
            )
        });
    }
    item.content.trim().is_empty().then(|| {
        format!("item \"{}\" has no `content` to judge (only `candidates`): judge it with a pairwise panel", item.id)
    })
}

/// The `session_started` event a run of `config` begins with (its agents, roles and models).
pub fn describe_session(config: &EngineConfig) -> crate::session::EventKind {
    runtime::session_started_event(config)
}
