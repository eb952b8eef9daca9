//! Key bindings per mode: defaults merged with the config file's `[keys.<mode>]` tables.
//!
//! The help overlay and the footer are built from the same table, so what is
//! shown is what is bound.

use std::collections::BTreeMap;
use std::fmt;

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use thiserror::Error;

use super::action::{Action, CHOOSE};

/// Which key table applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// The live screen.
    Live,
    /// A replay (read-only).
    Replay,
    /// The home screen.
    Home,
    /// `moot optimize`'s live screen.
    Optimize,
    /// A replay of an optimisation run.
    OptimizeReplay,
    /// The persona builder's review screen.
    Personas,
    /// The help overlay (`?`) of the session screen.
    Help,
    /// The question before quitting a running session.
    ConfirmQuit,
    /// The comment box.
    Composer,
    /// The box that edits a dimension's evaluation steps (G-Eval).
    Steps,
    /// The command line (`:`).
    CommandLine,
    /// The transcript search box (`/`).
    Search,
    /// A choice from a list (whose score, which dimension, who speaks…).
    Picker,
    /// One line of input (a value, a reason).
    Prompt,
}

/// Every mode, in the order the config file's modes are listed.
pub const MODES: [Mode; 14] = [
    Mode::Live,
    Mode::Replay,
    Mode::Home,
    Mode::Optimize,
    Mode::OptimizeReplay,
    Mode::Personas,
    Mode::Help,
    Mode::ConfirmQuit,
    Mode::Composer,
    Mode::Steps,
    Mode::CommandLine,
    Mode::Search,
    Mode::Picker,
    Mode::Prompt,
];

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Live => "live",
            Mode::Replay => "replay",
            Mode::Home => "home",
            Mode::Optimize => "optimize",
            Mode::OptimizeReplay => "optimize_replay",
            Mode::Personas => "personas",
            Mode::Help => "help",
            Mode::ConfirmQuit => "confirm_quit",
            Mode::Composer => "composer",
            Mode::Steps => "steps",
            Mode::CommandLine => "command_line",
            Mode::Search => "search",
            Mode::Picker => "picker",
            Mode::Prompt => "prompt",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        MODES.into_iter().find(|m| m.as_str() == s)
    }
}

/// A key with modifiers, comparable with a terminal key event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCodeOrd,
    pub ctrl: bool,
    pub alt: bool,
}

/// The parts of a key code a binding can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeOrd {
    Char(char),
    F(u8),
    Enter,
    Esc,
    Tab,
    BackTab,
    Backspace,
    Up,
    Down,
    Left,
    Right,
    Home,
    End,
    PageUp,
    PageDown,
    Delete,
}

/// A key name in a config file could not be read.
#[derive(Debug, Error, PartialEq, Eq)]
#[error("unknown key \"{0}\" (examples: \"q\", \"ctrl-p\", \"alt-x\", \"space\", \"pgdown\", \"f1\")")]
pub struct KeyParseError(pub String);

impl Key {
    pub const fn plain(code: KeyCodeOrd) -> Self {
        Self { code, ctrl: false, alt: false }
    }
    pub const fn ch(c: char) -> Self {
        Self::plain(KeyCodeOrd::Char(c))
    }

