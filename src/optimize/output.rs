//! Writing the chosen prompt as a new panel file that `moot run` and `moot
//! eval` use as is. An existing file is never overwritten.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::OptimizeConfig;
use super::prompt::JudgePrompt;
use crate::panel::Panel;

/// The default output path: beside the input panel file,
/// `<stem>.optimized-<run id>.toml`; for a bundled panel, in `run_dir`.
pub fn default_output(panel: &Panel, run_id: &str, run_dir: &Path) -> PathBuf {
    match &panel.source {
        Some(src) => {
            let stem = src.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "panel".into());
            src.with_file_name(format!("{stem}.optimized-{run_id}.toml"))
        }
        None => run_dir.join("panel.optimized.toml"),
    }
}

/// Write the panel with `prompt`'s judge text to `path` (created new; when
/// taken, `-2`, `-3`… is added before `.toml`). Returns the path written.
pub(super) fn write_panel(
    config: &OptimizeConfig,
    prompt: &JudgePrompt,
    iteration: u32,
    holdout: Option<f64>,
    path: &Path,
) -> Result<PathBuf, String> {
    let panel = prompt.apply(&config.panel);
    let body = toml::to_string_pretty(&panel).map_err(|e| format!("writing the panel as TOML: {e}"))?;
    // What is written must load as a panel again.
    Panel::from_toml_str(&body, &path.display().to_string())
        .map_err(|e| format!("the optimised panel does not load: {e}"))?;
    let score = holdout.map_or("none".to_string(), |s| format!("{s:.3}"));
    let text = format!(
        "# Written by `moot optimize` (run {}) from {}: the judge text of iteration {iteration},\n\
         # held-out {} {score}. Log: the run folder's optimize.jsonl.\n\n{body}",
        config.run_id,
        config.panel_arg,
        config.objective.as_str(),
    );
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    for n in 1..1000 {
        let candidate = if n == 1 {
            path.to_path_buf()
        } else {
            let stem = path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
            path.with_file_name(format!("{stem}-{n}.toml"))
        };
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&candidate) {
            Ok(mut f) => {
                f.write_all(text.as_bytes()).map_err(|e| format!("writing {}: {e}", candidate.display()))?;
                return Ok(candidate);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("writing {}: {e}", candidate.display())),
        }
    }
    Err(format!("{}: too many files with this name", path.display()))
}
