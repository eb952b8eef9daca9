//! The application state of the session screen (live or replay) and how it
//! reacts to keys, mouse and session events. No terminal here: tests drive an
//! [`App`] with key events and render it on a test backend.

use std::collections::HashMap;
use std::time::Instant;

use chrono::{DateTime, Utc};
use ratatui::crossterm::event::{
    Event as TermEvent, KeyCode, KeyEvent, KeyEventKind, MouseButton, MouseEvent, MouseEventKind,
};
use ratatui::layout::{Position, Rect};

use super::action::Action;
use super::command_line::Parsed;
use super::components::{pairwise, sage};
use super::config::UiConfig;
use super::keymap::Mode;
use super::overlays::{CommandLine, Editor, Help, SearchBox};
pub use super::overlays::{Overlay, Pick, Picker, Prompt, PromptPurpose};
use super::replay::{Replay, Seek};
pub use super::search::{Search, entry_text};
use super::theme::Theme;
use super::view::ViewModel;
use crate::engine::{Command, EngineHandle};
use crate::session::event::{Event, EventKind};
use crate::session::fold::{RunState, SessionView};

/// What the screen shows and reads from: injected so tests need no terminal.
#[derive(Debug, Clone)]
pub struct Env {
    pub config: UiConfig,
    pub author: String,
}

impl Env {
    pub fn new(config: UiConfig) -> Self {
        let author = config.author();
        Self { config, author }
    }
    /// Default keys and theme, a fixed author: for tests.
    pub fn test() -> Self {
        Self { config: UiConfig::default(), author: "tester".into() }
    }
    pub fn theme(&self) -> &Theme {
        &self.config.theme
    }
}

/// A focusable pane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Focus {
    /// Index into [`SessionView::agents`].
    Agent(usize),
    Moderator,
    Consensus,
    Aggregator,
    Transcript,
    /// Evaluation steps per dimension (G-Eval).
    Steps,
    /// Each dimension's draws, sampled and weighted scores (G-Eval).
    Scores,
    /// The summarizer's running summary (ChatEval).
    Summary,
    /// The two candidates of the selected pair (pairwise).
    Candidates,
    /// Each judge's verdicts on the selected pair (pairwise).
    Verdicts,
}

impl Focus {
    /// The pane's name in the compact list.
    pub fn label(self) -> &'static str {
        match self {
            Focus::Agent(_) => "Agent",
            Focus::Moderator => "Moderator",
            Focus::Consensus => "Consensus",
            Focus::Aggregator => "Result",
            Focus::Transcript => "Transcript",
            Focus::Steps => "Steps",
            Focus::Scores => "Scores",
            Focus::Summary => "Summary",
            Focus::Candidates => "Candidates",
            Focus::Verdicts => "Verdicts",
        }
    }
}

/// Scroll position of a pane: follows the end unless the user scrolled up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scroll {
    pub follow: bool,
    /// First visible row (when not following).
    pub top: usize,
    /// Rows and visible height at the last render.
    pub total: usize,
    pub height: usize,
}

impl Default for Scroll {
    fn default() -> Self {
        Self { follow: true, top: 0, total: 0, height: 0 }
    }
}

impl Scroll {
    /// The first row to show for `total` rows in `height`, recording both.
    pub fn resolve(&mut self, total: usize, height: usize) -> usize {
        self.total = total;
        self.height = height;
        let max_top = total.saturating_sub(height);
        if self.follow || self.top >= max_top {
            self.top = max_top;
        }
        self.top
    }
    pub(crate) fn by(&mut self, delta: isize) {
        let max_top = self.total.saturating_sub(self.height);
        let cur = if self.follow { max_top } else { self.top.min(max_top) };
        let next = (cur as isize + delta).clamp(0, max_top as isize) as usize;
        self.top = next;
        self.follow = next >= max_top;
    }
}

/// Where a source of events comes from.
#[derive(Debug)]
pub enum Source {
    /// A running engine.
    Live(EngineHandle),
    /// A recorded session played back.
    Replay(Replay),
    /// A loaded session, shown as it is.
    Static,
}

/// How a status message looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageKind {
    Info,
    Error,
}

