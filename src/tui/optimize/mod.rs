//! The screen of `moot optimize`: the iterations with their S (picked and
//! held-out) as a list and a chart, the selected iteration's prompt diff and
//! feedback, and its per-example table. Live, a person answers the loop's
//! review points (feedback, rewrite), rolls back, pins or replaces examples
//! and stops with any iteration's prompt; a replay shows the same screen
//! from the log. The screen reads only the [`OptView`] fold of the events.

mod draw;

use std::time::{Duration, Instant};

use ratatui::crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use ratatui_textarea::TextArea;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::Tui;
use super::action::Action;
use super::app::Env;
use super::keymap::Mode;
use crate::optimize::log::{OptEvent, Split};
use crate::optimize::view::{OptView, Waiting};
use crate::optimize::{JudgePrompt, OptCommand};

pub use draw::draw;

/// Which list the arrow keys move in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Iterations,
    Examples,
}

/// What the text box edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Editing {
    Feedback,
    Rewrite,
    /// The id of a training example to add to later draws.
    AddExample,
}

/// A replay's clock: events are applied at their recorded pace (each gap
/// capped at two seconds), divided by the speed.
#[derive(Debug)]
pub struct ReplayClock {
    events: Vec<OptEvent>,
    next: usize,
    pub speed: f64,
    pub playing: bool,
    due: Option<Instant>,
}

impl ReplayClock {
    fn gap(&self) -> Duration {
        let (Some(prev), Some(next)) =
            (self.next.checked_sub(1).and_then(|i| self.events.get(i)), self.events.get(self.next))
        else {
            return Duration::ZERO;
        };
        let ms = (next.t - prev.t).num_milliseconds().clamp(0, 2000) as f64;
        Duration::from_secs_f64(ms / 1000.0 / self.speed)
    }
    pub fn position(&self) -> (usize, usize) {
        (self.next, self.events.len())
    }
}

pub struct OptScreen {
    pub view: OptView,
    pub env: Env,
    commands: Option<UnboundedSender<OptCommand>>,
    pub replay: Option<ReplayClock>,
    pub pane: Pane,
    /// Index into the iterations; `None` follows the latest.
    pub selected: Option<usize>,
    pub row: usize,
    pub editor: Option<(Editing, TextArea<'static>)>,
    pub help: bool,
    pub message: Option<(String, bool)>,
    pub exit: bool,
    /// The terminal closed or the process was told to end (SIGHUP,
    /// SIGTERM): no person chose to stop.
    pub hung_up: bool,
    pub dirty: bool,
    quitting: bool,
}

impl OptScreen {
    pub fn live(env: Env, commands: UnboundedSender<OptCommand>) -> Self {
        Self::new(env, Some(commands), None)
    }

    pub fn replay(env: Env, events: Vec<OptEvent>, speed: f64) -> Self {
        let mut s = Self::new(env, None, Some(ReplayClock { events, next: 0, speed, playing: true, due: None }));
        s.step_replay(Instant::now());
        s
    }

    fn new(env: Env, commands: Option<UnboundedSender<OptCommand>>, replay: Option<ReplayClock>) -> Self {
        Self {
            view: OptView::default(),
            env,
            commands,
            replay,
            pane: Pane::Iterations,
            selected: None,
            row: 0,
            editor: None,
            help: false,
            message: None,
            exit: false,
            hung_up: false,
            dirty: true,
            quitting: false,
        }
    }

    pub fn mode(&self) -> Mode {
        if self.replay.is_some() { Mode::OptimizeReplay } else { Mode::Optimize }
    }

    pub fn on_event(&mut self, e: &OptEvent) {
        self.view.apply(e);
        if self.view.ended.is_some() {
            // The end line (result, output) takes the footer.
            self.message = None;
            if self.quitting {
                self.exit = true;
            }
        }
        self.dirty = true;
    }

    /// The iteration shown: the selected one, else the latest.
    pub fn shown(&self) -> Option<usize> {
        let n = self.view.iterations.len();
        if n == 0 {
            return None;
        }
        Some(self.selected.map_or(n - 1, |i| i.min(n - 1)))
    }

