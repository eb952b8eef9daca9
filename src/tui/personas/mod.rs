//! The persona builder's review screen: the build streams in, then a person
//! accepts, edits or rejects stakeholders and perspectives, renames, merges,
//! splits or caps groups, edits or rewrites personas, and saves the panel
//! (or runs it). Every decision goes into the builder's log as an event and
//! reaches the screen only through [`BuildState::apply`], like the build's
//! own events.

mod view;

pub use view::draw;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use ratatui::crossterm::event::{Event as TermEvent, KeyCode, KeyEventKind};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::Tui;
use super::action::Action;
use super::app::Env;
use super::keymap::Mode;
use crate::personas::log::{BuildEvent, BuildEventKind, BuildLog};
use crate::personas::panel::PanelOptions;
use crate::personas::state::{BuildState, Decision, PERSONA_FIELDS};
use crate::personas::{self, Ctx, Document, Model, Options};

/// What the review screen builds and where it saves.
pub struct Plan {
    pub task: String,
    pub docs: Vec<Document>,
    pub model: Model,
    pub options: Options,
    pub panel: PanelOptions,
    pub out: PathBuf,
    pub log: PathBuf,
}

/// One row of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    Docs,
    Doc(usize),
    Stakeholder(String),
    Perspective(String),
    Groups,
    Group(String),
    GroupPerspective(String),
}

/// What a one-line prompt is asking for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ask {
    Edit(String),
    Rename(String),
    Merge(String),
    Split { group: String, perspective: String },
    Cap(String),
    Persona(String),
}

/// An open prompt: what it asks and what has been typed.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub ask: Ask,
    pub label: String,
    pub text: String,
}

/// How the screen was left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    /// Quit; the path of the panel if one was saved.
    Quit(Option<PathBuf>),
    /// Saved; run this panel now.
    Run(PathBuf),
}

/// The review screen's state.
pub struct Review {
    pub env: Env,
    pub state: BuildState,
    pub docs: Vec<Document>,
    pub panel: PanelOptions,
    pub out: PathBuf,
    pub ctx: Arc<Ctx>,
    pub selected: usize,
    pub help: bool,
    pub prompt: Option<Prompt>,
    /// A note for the footer; `true`: an error.
    pub message: Option<(String, bool)>,
    pub saved: Option<PathBuf>,
    pub exit: Option<Exit>,
    pub dirty: bool,
    /// A build runs in this screen (not a review of a finished log).
    pub live: bool,
    /// Decisions applied when they were made, whose events are still to come back from the log.
    applied: std::collections::BTreeSet<u64>,
}

impl Review {
    pub fn new(env: Env, ctx: Arc<Ctx>, docs: Vec<Document>, panel: PanelOptions, out: PathBuf) -> Self {
        Self {
            env,
            state: BuildState::default(),
            docs,
            panel,
            out,
            ctx,
            selected: 0,
            help: false,
            prompt: None,
            message: None,
            saved: None,
            exit: None,
            dirty: true,
            live: true,
            applied: Default::default(),
        }
    }

    pub fn on_build_event(&mut self, e: &BuildEvent) {
        if self.applied.remove(&e.seq) {
            return;
        }
        self.state.apply(e);
        if let BuildEventKind::StepFailed { step, about, error } = &e.kind {
            self.message = Some((format!("{} {about}: {error}", step.as_str()), true));
        }
        self.dirty = true;
    }

    /// The tree's rows, from the state.
    pub fn rows(&self) -> Vec<Row> {
        let s = &self.state;
        let mut out = vec![Row::Docs];
        for (i, _) in s.documents.iter().enumerate() {
            out.push(Row::Doc(i));
            for st in s.stakeholders.iter().filter(|st| st.doc == i) {
                out.push(Row::Stakeholder(st.id.clone()));
                out.extend(st.perspectives.iter().map(|p| Row::Perspective(p.id.clone())));
            }
        }
        out.push(Row::Groups);
        for g in &s.groups {
            out.push(Row::Group(g.id.clone()));
            out.extend(g.perspectives.iter().map(|p| Row::GroupPerspective(p.id.clone())));
        }
        out
    }

    pub fn selected_row(&self) -> Option<Row> {
        self.rows().get(self.selected).cloned()
    }