    /// Read `"ctrl-p"`, `"G"`, `"space"`, `"shift-tab"`, `"pgdown"`…
    pub fn parse(s: &str) -> Result<Self, KeyParseError> {
        let err = || KeyParseError(s.to_string());
        let mut rest = s;
        let (mut ctrl, mut alt, mut shift) = (false, false, false);
        loop {
            let lower = rest.to_ascii_lowercase();
            if rest.len() > 1 && (lower.starts_with("ctrl-") || lower.starts_with("ctrl+")) {
                ctrl = true;
                rest = &rest[5..];
            } else if rest.len() > 1 && (lower.starts_with("alt-") || lower.starts_with("alt+")) {
                alt = true;
                rest = &rest[4..];
            } else if rest.len() > 1 && (lower.starts_with("shift-") || lower.starts_with("shift+")) {
                shift = true;
                rest = &rest[6..];
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCodeOrd::Char(if shift { c.to_ascii_uppercase() } else { c }),
            _ => match rest.to_ascii_lowercase().as_str() {
                "space" => KeyCodeOrd::Char(' '),
                "enter" | "return" => KeyCodeOrd::Enter,
                "esc" | "escape" => KeyCodeOrd::Esc,
                "tab" if shift => KeyCodeOrd::BackTab,
                "tab" => KeyCodeOrd::Tab,
                "backtab" => KeyCodeOrd::BackTab,
                "backspace" => KeyCodeOrd::Backspace,
                "up" => KeyCodeOrd::Up,
                "down" => KeyCodeOrd::Down,
                "left" => KeyCodeOrd::Left,
                "right" => KeyCodeOrd::Right,
                "home" => KeyCodeOrd::Home,
                "end" => KeyCodeOrd::End,
                "pgup" | "pageup" => KeyCodeOrd::PageUp,
                "pgdown" | "pgdn" | "pagedown" => KeyCodeOrd::PageDown,
                "delete" | "del" => KeyCodeOrd::Delete,
                f if f.starts_with('f') => KeyCodeOrd::F(f[1..].parse().map_err(|_| err())?),
                _ => return Err(err()),
            },
        };
        Ok(Self { code, ctrl, alt })
    }

    /// The binding a terminal key event matches, if it can be named.
    pub fn from_event(ev: &KeyEvent) -> Option<Self> {
        let code = match ev.code {
            KeyCode::Char(c) => KeyCodeOrd::Char(c),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            KeyCode::Enter => KeyCodeOrd::Enter,
            KeyCode::Esc => KeyCodeOrd::Esc,
            KeyCode::Tab => KeyCodeOrd::Tab,
            KeyCode::BackTab => KeyCodeOrd::BackTab,
            KeyCode::Backspace => KeyCodeOrd::Backspace,
            KeyCode::Up => KeyCodeOrd::Up,
            KeyCode::Down => KeyCodeOrd::Down,
            KeyCode::Left => KeyCodeOrd::Left,
            KeyCode::Right => KeyCodeOrd::Right,
            KeyCode::Home => KeyCodeOrd::Home,
            KeyCode::End => KeyCodeOrd::End,
            KeyCode::PageUp => KeyCodeOrd::PageUp,
            KeyCode::PageDown => KeyCodeOrd::PageDown,
            KeyCode::Delete => KeyCodeOrd::Delete,
            _ => return None,
        };
        Some(Self {
            code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        })
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ctrl {
            f.write_str("ctrl-")?;
        }
        if self.alt {
            f.write_str("alt-")?;
        }
        match self.code {
            KeyCodeOrd::Char(' ') => f.write_str("space"),
            KeyCodeOrd::Char(c) => write!(f, "{c}"),
            KeyCodeOrd::F(n) => write!(f, "f{n}"),
            KeyCodeOrd::Enter => f.write_str("enter"),
            KeyCodeOrd::Esc => f.write_str("esc"),
            KeyCodeOrd::Tab => f.write_str("tab"),
            KeyCodeOrd::BackTab => f.write_str("shift-tab"),
            KeyCodeOrd::Backspace => f.write_str("backspace"),
            KeyCodeOrd::Up => f.write_str("↑"),
            KeyCodeOrd::Down => f.write_str("↓"),
            KeyCodeOrd::Left => f.write_str("←"),
            KeyCodeOrd::Right => f.write_str("→"),
            KeyCodeOrd::Home => f.write_str("home"),
            KeyCodeOrd::End => f.write_str("end"),
            KeyCodeOrd::PageUp => f.write_str("pgup"),
            KeyCodeOrd::PageDown => f.write_str("pgdn"),
            KeyCodeOrd::Delete => f.write_str("del"),
        }
    }
}

/// One binding of a mode's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub key: Key,
    pub action: Action,
    /// Shown in the footer (the keys that matter most).
    pub footer: bool,
}

/// Bindings of every mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keymap {
    tables: BTreeMap<Mode, Vec<Binding>>,
}