/// The session screen.
pub struct App {
    pub vm: ViewModel,
    pub env: Env,
    pub source: Source,
    pub focus: Focus,
    pub zoom: bool,
    pub scroll: HashMap<Focus, Scroll>,
    pub overlay: Option<Overlay>,
    pub message: Option<(MessageKind, String)>,
    pub search: Search,
    /// Pane rectangles at the last render, for mouse clicks.
    pub hits: Vec<(Rect, Focus)>,
    /// Wall clock for the elapsed time of a live run (none: from the log).
    pub now: Option<DateTime<Utc>>,
    /// Quit was sent: leave when the session ends.
    pub quitting: bool,
    /// Leave now.
    pub exit: bool,
    /// The terminal closed or the process was told to end (SIGHUP,
    /// SIGTERM): the session is left unfinished, to be resumed.
    pub hung_up: bool,
    /// Something changed since the last frame.
    pub dirty: bool,
    /// Events seen from the engine since the screen opened (live).
    pub events_seen: u64,
    /// The selected row of the SAGEval changes table.
    pub sage_row: usize,
    /// The selected pair of a pairwise session (index into its comparisons).
    pub pair: usize,
    /// Live: why the session log cannot be written now (the run waits, paused).
    pub log_status: Option<tokio::sync::watch::Receiver<Option<String>>>,
}

impl App {
    pub fn new(vm: ViewModel, env: Env, source: Source) -> Self {
        Self {
            vm,
            env,
            source,
            focus: Focus::Agent(0),
            zoom: false,
            scroll: HashMap::new(),
            overlay: None,
            message: None,
            search: Search::default(),
            hits: Vec::new(),
            now: None,
            quitting: false,
            exit: false,
            hung_up: false,
            dirty: true,
            events_seen: 0,
            sage_row: 0,
            pair: 0,
            log_status: None,
        }
    }

    /// A screen for a running engine.
    pub fn live(env: Env, handle: EngineHandle) -> Self {
        let mut app = Self::new(ViewModel::default(), env, Source::Live(handle));
        app.now = Some(Utc::now());
        app
    }

    /// A screen replaying these events.
    pub fn replay(env: Env, events: Vec<Event>, speed: f64) -> Self {
        let mut app = Self::new(ViewModel::default(), env, Source::Replay(Replay::new(events, speed)));
        app.pump_replay(Instant::now());
        app
    }

    /// A screen showing a folded session as it is.
    pub fn loaded(env: Env, events: &[Event]) -> Self {
        let mut vm = ViewModel::default();
        for e in events {
            vm.apply(e);
        }
        Self::new(vm, env, Source::Static)
    }

    pub fn view(&self) -> &SessionView {
        &self.vm.session
    }

    pub fn mode(&self) -> Mode {
        match self.source {
            Source::Replay(_) | Source::Static => Mode::Replay,
            Source::Live(_) => Mode::Live,
        }
    }

    pub fn is_live(&self) -> bool {
        matches!(self.source, Source::Live(_))
    }

    pub fn replay_state(&self) -> Option<&Replay> {
        match &self.source {
            Source::Replay(r) => Some(r),
            _ => None,
        }
    }

    pub(crate) fn info(&mut self, text: impl Into<String>) {
        self.message = Some((MessageKind::Info, text.into()));
    }
    pub(crate) fn error(&mut self, text: impl Into<String>) {
        self.message = Some((MessageKind::Error, text.into()));
    }

    /// Apply one session event.
    pub fn on_session_event(&mut self, event: &Event) {
        self.events_seen += 1;
        self.vm.apply(event);
        if let EventKind::CommandRejected { command, reason, .. } = &event.kind
            && self.is_live()
        {
            self.error(format!("{command}: {reason}"));
        }
        if let EventKind::SessionEnded { .. } = &event.kind
            && self.quitting
        {
            self.exit = true;
        }
        self.dirty = true;
    }

    /// The wall clock moved (live runs show elapsed time).
    pub fn tick(&mut self, now: DateTime<Utc>) {
        self.check_log_status();
        if self.now.is_some() && !self.view().is_done() && self.view().state != RunState::Paused {
            self.now = Some(now);
            self.dirty = true;
        }
    }

    /// Say so when the session log cannot be written (the run waits, paused,
    /// and tries again), and when it can again.
    pub fn check_log_status(&mut self) {
        let Some(rx) = self.log_status.as_mut() else { return };
        let changed = rx.has_changed().unwrap_or(false);
        let status = rx.borrow_and_update().clone();
        match status {
            // Said again after a key cleared it, for as long as it lasts.
            Some(why) if changed || self.message.is_none() => {
                self.error(format!("{why} — paused, retrying"));
                self.dirty = true;
            }
            None if changed => {
                self.info("the log is written again; the session goes on");
                self.dirty = true;
            }
            _ => {}
        }
    }

