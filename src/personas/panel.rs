//! The panel file a build writes: the chosen groups and personas, each
//! persona headed by comments naming its perspective, source documents and
//! evidence (a quote not found in its document says so), and the values a
//! person edited with who edited them. The file is checked with the panel
//! loader before it is written.

use std::fmt::Write as _;
use std::path::Path;

use super::state::BuildState;
use crate::panel::{Dimension, Panel, Protocol, ProtocolSection};

/// The dimension a panel gets when no template gives its own.
pub const DEFAULT_DIMENSION: &str = "quality";

/// How the panel is written.
#[derive(Debug, Clone)]
pub struct PanelOptions {
    pub name: String,
    pub protocol: Protocol,
    /// Dimensions, scale and settings from this panel (its groups are not used).
    pub template: Option<Panel>,
    /// One-line roles only (the ablation of the detailed personas).
    pub simple_roles: bool,
}

/// A written panel's text and what it holds.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub text: String,
    pub groups: usize,
    pub agents: usize,
    /// Perspectives chosen but without a persona (its call failed), left out.
    pub without_persona: Vec<String>,
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn comment(out: &mut String, text: &str) {
    for line in text.lines() {
        let _ = writeln!(out, "# {line}");
    }
}

/// The panel's settings without groups: the template's, or defaults.
fn base(task: &str, options: &PanelOptions) -> Panel {
    let mut p = match &options.template {
        Some(t) => t.clone(),
        None => Panel {
            name: String::new(),
            protocol: ProtocolSection::new(options.protocol),
            task: String::new(),
            scale: Default::default(),
            dimensions: vec![Dimension {
                key: DEFAULT_DIMENSION.into(),
                name: "Quality".into(),
                description: "How well the text serves the task, judged from your own perspective.".into(),
                steps: None,
                labels: Vec::new(),
            }],
            overall: true,
            moderator: Default::default(),
            consensus: Default::default(),
            generation: Default::default(),
            model: Default::default(),
            aggregator: Default::default(),
            final_judge: Default::default(),
            roles: Default::default(),
            judge: Default::default(),
            item_parts: None,
            groups: Vec::new(),
            source: None,
        },
    };
    if p.protocol.kind != options.protocol {
        p.protocol = ProtocolSection::new(options.protocol);
    }
    p.name = options.name.clone();
    p.task = task.to_string();
    p.groups = Vec::new();
    p
}

/// The panel file for what the build chose.
pub fn render(state: &BuildState, options: &PanelOptions) -> Result<Rendered, String> {
    let chosen = state.chosen();
    if chosen.is_empty() {
        return Err("no group has a perspective left to write a persona for".into());
    }
    let base = base(&state.task, options);
    let body = toml::to_string(&base).map_err(|e| format!("the panel could not be written as TOML: {e}"))?;
    let body: String = body.lines().filter(|l| l.trim() != "groups = []").map(|l| format!("{l}\n")).collect();
    let mut out = String::new();
    comment(
        &mut out,
        &format!(
            "{}\nBuilt by `moot personas` from {} document{} ({}).\nEach persona below names the perspective it stands for and the evidence behind it.\nField reference: docs/panels.md; how the panel was built: docs/personas.md",
            options.name,
            state.documents.len(),
            if state.documents.len() == 1 { "" } else { "s" },
            state.documents.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", "),
        ),
    );
    if options.simple_roles {
        comment(&mut out, "Simple roles: each judge has only a one-line role (the ablation of detailed personas).");
    }
    out.push('\n');
    out.push_str(&body);
    let (mut groups, mut agents) = (0, 0);
    let mut without = Vec::new();
    for (g, perspectives) in chosen {
        let with: Vec<_> = perspectives.iter().filter_map(|p| state.personas.get(&p.id).map(|x| (*p, x))).collect();
        without.extend(perspectives.iter().filter(|p| !state.personas.contains_key(&p.id)).map(|p| p.id.clone()));
        if with.is_empty() {
            continue;
        }
        groups += 1;
        let _ = writeln!(out, "\n# --- {} ({}) {}", g.name, g.id, "-".repeat(60usize.saturating_sub(g.name.len())));
        for m in &g.members {
            if let Some(s) = state.stakeholder(m) {
                let doc = state.documents.get(s.doc).map_or("?", |d| d.name.as_str());
                comment(&mut out, &format!("Stakeholder {}: {} ({doc}): {}", s.id, s.name, s.characteristics));
            }
        }
        if let Some(who) = state.edited.get(&g.id) {
            comment(&mut out, &format!("Group name set by {who}"));
        }
        let _ = writeln!(out, "\n[[groups]]\nname = {}", quoted(&g.name));
        if !g.description.is_empty() {
            let _ = writeln!(out, "description = {}", quoted(&g.description));
        }
        for (p, persona) in with {
            agents += 1;
            out.push('\n');
            comment(&mut out, &format!("Perspective {}: {}", p.id, p.text));
            if let Some(who) = state.edited.get(&p.id) {
                comment(&mut out, &format!("Perspective wording edited by {who}"));
            }
            for src in &p.sources {
                let Some((s, x)) = state.source(src) else { continue };
                let doc = state.documents.get(s.doc).map_or("?", |d| d.name.as_str());
                let place =
                    x.check.paragraph.filter(|_| x.check.found).map(|n| format!(", paragraph {n}")).unwrap_or_default();
                let status = if !state.source_kept(src) {
                    "rejected in review".to_string()
                } else if x.check.similarity >= 1.0 {
                    "found".to_string()
                } else if x.check.found {
                    format!("found, {:.0}% similar", x.check.similarity * 100.0)
                } else {
                    format!("NOT FOUND in {doc}")
                };
                comment(&mut out, &format!("Evidence {src} ({doc}{place}, {status}): \"{}\"", x.evidence));
                if let Some(who) = state.edited.get(src) {
                    comment(&mut out, &format!("  ({src} reworded by {who}: {})", x.text));
                }
            }
            for (field, author) in &persona.edited_by {
                comment(&mut out, &format!("{field} edited by {author}"));
            }
            let _ =
                writeln!(out, "[[groups.agents]]\nname = {}\nrole = {}", quoted(&persona.name), quoted(&persona.role));
            if !options.simple_roles {
                for (k, v) in [
                    ("demographics", &persona.demographics),
                    ("perspective", &persona.perspective),
                    ("specialty", &persona.specialty),
                    ("traits", &persona.traits),
                    ("relationships", &persona.relationships),
                ] {
                    let _ = writeln!(out, "{k} = {}", quoted(v));
                }
            }
        }
    }
    if agents == 0 {
        return Err("no chosen perspective has a persona".into());
    }
    Panel::from_toml_str(&out, "the new panel").map_err(|e| format!("the new panel would not load: {e}"))?;
    Ok(Rendered { text: out, groups, agents, without_persona: without })
}

/// Render the panel and write it to `path` (its folder created).
pub fn write(state: &BuildState, options: &PanelOptions, path: &Path) -> Result<Rendered, String> {
    let r = render(state, options)?;
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(path, &r.text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(r)
}