const NAV: &[(&str, Action, bool)] = &[
    ("tab", Action::FocusNext, true),
    ("shift-tab", Action::FocusPrev, false),
    ("enter", Action::Zoom, false),
    ("esc", Action::Back, false),
    ("up", Action::ScrollUp, false),
    ("k", Action::ScrollUp, false),
    ("down", Action::ScrollDown, false),
    ("j", Action::ScrollDown, false),
    ("pgup", Action::PageUp, false),
    ("pgdown", Action::PageDown, false),
    ("g", Action::Top, false),
    ("G", Action::Bottom, false),
    ("t", Action::Transcript, true),
    ("/", Action::Search, false),
    ("N", Action::SearchNext, false),
    (":", Action::CommandLine, true),
    ("?", Action::Help, true),
    ("q", Action::Quit, true),
    ("ctrl-c", Action::Quit, false),
];

const LIVE: &[(&str, Action, bool)] = &[
    ("c", Action::Comment, true),
    ("o", Action::Override, true),
    ("s", Action::Speaker, true),
    ("space", Action::TogglePause, true),
    ("n", Action::Step, false),
    ("x", Action::Stop, true),
    ("r", Action::Rate, false),
    ("e", Action::EditSteps, false),
    ("a", Action::AcceptChange, false),
    ("d", Action::RejectChange, false),
    (".", Action::NextChange, false),
    (",", Action::PrevChange, false),
    ("]", Action::NextPair, false),
    ("[", Action::PrevPair, false),
    ("A", Action::PreferA, false),
    ("B", Action::PreferB, false),
    ("T", Action::PreferTie, false),
    ("v", Action::VotePair, false),
    ("u", Action::AbstainPair, false),
];

const REPLAY: &[(&str, Action, bool)] = &[
    ("space", Action::TogglePause, true),
    ("+", Action::SpeedUp, true),
    ("=", Action::SpeedUp, false),
    ("-", Action::SpeedDown, true),
    ("n", Action::NextTurn, true),
    ("home", Action::JumpStart, false),
    ("end", Action::JumpEnd, false),
    ("c", Action::Comment, false),
    ("o", Action::Override, false),
    ("s", Action::Speaker, false),
    ("x", Action::Stop, false),
    ("r", Action::Rate, false),
    (".", Action::NextChange, false),
    (",", Action::PrevChange, false),
    ("]", Action::NextPair, false),
    ("[", Action::PrevPair, false),
];

const HOME: &[(&str, Action, bool)] = &[
    ("enter", Action::Open, true),
    ("n", Action::NewRun, true),
    ("r", Action::ResumeSession, true),
    ("tab", Action::FocusNext, true),
    ("shift-tab", Action::FocusPrev, false),
    ("up", Action::ScrollUp, false),
    ("k", Action::ScrollUp, false),
    ("down", Action::ScrollDown, false),
    ("j", Action::ScrollDown, false),
    ("g", Action::Top, false),
    ("G", Action::Bottom, false),
    ("ctrl-r", Action::Refresh, false),
    ("?", Action::Help, true),
    ("q", Action::Quit, true),
    ("esc", Action::Quit, false),
    ("ctrl-c", Action::Quit, false),
];

/// Keys of the optimisation screen (live): review points, rollback, examples.
const OPTIMIZE: &[(&str, Action, bool)] = &[
    ("y", Action::ContinueLoop, true),
    ("f", Action::EditFeedback, true),
    ("a", Action::AcceptRewrite, true),
    ("e", Action::EditRewrite, true),
    ("r", Action::RejectRewrite, true),
    ("b", Action::RollBack, true),
    ("C", Action::ChoosePrompt, false),
    ("x", Action::StopOptimize, true),
    ("p", Action::PinExample, false),
    ("d", Action::ReplaceExample, false),
    ("+", Action::AddExample, false),
    ("tab", Action::FocusNext, true),
    ("shift-tab", Action::FocusPrev, false),
    ("up", Action::ScrollUp, false),
    ("k", Action::ScrollUp, false),
    ("down", Action::ScrollDown, false),
    ("j", Action::ScrollDown, false),
    ("?", Action::Help, true),
    ("q", Action::Quit, true),
    ("ctrl-c", Action::Quit, false),
];