    fn info(&mut self, text: impl Into<String>) {
        self.message = Some((text.into(), false));
    }

    fn error(&mut self, text: impl Into<String>) {
        self.message = Some((text.into(), true));
    }

    fn send(&mut self, cmd: OptCommand) {
        match &self.commands {
            Some(tx) if tx.send(cmd).is_ok() => {}
            _ => self.error("the loop has ended"),
        }
    }

    pub fn on_terminal_event(&mut self, ev: TermEvent) {
        match ev {
            TermEvent::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k),
            TermEvent::Resize(..) => self.dirty = true,
            _ => {}
        }
    }

    pub fn on_key(&mut self, k: KeyEvent) {
        self.dirty = true;
        if let Some((editing, input)) = self.editor.take() {
            self.on_editor_key(k, editing, input);
            return;
        }
        if self.help {
            self.help = false;
            return;
        }
        self.message = None;
        if let Some(action) = self.env.config.keymap.action(self.mode(), &k) {
            self.act(action);
        }
    }

    fn on_editor_key(&mut self, k: KeyEvent, editing: Editing, mut input: TextArea<'static>) {
        let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
        if k.code == KeyCode::Esc || ctrl_c {
            self.info("nothing sent");
            return;
        }
        if k.code == KeyCode::Enter && !k.modifiers.contains(KeyModifiers::ALT) {
            let text = input.lines().join("\n").trim().to_string();
            if editing == Editing::AddExample {
                if self.view.train.iter().any(|e| e.id == text) {
                    self.send(OptCommand::Pin(text.clone()));
                    self.info(format!("{text} is drawn in every later iteration"));
                } else if self.view.holdout.contains(&text) {
                    self.editor = Some((editing, input));
                    self.error(format!("{text} is held out: it is never shown to the feedback (Esc cancels)"));
                } else {
                    self.editor = Some((editing, input));
                    self.error(format!("no training example \"{text}\" (Esc cancels)"));
                }
                return;
            }
            let still_waiting = matches!(
                (editing, self.view.waiting),
                (Editing::Feedback, Waiting::Feedback(_)) | (Editing::Rewrite, Waiting::Rewrite(_))
            );
            if !still_waiting {
                self.error("the loop no longer waits for this");
                return;
            }
            match editing {
                Editing::Feedback if text.is_empty() => {
                    self.editor = Some((editing, input));
                    self.error("the feedback is empty (Esc cancels)");
                }
                Editing::Feedback => {
                    self.send(OptCommand::EditFeedback(text));
                    self.info("feedback sent; the rewrite follows");
                }
                Editing::Rewrite => match JudgePrompt::parse(&text) {
                    Ok(p) => {
                        self.send(OptCommand::AcceptEdited(p));
                        self.info("your version of the prompt is taken");
                    }
                    Err(e) => {
                        self.editor = Some((editing, input));
                        self.error(format!("{e} (Esc cancels)"));
                    }
                },
                Editing::AddExample => {}
            }
            return;
        }
        if k.code == KeyCode::Enter {
            input.insert_newline();
        } else {
            input.input(k);
        }
        self.editor = Some((editing, input));
    }

    fn open_editor(&mut self, editing: Editing, text: &str) {
        let mut input = TextArea::from(text.lines().map(str::to_string).collect::<Vec<_>>());
        input.set_cursor_line_style(ratatui::style::Style::default());
        input.move_cursor(ratatui_textarea::CursorMove::Bottom);
        input.move_cursor(ratatui_textarea::CursorMove::End);
        self.editor = Some((editing, input));
    }

    fn selected_example(&self) -> Option<(String, Split)> {
        let it = self.view.iterations.get(self.shown()?)?;
        draw::example_rows(&self.view, it).get(self.row).map(|r| (r.id.clone(), r.split))
    }