    /// The group a row belongs to (a group or one of its perspectives).
    fn group_of(&self, row: &Row) -> Option<String> {
        match row {
            Row::Group(g) => Some(g.clone()),
            Row::GroupPerspective(p) => {
                self.state.groups.iter().find(|g| g.perspectives.iter().any(|x| &x.id == p)).map(|g| g.id.clone())
            }
            _ => None,
        }
    }

    /// Record a decision and apply it at once, so that the next key (a save)
    /// sees it; its event coming back from the log is not applied twice.
    fn decide(&mut self, decision: Decision) {
        let e = self.ctx.log.emit(BuildEventKind::Decided { decision, author: self.env.author.clone() });
        self.state.apply(&e);
        self.applied.insert(e.seq);
        self.dirty = true;
    }

    fn building(&self) -> bool {
        self.live && self.state.status.is_none()
    }

    pub fn on_terminal_event(&mut self, ev: TermEvent) {
        self.dirty = true;
        let TermEvent::Key(k) = ev else { return };
        if k.kind == KeyEventKind::Release {
            return;
        }
        if let Some(p) = self.prompt.as_mut() {
            match k.code {
                KeyCode::Esc => self.prompt = None,
                KeyCode::Enter => {
                    let p = self.prompt.take().expect("open");
                    self.answer(p.ask, p.text.trim().to_string());
                }
                KeyCode::Backspace => {
                    p.text.pop();
                }
                KeyCode::Char(c) => p.text.push(c),
                _ => {}
            }
            return;
        }
        if self.help {
            self.help = false;
            return;
        }
        let Some(action) = self.env.config.keymap.action(Mode::Personas, &k) else { return };
        self.message = None;
        self.act(action);
    }

    /// Carry out an action on the selected row.
    pub fn act(&mut self, action: Action) {
        let n = self.rows().len();
        match action {
            Action::Quit | Action::Back => {
                if self.building() {
                    self.ctx.cancel.cancel();
                }
                self.exit = Some(Exit::Quit(self.saved.clone()));
            }
            Action::ScrollUp => self.selected = self.selected.saturating_sub(1),
            Action::ScrollDown => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            Action::PageUp => self.selected = self.selected.saturating_sub(10),
            Action::PageDown => self.selected = (self.selected + 10).min(n.saturating_sub(1)),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = n.saturating_sub(1),
            Action::Help => self.help = true,
            _ if self.building() => {
                self.message = Some(("the build is still running: review when it ends (q stops it)".into(), true));
            }
            _ => self.decision_action(action),
        }
    }

    fn decision_action(&mut self, action: Action) {
        let Some(row) = self.selected_row() else { return };
        let target = match &row {
            Row::Stakeholder(id) | Row::Perspective(id) | Row::Group(id) | Row::GroupPerspective(id) => {
                Some(id.clone())
            }
            _ => None,
        };
        let group = self.group_of(&row);
        let ask = |ask: Ask, label: &str, text: String| Some(Prompt { ask, label: label.to_string(), text });
        let need = |what: &str| Some((format!("select {what} first"), true));
        match action {
            Action::Accept | Action::Reject => match target {
                Some(target) if action == Action::Accept => self.decide(Decision::Accept { target }),
                Some(target) => self.decide(Decision::Reject { target }),
                None => self.message = need("a stakeholder, a perspective or a group"),
            },
            Action::Edit => match &row {
                Row::Stakeholder(id) => {
                    let name = self.state.stakeholder(id).map(|s| s.name.clone()).unwrap_or_default();
                    self.prompt = ask(Ask::Edit(id.clone()), "stakeholder name", name);
                }
                Row::Perspective(id) => {
                    let text = self.state.source(id).map(|(_, p)| p.text.clone()).unwrap_or_default();
                    self.prompt = ask(Ask::Edit(id.clone()), "perspective", text);
                }
                Row::GroupPerspective(id) => {
                    let text = self
                        .state
                        .groups
                        .iter()
                        .flat_map(|g| &g.perspectives)
                        .find(|p| &p.id == id)
                        .map(|p| p.text.clone())
                        .unwrap_or_default();
                    self.prompt = ask(Ask::Edit(id.clone()), "group perspective", text);
                }
                Row::Group(id) => self.prompt = ask(Ask::Rename(id.clone()), "group name", self.group_name(id)),
                _ => self.message = need("a stakeholder or a perspective"),
            },
            Action::RenameGroup => match group {
                Some(g) => self.prompt = ask(Ask::Rename(g.clone()), "group name", self.group_name(&g)),
                None => self.message = need("a group"),
            },
            Action::MergeGroup => match group {
                Some(g) => {
                    let others: Vec<String> =
                        self.state.groups.iter().filter(|x| x.id != g).map(|x| x.id.clone()).collect();
                    let label = format!("merge {g} into ({})", others.join(", "));
                    self.prompt = ask(Ask::Merge(g), &label, String::new());
                }
                None => self.message = need("a group"),
            },
            Action::SplitGroup => match (&row, group) {
                (Row::GroupPerspective(p), Some(g)) => {
                    self.prompt =
                        ask(Ask::Split { group: g, perspective: p.clone() }, "new group's name", String::new())
                }
                _ => self.message = need("a group's perspective"),
            },
            Action::CapGroup => match group {
                Some(g) => {
                    let now = self.state.caps.get(&g).map(|c| c.to_string()).unwrap_or_default();
                    self.prompt = ask(Ask::Cap(g), "most personas (empty: no cap)", now);
                }
                None => self.message = need("a group"),
            },
            Action::EditPersona => match &row {
                Row::GroupPerspective(p) if self.state.personas.contains_key(p) => {
                    let label = format!("field: text ({})", PERSONA_FIELDS.join(", "));
                    self.prompt = ask(Ask::Persona(p.clone()), &label, String::new());
                }
                _ => self.message = need("a perspective with a persona"),
            },
            Action::Regenerate => match (&row, group) {
                (Row::GroupPerspective(p), Some(g)) => self.regenerate(&g, p),
                _ => self.message = need("a group's perspective"),
            },
            Action::SavePanel => {
                self.save();
            }
            Action::RunPanel => {
                if let Some(path) = self.save() {
                    self.exit = Some(Exit::Run(path));
                }
            }
            _ => {}
        }
    }