    /// Apply the replay's events due by `now`.
    pub fn pump_replay(&mut self, now: Instant) {
        let Source::Replay(r) = &mut self.source else { return };
        let due = r.due(now);
        if due.is_empty() {
            return;
        }
        for e in due {
            self.vm.apply(e);
        }
        self.dirty = true;
    }

    /// When the replay wants to run next.
    pub fn replay_due(&self) -> Option<Instant> {
        self.replay_state().and_then(Replay::next_due)
    }

    fn seek(&mut self, pos: usize) {
        let Source::Replay(r) = &mut self.source else { return };
        match r.seek(pos, Instant::now()) {
            Seek::Refold(events) => {
                let mut vm = ViewModel::default();
                for e in events {
                    vm.apply(e);
                }
                // Keep the wrap caches: turns keep their ids and revisions.
                vm.adopt_caches(&mut self.vm);
                self.vm = vm;
            }
            Seek::Forward(events) => {
                for e in events {
                    self.vm.apply(e);
                }
            }
        }
        self.dirty = true;
    }

    /// Send a command to the engine (a replay refuses).
    pub fn send(&mut self, command: Command) {
        match &self.source {
            Source::Live(h) => {
                if !h.send(command) {
                    self.error("the session has ended; nothing more can be changed");
                }
            }
            _ => self.error("this is a replay: it is read-only (steering works in `moot run`)"),
        }
    }

    /// Focusable panes in Tab order: agents by group, then the side panes
    /// (pairwise: the pair's panes, the result and the transcript only).
    pub fn focus_order(&self) -> Vec<Focus> {
        if pairwise::applies(self) {
            return vec![Focus::Candidates, Focus::Verdicts, Focus::Aggregator, Focus::Transcript];
        }
        let mut v: Vec<Focus> = self.vm.agents_by_group().into_iter().flat_map(|(_, a)| a).map(Focus::Agent).collect();
        v.extend(self.side_panes());
        v
    }

    /// The panes besides the agents', in order: those the run's stages
    /// bring (a moderator and consensus for a discussion, steps and scores
    /// beside independent judges; see `components::stages`), then the
    /// result and the transcript. A session whose stages cannot be read (a
    /// protocol this build does not know) shows a discussion's.
    pub fn side_panes(&self) -> Vec<Focus> {
        let composition = self.view().panel.as_ref().and_then(|p| p.protocol.composition());
        let mut v: Vec<Focus> = Vec::new();
        match composition {
            Some(c) => {
                for f in c.stages.iter().flat_map(crate::tui::components::stages::panes) {
                    if !v.contains(&f) {
                        v.push(f);
                    }
                }
            }
            None => v.extend([Focus::Moderator, Focus::Consensus]),
        }
        v.extend([Focus::Aggregator, Focus::Transcript]);
        v
    }

    fn move_focus(&mut self, forward: bool) {
        let order = self.focus_order();
        let i = order.iter().position(|f| *f == self.focus).unwrap_or(0);
        let n = order.len();
        self.focus = if forward { order[(i + 1) % n] } else { order[(i + n - 1) % n] };
    }

    pub fn scroll_of(&mut self, f: Focus) -> &mut Scroll {
        self.scroll.entry(f).or_default()
    }

    /// Any terminal event.
    pub fn on_terminal_event(&mut self, ev: TermEvent) {
        match ev {
            TermEvent::Key(k) if k.kind != KeyEventKind::Release => self.on_key(k),
            TermEvent::Mouse(m) => self.on_mouse(m),
            TermEvent::Paste(text) => self.on_paste(&text),
            TermEvent::Resize(..) => self.dirty = true,
            _ => {}
        }
    }

    fn on_paste(&mut self, text: &str) {
        if self.overlay.as_mut().is_some_and(|o| o.on_paste(text)) {
            self.dirty = true;
        }
    }

    fn on_mouse(&mut self, m: MouseEvent) {
        let pos = Position { x: m.column, y: m.row };
        let under = self.hits.iter().rev().find(|(r, _)| r.contains(pos)).map(|(_, f)| *f);
        match m.kind {
            MouseEventKind::ScrollUp => {
                if let Some(f) = under {
                    self.scroll_of(f).by(-3);
                    self.dirty = true;
                }
            }
            MouseEventKind::ScrollDown => {
                if let Some(f) = under {
                    self.scroll_of(f).by(3);
                    self.dirty = true;
                }
            }
            MouseEventKind::Down(MouseButton::Left) => {
                if self.overlay.is_none()
                    && let Some(f) = under
                {
                    self.focus = f;
                    self.dirty = true;
                }
            }
            _ => {}
        }
    }

