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
pub mod config;
pub mod consensus;
mod discussion;
mod initial;
pub mod journal;
mod labels;
pub mod moderator;
pub mod outcome;
pub mod pairs;
pub mod parse;
pub mod prompts;
pub mod quotes;
pub mod reasons;
pub mod recorder;
pub mod repeats;
mod review;
mod sentences;
pub mod synthesis_claims;
pub mod trim;
pub(crate) mod verdict;
pub mod vote;
pub mod weighted;

mod commands;
mod runtime;
pub mod stages;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

pub use crate::provider::binding::{Binding, Bindings};
pub use command::Command;
pub use config::{Budget, EngineConfig, RunBudget};
pub use outcome::RunOutcome;
pub use recorder::Recorder;

use crate::session::SessionWriter;
use runtime::Run;

/// Sends commands to a running engine.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: UnboundedSender<Command>,
    /// Why the session's log cannot be written now (see [`Self::log_status`]).
    log_status: Option<tokio::sync::watch::Receiver<Option<String>>>,
}

impl EngineHandle {
    /// A handle and the receiver to pass to [`run`].
    pub fn channel() -> (Self, UnboundedReceiver<Command>) {
        let (tx, rx) = unbounded_channel();
        (Self { tx, log_status: None }, rx)
    }

    /// For a session started by [`start`] or [`resume`]: why its log cannot
    /// be written now (the session then waits, paused, and tries again),
    /// `None` while it can.
    pub fn log_status(&self) -> Option<tokio::sync::watch::Receiver<Option<String>>> {
        self.log_status.clone()
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
    // A resumed run's old log gives back a person's actions as commands of its own.
    let (replayed_tx, mut replayed) = unbounded_channel();
    if let Some(journal) = recorder.journal() {
        journal.connect(replayed_tx);
    } else {
        drop(replayed_tx);
    }
    let run = Arc::new(Run::new(config, recorder));
    run.emit_session_started();

    let protocol = async {
        if let Some(why) = unjudgeable(&run) {
            run.fail(why);
        } else {
            stages::run_protocol(&run).await;
        }
        if linger && !run.quit.is_cancelled() {
            run.quit.cancelled().await;
        }
    };
    let mut commands_open = true;
    let mut replayed_open = true;
    tokio::pin!(protocol);
    loop {
        tokio::select! {
            biased;
            cmd = replayed.recv(), if replayed_open => match cmd {
                Some(cmd) => run.apply_command(cmd),
                None => replayed_open = false,
            },
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
    if let Some(journal) = run.rec.journal() {
        journal.release_rest();
    }
    while let Ok(cmd) = replayed.try_recv() {
        run.apply_command(cmd);
    }
    while let Ok(cmd) = commands.try_recv() {
        run.apply_command(cmd);
    }
    drain_writes(&run, &mut commands).await;
    let outcome = run.finish(started.elapsed());
    // The end is written too, unless the session is quit while it cannot be.
    drain_writes(&run, &mut commands).await;
    RunOutcome { error: outcome.error.or_else(|| run.rec.write_error()), ..outcome }
}

/// After the protocol: wait until every event is written (trying again
/// while the log cannot be), unless a person quits.
async fn drain_writes(run: &Run, commands: &mut UnboundedReceiver<Command>) {
    let mut open = true;
    while run.rec.blocked().is_some() && !run.quit.is_cancelled() {
        tokio::select! {
            () = tokio::time::sleep(runtime::WRITE_RETRY) => {}
            cmd = commands.recv(), if open => match cmd {
                Some(Command::Quit { .. }) => return,
                Some(cmd) => run.apply_command(cmd),
                None => open = false,
            },
        }
        run.rec.retry();
    }
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
    Ok(spawn(config, recorder, events))
}

/// Resume the interrupted session whose log is at `log_path` (read into
/// `journal`; see [`journal`]): `config` is its run as its `session_started`
/// recorded it ([`journal::Journal::recorded`]). [`Started::events`] gives
/// the old log's events first, then the new ones, which are appended to
/// the same file.
pub fn resume(config: EngineConfig, journal: Arc<journal::Journal>, log_path: &Path) -> anyhow::Result<Started> {
    let writer = SessionWriter::reopen(log_path)
        .with_context(|| format!("cannot open the session log {} to go on writing it", log_path.display()))?;
    let (tx, events) = unbounded_channel();
    for e in journal.events() {
        let _ = tx.send(e.clone());
    }
    let recorder = Recorder::resuming(Some(writer), Some(tx), journal);
    Ok(spawn(config, recorder, events))
}

fn spawn(config: EngineConfig, recorder: Recorder, events: UnboundedReceiver<crate::session::Event>) -> Started {
    let (mut handle, commands) = EngineHandle::channel();
    handle.log_status = Some(recorder.status());
    let task = tokio::spawn(run(config, recorder, commands));
    Started { events, handle, task }
}

/// Why the item cannot be judged by the panel's protocol: a protocol whose
/// results are pairwise decisions needs two or more candidates, a pairwise
/// mode exactly two; the others judge the item's `content`.
fn unjudgeable(run: &Run) -> Option<String> {
    let item = run.item();
    let candidates = item.candidates.as_ref().map_or(0, Vec::len);
    if run.composition.as_ref().is_some_and(|c| c.has(crate::panel::composition::StageKind::Compare)) {
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