/// Keys of an optimisation run's replay.
const OPTIMIZE_REPLAY: &[(&str, Action, bool)] = &[
    ("space", Action::TogglePause, true),
    ("+", Action::SpeedUp, true),
    ("=", Action::SpeedUp, false),
    ("-", Action::SpeedDown, true),
    ("end", Action::JumpEnd, true),
    ("tab", Action::FocusNext, true),
    ("shift-tab", Action::FocusPrev, false),
    ("up", Action::ScrollUp, false),
    ("k", Action::ScrollUp, false),
    ("down", Action::ScrollDown, false),
    ("j", Action::ScrollDown, false),
    ("?", Action::Help, true),
    ("q", Action::Quit, true),
    ("esc", Action::Quit, false),
    ("ctrl-c", Action::Quit, false),
];

/// Keys of the persona builder's review screen.
const PERSONAS: &[(&str, Action, bool)] = &[
    ("up", Action::ScrollUp, false),
    ("k", Action::ScrollUp, false),
    ("down", Action::ScrollDown, false),
    ("j", Action::ScrollDown, false),
    ("pgup", Action::PageUp, false),
    ("pgdown", Action::PageDown, false),
    ("g", Action::Top, false),
    ("G", Action::Bottom, false),
    ("a", Action::Accept, true),
    ("d", Action::Reject, true),
    ("e", Action::Edit, true),
    ("r", Action::RenameGroup, false),
    ("m", Action::MergeGroup, false),
    ("s", Action::SplitGroup, false),
    ("c", Action::CapGroup, false),
    ("p", Action::EditPersona, false),
    ("R", Action::Regenerate, false),
    ("w", Action::SavePanel, true),
    ("x", Action::RunPanel, false),
    ("?", Action::Help, true),
    ("q", Action::Quit, true),
    ("esc", Action::Back, false),
    ("ctrl-c", Action::Quit, false),
];

/// Keys of the help overlay: close it, scroll it.
const HELP: &[(&str, Action, bool)] = &[
    ("esc", Action::Back, true),
    ("enter", Action::Back, false),
    ("q", Action::Back, false),
    ("?", Action::Back, false),
    ("ctrl-c", Action::Back, false),
    ("up", Action::ScrollUp, true),
    ("k", Action::ScrollUp, false),
    ("down", Action::ScrollDown, true),
    ("j", Action::ScrollDown, false),
    ("pgup", Action::PageUp, false),
    ("pgdown", Action::PageDown, false),
];

/// Keys of the question before quitting; any other key stays. Bindings
/// match modifiers exactly, so the ctrl- variants that the keys accepted
/// before they were bindings are bound too.
const CONFIRM_QUIT: &[(&str, Action, bool)] = &[
    ("y", Action::Confirm, true),
    ("Y", Action::Confirm, false),
    ("q", Action::Confirm, false),
    ("enter", Action::Confirm, false),
    ("ctrl-y", Action::Confirm, false),
    ("ctrl-enter", Action::Confirm, false),
];

/// Keys of a text box of several lines (comment, evaluation steps); other keys edit the text.
const EDITOR: &[(&str, Action, bool)] = &[
    ("enter", Action::Confirm, true),
    ("ctrl-enter", Action::Confirm, false),
    ("alt-enter", Action::NewLine, true),
    ("esc", Action::Cancel, true),
    ("ctrl-c", Action::Cancel, false),
];

/// Keys of the command line; other keys edit the line.
const COMMAND_LINE: &[(&str, Action, bool)] = &[
    ("enter", Action::Confirm, true),
    ("ctrl-enter", Action::Confirm, false),
    ("tab", Action::Complete, true),
    ("esc", Action::Cancel, true),
    ("ctrl-c", Action::Cancel, false),
    ("backspace", Action::CancelIfEmpty, false),
];

/// Keys of a box of one line (search, prompt); other keys edit the line.
const LINE: &[(&str, Action, bool)] = &[
    ("enter", Action::Confirm, true),
    ("ctrl-enter", Action::Confirm, false),
    ("esc", Action::Cancel, true),
    ("ctrl-c", Action::Cancel, false),
];

