//! The terminal screens: watch a debate live and steer it, replay a recorded
//! session, and browse sessions and panels.
//!
//! The screen reaches the engine only through [`crate::engine::Command`]s and
//! sees it only through session events, folded by [`view::ViewModel`]. It
//! draws only when something changed, at most ~30 frames a second, and waits
//! on its channels (never polls) when nothing happens.

pub mod action;
pub mod app;
pub mod command_line;
pub mod components;
pub mod config;
pub mod keymap;
pub mod optimize;
mod overlay_input;
pub mod overlays;
pub mod personas;
pub mod replay;
pub mod screens;
mod search;
mod steps_editor;
pub mod terminal;
pub mod theme;
pub mod view;
pub mod words;
pub mod wrap;

use std::io;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::FutureExt;
use ratatui::crossterm::event::Event as TermEvent;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::engine::{self, Command, EngineConfig, RunOutcome};
use crate::session::Event;
use app::{App, Env};
use screens::home::{Home, HomeChoice};
use terminal::TerminalGuard;

/// Shortest time between two frames while things change.
pub const FRAME: Duration = Duration::from_millis(33);
/// How often the elapsed time of a running session is refreshed.
const CLOCK_TICK: Duration = Duration::from_secs(1);
/// Events folded before a frame may be drawn, at most.
const DRAIN_MAX: usize = 4096;

/// An open terminal with its input channel.
pub struct Tui {
    guard: TerminalGuard,
    input: UnboundedReceiver<TermEvent>,
}

impl Tui {
    /// Enter the screen.
    pub fn enter() -> io::Result<Self> {
        let guard = TerminalGuard::enter()?;
        Ok(Self { guard, input: terminal::spawn_input() })
    }
}

