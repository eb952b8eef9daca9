//! The dependency direction of moot's modules: the command line on top; the
//! screens, batch evaluation, reports, prompt optimisation and the persona
//! builder under it; the engine under them; providers, sessions, panels,
//! items and statistics at the bottom. A module may use its own layer (if
//! the layer's modules use each other one way only) and the layers below,
//! never a layer above. Checked on the `crate::…` paths each source file
//! names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers from the top; modules not listed (the test kit) may use anything.
const LAYERS: &[&[&str]] = &[
    &["cli", "main"],
    &["tui", "eval", "report", "optimize", "personas"],
    &["engine"],
    &["provider", "session", "panel", "item", "stats", "config", "model", "paint", "signals"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a source file belongs to (`src/engine/x.rs` → `engine`).
fn module_of(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
    first.trim_end_matches(".rs").to_string()
}

/// The modules a file's code names as `crate::<module>` (test modules left out).
fn uses(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    // `use crate::{a::…, b};`
    for (at, _) in code.match_indices("use crate::{") {
        let inner = &code[at + "use crate::{".len()..];
        let inner = &inner[..inner.find("};").unwrap_or(inner.len())];
        for part in inner.split(',') {
            let name: String = part.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn modules_depend_on_their_own_layer_and_the_layers_below_only() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let module = module_of(&src, file);
        let Some(own) = layer_of(&module) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for used in uses(&text) {
            let Some(layer) = layer_of(&used) else { continue };
            if used == module {
                continue;
            }
            if layer < own {
                wrong
                    .push(format!("{} uses crate::{used} (a layer above)", file.strip_prefix(&src).unwrap().display()));
            } else if layer == own && own < LAYERS.len() - 1 {
                edges.entry(module.clone()).or_default().insert(used);
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies against the layering:\n{}", wrong.join("\n"));
    // Within a layer, uses go one way: no module is reached back.
    for (a, targets) in &edges {
        for b in targets {
            assert!(
                !edges.get(b).is_some_and(|t| t.contains(a)),
                "{a} and {b} use each other; one of them must depend on the other only"
            );
        }
    }
    // The check sees the code: the engine's runners are found, and so is a known use.
    assert!(files.iter().any(|f| f.ends_with("engine/protocols/pairwise/mod.rs")));
    assert!(edges.get("tui").is_some_and(|t| t.contains("optimize")), "{edges:?}");
}

#[test]
fn the_scan_reads_grouped_and_inline_paths() {
    let text =
        "use crate::{engine::run, session};\nfn f() { crate::cli::go(); }\n#[cfg(test)]\nmod t { use crate::tui; }";
    assert_eq!(uses(text), ["cli", "engine", "session"].into_iter().map(String::from).collect());
}