    fn group_name(&self, id: &str) -> String {
        self.state.groups.iter().find(|g| g.id == id).map(|g| g.name.clone()).unwrap_or_default()
    }

    fn answer(&mut self, ask: Ask, text: String) {
        match ask {
            _ if text.is_empty() && !matches!(ask, Ask::Cap(_)) => self.message = Some(("nothing typed".into(), true)),
            Ask::Edit(target) => self.decide(Decision::Edit { target, text }),
            Ask::Rename(group) => self.decide(Decision::RenameGroup { group, name: text }),
            Ask::Merge(from) => {
                if self.state.groups.iter().any(|g| g.id == text && g.id != from) {
                    self.decide(Decision::MergeGroups { into: text, from });
                } else {
                    self.message = Some((format!("no other group \"{text}\""), true));
                }
            }
            Ask::Split { group, perspective } => {
                self.decide(Decision::SplitGroup { group, perspectives: vec![perspective], name: text })
            }
            Ask::Cap(group) if text.is_empty() => self.decide(Decision::CapGroup { group, max: None }),
            Ask::Cap(group) => match text.parse::<usize>() {
                Ok(n) if n > 0 => self.decide(Decision::CapGroup { group, max: Some(n) }),
                _ => self.message = Some((format!("\"{text}\" is not a positive number"), true)),
            },
            Ask::Persona(perspective) => match text.split_once(':') {
                Some((field, value)) if PERSONA_FIELDS.contains(&field.trim()) && !value.trim().is_empty() => self
                    .decide(Decision::EditPersona {
                        perspective,
                        field: field.trim().to_string(),
                        value: value.trim().to_string(),
                    }),
                _ => {
                    self.message =
                        Some((format!("write field: text, field one of {}", PERSONA_FIELDS.join(", ")), true))
                }
            },
        }
    }

    /// Write one persona again, in the background; its event replaces the old one.
    fn regenerate(&mut self, group: &str, perspective: &str) {
        let Some(g) = self.state.groups.iter().find(|g| g.id == group).cloned() else { return };
        let Some(p) = g.perspectives.iter().find(|p| p.id == perspective).cloned() else { return };
        let taken: Vec<String> = self
            .state
            .personas
            .iter()
            .filter(|(k, _)| k.as_str() != perspective)
            .map(|(_, v)| v.name.clone())
            .collect();
        let stakeholders = self.state.stakeholders.clone();
        let ctx = self.ctx.clone();
        self.message = Some((format!("writing the persona of {perspective} again…"), false));
        tokio::spawn(async move {
            personas::write_persona(&ctx, &stakeholders, &g, &p, &taken).await;
        });
    }