/// Drive `app` until it asks to leave: terminal input, session events and
/// replay timing in, frames out.
pub async fn run_app(tui: &mut Tui, app: &mut App, mut events: Option<UnboundedReceiver<Event>>) -> io::Result<()> {
    let mut last_frame: Option<Instant> = None;
    let mut next_tick = Instant::now() + CLOCK_TICK;
    let ended = crate::signals::end_requested();
    tokio::pin!(ended);
    loop {
        let now = Instant::now();
        if app.dirty {
            let due = last_frame.map(|t| t + FRAME).unwrap_or(now);
            if now >= due {
                tui.guard.draw(|f| screens::live::draw(f, app))?;
                app.dirty = false;
                last_frame = Some(now);
            }
        }
        if app.exit {
            return Ok(());
        }
        // Wake-ups: a pending frame, the replay's next event, the clock.
        let mut wake: Option<Instant> = None;
        let mut consider = |t: Option<Instant>| {
            if let Some(t) = t {
                wake = Some(wake.map_or(t, |w: Instant| w.min(t)));
            }
        };
        if app.dirty {
            consider(last_frame.map(|t| t + FRAME));
        }
        consider(app.replay_due());
        let ticking =
            app.now.is_some() && !app.view().is_done() && app.view().state == crate::session::fold::RunState::Running;
        if ticking {
            consider(Some(next_tick));
        }
        let sleep = async {
            match wake {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            ev = tui.input.recv() => match ev {
                Some(ev) => {
                    app.on_terminal_event(ev);
                    while let Ok(ev) = tui.input.try_recv() {
                        app.on_terminal_event(ev);
                    }
                }
                None => return Err(io::Error::other("the terminal input closed")),
            },
            ev = async { events.as_mut().expect("guarded").recv().await }, if events.is_some() => match ev {
                Some(ev) => {
                    app.on_session_event(&ev);
                    let mut n = 0;
                    while n < DRAIN_MAX {
                        match events.as_mut().map(|e| e.try_recv()) {
                            Some(Ok(ev)) => app.on_session_event(&ev),
                            _ => break,
                        }
                        n += 1;
                    }
                }
                None => {
                    events = None;
                    app.engine_gone();
                }
            },
            // The terminal closed or the process was told to end: leave like `q`,
            // so the session still ends with its last event.
            () = &mut ended => {
                app.hung_up = true;
                return Ok(());
            }
            () = sleep => {
                let now = Instant::now();
                app.pump_replay(now);
                if ticking && now >= next_tick {
                    app.tick(chrono::Utc::now());
                    next_tick = now + CLOCK_TICK;
                }
            }
        }
    }
}

fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Run the engine on `config` with the live screen; the session log goes under `dir`.
///
/// The session stays open after the result (for overrides and ratings) until
/// the user quits. Whatever happens to the screen (an error, a panic), the
/// terminal is restored and the engine is told to quit and awaited, so the
/// log ends with `session_ended`.
pub async fn live(tui: &mut Tui, env: Env, mut config: EngineConfig, dir: &Path) -> anyhow::Result<RunOutcome> {
    let path = dir.join(format!("{}.jsonl", config.session_id));
    config.linger = true;
    live_started(tui, env, engine::start(config, &path)?).await
}

/// Resume an interrupted session (see [`engine::resume`]) in the live
/// screen: its log is shown as it was, then the run goes on in it.
pub async fn live_resumed(
    tui: &mut Tui,
    env: Env,
    mut config: EngineConfig,
    journal: std::sync::Arc<engine::journal::Journal>,
    path: &Path,
) -> anyhow::Result<RunOutcome> {
    config.linger = true;
    live_started(tui, env, engine::resume(config, journal, path)?).await
}

async fn live_started(tui: &mut Tui, env: Env, started: engine::Started) -> anyhow::Result<RunOutcome> {
    let engine::Started { events: rx, handle, task: engine } = started;
    let author = env.author.clone();
    let mut app = App::live(env, handle.clone());
    app.log_status = handle.log_status();
    let result = AssertUnwindSafe(run_app(tui, &mut app, Some(rx))).catch_unwind().await;
    let failure = match result {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(format!("the screen failed: {e}")),
        Err(p) => Some(format!("the screen failed: {}", panic_text(p.as_ref()))),
    };
    if app.hung_up && !engine.is_finished() {
        // The terminal closed (an SSH link dropped) or the system is going
        // down: no person chose to stop, so the session is not ended. Every
        // event so far is in its log (each is written as it happens); the
        // turns in flight are redone by `moot run --resume`.
        terminal::restore();
        let id = app.view().session_id.clone();
        eprintln!(
            "moot: the terminal closed or moot was told to end; session {id} is left unfinished: go on with `moot run --resume {id}`"
        );
        std::process::exit(129);
    }
    if !engine.is_finished() {
        handle.send(Command::Quit { author });
    }
    drop(app);
    let outcome = engine.await.context("the engine stopped unexpectedly")?;
    match failure {
        Some(f) => {
            terminal::restore();
            if let Some(p) = &outcome.log_path {
                eprintln!("moot: session log: {}", p.display());
            }
            Err(anyhow::anyhow!(f))
        }
        None => Ok(outcome),
    }
}

/// Load a session log for replay.
pub fn load_events(path: &Path) -> anyhow::Result<replay::ReplayLog> {
    replay::ReplayLog::load(path)
}

/// Run `job` on its own thread while a screen shows what it does: the
/// progress of a model fetch it reports to the sink, else a plain note with
/// the time so far. Returns `None` when the user cancels (`q`, Esc, Ctrl-C)
/// or the process is told to end; the job then finishes unwatched (a fetch
/// never leaves a half file that looks valid).
pub async fn prepare<T, F>(tui: &mut Tui, env: &Env, title: &str, job: F) -> anyhow::Result<Option<T>>
where
    T: Send + 'static,
    F: FnOnce(crate::model::ProgressSink) -> anyhow::Result<T> + Send + 'static,
{
    use ratatui::crossterm::event::{KeyCode, KeyEventKind, KeyModifiers};
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::unbounded_channel();
    let (done_tx, mut done_rx) = tokio::sync::oneshot::channel();
    let sink: crate::model::ProgressSink = std::sync::Arc::new(move |model: &str, p: &crate::model::FetchProgress| {
        let _ = progress_tx.send((model.to_string(), p.clone()));
    });
    std::thread::Builder::new()
        .name("moot-prepare".into())
        .spawn(move || {
            let result = std::panic::catch_unwind(AssertUnwindSafe(|| job(sink)))
                .unwrap_or_else(|p| Err(anyhow::anyhow!("preparing the run panicked: {}", panic_text(&*p))));
            let _ = done_tx.send(result);
        })
        .context("cannot start a thread")?;
    let mut screen = screens::prepare::Prepare::new(env.clone(), title);
    let ended = crate::signals::end_requested();
    tokio::pin!(ended);
    let mut tick = tokio::time::interval(CLOCK_TICK);
    loop {
        tui.guard.draw(|f| screen.draw(f))?;
        tokio::select! {
            result = &mut done_rx => {
                return match result {
                    Ok(built) => built.map(Some),
                    Err(_) => Err(anyhow::anyhow!("preparing the run stopped unexpectedly")),
                };
            }
            Some((model, p)) = progress_rx.recv() => {
                screen.progress(model, p);
                while let Ok((model, p)) = progress_rx.try_recv() {
                    screen.progress(model, p);
                }
            }
            ev = tui.input.recv() => match ev {
                Some(TermEvent::Key(k)) if k.kind != KeyEventKind::Release => {
                    let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if ctrl_c || matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) {
                        return Ok(None);
                    }
                }
                Some(_) => {}
                None => return Err(anyhow::anyhow!("the terminal input closed")),
            },
            () = &mut ended => return Ok(None),
            _ = tick.tick() => {}
        }
    }
}