/// Keys of a picker.
const PICKER: &[(&str, Action, bool)] = &[
    ("up", Action::MoveUp, true),
    ("k", Action::MoveUp, false),
    ("down", Action::MoveDown, true),
    ("j", Action::MoveDown, false),
    ("tab", Action::MoveDown, false),
    ("enter", Action::Confirm, true),
    ("ctrl-enter", Action::Confirm, false),
    ("1", Action::Choose1, false),
    ("2", Action::Choose2, false),
    ("3", Action::Choose3, false),
    ("4", Action::Choose4, false),
    ("5", Action::Choose5, false),
    ("6", Action::Choose6, false),
    ("7", Action::Choose7, false),
    ("8", Action::Choose8, false),
    ("9", Action::Choose9, false),
    ("esc", Action::Cancel, true),
];

fn table(entries: &[&[(&str, Action, bool)]]) -> Vec<Binding> {
    let mut out: Vec<Binding> = Vec::new();
    for list in entries {
        for (k, action, footer) in *list {
            let key = Key::parse(k).expect("default key names are valid");
            out.retain(|b| b.key != key);
            out.push(Binding { key, action: *action, footer: *footer });
        }
    }
    out
}

impl Default for Keymap {
    fn default() -> Self {
        let mut tables = BTreeMap::new();
        tables.insert(Mode::Live, table(&[LIVE, NAV]));
        tables.insert(Mode::Replay, table(&[REPLAY, NAV]));
        tables.insert(Mode::Home, table(&[HOME]));
        tables.insert(Mode::Optimize, table(&[OPTIMIZE]));
        tables.insert(Mode::OptimizeReplay, table(&[OPTIMIZE_REPLAY]));
        tables.insert(Mode::Personas, table(&[PERSONAS]));
        tables.insert(Mode::Help, table(&[HELP]));
        tables.insert(Mode::ConfirmQuit, table(&[CONFIRM_QUIT]));
        tables.insert(Mode::Composer, table(&[EDITOR]));
        tables.insert(Mode::Steps, table(&[EDITOR]));
        tables.insert(Mode::CommandLine, table(&[COMMAND_LINE]));
        tables.insert(Mode::Search, table(&[LINE]));
        tables.insert(Mode::Picker, table(&[PICKER]));
        tables.insert(Mode::Prompt, table(&[LINE]));
        Self { tables }
    }
}

/// A problem in the `[keys]` tables of a config file.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum KeymapError {
    #[error(
        "[keys.{0}]: unknown mode; valid: live, replay, home, optimize, optimize_replay, personas, help, confirm_quit, composer, steps, command_line, search, picker, prompt"
    )]
    Mode(String),
    #[error("[keys.{mode}]: {source}")]
    Key { mode: String, source: KeyParseError },
}

impl Keymap {
    /// Merge `key = action` pairs per mode over the current bindings. A key
    /// bound anew replaces its old binding; `"none"`-style unbinding is done
    /// by binding the key to another action.
    pub fn merge(&mut self, overrides: &BTreeMap<String, BTreeMap<String, Action>>) -> Result<(), KeymapError> {
        for (mode_name, pairs) in overrides {
            let mode = Mode::parse(mode_name).ok_or_else(|| KeymapError::Mode(mode_name.clone()))?;
            let list = self.tables.entry(mode).or_default();
            for (k, action) in pairs {
                let key = Key::parse(k).map_err(|source| KeymapError::Key { mode: mode_name.clone(), source })?;
                let footer = list.iter().any(|b| b.action == *action && b.footer);
                list.retain(|b| b.key != key);
                list.push(Binding { key, action: *action, footer });
            }
        }
        Ok(())
    }

    /// The action bound to a key event in a mode.
    pub fn action(&self, mode: Mode, ev: &KeyEvent) -> Option<Action> {
        let mut key = Key::from_event(ev)?;
        let list = self.tables.get(&mode)?;
        if let Some(b) = list.iter().find(|b| b.key == key) {
            return Some(b.action);
        }
        // Terminals report shifted characters with or without SHIFT; letters
        // already carry their case, so only ctrl/alt matter.
        key.alt = false;
        if ev.modifiers.contains(KeyModifiers::ALT) {
            return None;
        }
        list.iter().find(|b| b.key == key).map(|b| b.action)
    }