    pub fn act(&mut self, action: Action) {
        if self.replay.is_some() && action.is_steering() {
            self.error("a replay cannot steer the loop");
            return;
        }
        let waiting = self.view.waiting;
        match action {
            Action::Quit => self.quit(),
            Action::Help => self.help = true,
            Action::FocusNext | Action::FocusPrev => {
                self.pane = if self.pane == Pane::Iterations { Pane::Examples } else { Pane::Iterations };
            }
            Action::ScrollUp | Action::ScrollDown => self.move_selection(action == Action::ScrollDown),
            Action::ContinueLoop => match waiting {
                Waiting::Feedback(_) => self.send(OptCommand::Continue),
                Waiting::Rewrite(_) => self.error("a rewrite waits: accept, edit or reject it"),
                Waiting::Nothing => self.error("the loop is not waiting for you"),
            },
            Action::EditFeedback => match waiting {
                Waiting::Feedback(i) => {
                    let text = self.view.iteration(i).and_then(|it| it.feedback.clone()).unwrap_or_default();
                    self.open_editor(Editing::Feedback, &text);
                }
                _ => self.error("feedback can be edited while the loop waits before a rewrite"),
            },
            Action::AcceptRewrite | Action::EditRewrite | Action::RejectRewrite => {
                let Waiting::Rewrite(i) = waiting else {
                    self.error("no rewrite waits for a decision");
                    return;
                };
                match action {
                    Action::AcceptRewrite => self.send(OptCommand::Accept),
                    Action::RejectRewrite => self.send(OptCommand::Reject),
                    _ => {
                        let text = self.view.iteration(i).and_then(|it| it.proposed.as_ref()).map(JudgePrompt::render);
                        self.open_editor(Editing::Rewrite, &text.unwrap_or_default());
                    }
                }
            }
            Action::RollBack | Action::ChoosePrompt => {
                let Some(it) = self.shown().and_then(|i| self.view.iterations.get(i)) else {
                    self.error("no iteration yet");
                    return;
                };
                let n = it.iteration;
                if !it.scored {
                    self.error(format!("iteration {n} is not scored yet"));
                } else if action == Action::RollBack {
                    self.send(OptCommand::RollBack(n));
                    self.info(format!("the next iteration starts from iteration {n}'s prompt"));
                } else {
                    self.send(OptCommand::Stop { choose: Some(n) });
                    self.info(format!("stopping with iteration {n}'s prompt"));
                }
            }
            Action::StopOptimize => {
                self.send(OptCommand::Stop { choose: None });
                self.info("stopping with the best held-out prompt");
            }
            Action::PinExample | Action::ReplaceExample => match self.selected_example() {
                Some((_, Split::Holdout | Split::Test)) => self.error("held-out and test examples are never drawn"),
                Some((id, Split::Picked)) => {
                    if action == Action::ReplaceExample {
                        self.send(OptCommand::Drop(id));
                    } else if self.view.pinned.contains(&id) {
                        self.send(OptCommand::Unpin(id));
                    } else {
                        self.send(OptCommand::Pin(id));
                    }
                }
                None => self.error("select an example in the table (tab)"),
            },
            Action::AddExample => self.open_editor(Editing::AddExample, ""),
            Action::TogglePause => {
                if let Some(r) = &mut self.replay {
                    r.playing = !r.playing;
                    r.due = None;
                }
            }
            Action::SpeedUp | Action::SpeedDown => {
                if let Some(r) = &mut self.replay {
                    let f = if action == Action::SpeedUp { 2.0 } else { 0.5 };
                    r.speed = (r.speed * f).clamp(super::replay::MIN_SPEED, super::replay::MAX_SPEED);
                    r.due = None;
                }
            }
            Action::JumpEnd => {
                if let Some(mut r) = self.replay.take() {
                    while let Some(e) = r.events.get(r.next).cloned() {
                        self.on_event(&e);
                        r.next += 1;
                    }
                    self.replay = Some(r);
                }
            }
            _ => {}
        }
    }

    fn move_selection(&mut self, down: bool) {
        match self.pane {
            Pane::Iterations => {
                let n = self.view.iterations.len();
                let cur = self.shown().unwrap_or(0);
                let next = if down { (cur + 1).min(n.saturating_sub(1)) } else { cur.saturating_sub(1) };
                // Back at the latest: follow new iterations again.
                self.selected = if next + 1 >= n { None } else { Some(next) };
                self.row = 0;
            }
            Pane::Examples => {
                let rows = self
                    .shown()
                    .and_then(|i| self.view.iterations.get(i))
                    .map_or(0, |it| draw::example_rows(&self.view, it).len());
                self.row = if down { (self.row + 1).min(rows.saturating_sub(1)) } else { self.row.saturating_sub(1) };
            }
        }
    }