    /// A key press.
    pub fn on_key(&mut self, k: KeyEvent) {
        self.dirty = true;
        if self.overlay.is_some() {
            self.on_overlay_key(k);
            return;
        }
        let Some(action) = self.env.config.keymap.action(self.mode(), &k) else {
            if k.code != KeyCode::Null {
                self.message = None;
            }
            return;
        };
        self.message = None;
        self.act(action);
    }

    /// Carry out an action.
    pub fn act(&mut self, action: Action) {
        self.dirty = true;
        if action.is_steering() && !self.is_live() {
            self.error("this is a replay: it is read-only (steering works in `moot run`)");
            return;
        }
        let page = |s: &Scroll| s.height.max(2) as isize - 1;
        match action {
            Action::Quit => self.request_quit(),
            Action::Help => self.overlay = Some(Overlay::Help(Help::default())),
            Action::FocusNext => self.move_focus(true),
            Action::FocusPrev => self.move_focus(false),
            Action::Zoom => self.zoom = !self.zoom,
            Action::Back => {
                if self.zoom {
                    self.zoom = false;
                } else {
                    self.message = None;
                }
            }
            Action::ScrollUp => self.scroll_of(self.focus).by(-1),
            Action::ScrollDown => self.scroll_of(self.focus).by(1),
            Action::PageUp => {
                let s = self.scroll_of(self.focus);
                let p = page(s);
                s.by(-p);
            }
            Action::PageDown => {
                let s = self.scroll_of(self.focus);
                let p = page(s);
                s.by(p);
            }
            Action::Top => {
                let s = self.scroll_of(self.focus);
                s.follow = false;
                s.top = 0;
            }
            Action::Bottom => self.scroll_of(self.focus).follow = true,
            Action::Transcript => {
                if self.focus == Focus::Transcript && self.zoom {
                    self.zoom = false;
                } else {
                    self.focus = Focus::Transcript;
                    self.zoom = true;
                }
            }
            Action::Comment => {
                let hint = super::overlays::editor::hint(&self.env.config.keymap, Mode::Composer);
                self.overlay = Some(Overlay::Composer(Editor::new(&format!("Comment to the panel — {hint}"))))
            }
            Action::Override => self.open_override(),
            Action::Speaker => self.open_speaker(),
            Action::TogglePause => self.toggle_pause(),
            Action::Pause => self.send(Command::Pause { author: self.env.author.clone() }),
            Action::Resume => self.send(Command::Resume { author: self.env.author.clone() }),
            Action::Step => {
                if self.is_live() {
                    if self.view().state == RunState::Paused {
                        self.send(Command::Step { author: self.env.author.clone() });
                    } else {
                        self.error("one turn at a time works while paused (space pauses)");
                    }
                } else {
                    self.act(Action::NextTurn);
                }
            }
            Action::Stop => {
                if self.view().state.is_ended() || self.view().aggregate.is_some() {
                    self.error("the debate is over already");
                } else {
                    self.send(Command::Stop { author: self.env.author.clone() });
                    self.info("stopping: the turn in flight is cancelled, then the aggregation runs");
                }
            }
            Action::EditSteps => self.open_steps_picker(),
            Action::Rate => {
                let items = self.dimension_items(Pick::RateDimension);
                self.open_picker("Your rating: which dimension?", items)
            }
            Action::AcceptChange | Action::RejectChange => sage::decide(self, action == Action::AcceptChange),
            Action::NextChange | Action::PrevChange => sage::select(self, action == Action::NextChange),
            Action::NextPair | Action::PrevPair => pairwise::select(self, action == Action::NextPair),
            Action::PreferA | Action::PreferB | Action::PreferTie => {
                if !pairwise::applies(self) {
                    return self.error("A, B and T decide pairs: they work in pairwise sessions");
                }
                let choice = match action {
                    Action::PreferA => pairwise::Choice::Left,
                    Action::PreferB => pairwise::Choice::Right,
                    _ => pairwise::Choice::Tie,
                };
                pairwise::prefer(self, choice);
            }
            Action::VotePair => {
                if !pairwise::applies(self) {
                    return self.error("extra votes are for pairs: they work in pairwise sessions");
                }
                pairwise::open_vote(self);
            }
            Action::AbstainPair => {
                if !pairwise::applies(self) {
                    return self.error("abstaining is for pairs: it works in pairwise sessions");
                }
                pairwise::abstain(self);
            }
            Action::CommandLine => self.overlay = Some(Overlay::CommandLine(CommandLine::default())),
            Action::Search => self.overlay = Some(Overlay::Search(SearchBox::default())),
            Action::SearchNext => self.search_next(),
            Action::SpeedUp | Action::SpeedDown => {
                if let Source::Replay(r) = &mut self.source {
                    r.faster(action == Action::SpeedUp, Instant::now());
                    let s = r.speed;
                    self.info(format!("speed ×{}", fmt_speed(s)));
                } else {
                    self.error("speed changes work in a replay");
                }
            }
            Action::NextTurn => {
                if let Some(r) = self.replay_state() {
                    let to = r.next_turn_end();
                    if let Source::Replay(r) = &mut self.source {
                        r.set_playing(false, Instant::now());
                    }
                    self.seek(to);
                }
            }
            Action::JumpStart => self.seek(1),
            Action::JumpEnd => {
                let n = self.replay_state().map(Replay::len).unwrap_or(0);
                self.seek(n);
            }
            // The home screen's, the optimisation screen's and the persona review's own actions.
            Action::Open
            | Action::NewRun
            | Action::ResumeSession
            | Action::Refresh
            | Action::ContinueLoop
            | Action::EditFeedback
            | Action::AcceptRewrite
            | Action::EditRewrite
            | Action::RejectRewrite
            | Action::RollBack
            | Action::ChoosePrompt
            | Action::StopOptimize
            | Action::PinExample
            | Action::ReplaceExample
            | Action::AddExample
            | Action::Accept
            | Action::Reject
            | Action::Edit
            | Action::RenameGroup
            | Action::MergeGroup
            | Action::SplitGroup
            | Action::CapGroup
            | Action::EditPersona
            | Action::Regenerate
            | Action::SavePanel
            | Action::RunPanel => {}
            // The overlays' own actions: read in their tables while one is open.
            Action::Confirm
            | Action::Cancel
            | Action::MoveUp
            | Action::MoveDown
            | Action::NewLine
            | Action::Complete
            | Action::CancelIfEmpty
            | Action::Choose1
            | Action::Choose2
            | Action::Choose3
            | Action::Choose4
            | Action::Choose5
            | Action::Choose6
            | Action::Choose7
            | Action::Choose8
            | Action::Choose9 => {}
        }
    }