/// Replay a recorded session at `speed`.
pub async fn replay(tui: &mut Tui, env: Env, log: replay::ReplayLog, speed: f64) -> anyhow::Result<()> {
    let notice = log.notice();
    let mut app = App::replay(env, log.events, speed);
    if let Some(notice) = notice {
        app.error(notice);
    }
    run_app(tui, &mut app, None).await?;
    Ok(())
}

/// A run the home screen can start: its title, and the job that builds its
/// providers (fetching and loading a local model, with progress sent to the
/// sink) and returns the engine configuration and the session folder.
pub struct StartRun {
    pub title: String,
    #[allow(clippy::type_complexity)]
    pub bind: Box<dyn FnOnce(crate::model::ProgressSink) -> anyhow::Result<(EngineConfig, PathBuf)> + Send>,
}

/// Checks a panel chosen on the home screen and plans its run.
pub type RunBuilder<'a> = dyn Fn(&str) -> anyhow::Result<StartRun> + 'a;

/// An unfinished session the home screen can resume: its log, read, and
/// the job that binds its recorded participants to their providers.
pub struct StartResume {
    pub title: String,
    pub path: PathBuf,
    pub journal: std::sync::Arc<engine::journal::Journal>,
    #[allow(clippy::type_complexity)]
    pub bind: Box<dyn FnOnce(crate::model::ProgressSink) -> anyhow::Result<EngineConfig> + Send>,
}

/// Reads an unfinished session's log chosen on the home screen and plans its resumption.
pub type ResumeBuilder<'a> = dyn Fn(&Path) -> anyhow::Result<StartResume> + 'a;

/// The home screen: browse sessions (Enter replays, `r` resumes an
/// unfinished one) and panels (`n` runs).
pub async fn home(
    tui: &mut Tui,
    env: Env,
    dirs: Vec<PathBuf>,
    build: &RunBuilder<'_>,
    resume: &ResumeBuilder<'_>,
) -> anyhow::Result<()> {
    let mut home = Home::new(env.clone(), dirs);
    loop {
        if home.dirty {
            tui.guard.draw(|f| home.draw(f))?;
            home.dirty = false;
        }
        match home.choice.take() {
            Some(HomeChoice::Quit) => return Ok(()),
            Some(HomeChoice::Replay(path)) => {
                match load_events(&path) {
                    Ok(events) => replay(tui, env.clone(), events, 1.0).await?,
                    Err(e) => home.message = Some(crate::errors::error_text(&e)),
                }
                home.refresh();
                continue;
            }
            Some(HomeChoice::Resume(path)) => {
                let prepared = match resume(path.as_path()) {
                    Ok(start) => {
                        let StartResume { title, path, journal, bind } = start;
                        prepare(tui, &env, &title, bind).await.map(|c| c.map(|config| (config, path, journal)))
                    }
                    Err(e) => Err(e),
                };
                match prepared {
                    Ok(Some((config, path, journal))) => {
                        let outcome = live_resumed(tui, env.clone(), config, journal, &path).await?;
                        home.message = outcome.log_path.map(|p| format!("session recorded: {}", p.display()));
                    }
                    Ok(None) => home.message = Some("stopped before the session went on; its log is as it was".into()),
                    Err(e) => home.message = Some(crate::errors::error_text(&e)),
                }
                home.refresh();
                continue;
            }
            Some(HomeChoice::Run(panel)) => {
                let prepared = match build(&panel) {
                    Ok(start) => prepare(tui, &env, &start.title, start.bind).await,
                    Err(e) => Err(e),
                };
                match prepared {
                    Ok(Some((config, dir))) => {
                        let outcome = live(tui, env.clone(), config, &dir).await?;
                        home.message = outcome.log_path.map(|p| format!("session recorded: {}", p.display()));
                    }
                    Ok(None) => home.message = Some("stopped before the session started".into()),
                    Err(e) => home.message = Some(crate::errors::error_text(&e)),
                }
                home.refresh();
                continue;
            }
            None => {}
        }
        match tui.input.recv().await {
            Some(ev) => home.on_terminal_event(ev),
            None => return Ok(()),
        }
    }
}
