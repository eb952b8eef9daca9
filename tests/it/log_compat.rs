//! Logs written by earlier versions still load, fold, show and report the
//! same (`tests/fixtures/compat/`, kept unchanged).

use std::path::PathBuf;

use moot::report::load_records;
use moot::session::event::EndStatus;
use moot::session::fold::RunState;
use moot::session::{SessionView, parse_log};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compat").join(name)
}

#[test]
fn a_maj_eval_log_of_version_0_1_folds_and_reports_its_stages() {
    let path = fixture("maj-eval-tiny-model-0.1.jsonl");
    let loaded = parse_log(&std::fs::read(&path).unwrap());
    assert!(loaded.warnings().is_empty(), "{:?}", loaded.warnings());
    assert_eq!(loaded.events.len(), 2085);

    let view = SessionView::from_events(&loaded.events);
    assert_eq!(view.state, RunState::Ended(EndStatus::Completed));
    assert_eq!(view.protocol, "maj-eval");
    assert_eq!(view.item.as_ref().unwrap().id, "qa-01");
    assert_eq!(view.agents.len(), 2);
    assert!(view.agents.iter().all(|a| a.progress.latest.is_some()), "every agent has a final evaluation");
    let group = view.group("Teachers").unwrap().aggregate.as_ref().unwrap();
    assert_eq!(group.scores["grammar"], 1.5);
    assert_eq!(group.overall, Some(2.0));
    assert!(view.aggregate.as_ref().unwrap().feedback.starts_with("The panel discusses"));

    let report = load_records(std::slice::from_ref(&path), 1);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let r = &report.records[0];
    let g = r.panel.key_index("grammar").unwrap();
    assert_eq!(r.aggregate.as_ref().unwrap()[g], Some(1.5));
    assert_eq!(r.adjusted.as_ref().unwrap()[g], Some(1.5), "no person changed anything");
    assert_eq!(r.agents.len(), 2);
    assert!(r.agents.iter().all(|a| a.initial.is_some() && a.final_.is_some()));
}

#[test]
fn sessions_show_prints_the_old_log_as_a_transcript() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
        .args(["sessions", "show"])
        .arg(fixture("maj-eval-tiny-model-0.1.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Ms. Okafor") && text.contains("Mr. Lindqvist"), "{text}");
    assert!(text.contains("completed"), "{text}");
    // A log older than the presets lists no departures: they are read from its panel.
    assert!(text.contains("preset moot; departs from the paper: personas = \"roster\""), "{text}");
}

#[test]
fn version_1_logs_and_the_examples_load_with_their_panels() {
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions/examples");
    for (path, version, protocol) in [
        (fixture("maj-eval-tiny-model-0.1.jsonl"), 1, "maj-eval"),
        (examples.join("maj-eval-two-groups.jsonl"), 1, "maj-eval"),
        (examples.join("collab-eval.jsonl"), 1, "collab-eval"),
        (examples.join("g-eval.jsonl"), 2, "g-eval"),
    ] {
        let loaded = parse_log(&std::fs::read(&path).unwrap());
        assert!(loaded.warnings().is_empty(), "{}: {:?}", path.display(), loaded.warnings());
        let view = SessionView::from_events(&loaded.events);
        assert_eq!(view.schema_version, version, "{}", path.display());
        let panel = view.panel.as_ref().unwrap_or_else(|| panic!("{}: the recorded panel reads", path.display()));
        assert_eq!(panel.protocol.kind.as_str(), protocol);
        assert_eq!(view.state, RunState::Ended(EndStatus::Completed), "{}", path.display());
        assert!(view.aggregate.is_some());
        let report = load_records(std::slice::from_ref(&path), 1);
        assert!(report.problems.is_empty(), "{:?}", report.problems);
    }
}