    fn toggle_pause(&mut self) {
        match &mut self.source {
            Source::Replay(r) => {
                let playing = !r.playing;
                r.set_playing(playing, Instant::now());
                self.info(if playing { "playing" } else { "paused" });
            }
            Source::Static => {}
            Source::Live(_) => {
                let author = self.env.author.clone();
                match self.view().state {
                    RunState::Paused => self.send(Command::Resume { author }),
                    RunState::Running => self.send(Command::Pause { author }),
                    _ => self.error("the debate is not running"),
                }
            }
        }
    }

    fn request_quit(&mut self) {
        if !self.is_live() {
            self.exit = true;
            return;
        }
        let v = self.view();
        let running = !v.state.is_ended() && v.aggregate.is_none();
        if running && !matches!(self.overlay, Some(Overlay::ConfirmQuit)) {
            self.overlay = Some(Overlay::ConfirmQuit);
        } else {
            self.confirm_quit();
        }
    }

    pub(super) fn confirm_quit(&mut self) {
        self.overlay = None;
        if self.view().state.is_ended() {
            self.exit = true;
            return;
        }
        self.quitting = true;
        self.send(Command::Quit { author: self.env.author.clone() });
        self.info("closing the session…");
    }

    /// The engine's channel closed: nothing more will come.
    pub fn engine_gone(&mut self) {
        if self.quitting {
            self.exit = true;
        }
        self.dirty = true;
    }