    /// Every binding of a mode, in table order.
    pub fn bindings(&self, mode: Mode) -> &[Binding] {
        self.tables.get(&mode).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The key to name for an action in hints ("press c to comment") and
    /// footers: the first one shown in the footer, else the first bound. A
    /// key bound in the config file to an action with a footer key is one
    /// too, so it is named before a second default (`ctrl-s` before
    /// `ctrl-enter` once `enter` is bound to something else).
    pub fn key_for(&self, mode: Mode, action: Action) -> Option<Key> {
        let bound = || self.bindings(mode).iter().filter(|b| b.action == action);
        bound().find(|b| b.footer).or_else(|| bound().next()).map(|b| b.key)
    }

    /// `(keys, description)` for the footer: one entry per action, footer bindings only.
    pub fn footer(&self, mode: Mode) -> Vec<(String, &'static str)> {
        let mut out: Vec<(String, &'static str)> = Vec::new();
        let mut seen = Vec::new();
        for b in self.bindings(mode).iter().filter(|b| b.footer) {
            if seen.contains(&b.action) {
                continue;
            }
            seen.push(b.action);
            out.push((b.key.to_string(), short(b.action)));
        }
        out
    }

    /// `(keys, description)` per action for the help overlay, keys joined.
    /// The picker's choose-by-number actions share one entry (see [`Keymap::choose_keys`]).
    pub fn help(&self, mode: Mode) -> Vec<(String, &'static str)> {
        let mut order: Vec<Action> = Vec::new();
        let mut keys: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for b in self.bindings(mode) {
            let action = if b.action.choice().is_some() { Action::Choose1 } else { b.action };
            let i = match order.iter().position(|a| *a == action) {
                Some(i) => i,
                None => {
                    order.push(action);
                    order.len() - 1
                }
            };
            keys.entry(i).or_default().push(b.key.to_string());
        }
        order
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Action::Choose1 => (self.choose_keys(mode).unwrap_or_default(), "choose the item by its number"),
                _ => (keys.get(&i).map(|k| k.join(" ")).unwrap_or_default(), describe_in(mode, *a)),
            })
            .collect()
    }

    /// The keys that choose a picker's items by number, in item order: `1-9`
    /// as bound by default, else each item's keys (`/` between several, `·`
    /// for an item without one); none when no item has a key.
    pub fn choose_keys(&self, mode: Mode) -> Option<String> {
        let per_item: Vec<Vec<String>> = CHOOSE
            .iter()
            .map(|a| self.bindings(mode).iter().filter(|b| b.action == *a).map(|b| b.key.to_string()).collect())
            .collect();
        if per_item.iter().all(Vec::is_empty) {
            return None;
        }
        let digits = per_item.iter().enumerate().all(|(i, k)| *k == [(i + 1).to_string()]);
        if digits {
            return Some("1-9".to_string());
        }
        let shown: Vec<String> =
            per_item.iter().map(|k| if k.is_empty() { "·".to_string() } else { k.join("/") }).collect();
        Some(shown.join(" "))
    }
}

/// What an action does in a mode: the overlays' confirm key sends, runs or
/// chooses; elsewhere the action's own description.
pub fn describe_in(mode: Mode, a: Action) -> &'static str {
    match (mode, a) {
        (Mode::Help, Action::Back) => "close the help",
        (Mode::ConfirmQuit, Action::Confirm) => "quit (any other key: stay)",
        (Mode::Composer, Action::Confirm) => "send the comment",
        (Mode::Steps, Action::Confirm) => "send the steps",
        (Mode::CommandLine, Action::Confirm) => "run the command",
        (Mode::Search, Action::Confirm) => "search",
        (Mode::Picker, Action::Confirm) => "choose the selected item",
        (Mode::Prompt, Action::Confirm) => "accept the answer",
        _ => a.describe(),
    }
}