/// The recorded runs of the paper presets (`sessions/examples/paper/`, real
/// runs of the embedded model): each loads under the paper preset with no
/// departure, ends completed with a result, reads back into a report, and
/// `moot sessions show` prints it with its preset.
#[test]
fn the_paper_preset_examples_load_replay_and_report() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/paper");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    assert!(paths.iter().any(|p| p.ends_with("maj-eval-paper.jsonl")), "{paths:?}");
    for path in &paths {
        let loaded = parse_log(&std::fs::read(path).unwrap());
        assert!(loaded.warnings().is_empty(), "{}: {:?}", path.display(), loaded.warnings());
        let view = SessionView::from_events(&loaded.events);
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        assert_eq!(view.preset, moot::panel::Preset::Paper, "{name}");
        assert!(view.departures.is_empty(), "{name}: {:?}", view.departures);
        assert_eq!(format!("{}-paper", view.protocol), name, "each file is named after its protocol");
        assert_eq!(view.state, RunState::Ended(EndStatus::Completed), "{name}");
        assert!(view.aggregate.is_some(), "{name}: a result");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot")).args(["sessions", "show"]).arg(path).output();
        let out = out.unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("preset paper: every setting as the paper specifies"), "{name}: {text}");
        let report = load_records(std::slice::from_ref(path), 1);
        assert!(report.problems.is_empty(), "{name}: {:?}", report.problems);
    }
}

/// FNV-1a, 64 bits: a fingerprint of a command's output that does not
/// depend on the standard library's hasher.
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// Every session log under `sessions/examples/` and the log fixtures
/// (`tests/fixtures/compat/`, `tests/fixtures/report/`): each loads, folds
/// to the state it ended in, prints with `moot sessions show` and reads
/// into a report, and what they give is what the snapshot holds (taken from
/// the build before protocols became compositions of stages, and kept).
#[test]
fn every_recorded_log_loads_replays_and_reports_as_before() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    let mut folders =
        vec![root.join("sessions/examples"), root.join("tests/fixtures/compat"), root.join("tests/fixtures/report")];
    while let Some(dir) = folders.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|x| x == "jsonl") {
                paths.push(path);
            }
        }
    }
    paths.sort();
    let mut digest = String::new();
    for path in &paths {
        let rel = path.strip_prefix(&root).unwrap().display().to_string();
        // Logs recorded by later versions (compositions) are checked by their own tests.
        if rel.contains("/compositions/") {
            continue;
        }
        let loaded = parse_log(&std::fs::read(path).unwrap());
        let view = SessionView::from_events(&loaded.events);
        let result = view.aggregate.as_ref().map(|a| {
            let scores: Vec<String> = a.scores.iter().map(|(k, v)| format!("{k} {v}")).collect();
            format!("{} [{}]", scores.join(", "), a.method.clone().unwrap_or_default())
        });
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
            .env("NO_COLOR", "1")
            .args(["sessions", "show"])
            .arg(path)
            .output()
            .unwrap();
        let report = load_records(std::slice::from_ref(path), 1);
        digest.push_str(&format!(
            "{rel}: v{} {} {:?}, {} events, warnings {}; result {}; show {} {:016x}; report {} records, {} problems\n",
            view.schema_version,
            view.protocol,
            view.state,
            loaded.events.len(),
            loaded.warnings().len(),
            result.unwrap_or_else(|| "none".into()),
            out.status.code().unwrap_or(-1),
            fingerprint(&out.stdout),
            report.records.len(),
            report.problems.len(),
        ));
    }
    insta::assert_snapshot!(digest);
}

/// The recorded runs of the bundled compositions (`sessions/examples/compositions/`,
/// real runs of the embedded model, log version 5): each loads, folds to a
/// completed run with a result, prints its stages with `moot sessions show`
/// and reads into a report.
#[test]
fn the_composition_examples_load_replay_and_report() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sessions/examples/compositions");
    for name in ["summary-geval-verified", "summary-collab-debate"] {
        let path = dir.join(format!("{name}.jsonl"));
        let loaded = parse_log(&std::fs::read(&path).unwrap());
        assert!(loaded.warnings().is_empty(), "{name}: {:?}", loaded.warnings());
        let view = SessionView::from_events(&loaded.events);
        assert_eq!(view.schema_version, 5, "{name}");
        assert_eq!(view.protocol, "composition", "{name}");
        assert_eq!(view.state, RunState::Ended(EndStatus::Completed), "{name}");
        assert!(view.aggregate.as_ref().is_some_and(|a| !a.scores.is_empty()), "{name}: a result");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_moot"))
            .env("NO_COLOR", "1")
            .args(["sessions", "show"])
            .arg(&path)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(text.contains("no paper; stages: "), "{name}: {text}");
        let report = load_records(std::slice::from_ref(&path), 1);
        assert!(report.problems.is_empty(), "{name}: {:?}", report.problems);
        assert_eq!(report.records.len(), 1);
    }
}
