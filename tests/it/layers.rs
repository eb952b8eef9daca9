//! The dependency direction of moot's modules: the command line on top; the
//! screens, batch evaluation, reports, prompt optimisation and the persona
//! builder under it; the engine under them; providers, sessions, panels,
//! items and statistics at the bottom. A module may use its own layer (if
//! the layer's modules use each other one way only) and the layers below,
//! never a layer above. Inside the engine, its sub-modules (`engine/<name>`,
//! and each stage folder `engine/stages/<name>`) use each other one way
//! only too; a folder's `mod.rs` sits above the modules of its folder.
//! Checked on the `crate::…`, `super::…` and `self::…` paths each source
//! file names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers from the top; modules not listed (the test kit) may use anything.
const LAYERS: &[&[&str]] = &[
    &["cli", "main"],
    &["tui", "eval", "report", "optimize", "personas"],
    &["engine"],
    &[
        "provider", "session", "panel", "item", "stats", "config", "model", "paint", "signals", "roles", "preset",
        "errors",
    ],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `.rs` file below `dir`.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
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

/// A cycle in `edges` (`a → b → … → a`), if there is one: a depth-first
/// search that meets a node still on its path.
fn find_cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|n| n == node) {
            let mut cycle = path[at..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    edges.keys().find_map(|n| visit(n, edges, &mut Vec::new(), &mut done))
}

/// A module's path from `src` (`src/engine/runtime/mod.rs` → `engine::runtime`).
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut path: Vec<String> = rel.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect();
    if path.last().is_some_and(|l| l == "mod") {
        path.pop();
    }
    path
}

/// The paths a use tree starting at `text` names, its group `{…}` expanded:
/// `a::{b, c::{self, d}}` → `a::b`, `a::c`, `a::c::d`.
fn use_tree(text: &str) -> Vec<Vec<String>> {
    let mut prefix = Vec::new();
    let mut rest = text.trim_start();
    loop {
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        prefix.push(name);
        match rest.strip_prefix("::") {
            Some(r) => rest = r.trim_start(),
            None => return vec![prefix],
        }
    }
    let Some(inner) = rest.strip_prefix('{') else { return vec![prefix] };
    // In a group, `self` is the group's own path.
    let within = |part: &str| -> Vec<Vec<String>> {
        use_tree(part)
            .into_iter()
            .map(|p| prefix.iter().cloned().chain(p.into_iter().filter(|s| s != "self")).collect())
            .collect()
    };
    let mut out = Vec::new();
    let (mut depth, mut from) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                out.extend(within(&inner[from..i]));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.extend(within(&inner[from..i]));
                from = i + 1;
            }
            _ => {}
        }
    }
    out
}

/// The absolute module paths (from the crate root) a file at `module` names
/// as `crate::…`, `super::…` or `self::…` (comments and test modules left out).
fn engine_uses(text: &str, module: &[String]) -> Vec<Vec<String>> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let code: String = code.lines().map(|l| l.find("//").map_or(l, |at| &l[..at])).collect::<Vec<_>>().join("\n");
    let mut out = Vec::new();
    for start in ["crate::", "super::", "self::"] {
        for (at, _) in code.match_indices(start) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for path in use_tree(&code[at..]) {
                let mut base = module.to_vec();
                let mut segments = path.into_iter().peekable();
                match segments.peek().map(String::as_str) {
                    Some("crate") => base.clear(),
                    Some("self") => {}
                    _ => {
                        while segments.peek().is_some_and(|s| s == "super") {
                            base.pop();
                            segments.next();
                        }
                        base.extend(segments);
                        out.push(base);
                        continue;
                    }
                }
                segments.next();
                base.extend(segments);
                out.push(base);
            }
        }
    }
    out
}

/// The engine's sub-module an absolute path lies in: `runtime` for
/// `engine::runtime::…`, `stages/discuss` for a stage, and `engine` or
/// `stages` for what the folders' `mod.rs` define.
fn engine_node(path: &[String], engine: &BTreeSet<String>, runners: &BTreeSet<String>) -> Option<String> {
    if path.first().is_none_or(|m| m != "engine") {
        return None;
    }
    match path.get(1) {
        Some(p) if p == "stages" => Some(match path.get(2) {
            Some(r) if runners.contains(&format!("{p}/{r}")) => format!("{p}/{r}"),
            _ => p.clone(),
        }),
        Some(name) if engine.contains(name) => Some(name.clone()),
        _ => Some("engine".into()),
    }
}

/// The modules in a folder (`x.rs` and `x/`), `mod.rs` left out.
fn children(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().with_extension("").file_name().unwrap().to_string_lossy().to_string())
        .filter(|n| n != "mod")
        .collect()
}

/// The stages' folders and files, as `stages/discuss`.
fn runners(src: &Path) -> BTreeSet<String> {
    children(&src.join("engine/stages")).into_iter().map(|r| format!("stages/{r}")).collect()
}