    pub(super) fn run_parsed(&mut self, p: Parsed) {
        match p {
            Parsed::Engine(cmd) => {
                let steering = !matches!(cmd, Command::Quit { .. });
                if steering && !self.is_live() {
                    self.error("this is a replay: it is read-only (steering works in `moot run`)");
                    return;
                }
                let what = match &cmd {
                    Command::Comment { .. } => "comment sent".to_string(),
                    Command::Override { dimension, value, .. } => {
                        format!("{dimension} overridden to {}", fmt_score(*value))
                    }
                    Command::PickSpeaker { agent, .. } => format!("{agent} speaks next"),
                    Command::VetoSpeaker { agent, .. } => format!("vetoed {agent}"),
                    Command::Rate { .. } => "rating recorded".into(),
                    Command::Pause { .. } => "pausing".into(),
                    Command::Resume { .. } => "resuming".into(),
                    Command::Step { .. } => "one turn".into(),
                    Command::Stop { .. } => "stopping".into(),
                    Command::Quit { .. } => String::new(),
                    Command::EditSteps { dimension, .. } => format!("steps for {dimension} sent"),
                    Command::Decide { dimension, accept, .. } => {
                        format!("{} the revision of {dimension}", if *accept { "accepting" } else { "rejecting" })
                    }
                    Command::Adopt { key, .. } => format!("adopting {key}"),
                    Command::SettlePair { .. } => "settling the pair".into(),
                    Command::VotePair { .. } => "vote sent".into(),
                    Command::AbstainPair { .. } => "abstaining on the pair".into(),
                    Command::LabelPair { .. } => "your verdict sent".into(),
                };
                self.send(cmd);
                if self.is_live() {
                    self.info(what);
                }
            }
            Parsed::Quit => self.request_quit(),
            Parsed::Speed(x) => {
                if let Source::Replay(r) = &mut self.source {
                    r.set_speed(x, Instant::now());
                    let s = r.speed;
                    self.info(format!("speed ×{}", fmt_speed(s)));
                } else {
                    self.error("speed changes work in a replay");
                }
            }
            Parsed::Seek(turn) => match self.replay_state().map(|r| r.turn_end(turn)) {
                Some(Some(pos)) => {
                    if let Source::Replay(r) = &mut self.source {
                        r.set_playing(false, Instant::now());
                    }
                    self.seek(pos);
                    self.info(format!("at turn {turn} (paused; space plays)"));
                }
                Some(None) => self.error(format!("no turn {turn} in this session")),
                None => self.error("seeking works in a replay"),
            },
            Parsed::Help => self.overlay = Some(Overlay::Help(Help::default())),
            Parsed::Pair { verb, choice } => self.run_pair_word(verb, choice.as_deref()),
            Parsed::GoPair(n) => {
                let total = self.view().pairwise.comparisons.len();
                if n == 0 || n > total {
                    return self.error(format!("no pair {n}; pairs: 1–{total}"));
                }
                self.pair = n - 1;
                self.scroll.remove(&Focus::Candidates);
                self.scroll.remove(&Focus::Verdicts);
            }
        }
    }

    /// `:settle`, `:vote`, `:abstain`, `:label` on the selected pair.
    fn run_pair_word(&mut self, verb: super::command_line::PairVerb, choice: Option<&str>) {
        use super::command_line::PairVerb;
        if !self.is_live() {
            return self.error("this is a replay: it is read-only (steering works in `moot run`)");
        }
        let author = self.env.author.clone();
        if verb == PairVerb::Abstain {
            return pairwise::abstain(self);
        }
        let (c, winner) = match pairwise::resolve_choice(self, choice) {
            Ok(x) => x,
            Err(e) => return self.error(e),
        };
        let (first, second) = (c.first, c.second);
        let cmd = match verb {
            PairVerb::Settle => Command::SettlePair { first, second, winner, author },
            PairVerb::Vote => Command::VotePair { first, second, winner, author },
            PairVerb::Label => Command::LabelPair { first, second, winner, author },
            PairVerb::Abstain => unreachable!("handled above"),
        };
        self.run_parsed(Parsed::Engine(cmd));
    }
}

/// Who chose a speaker, in words.
pub fn by_label(by: crate::session::event::SelectedBy) -> &'static str {
    match by {
        crate::session::event::SelectedBy::Moderator => "moderator",
        crate::session::event::SelectedBy::Policy => "policy",
        crate::session::event::SelectedBy::Human => "human",
    }
}

/// A score as shown: whole numbers bare, others with up to two decimals.
pub fn fmt_score(v: f64) -> String {
    crate::engine::prompts::fmt_num((v * 100.0).round() / 100.0)
}

pub fn fmt_speed(s: f64) -> String {
    fmt_score(s)
}