    fn quit(&mut self) {
        if self.replay.is_some() || self.view.ended.is_some() || self.commands.is_none() {
            self.exit = true;
            return;
        }
        self.quitting = true;
        self.send(OptCommand::Stop { choose: None });
        self.info("stopping with the best held-out prompt…");
    }

    /// The loop's channel closed: nothing more will come.
    pub fn loop_gone(&mut self) {
        self.commands = None;
        if self.quitting {
            self.exit = true;
        }
        self.dirty = true;
    }

    /// Apply the replay's events that are due; returns when the next one is.
    pub fn step_replay(&mut self, now: Instant) -> Option<Instant> {
        let mut r = self.replay.take()?;
        let mut next_due = None;
        while r.playing && r.next < r.events.len() {
            let gap = r.gap();
            let due = *r.due.get_or_insert(now + gap);
            if due > now {
                next_due = Some(due);
                break;
            }
            let e = r.events[r.next].clone();
            r.next += 1;
            r.due = None;
            self.on_event(&e);
        }
        self.replay = Some(r);
        next_due
    }
}

/// Drive the screen until it asks to leave.
pub async fn run_screen(
    tui: &mut Tui,
    screen: &mut OptScreen,
    mut events: Option<UnboundedReceiver<OptEvent>>,
) -> std::io::Result<()> {
    let mut last_frame: Option<Instant> = None;
    let ended = crate::signals::end_requested();
    tokio::pin!(ended);
    loop {
        let now = Instant::now();
        let replay_due = screen.step_replay(now);
        if screen.dirty && last_frame.is_none_or(|t| now >= t + super::FRAME) {
            tui.guard.draw(|f| draw(f, screen))?;
            screen.dirty = false;
            last_frame = Some(now);
        }
        if screen.exit {
            return Ok(());
        }
        let mut wake = replay_due;
        if screen.dirty {
            let frame = last_frame.map_or(now, |t| t + super::FRAME);
            wake = Some(wake.map_or(frame, |w| w.min(frame)));
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
                    screen.on_terminal_event(ev);
                    while let Ok(ev) = tui.input.try_recv() {
                        screen.on_terminal_event(ev);
                    }
                }
                None => return Err(std::io::Error::other("the terminal input closed")),
            },
            ev = async { events.as_mut().expect("guarded").recv().await }, if events.is_some() => match ev {
                Some(ev) => {
                    screen.on_event(&ev);
                    while let Some(Ok(ev)) = events.as_mut().map(|e| e.try_recv()) {
                        screen.on_event(&ev);
                    }
                }
                None => {
                    events = None;
                    screen.loop_gone();
                }
            },
            () = &mut ended => {
                screen.hung_up = true;
                return Ok(());
            }
            () = sleep => {}
        }
    }
}

/// How the live screen was left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// By the person (a quit before the end stopped the loop with the best prompt first).
    Person,
    /// The terminal closed or the process was told to end: the loop was not stopped.
    HungUp,
}

/// The live screen of a running loop; returns when the person leaves, or
/// the terminal closes or the process is told to end.
pub async fn live(
    tui: &mut Tui,
    env: Env,
    events: UnboundedReceiver<OptEvent>,
    commands: UnboundedSender<OptCommand>,
) -> anyhow::Result<Left> {
    let mut screen = OptScreen::live(env, commands);
    run_screen(tui, &mut screen, Some(events)).await?;
    Ok(if screen.hung_up { Left::HungUp } else { Left::Person })
}

/// Replay an optimisation log.
pub async fn replay(tui: &mut Tui, env: Env, events: Vec<OptEvent>, speed: f64) -> anyhow::Result<()> {
    let mut screen = OptScreen::replay(env, events, speed);
    run_screen(tui, &mut screen, None).await?;
    Ok(())
}