/// The uses between the engine's sub-modules, with a use found for each.
fn engine_edges(src: &Path, files: &[PathBuf]) -> BTreeMap<String, BTreeSet<String>> {
    let engine = children(&src.join("engine"));
    let runners = runners(src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // A folder's mod.rs declares, so sits above, the modules of its folder.
    edges.entry("engine".into()).or_default().extend(engine.iter().cloned());
    for r in &runners {
        let folder = r.split('/').next().unwrap_or_default().to_string();
        edges.entry(folder).or_default().insert(r.clone());
    }
    for file in files {
        let module = module_path(src, file);
        let Some(own) = engine_node(&module, &engine, &runners) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        for path in engine_uses(&text, &module) {
            if let Some(used) = engine_node(&path, &engine, &runners)
                && used != own
            {
                edges.entry(own.clone()).or_default().insert(used);
            }
        }
    }
    edges
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
            } else if layer == own {
                edges.entry(module.clone()).or_default().insert(used);
            }
        }
    }
    assert!(wrong.is_empty(), "dependencies against the layering:\n{}", wrong.join("\n"));
    // Within a layer, uses go one way: no module is reached back, by any path.
    if let Some(cycle) = find_cycle(&edges) {
        panic!("modules of one layer use each other: {}; one of them must depend on the other only", cycle.join(" → "));
    }
    // The check sees the code: the engine's runners are found, and so are known uses.
    assert!(files.iter().any(|f| f.ends_with("engine/stages/compare/mod.rs")));
    assert!(edges.get("tui").is_some_and(|t| t.contains("optimize")), "{edges:?}");
    assert!(edges.get("session").is_some_and(|t| t.contains("panel")), "{edges:?}");
}

#[test]
fn the_engines_modules_use_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("engine"), &mut files);
    files.sort();
    let edges = engine_edges(&src, &files);
    if let Some(cycle) = find_cycle(&edges) {
        panic!("the engine's modules use each other: {}; one of them must depend on the other only", cycle.join(" → "));
    }
    // The scan sees the code: `crate::engine::…` and `super::…` uses are found.
    assert!(edges.get("stages/discuss").is_some_and(|t| t.contains("runtime")), "{edges:?}");
    assert!(edges.get("trim").is_some_and(|t| t.contains("prompts")), "{edges:?}");
    assert!(edges.get("runtime").is_some_and(|t| t.contains("trim")), "{edges:?}");
}

#[test]
fn the_scan_reads_grouped_and_inline_paths() {
    let text =
        "use crate::{engine::run, session};\nfn f() { crate::cli::go(); }\n#[cfg(test)]\nmod t { use crate::tui; }";
    assert_eq!(uses(text), ["cli", "engine", "session"].into_iter().map(String::from).collect());
}

#[test]
fn the_engine_scan_resolves_super_self_and_nested_groups() {
    let module: Vec<String> = ["engine", "stages", "steps", "cache"].map(String::from).to_vec();
    let text = "use super::super::{labels, turns::{self, Ask}};\nuse self::inner::X;\n\
                // crate::engine::trim in a comment\nfn f() { super::prompts::go(); crate::engine::verdict::V::x(); }";
    let paths: BTreeSet<String> = engine_uses(text, &module).iter().map(|p| p.join("::")).collect();
    let expected = [
        "engine::stages::labels",
        "engine::stages::turns",
        "engine::stages::turns::Ask",
        "engine::stages::steps::cache::inner::X",
        "engine::stages::steps::prompts::go",
        "engine::verdict::V::x",
    ];
    assert_eq!(paths, expected.into_iter().map(String::from).collect());
    let engine: BTreeSet<String> = ["stages", "verdict"].map(String::from).into();
    let runners: BTreeSet<String> = ["stages/steps", "stages/discuss"].map(String::from).into();
    let node = |p: &str| engine_node(&p.split("::").map(String::from).collect::<Vec<_>>(), &engine, &runners);
    assert_eq!(node("engine::stages::steps::prompts::go").as_deref(), Some("stages/steps"));
    assert_eq!(node("engine::stages::discuss::summary::go").as_deref(), Some("stages/discuss"));
    assert_eq!(node("engine::stages::run").as_deref(), Some("stages"));
    assert_eq!(node("engine::verdict::V").as_deref(), Some("verdict"));
    assert_eq!(node("engine::EngineConfig").as_deref(), Some("engine"));
    assert_eq!(node("session::Event"), None);
}

#[test]
fn the_cycle_finder_finds_a_cycle_of_any_length() {
    let graph = |pairs: &[(&str, &str)]| {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            edges.entry(a.to_string()).or_default().insert(b.to_string());
        }
        edges
    };
    // A diamond has no cycle.
    assert_eq!(find_cycle(&graph(&[("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")])), None);
    // d → b closes b → d → b; a reaches it first.
    let cycle = find_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "d"), ("d", "b")])).unwrap();
    assert_eq!(cycle, ["b", "c", "d", "b"]);
    assert_eq!(find_cycle(&graph(&[("x", "y"), ("y", "x")])).unwrap(), ["x", "y", "x"]);
}
