//! The fuzzing corpus as regression tests: every input kept under
//! `fuzz/corpus/<target>/` (what the fuzzers found interesting, including
//! inputs that once crashed a reader) goes through the same entry point as
//! its fuzz target, and must not panic.

use std::path::Path;

use moot::testkit::fuzz::TARGETS;

#[test]
fn every_kept_fuzz_input_is_read_without_a_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (name, run) in TARGETS {
        let dir = root.join(name);
        let mut inputs: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        inputs.sort();
        assert!(inputs.len() >= 5, "{}: the corpus of {name} has only {} inputs", dir.display(), inputs.len());
        for path in inputs {
            let data = std::fs::read(&path).unwrap();
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                panic!("{name}: {} panicked", path.display());
            }
        }
    }
}
