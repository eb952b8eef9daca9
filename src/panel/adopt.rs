//! A new panel file from an existing panel with changes adopted (SAGEval's
//! proposed definitions and aspects). The panel's own file is never touched.

use std::path::{Path, PathBuf};

use toml_edit::{Array, DocumentMut, Item, Table, value};

use super::{BUNDLED_PANELS, BUNDLED_PREFIX, Dimension, Panel};

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

/// A change adopted into a new version of a panel.
#[derive(Debug, Clone, PartialEq)]
pub enum Change {
    /// A new definition of an existing dimension.
    Definition { key: String, description: String },
    /// A new dimension, appended after the others.
    Dimension(Dimension),
}

/// The panel as TOML, headed by `note` as a comment.
pub fn to_toml(panel: &Panel, note: &str) -> Result<String, String> {
    let body = toml::to_string(panel).map_err(|e| format!("the panel could not be written as TOML: {e}"))?;
    Ok(format!("{}# Field reference: docs/panels.md\n\n{body}", comment(note)))
}

fn comment(note: &str) -> String {
    note.lines().map(|l| format!("# {l}\n")).collect()
}

/// The text the panel was loaded from: its file, or the bundled panel it names.
pub fn source_text(panel: &Panel) -> Option<String> {
    let source = panel.source.as_deref()?.to_string_lossy().into_owned();
    match source.strip_prefix(BUNDLED_PREFIX) {
        Some(stem) => BUNDLED_PANELS.iter().find(|(s, _)| *s == stem).map(|(_, t)| t.to_string()),
        None => std::fs::read_to_string(&source).ok(),
    }
}

/// `original` (a panel file's text) with `changes` made in place: comments,
/// key order and layout stay as they were; a new definition replaces the
/// dimension's `description`, a new dimension is appended to
/// `[[dimensions]]` under a comment. `note` heads the file.
pub fn edit_toml(original: &str, changes: &[Change], note: &str) -> Result<String, String> {
    let mut doc: DocumentMut = original.parse().map_err(|e| format!("the panel's text could not be edited: {e}"))?;
    let dims = doc
        .get_mut("dimensions")
        .and_then(Item::as_array_of_tables_mut)
        .ok_or("the panel's text has no [[dimensions]] to edit")?;
    for change in changes {
        match change {
            Change::Definition { key, description } => {
                let table = dims
                    .iter_mut()
                    .find(|t| t.get("key").and_then(Item::as_str) == Some(key))
                    .ok_or_else(|| format!("the panel's text has no dimension \"{key}\""))?;
                table["description"] = value(description.as_str());
            }
            Change::Dimension(d) => {
                let mut table = Table::new();
                table["key"] = value(d.key.as_str());
                table["name"] = value(d.name.as_str());
                table["description"] = value(d.description.as_str());
                if !d.labels.is_empty() {
                    table["labels"] = value(d.labels.iter().map(String::as_str).collect::<Array>());
                }
                table.decor_mut().set_prefix(format!("\n# Adopted from a proposal ({}).\n", d.key));
                dims.push(table);
            }
        }
    }
    Ok(format!("{}{doc}", comment(note)))
}

/// Write the panel to `path` and check that the file loads as `panel` does.
pub fn write_panel(panel: &Panel, text: &str, path: &Path) -> Result<(), String> {
    let written = Panel::from_toml_str(text, &path.display().to_string())
        .map_err(|e| format!("the new panel would not load: {e}"))?;
    if written.dimensions != panel.dimensions {
        return Err("the new panel's dimensions would not be the ones adopted".into());
    }
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
        // A panel's own names for its item's parts, written after a judge
        // table, read back.
        let mut named = Panel::bundled("storybook-qa").expect("bundled");
        named.judge.rubric = "5: a child could answer it.".into();
        let back = Panel::from_toml_str(&to_toml(&named, "named").unwrap(), "named.toml").unwrap();
        assert_eq!(back.item_parts.as_deref(), Some("the question, the answer or the story"));
        assert_eq!(back.judge, named.judge);
    }

    #[test]
    fn an_edited_panel_keeps_its_comments_and_loads_with_the_changes() {
        let p = Panel::bundled("survey-sage").expect("bundled");
        let original = source_text(&p).expect("the bundled text");
        let brevity = Dimension {
            key: "brevity".into(),
            name: "Brevity".into(),
            description: "Is it as short as it can be?".into(),
            steps: None,
            labels: Vec::new(),
        };
        let changes = [
            Change::Definition { key: "accuracy".into(), description: "Is every fact right?".into() },
            Change::Dimension(brevity.clone()),
        ];
        let text = edit_toml(&original, &changes, "a note").unwrap();
        assert!(text.starts_with("# a note\n# Survey and quiz review (SAGEval)"), "{text}");
        assert!(text.contains("# At most this many new aspects"), "comments stay");
        assert!(text.contains("# Adopted from a proposal (brevity)."));
        let back = Panel::from_toml_str(&text, "v2.toml").unwrap();
        assert_eq!(back.dimensions[0].description, "Is every fact right?");
        assert_eq!(back.dimensions.last(), Some(&brevity));
        assert_eq!(back.dimensions.len(), p.dimensions.len() + 1);
        assert_eq!(back.groups, p.groups);
        let missing = [Change::Definition { key: "nope".into(), description: "x".into() }];
        assert!(edit_toml(&original, &missing, "n").unwrap_err().contains("no dimension \"nope\""));
    }
}
