//! The screen's settings: the `[ui]` and `[keys]` tables of the config file,
//! the same file the providers' settings come from (`MOOT_CONFIG`, else
//! `./moot.toml`, else the user config file: [`crate::config::locate_file`]).
//! Other tables belong to other parts of the program and are ignored here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use thiserror::Error;

use super::action::Action;
use super::keymap::{Keymap, KeymapError};
use super::theme::{DEFAULT_THEME, Theme, ThemeError};

/// A config file or theme that could not be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("{path}: {message}")]
    File { path: String, message: String },
    #[error("{path}: {source}")]
    Keys { path: String, source: KeymapError },
    #[error(transparent)]
    Theme(#[from] ThemeError),
}

/// `[ui]` settings.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct UiSection {
    pub theme: Option<String>,
    /// Folder of recorded sessions shown on the home screen (besides `./sessions`).
    pub sessions_dir: Option<PathBuf>,
    /// Name put on human events (default: `MOOT_USER`, then `$USER`).
    pub user: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct FileView {
    #[serde(default)]
    ui: UiSection,
    #[serde(default)]
    keys: BTreeMap<String, BTreeMap<String, Action>>,
}

/// Everything the screen reads from configuration.
#[derive(Debug, Clone, Default)]
pub struct UiConfig {
    pub ui: UiSection,
    pub keymap: Keymap,
    pub theme: Theme,
    /// The user's config directory (themes live in its `themes/`).
    pub config_dir: Option<PathBuf>,
}

/// The user's config directory (`…/moot`).
pub fn user_config_dir() -> Option<PathBuf> {
    directories::ProjectDirs::from("", "", "moot").map(|d| d.config_dir().to_path_buf())
}

fn read_file(path: &Path) -> Result<Option<FileView>, ConfigError> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ConfigError::File { path: path.display().to_string(), message: e.to_string() }),
    };
    let table: toml::Table = toml::from_str(&text)
        .map_err(|e| ConfigError::File { path: path.display().to_string(), message: e.message().to_string() })?;
    // Only our tables: others are read elsewhere.
    let mut mine = toml::Table::new();
    for k in ["ui", "keys"] {
        if let Some(v) = table.get(k) {
            mine.insert(k.to_string(), v.clone());
        }
    }
    let view: FileView = mine.try_into().map_err(|e: toml::de::Error| ConfigError::File {
        path: path.display().to_string(),
        message: e.message().to_string(),
    })?;
    Ok(Some(view))
}

impl UiConfig {
    /// Load the config file, then apply `theme_arg` (from `--theme`) and `NO_COLOR`.
    pub fn load(theme_arg: Option<&str>) -> Result<Self, ConfigError> {
        Self::load_env(&|k| std::env::var(k).ok(), theme_arg)
    }

    /// [`UiConfig::load`] with the environment read through `env`: the file
    /// is the one [`crate::config::locate_file`] finds, as for providers.
    pub fn load_env(env: &dyn Fn(&str) -> Option<String>, theme_arg: Option<&str>) -> Result<Self, ConfigError> {
        let files: Vec<PathBuf> = crate::config::locate_file(env).into_iter().collect();
        let no_color = env("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self::load_from(&files, user_config_dir(), theme_arg, no_color)
    }

    /// [`UiConfig::load`] with explicit files (later ones win) and environment.
    pub fn load_from(
        files: &[PathBuf],
        config_dir: Option<PathBuf>,
        theme_arg: Option<&str>,
        no_color: bool,
    ) -> Result<Self, ConfigError> {
        let mut ui = UiSection::default();
        let mut keymap = Keymap::default();
        for f in files {
            let Some(view) = read_file(f)? else { continue };
            if view.ui.theme.is_some() {
                ui.theme = view.ui.theme;
            }
            if view.ui.sessions_dir.is_some() {
                ui.sessions_dir = view.ui.sessions_dir;
            }
            if view.ui.user.is_some() {
                ui.user = view.ui.user;
            }
            keymap.merge(&view.keys).map_err(|source| ConfigError::Keys { path: f.display().to_string(), source })?;
        }
        let theme = if no_color {
            Theme::monochrome()
        } else {
            let name =
                theme_arg.map(str::to_string).or_else(|| ui.theme.clone()).unwrap_or_else(|| DEFAULT_THEME.into());
            let themes_dir = config_dir.as_ref().map(|d| d.join("themes"));
            Theme::load(&name, themes_dir.as_deref())?
        };
        Ok(Self { ui, keymap, theme, config_dir })
    }

    /// The name put on human events.
    pub fn author(&self) -> String {
        self.ui.user.clone().filter(|u| !u.trim().is_empty()).unwrap_or_else(crate::session::human_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    #[test]
    fn reads_ui_and_keys_and_ignores_other_tables() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("config.toml");
        std::fs::write(
            &user,
            "[providers.openai]\napi_key_env = \"X\"\nweird = [1,2]\n[ui]\ntheme = \"light\"\n[keys.live]\n\"ctrl-p\" = \"toggle_pause\"\n",
        )
        .unwrap();
        let local = dir.path().join("moot.toml");
        std::fs::write(&local, "[ui]\ntheme = \"high-contrast\"\n").unwrap();
        let c = UiConfig::load_from(&[user.clone(), local], None, None, false).unwrap();
        assert_eq!(c.theme.name, "high-contrast");
        let ev = KeyEvent::new(KeyCode::Char('p'), KeyModifiers::CONTROL);
        assert_eq!(c.keymap.action(super::super::keymap::Mode::Live, &ev), Some(Action::TogglePause));
        let c = UiConfig::load_from(std::slice::from_ref(&user), None, Some("dark"), false).unwrap();
        assert_eq!(c.theme.name, "dark");
        let c = UiConfig::load_from(&[user], None, None, true).unwrap();
        assert!(c.theme.monochrome);
    }

    #[test]
    fn keys_come_from_the_file_moot_config_names() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("elsewhere.toml");
        std::fs::write(&f, "[keys.live]\n\"ctrl-p\" = \"toggle_pause\"\n[keys.picker]\n\"ctrl-n\" = \"move_down\"\n")
            .unwrap();
        let path = f.display().to_string();
        let env = |k: &str| (k == "MOOT_CONFIG").then(|| path.clone());
        let c = UiConfig::load_env(&env, None).unwrap();
        let mode = super::super::keymap::Mode::Live;
        let ev = KeyEvent::new(KeyCode::Char('p'), KeyModifiers::CONTROL);
        assert_eq!(c.keymap.action(mode, &ev), Some(Action::TogglePause));
        let ev = KeyEvent::new(KeyCode::Char('n'), KeyModifiers::CONTROL);
        assert_eq!(c.keymap.action(super::super::keymap::Mode::Picker, &ev), Some(Action::MoveDown));
        // The same file as the providers' settings.
        assert_eq!(crate::config::Config::locate(&env), Some(f));
    }

    #[test]
    fn unknown_action_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("config.toml");
        std::fs::write(&f, "[keys.live]\nq = \"explode\"\n").unwrap();
        assert!(UiConfig::load_from(&[f], None, None, false).is_err());
    }
}
