//! Only a protocol's own folder decides by its name: its declaration in
//! `src/panel/protocol/` (which builds its run as stages). Everything else
//! — the engine's stages, the runtime, the screens, the reports — reads
//! what a protocol declares in its `ProtocolSpec`, what its stages are or
//! what its settings say, so a new protocol states each of those properties
//! instead of silently taking a `_ =>` default.
//!
//! Checked on the code of every other source file (its test modules, the
//! test kit and comments left out): no `Protocol::<Variant>` path, and no
//! protocol's name (`"pairwise"`, `"sage-eval"`, …) compared with a
//! protocol (`protocol == "pairwise"`) or matched as a pattern of a `match`
//! on one. A setting's value that happens to be a protocol's name (`mode =
//! "pairwise"`) is no protocol's.

use std::path::Path;

use super::layers::rust_files;

/// Folders where deciding by a protocol's name is the point.
const OWN: &[&str] = &["panel/protocol", "testkit"];

/// The protocols' variants and names, as the catalogue and the declaration
/// files give them (`MajEval`, `maj-eval`).
fn catalogue(src: &Path) -> (Vec<String>, Vec<String>) {
    let dir = src.join("panel/protocol");
    let mod_rs = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let start = mod_rs.find("catalogue! {").expect("the catalogue");
    let body = &mod_rs[start..mod_rs[start..].find('}').unwrap() + start];
    let variants: Vec<String> =
        body.lines().filter_map(|l| l.split_once("=>")).map(|(v, _)| v.trim().to_string()).collect();
    let mut ids = Vec::new();
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            if let Some(rest) = line.trim().strip_prefix("id: \"") {
                ids.push(rest.split('"').next().unwrap().to_string());
            }
        }
    }
    (variants, ids)
}

/// A file's code: test modules, comment lines and trailing comments left out.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or(text);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .map(|l| l.split(" // ").next().unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `s` with every string literal emptied (`get("protocol")` → `get("")`).
fn without_strings(s: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut escaped = false;
    for c in s.chars() {
        if inside {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                inside = false;
                out.push(c);
            }
            continue;
        }
        if c == '"' {
            inside = true;
        }
        out.push(c);
    }
    out
}

/// Whether `s` names a protocol: the word `protocol` (a field, a variable).
fn names_protocol(s: &str) -> bool {
    let s = without_strings(s);
    s.match_indices("protocol").any(|(at, _)| {
        let before = s[..at].chars().next_back();
        let after = s[at + "protocol".len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// Where `code` decides by a protocol's identity, one line each.
fn decisions(code: &str, variants: &[String], ids: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        for v in variants {
            let path = format!("Protocol::{v}");
            if line
                .match_indices(&path)
                .any(|(at, _)| !line[at + path.len()..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
            {
                out.push(line.trim().to_string());
            }
        }
        // `protocol == "pairwise"`, `"sage-eval" != r.protocol`.
        for op in ["==", "!="] {
            let Some((left, right)) = line.split_once(op) else { continue };
            for id in ids {
                let lit = format!("\"{id}\"");
                if (right.contains(&lit) && names_protocol(left)) || (left.contains(&lit) && names_protocol(right)) {
                    out.push(line.trim().to_string());
                }
            }
        }
    }
    // `match protocol { "sage-eval" => … }`, `matches!(protocol, "pairwise")`.
    for (at, _) in code.match_indices("match").filter(|(at, _)| {
        !code[..*at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            && (code[*at..].starts_with("match ") || code[*at..].starts_with("matches!("))
    }) {
        let rest = &code[at..];
        let is_macro = rest.starts_with("matches!");
        // The scrutinee ends at the block's `{` outside any parentheses
        // (`match (protocol, stage) {`); a macro's at its first comma.
        let mut depth = 0i32;
        let mut split = None;
        for (i, c) in rest.char_indices() {
            match c {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' if depth == 0 && !is_macro => {
                    split = Some(i);
                    break;
                }
                ',' if depth == 1 && is_macro => {
                    split = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(split) = split else { continue };
        // The arms: up to the brace (or parenthesis) that closes them.
        let mut depth = 0i32;
        let mut end = rest.len();
        for (i, c) in rest[split..].char_indices() {
            match c {
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => {
                    depth -= 1;
                    if depth < 0 || (depth == 0 && !is_macro) {
                        end = split + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        if names_protocol(&rest[..split]) && ids.iter().any(|id| rest[split..end].contains(&format!("\"{id}\""))) {
            out.push(format!("{} …", rest[..split].trim()));
        }
    }
    out
}

#[test]
fn no_file_outside_a_protocols_own_folders_decides_by_its_name() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let (variants, ids) = catalogue(&src);
    assert!(variants.len() >= 7 && variants.len() == ids.len(), "{variants:?} {ids:?}");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut found = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if OWN.iter().any(|own| rel.starts_with(&format!("{own}/")) || rel == format!("{own}.rs")) {
            continue;
        }
        let text = std::fs::read_to_string(file).unwrap();
        found.extend(decisions(&code(&text), &variants, &ids).into_iter().map(|d| format!("{rel}: {d}")));
    }
    assert!(
        found.is_empty(),
        "decided by a protocol's name outside its folders (declare a property in its ProtocolSpec instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_scan_finds_names_compared_and_matched_but_not_a_settings_value() {
    let variants = vec!["MajEval".to_string(), "Pairwise".to_string()];
    let ids = vec!["maj-eval".to_string(), "pairwise".to_string(), "sage-eval".to_string()];
    let flagged = |src: &str| decisions(&code(src), &variants, &ids);
    assert_eq!(flagged("if run.panel.protocol == crate::panel::Protocol::Pairwise {}").len(), 1);
    assert_eq!(flagged("Some(p) => match p.protocol.kind {\n    Protocol::MajEval => 1,\n    _ => 2,\n}").len(), 1);
    assert_eq!(flagged("fn applies(app: &App) -> bool { app.view().protocol == \"pairwise\" }").len(), 1);
    assert_eq!(flagged("records.iter().filter(|r| r.panel.protocol != \"sage-eval\")").len(), 1);
    assert_eq!(
        flagged("match (protocol, stage) {\n    (\"sage-eval\", INITIAL) => \"evaluator\",\n    _ => stage,\n}").len(),
        1
    );
    assert_eq!(flagged("matches!(v.protocol.as_str(), \"maj-eval\" | \"pairwise\")").len(), 1);
    // Not a protocol's identity: a setting's value, a name, a test module, a comment.
    assert!(flagged("panel.get(\"protocol\").and_then(|p| p.get(\"mode\")) == Some(\"pairwise\")").is_empty());
    assert!(flagged("match mode.as_str() { \"pairwise\" => 1, _ => 2 }").is_empty());
    assert!(flagged("pub const DIMENSION: &str = \"pairwise\";").is_empty());
    assert!(flagged("let p = Protocol::parse(s); let all = Protocol::ALL; let x = Protocol::MajEvalish;").is_empty());
    assert!(
        flagged(
            "/// `protocol == \"pairwise\"`\nfn f() {}\n#[cfg(test)]\nmod t { const P: Protocol = Protocol::MajEval; }"
        )
        .is_empty()
    );
    assert!(flagged("let protocols = x; if protocols_count == \"pairwise\" {}").is_empty());
}
