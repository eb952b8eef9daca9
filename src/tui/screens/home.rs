//! The home screen: recent sessions and the panels to start a run from.

use std::path::{Path, PathBuf};

use ratatui::Frame;
use ratatui::crossterm::event::{Event as TermEvent, KeyEventKind};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, TableState};

use crate::panel::Panel;
use crate::session::fold::SessionView;
use crate::tui::action::Action;
use crate::tui::app::{Env, fmt_score};
use crate::tui::components::{clip, pane};
use crate::tui::keymap::Mode;

/// One recorded session in the list.
#[derive(Debug, Clone)]
pub struct SessionRow {
    pub path: PathBuf,
    pub started: String,
    pub panel: String,
    pub item: String,
    pub protocol: String,
    pub status: String,
    pub overall: String,
    /// The log has no end: the session can be resumed.
    pub unfinished: bool,
}

/// One panel that can be run.
#[derive(Debug, Clone)]
pub struct PanelRow {
    /// What to pass to `moot run`.
    pub arg: String,
    pub name: String,
    /// The protocol and, where it is the paper's, its preset (`maj-eval · paper`).
    pub protocol: String,
}

impl PanelRow {
    fn new(arg: String, panel: &Panel) -> Self {
        let section = &panel.protocol;
        let mut protocol = section.kind.as_str().to_string();
        if section.preset == crate::preset::Preset::Paper {
            protocol.push_str(" · paper");
        }
        Self { arg, name: panel.name.clone(), protocol }
    }
}

/// What the user chose on the home screen.
#[derive(Debug, Clone, PartialEq)]
pub enum HomeChoice {
    Replay(PathBuf),
    Run(String),
    /// Go on with an unfinished session (its log).
    Resume(PathBuf),
    Quit,
}

/// Home screen state.
pub struct Home {
    pub env: Env,
    pub dirs: Vec<PathBuf>,
    pub sessions: Vec<SessionRow>,
    pub panels: Vec<PanelRow>,
    /// 0: sessions, 1: panels.
    pub focus: usize,
    pub selected: [usize; 2],
    pub choice: Option<HomeChoice>,
    pub help: bool,
    pub message: Option<String>,
    pub dirty: bool,
}

/// The status shown for a session whose log has no end (`r` resumes it).
pub const UNFINISHED: &str = "unfinished";
/// The status shown for a session whose log has no end and that another
/// process is still writing.
pub const RUNNING: &str = "running";
/// The status shown for a session another process is still writing whose
/// result is in: done, and open there for overrides until it is closed.
pub const OPEN: &str = "done, open";

/// A session's status in a list: how it ended, or, without an end, whether
/// another process still writes it (with its result in or not) or it was
/// left unfinished.
pub fn list_status(v: &SessionView, path: &Path) -> &'static str {
    if v.state.is_ended() {
        v.state.label()
    } else if !crate::session::writer::being_written(path) {
        UNFINISHED
    } else if v.result_t.is_some() {
        OPEN
    } else {
        RUNNING
    }
}

/// The panels to run from: each one's name, protocol and what `moot run`
/// takes for it (a bundled name or a file). The name gets what the other two
/// columns leave of `width`, so a narrow screen clips names, never the
/// argument a user types.
fn panel_table<'a>(panels: &[PanelRow], width: u16, theme: &crate::tui::theme::Theme) -> Table<'a> {
    use unicode_width::UnicodeWidthStr;
    let widest = |f: fn(&PanelRow) -> &str, header: &str| {
        panels.iter().map(|p| f(p).width()).chain([header.width()]).max().unwrap_or(0) as u16
    };
    let protocol = widest(|p| &p.protocol, "protocol");
    let arg = widest(|p| &p.arg, "moot run …");
    // Two one-column gaps between three columns.
    let name = width.saturating_sub(protocol + arg + 2).min(widest(|p| &p.name, "panel")).max(8);
    let rows: Vec<Row> = panels
        .iter()
        .map(|p| Row::new(vec![clip(&p.name, name as usize), p.protocol.clone(), p.arg.clone()]))
        .collect();
    Table::new(rows, [Constraint::Length(name), Constraint::Length(protocol), Constraint::Min(arg)])
        .header(Row::new(vec!["panel", "protocol", "moot run …"]).style(theme.muted()))
}

