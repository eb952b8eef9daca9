//! Colour themes with semantic slots, loaded from TOML.
//!
//! Bundled themes (`themes/*.toml`) are compiled in; a file of the same name
//! in the user's config directory (`themes/NAME.toml`) wins. `NO_COLOR`
//! turns every colour off and keeps only bold, reverse and underline.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;
use thiserror::Error;

/// Bundled themes: (name, TOML text).
pub const BUNDLED: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

/// The theme used when none is chosen.
pub const DEFAULT_THEME: &str = "dark";

/// A theme that could not be loaded.
#[derive(Debug, Error)]
pub enum ThemeError {
    #[error("unknown theme \"{name}\"; available: {available}")]
    Unknown { name: String, available: String },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

/// Semantic colours of the screen.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub text: Color,
    pub muted: Color,
    pub border: Color,
    pub focus: Color,
    pub accent: Color,
    pub header_fg: Color,
    pub header_bg: Color,
    pub speaking: Color,
    pub thinking: Color,
    pub waiting: Color,
    pub done: Color,
    pub failed: Color,
    pub score_good: Color,
    pub score_mid: Color,
    pub score_bad: Color,
    pub consensus_reached: Color,
    pub consensus_open: Color,
    pub human: Color,
    pub selection_fg: Color,
    pub selection_bg: Color,
    pub error: Color,
    /// Pairwise: the two orders of a pair disagreed (always shown with the word "FLIP").
    pub flip: Color,
    /// No colours at all (`NO_COLOR`): styles keep only modifiers.
    pub monochrome: bool,
}

#[derive(Debug, Deserialize)]
struct ThemeFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(flatten)]
    slots: BTreeMap<String, String>,
}

impl Default for Theme {
    fn default() -> Self {
        Self::parse(BUNDLED[0].1, "dark", None).expect("the bundled dark theme is valid")
    }
}

impl Theme {
    fn parse(text: &str, origin: &str, base: Option<&Theme>) -> Result<Self, ThemeError> {
        let invalid = |message: String| ThemeError::Invalid { path: origin.to_string(), message };
        let file: ThemeFile = toml::from_str(text).map_err(|e| invalid(e.message().to_string()))?;
        let mut t = match base {
            Some(b) => b.clone(),
            None => Theme::blank(),
        };
        if let Some(n) = file.name {
            t.name = n;
        }
        for (slot, value) in &file.slots {
            let color = Color::from_str(value).map_err(|_| invalid(format!("{slot}: not a colour: \"{value}\"")))?;
            let target = match slot.as_str() {
                "text" => &mut t.text,
                "muted" => &mut t.muted,
                "border" => &mut t.border,
                "focus" => &mut t.focus,
                "accent" => &mut t.accent,
                "header_fg" => &mut t.header_fg,
                "header_bg" => &mut t.header_bg,
                "speaking" => &mut t.speaking,
                "thinking" => &mut t.thinking,
                "waiting" => &mut t.waiting,
                "done" => &mut t.done,
                "failed" => &mut t.failed,
                "score_good" => &mut t.score_good,
                "score_mid" => &mut t.score_mid,
                "score_bad" => &mut t.score_bad,
                "consensus_reached" => &mut t.consensus_reached,
                "consensus_open" => &mut t.consensus_open,
                "human" => &mut t.human,
                "selection_fg" => &mut t.selection_fg,
                "selection_bg" => &mut t.selection_bg,
                "error" => &mut t.error,
                "flip" => &mut t.flip,
                other => return Err(invalid(format!("unknown slot \"{other}\""))),
            };
            *target = color;
        }
        Ok(t)
    }

    fn blank() -> Self {
        let c = Color::Reset;
        Self {
            name: String::new(),
            text: c,
            muted: c,
            border: c,
            focus: c,
            accent: c,
            header_fg: c,
            header_bg: c,
            speaking: c,
            thinking: c,
            waiting: c,
            done: c,
            failed: c,
            score_good: c,
            score_mid: c,
            score_bad: c,
            consensus_reached: c,
            consensus_open: c,
            human: c,
            selection_fg: c,
            selection_bg: c,
            error: c,
            flip: c,
            monochrome: false,
        }
    }

    /// A theme with no colours, for `NO_COLOR`.
    pub fn monochrome() -> Self {
        Self { name: "no-color".into(), monochrome: true, ..Self::blank() }
    }

    /// Load a theme by name: the user's `themes/NAME.toml` in `user_dir` first,
    /// then the bundled ones. A path to a `.toml` file works too.
    pub fn load(name: &str, user_dir: Option<&Path>) -> Result<Self, ThemeError> {
        let base = Theme::default();
        let path = Path::new(name);
        if path.extension().is_some_and(|e| e == "toml") && path.is_file() {
            return Self::from_file(path, &base);
        }
        if let Some(dir) = user_dir {
            let p = dir.join(format!("{name}.toml"));
            if p.is_file() {
                return Self::from_file(&p, &base);
            }
        }
        match BUNDLED.iter().find(|(n, _)| *n == name) {
            Some((n, text)) => Self::parse(text, &format!("themes/{n}.toml"), Some(&base)),
            None => {
                Err(ThemeError::Unknown { name: name.to_string(), available: Self::available(user_dir).join(", ") })
            }
        }
    }