/// A short footer label.
fn short(a: Action) -> &'static str {
    match a {
        Action::FocusNext => "focus",
        Action::Comment => "comment",
        Action::Override => "override",
        Action::Speaker => "speaker",
        Action::TogglePause => "pause",
        Action::Stop => "stop",
        Action::CommandLine => "cmd",
        Action::Help => "help",
        Action::Quit => "quit",
        Action::Transcript => "transcript",
        Action::SpeedUp => "faster",
        Action::SpeedDown => "slower",
        Action::NextTurn => "next turn",
        Action::Open => "open",
        Action::NewRun => "new run",
        Action::ResumeSession => "resume",
        Action::ContinueLoop => "go on",
        Action::EditFeedback => "edit feedback",
        Action::AcceptRewrite => "accept",
        Action::EditRewrite => "edit",
        Action::RejectRewrite => "reject",
        Action::RollBack => "roll back",
        Action::StopOptimize => "stop",
        Action::JumpEnd => "end",
        Action::Accept => "accept",
        Action::Reject => "reject",
        Action::Edit => "edit",
        Action::SavePanel => "save",
        other => other.describe(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::KeyEventKind;

    fn ev(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        let mut e = KeyEvent::new(code, m);
        e.kind = KeyEventKind::Press;
        e
    }

    #[test]
    fn parses_key_names() {
        assert_eq!(Key::parse("ctrl-p").unwrap(), Key { code: KeyCodeOrd::Char('p'), ctrl: true, alt: false });
        assert_eq!(Key::parse("space").unwrap(), Key::ch(' '));
        assert_eq!(Key::parse("shift-tab").unwrap(), Key::plain(KeyCodeOrd::BackTab));
        assert_eq!(Key::parse("G").unwrap(), Key::ch('G'));
        assert_eq!(Key::parse("f2").unwrap(), Key::plain(KeyCodeOrd::F(2)));
        assert!(Key::parse("hyper-x").is_err());
    }

    #[test]
    fn config_overrides_merge_over_defaults() {
        let mut km = Keymap::default();
        let mut live = BTreeMap::new();
        live.insert("ctrl-p".to_string(), Action::TogglePause);
        live.insert("c".to_string(), Action::Help);
        let mut o = BTreeMap::new();
        o.insert("live".to_string(), live);
        km.merge(&o).unwrap();
        assert_eq!(km.action(Mode::Live, &ev(KeyCode::Char('p'), KeyModifiers::CONTROL)), Some(Action::TogglePause));
        assert_eq!(km.action(Mode::Live, &ev(KeyCode::Char(' '), KeyModifiers::NONE)), Some(Action::TogglePause));
        assert_eq!(km.action(Mode::Live, &ev(KeyCode::Char('c'), KeyModifiers::NONE)), Some(Action::Help));
        assert!(km.help(Mode::Live).iter().any(|(k, d)| k.contains("ctrl-p") && *d == "pause / resume"));
        let mut bad = BTreeMap::new();
        bad.insert("nowhere".to_string(), BTreeMap::new());
        assert!(km.merge(&bad).is_err());
    }

    #[test]
    fn overlays_have_tables_that_merge_like_the_screens() {
        for m in MODES {
            assert_eq!(Mode::parse(m.as_str()), Some(m));
        }
        let mut km = Keymap::default();
        assert_eq!(km.action(Mode::Picker, &ev(KeyCode::Char('j'), KeyModifiers::NONE)), Some(Action::MoveDown));
        assert_eq!(km.action(Mode::Composer, &ev(KeyCode::Enter, KeyModifiers::ALT)), Some(Action::NewLine));
        assert_eq!(km.action(Mode::Composer, &ev(KeyCode::Char('j'), KeyModifiers::NONE)), None);
        let mut picker = BTreeMap::new();
        picker.insert("ctrl-n".to_string(), Action::MoveDown);
        let mut o = BTreeMap::new();
        o.insert("picker".to_string(), picker);
        km.merge(&o).unwrap();
        assert_eq!(km.action(Mode::Picker, &ev(KeyCode::Char('n'), KeyModifiers::CONTROL)), Some(Action::MoveDown));
        assert!(km.help(Mode::Picker).iter().any(|(k, d)| k.contains("ctrl-n") && *d == "next item"));
        assert!(km.help(Mode::Picker).iter().any(|(k, d)| k == "enter ctrl-enter" && *d == "choose the selected item"));
    }

    #[test]
    fn shifted_letters_match_with_or_without_shift_flag() {
        let km = Keymap::default();
        assert_eq!(km.action(Mode::Live, &ev(KeyCode::Char('G'), KeyModifiers::SHIFT)), Some(Action::Bottom));
        assert_eq!(km.action(Mode::Live, &ev(KeyCode::Char('?'), KeyModifiers::NONE)), Some(Action::Help));
    }
}