fn session_row(path: &Path) -> Option<SessionRow> {
    let log = crate::session::read_log(path).ok()?;
    if log.events.is_empty() {
        return None;
    }
    let v = SessionView::from_events(&log.events);
    let status = list_status(&v, path);
    Some(SessionRow {
        path: path.to_path_buf(),
        started: v.started.map(|t| t.format("%Y-%m-%d %H:%M").to_string()).unwrap_or_default(),
        panel: v.panel.as_ref().map(|p| p.name.clone()).unwrap_or_default(),
        item: v.item.as_ref().map(|i| i.id.clone()).unwrap_or_default(),
        protocol: v.protocol.clone(),
        status: status.to_string(),
        unfinished: status == UNFINISHED,
        overall: match v.aggregate.as_ref().and_then(|a| a.overall) {
            Some(o) => fmt_score(o),
            // A panel without an overall has nothing to show here.
            None if !v.has_overall() => String::new(),
            None => "—".into(),
        },
    })
}

impl Home {
    /// Read sessions from `dirs` and panels (bundled, and `./panels/*.toml`).
    pub fn new(env: Env, dirs: Vec<PathBuf>) -> Self {
        let mut h = Self {
            env,
            dirs,
            sessions: Vec::new(),
            panels: Vec::new(),
            focus: 0,
            selected: [0, 0],
            choice: None,
            help: false,
            message: None,
            dirty: true,
        };
        h.refresh();
        h
    }

    pub fn refresh(&mut self) {
        let mut seen = std::collections::HashSet::new();
        let mut rows: Vec<SessionRow> = Vec::new();
        for d in &self.dirs {
            for p in crate::session::find_logs(d) {
                let key = p.canonicalize().unwrap_or_else(|_| p.clone());
                if seen.insert(key)
                    && let Some(r) = session_row(&p)
                {
                    rows.push(r);
                }
            }
        }
        rows.sort_by(|a, b| b.started.cmp(&a.started).then_with(|| b.path.cmp(&a.path)));
        self.sessions = rows;
        let mut panels: Vec<PanelRow> = Panel::bundled_names()
            .filter_map(|n| Panel::bundled(n).map(|p| PanelRow::new(n.to_string(), &p)))
            .collect();
        if let Ok(entries) = std::fs::read_dir("panels") {
            let mut local: Vec<PathBuf> =
                entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect();
            local.sort();
            for p in local {
                if let Ok(panel) = Panel::load(&p) {
                    panels.push(PanelRow::new(p.display().to_string(), &panel));
                }
            }
        }
        self.panels = panels;
        self.focus = if self.sessions.is_empty() { 1 } else { self.focus };
        self.dirty = true;
    }

    fn len(&self, list: usize) -> usize {
        if list == 0 { self.sessions.len() } else { self.panels.len() }
    }

    pub fn on_terminal_event(&mut self, ev: TermEvent) {
        self.dirty = true;
        let TermEvent::Key(k) = ev else { return };
        if k.kind == KeyEventKind::Release {
            return;
        }
        if self.help {
            self.help = false;
            return;
        }
        let Some(action) = self.env.config.keymap.action(Mode::Home, &k) else { return };
        self.message = None;
        let n = self.len(self.focus);
        let sel = &mut self.selected[self.focus];
        match action {
            Action::Quit | Action::Back => self.choice = Some(HomeChoice::Quit),
            Action::FocusNext | Action::FocusPrev => self.focus = 1 - self.focus,
            Action::ScrollUp => *sel = sel.saturating_sub(1),
            Action::ScrollDown => *sel = (*sel + 1).min(n.saturating_sub(1)),
            Action::PageUp => *sel = sel.saturating_sub(10),
            Action::PageDown => *sel = (*sel + 10).min(n.saturating_sub(1)),
            Action::Top => *sel = 0,
            Action::Bottom => *sel = n.saturating_sub(1),
            Action::Help => self.help = true,
            Action::Refresh => self.refresh(),
            Action::Open => {
                if self.focus == 0 {
                    match self.sessions.get(self.selected[0]) {
                        Some(r) => self.choice = Some(HomeChoice::Replay(r.path.clone())),
                        None => self.message = Some("no sessions yet: press n to start a run".into()),
                    }
                } else if let Some(p) = self.panels.get(self.selected[1]) {
                    self.choice = Some(HomeChoice::Run(p.arg.clone()));
                }
            }
            Action::ResumeSession => match self.sessions.get(self.selected[0]).filter(|_| self.focus == 0) {
                Some(r) if r.unfinished => self.choice = Some(HomeChoice::Resume(r.path.clone())),
                Some(r) if r.status == RUNNING => {
                    self.message = Some("this session is still running in another moot process".into())
                }
                Some(r) if r.status == OPEN => {
                    self.message = Some("this session is done and still open in another moot process".into())
                }
                Some(r) => self.message = Some(format!("this session is {}: nothing to resume", r.status)),
                None => self.message = Some("choose an unfinished session in the list to resume it".into()),
            },
            Action::NewRun => match self.panels.get(self.selected[1]) {
                Some(p) => self.choice = Some(HomeChoice::Run(p.arg.clone())),
                None => self.message = Some("no panels found".into()),
            },
            _ => {}
        }
    }

