//! A new panel file from an existing panel with changes adopted (SAGEval's
//! proposed definitions and aspects). The panel's own file is never touched.

use std::path::{Path, PathBuf};

use super::{BUNDLED_PREFIX, Panel};

/// A free path for a new version of the panel: `<stem>.v2.toml` (then v3, …)
/// beside the panel's file, or in the current directory for a bundled panel
/// or one without a file.
pub fn new_panel_path(panel: &Panel) -> PathBuf {
    let source = panel.source.as_deref().filter(|p| !p.to_string_lossy().starts_with(BUNDLED_PREFIX));
    let (dir, stem) = match source {
        Some(p) => (
            p.parent().map(Path::to_path_buf).unwrap_or_default(),
            p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "panel".into()),
        ),
        None => {
            let name = panel.source.as_deref().map(|p| p.to_string_lossy().into_owned()).unwrap_or_default();
            let stem = name.strip_prefix(BUNDLED_PREFIX).filter(|s| !s.is_empty()).unwrap_or("panel").to_string();
            (PathBuf::new(), stem)
        }
    };
    // `survey-sage.v2` → `survey-sage`: versions count from the original.
    let base = match stem.rsplit_once(".v") {
        Some((b, n)) if n.parse::<u32>().is_ok() => b.to_string(),
        _ => stem,
    };
    (2..).map(|n| dir.join(format!("{base}.v{n}.toml"))).find(|p| !p.exists()).expect("a free version number")
}

/// The panel as TOML, headed by `note` as a comment.
pub fn to_toml(panel: &Panel, note: &str) -> Result<String, String> {
    let body = toml::to_string(panel).map_err(|e| format!("the panel could not be written as TOML: {e}"))?;
    let head: String = note.lines().map(|l| format!("# {l}\n")).collect();
    Ok(format!("{head}# Field reference: docs/panels.md\n\n{body}"))
}

/// Write the panel to `path` and check that the file loads as a panel.
pub fn write_panel(panel: &Panel, path: &Path, note: &str) -> Result<(), String> {
    let text = to_toml(panel, note)?;
    Panel::from_toml_str(&text, &path.display().to_string())
        .map_err(|e| format!("the new panel would not load: {e}"))?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundled_panel_writes_as_toml_that_loads_the_same_and_goes_to_the_current_directory() {
        let p = Panel::bundled("survey-sage").expect("bundled");
        let text = to_toml(&p, "a note\non two lines").unwrap();
        assert!(text.starts_with("# a note\n# on two lines\n"));
        let back = Panel::from_toml_str(&text, "copy.toml").unwrap();
        assert_eq!(back.dimensions, p.dimensions);
        assert_eq!(back.protocol, p.protocol);
        assert_eq!(back.roles, p.roles);
        assert_eq!(back.groups, p.groups);
        assert_eq!(new_panel_path(&p).parent(), Some(Path::new("")), "{:?}", new_panel_path(&p));
        assert!(new_panel_path(&p).to_string_lossy().starts_with("survey-sage.v"));
    }
}