    fn from_file(path: &Path, base: &Theme) -> Result<Self, ThemeError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ThemeError::Invalid { path: path.display().to_string(), message: e.to_string() })?;
        let mut t = Self::parse(&text, &path.display().to_string(), Some(base))?;
        if t.name == base.name {
            t.name = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        }
        Ok(t)
    }

    /// Names of the bundled and user themes.
    pub fn available(user_dir: Option<&Path>) -> Vec<String> {
        let mut names: Vec<String> = BUNDLED.iter().map(|(n, _)| n.to_string()).collect();
        if let Some(dir) = user_dir
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            for e in entries.flatten() {
                let p: PathBuf = e.path();
                if p.extension().is_some_and(|x| x == "toml")
                    && let Some(stem) = p.file_stem()
                {
                    let s = stem.to_string_lossy().to_string();
                    if !names.contains(&s) {
                        names.push(s);
                    }
                }
            }
        }
        names
    }

    fn fg(&self, c: Color) -> Style {
        if self.monochrome { Style::default() } else { Style::default().fg(c) }
    }

    pub fn text(&self) -> Style {
        self.fg(self.text)
    }
    pub fn muted(&self) -> Style {
        if self.monochrome { Style::default().add_modifier(Modifier::DIM) } else { self.fg(self.muted) }
    }
    pub fn border(&self, focused: bool) -> Style {
        if focused { self.fg(self.focus).add_modifier(Modifier::BOLD) } else { self.fg(self.border) }
    }
    pub fn accent(&self) -> Style {
        self.fg(self.accent).add_modifier(Modifier::BOLD)
    }
    pub fn header(&self) -> Style {
        if self.monochrome {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default().fg(self.header_fg).bg(self.header_bg)
        }
    }
    pub fn speaking(&self) -> Style {
        self.fg(self.speaking).add_modifier(Modifier::BOLD)
    }
    pub fn thinking(&self) -> Style {
        self.fg(self.thinking)
    }
    pub fn waiting(&self) -> Style {
        self.fg(self.waiting)
    }
    pub fn done(&self) -> Style {
        self.fg(self.done)
    }
    pub fn failed(&self) -> Style {
        self.fg(self.failed).add_modifier(Modifier::BOLD)
    }
    pub fn human(&self) -> Style {
        self.fg(self.human).add_modifier(Modifier::BOLD)
    }
    pub fn error(&self) -> Style {
        self.fg(self.error).add_modifier(Modifier::BOLD)
    }
    /// A flip between a pair's two orders: coloured, bold and underlined (the
    /// word "FLIP" goes with it, so it reads without colour too).
    pub fn flip(&self) -> Style {
        self.fg(self.flip).add_modifier(Modifier::BOLD | Modifier::UNDERLINED)
    }
    pub fn selection(&self) -> Style {
        if self.monochrome {
            Style::default().add_modifier(Modifier::REVERSED)
        } else {
            Style::default().fg(self.selection_fg).bg(self.selection_bg)
        }
    }
    pub fn consensus(&self, reached: bool) -> Style {
        self.fg(if reached { self.consensus_reached } else { self.consensus_open }).add_modifier(Modifier::BOLD)
    }
    /// A score coloured by where it sits on the scale.
    pub fn score(&self, value: f64, min: f64, max: f64) -> Style {
        let span = (max - min).max(f64::EPSILON);
        let r = (value - min) / span;
        let c = if r >= 0.66 {
            self.score_good
        } else if r >= 0.4 {
            self.score_mid
        } else {
            self.score_bad
        };
        self.fg(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_themes_load() {
        for (name, _) in BUNDLED {
            let t = Theme::load(name, None).unwrap();
            assert_eq!(&t.name, name);
        }
        assert!(matches!(Theme::load("nope", None), Err(ThemeError::Unknown { .. })));
    }

    #[test]
    fn user_theme_wins_and_falls_back_per_slot() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("dark.toml"), "speaking = \"#010203\"\n").unwrap();
        let t = Theme::load("dark", Some(dir.path())).unwrap();
        assert_eq!(t.speaking, Color::Rgb(1, 2, 3));
        assert_eq!(t.done, Theme::default().done);
        std::fs::write(dir.path().join("bad.toml"), "speaking = \"not a colour\"\n").unwrap();
        assert!(matches!(Theme::load("bad", Some(dir.path())), Err(ThemeError::Invalid { .. })));
    }

    #[test]
    fn monochrome_has_no_colours() {
        let t = Theme::monochrome();
        assert_eq!(t.speaking().fg, None);
        assert!(t.speaking().add_modifier.contains(Modifier::BOLD));
    }
}