    pub fn draw(&self, f: &mut Frame) {
        let theme = self.env.theme();
        let area = f.area();
        let (body, foot) = super::page(f, theme, "recent sessions and panels");
        let panels_h = (self.panels.len() as u16 + 4).min(body.height / 2).max(4);
        let [sess, pans] = Layout::vertical([Constraint::Min(3), Constraint::Length(panels_h)]).areas(body);
        let narrow = area.width < 100;
        let rows: Vec<Row> = self
            .sessions
            .iter()
            .map(|r| {
                let mut cells = vec![r.started.clone(), clip(&r.panel, 20), clip(&r.item, 14)];
                if !narrow {
                    cells.push(r.protocol.clone());
                }
                cells.push(r.status.clone());
                cells.push(r.overall.clone());
                Row::new(cells)
            })
            .collect();
        let mut widths = vec![Constraint::Length(16), Constraint::Length(20), Constraint::Length(14)];
        let mut header = vec!["date", "panel", "item"];
        if !narrow {
            widths.push(Constraint::Length(12));
            header.push("protocol");
        }
        widths.extend([Constraint::Length(10), Constraint::Length(7)]);
        header.extend(["status", "overall"]);
        let title = format!(
            " Sessions ({}) · {} ",
            self.sessions.len(),
            self.dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        let table = Table::new(rows, widths)
            .header(Row::new(header).style(theme.muted()))
            .row_highlight_style(theme.selection())
            .block(pane(Line::from(Span::styled(title, theme.accent())), self.focus == 0, theme));
        let mut st = TableState::default();
        if self.focus == 0 && !self.sessions.is_empty() {
            st.select(Some(self.selected[0]));
        }
        f.render_stateful_widget(table, sess, &mut st);
        if self.sessions.is_empty() {
            let inner = Rect { x: sess.x + 2, y: sess.y + 2, width: sess.width.saturating_sub(4), height: 1 };
            f.render_widget(
                Paragraph::new(Span::styled(
                    "no recorded sessions yet — choose a panel below and press n",
                    theme.muted(),
                )),
                inner,
            );
        }
        let ptable = panel_table(&self.panels, pans.width.saturating_sub(2), theme)
            .row_highlight_style(theme.selection())
            .block(pane(Line::from(Span::styled(" Panels ", theme.accent())), self.focus == 1, theme));
        let mut pst = TableState::default();
        if self.focus == 1 {
            pst.select(Some(self.selected[1]));
        }
        f.render_stateful_widget(ptable, pans, &mut pst);
        let mut spans = Vec::new();
        if let Some(m) = &self.message {
            spans.push(Span::styled(format!(" {m} "), theme.error()));
        }
        for (k, d) in self.env.config.keymap.footer(Mode::Home) {
            spans.push(Span::styled(format!(" {k}"), theme.accent()));
            spans.push(Span::styled(format!(" {d} "), theme.muted()));
        }
        f.render_widget(Paragraph::new(Line::from(spans)), foot);
        if self.help {
            let lines: Vec<Line> = self
                .env
                .config
                .keymap
                .help(Mode::Home)
                .into_iter()
                .map(|(k, d)| Line::from(vec![Span::styled(format!("{k:>16}  "), theme.accent()), Span::raw(d)]))
                .collect();
            let h = (lines.len() as u16 + 2).min(area.height);
            let r = Rect {
                x: area.x + area.width.saturating_sub(60) / 2,
                y: area.y + area.height.saturating_sub(h) / 2,
                width: 60.min(area.width),
                height: h,
            };
            f.render_widget(ratatui::widgets::Clear, r);
            f.render_widget(Paragraph::new(lines).block(pane(Line::from(" Keys · home "), true, theme)), r);
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;

    fn key(c: char) -> TermEvent {
        TermEvent::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))
    }

    /// An ended session and the same one cut off: `r` resumes the cut one only.
    #[test]
    fn r_resumes_an_unfinished_session_and_refuses_an_ended_one() {
        let dir = tempfile::tempdir().unwrap();
        let example = include_str!("../../../sessions/examples/g-eval.jsonl");
        let cut: String = example.split_inclusive('\n').take(5).collect();
        std::fs::write(dir.path().join("ended.jsonl"), example).unwrap();
        std::fs::write(dir.path().join("cut.jsonl"), cut).unwrap();
        let mut home = Home::new(Env::test(), vec![dir.path().to_path_buf()]);
        let at = |home: &Home, name: &str| home.sessions.iter().position(|r| r.path.ends_with(name)).unwrap();
        let (cut_at, ended_at) = (at(&home, "cut.jsonl"), at(&home, "ended.jsonl"));
        assert_eq!(home.sessions[cut_at].status, UNFINISHED);
        assert_ne!(home.sessions[ended_at].status, UNFINISHED);
        assert!(home.env.config.keymap.footer(Mode::Home).iter().any(|(k, d)| k == "r" && *d == "resume"));

        home.selected[0] = ended_at;
        home.on_terminal_event(key('r'));
        assert_eq!(home.choice, None);
        assert!(home.message.as_deref().is_some_and(|m| m.contains("nothing to resume")), "{:?}", home.message);

        home.selected[0] = cut_at;
        home.on_terminal_event(key('r'));
        assert_eq!(home.choice, Some(HomeChoice::Resume(dir.path().join("cut.jsonl"))));
    }

    /// A log with no end that is being written shows `running` until its
    /// result is in, then `done, open`; once nobody writes it, `unfinished`.
    #[test]
    fn a_session_being_written_is_running_then_done_and_open() {
        let dir = tempfile::tempdir().unwrap();
        let example = include_str!("../../../sessions/examples/g-eval.jsonl");
        let lines: Vec<&str> = example.split_inclusive('\n').collect();
        let without_end: String = lines[..lines.len() - 1].concat();
        assert!(lines.last().unwrap().contains("session_ended") && without_end.contains("aggregation_completed"));
        let status = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            let view = |p: &Path| SessionView::from_events(&crate::session::read_log(p).unwrap().events);
            let writer = crate::session::writer::SessionWriter::append(&path).unwrap();
            let held = list_status(&view(&path), &path);
            drop(writer);
            (held, list_status(&view(&path), &path))
        };
        assert_eq!(status("open.jsonl", &without_end), (OPEN, UNFINISHED));
        assert_eq!(status("early.jsonl", &lines[..5].concat()), (RUNNING, UNFINISHED));
        assert_eq!(status("ended.jsonl", example), ("done", "done"));
    }