    /// Write the panel file; the path when it was written.
    fn save(&mut self) -> Option<PathBuf> {
        match personas::panel::write(&self.state, &self.panel, &self.out) {
            Ok(r) => {
                self.ctx.log.emit(BuildEventKind::PanelWritten {
                    path: self.out.clone(),
                    groups: r.groups,
                    agents: r.agents,
                });
                self.message =
                    Some((format!("saved {} ({} groups, {} personas)", self.out.display(), r.groups, r.agents), false));
                self.saved = Some(self.out.clone());
                Some(self.out.clone())
            }
            Err(e) => {
                self.message = Some((format!("not saved: {e}"), true));
                None
            }
        }
    }
}

/// Build with the screen open, then review until the person leaves.
pub async fn review(tui: &mut Tui, env: Env, plan: Plan) -> anyhow::Result<Exit> {
    let (tx, rx) = unbounded_channel();
    let log = Arc::new(
        BuildLog::new(Some(&plan.log), Some(tx))
            .map_err(|e| anyhow::anyhow!("cannot create the builder's log {}: {e}", plan.log.display()))?,
    );
    let ctx = Arc::new(Ctx::new(plan.task, plan.model, log));
    let mut screen = Review::new(env, ctx.clone(), plan.docs.clone(), plan.panel, plan.out);
    let docs = plan.docs;
    let options = plan.options;
    let worker = tokio::spawn(async move {
        let _ = personas::build(&ctx, &docs, &options).await;
    });
    let result = run(tui, &mut screen, rx).await;
    // A build still running was cancelled on leaving: let it record its end.
    screen.ctx.cancel.cancel();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), worker).await;
    result?;
    Ok(screen.exit.unwrap_or(Exit::Quit(screen.saved.clone())))
}

/// Review an earlier build from its log: the screen folds the log's events,
/// and new decisions are appended to it. `docs` (in the log's document
/// order) give the evidence its context; `model` writes personas again.
pub async fn review_log(
    tui: &mut Tui,
    env: Env,
    log_path: &std::path::Path,
    model: Model,
    docs: Vec<Document>,
    panel: PanelOptions,
    out: PathBuf,
) -> anyhow::Result<Exit> {
    let events = crate::personas::log::read_log(log_path).map_err(anyhow::Error::msg)?;
    let state = BuildState::from_events(&events);
    let (tx, rx) = unbounded_channel();
    let log = Arc::new(
        BuildLog::append(log_path, state.next_seq, Some(tx))
            .map_err(|e| anyhow::anyhow!("cannot append to {}: {e}", log_path.display()))?,
    );
    let next_call = state.calls.iter().map(|c| c.call + 1).max().unwrap_or(0);
    let ctx = Arc::new(Ctx::new(state.task.clone(), model, log).starting_calls_at(next_call));
    let mut screen = Review::new(env, ctx, docs, panel, out);
    screen.live = false;
    for e in &events {
        screen.state.apply(e);
    }
    if screen.state.status.is_none() {
        screen.message = Some(("this build never ended (the log stops early): what it found is shown".into(), true));
    }
    run(tui, &mut screen, rx).await?;
    Ok(screen.exit.unwrap_or(Exit::Quit(screen.saved.clone())))
}

/// Drive the screen: terminal input and build events in, frames out (at most one per [`super::FRAME`]).
async fn run(tui: &mut Tui, screen: &mut Review, mut events: UnboundedReceiver<BuildEvent>) -> io::Result<()> {
    let mut last_frame: Option<Instant> = None;
    let ended = crate::signals::end_requested();
    tokio::pin!(ended);
    loop {
        let now = Instant::now();
        if screen.dirty && last_frame.is_none_or(|t| now >= t + super::FRAME) {
            tui.guard.draw(|f| view::draw(f, screen))?;
            screen.dirty = false;
            last_frame = Some(now);
        }
        if screen.exit.is_some() {
            return Ok(());
        }
        let wake = screen.dirty.then(|| last_frame.map_or(now, |t| t + super::FRAME));
        let sleep = async {
            match wake {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            ev = tui.input.recv() => match ev {
                Some(ev) => screen.on_terminal_event(ev),
                None => return Err(io::Error::other("the terminal input closed")),
            },
            ev = events.recv() => if let Some(ev) = ev {
                screen.on_build_event(&ev);
                while let Ok(ev) = events.try_recv() {
                    screen.on_build_event(&ev);
                }
            },
            () = sleep => {}
            () = &mut ended => screen.act(Action::Quit),
        }
    }
}