    /// At 80×24 every visible panel row shows its protocol and, in full,
    /// what `moot run` takes for it; names are clipped first.
    #[test]
    fn the_panel_list_shows_the_protocol_and_the_run_argument_at_80_columns() {
        let dir = tempfile::tempdir().unwrap();
        let mut home = Home::new(Env::test(), vec![dir.path().to_path_buf()]);
        home.focus = 1;
        let screen = |home: &mut Home, arg: &str| {
            home.selected[1] = home.panels.iter().position(|p| p.arg == arg).unwrap();
            let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
            t.draw(|f| home.draw(f)).unwrap();
            t.backend().to_string()
        };
        let row = |screen: &str, arg: &str| {
            screen
                .lines()
                .find(|l| l.contains(&format!(" {arg} ")))
                .map(str::to_string)
                .unwrap_or_else(|| panic!("{screen}"))
        };
        let paper = row(&screen(&mut home, "storybook-qa-paper"), "storybook-qa-paper");
        assert!(paper.contains("maj-eval · paper") && paper.contains("Storybook QA"), "{paper}");
        let screen = screen(&mut home, "storybook-qa");
        let plain = row(&screen, "storybook-qa");
        assert!(plain.contains("maj-eval ") && !plain.contains("paper"), "{plain}");
        assert!(screen.contains("moot run …"), "{screen}");
    }
}
