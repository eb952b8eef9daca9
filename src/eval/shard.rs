//! Shards of one run writing into one folder (`moot eval --shard I/N` on
//! several machines, `--out` a shared folder).
//!
//! Which items a shard runs is fixed by the item's id: shard I of N takes
//! the items whose id's stable hash is I − 1 modulo N
//! ([`crate::session::selection::Shard`]), so every machine agrees without
//! talking to the others, whatever order the data file is in.
//!
//! Shards share the folder's item logs (each item's log is written by the
//! one shard that owns it) but never a file: each shard describes itself in
//! its own manifest, `run.shard-I-of-N.json`, in place of `run.json`, and its
//! log names are those an unsharded run of the whole data file would use. A
//! shard resumes alone (`--resume` with the same `--shard`), moving its own
//! unfinished logs to `attempts/`. `moot report DIR` reads every item log
//! of the folder, whichever shard wrote it.

use std::collections::BTreeMap;
use std::path::Path;

use super::EvalError;
pub use crate::session::run_folder::shard_manifests;
use crate::session::run_folder::{MANIFEST, Manifest, ManifestError};
use crate::session::selection::Shard;

/// The manifest of a shard (`run.shard-2-of-4.json`), or `run.json` for an unsharded run.
pub fn manifest_name(shard: Option<Shard>) -> String {
    match shard {
        Some(s) => format!("run.shard-{}-of-{}.json", s.index, s.count),
        None => MANIFEST.to_string(),
    }
}

/// Read the manifest called `name` from `dir`; none when there is none.
pub fn load(dir: &Path, name: &str) -> Result<Option<Manifest>, ManifestError> {
    Manifest::load_named(dir, name)
}

/// Write the manifest called `name` atomically (a temporary file of its own, renamed over it).
pub fn save(dir: &Path, name: &str, manifest: &Manifest) -> Result<(), ManifestError> {
    manifest.save_named(dir, name)
}

/// Whether a shard may write into `dir` beside what is there: not into a
/// folder of an unsharded run, nor beside shards of another count, nor
/// (without `--resume`) over its own earlier manifest, nor beside shards of
/// another panel or with other `models` (see [`super::Manifest::models`]);
/// and an unsharded run not into a folder of shards.
pub fn check_folder(
    dir: &Path,
    shard: Option<Shard>,
    resume: bool,
    panel: &str,
    models: &BTreeMap<String, String>,
) -> Result<(), EvalError> {
    let shards = shard_manifests(dir);
    let in_use = |why: String| EvalError::ShardConflict { dir: dir.to_path_buf(), why };
    let Some(shard) = shard else {
        if let Some((s, _)) = shards.first() {
            return Err(in_use(format!(
                "it holds shards of a sharded run ({}); run each part with --shard I/{}",
                manifest_name(Some(*s)),
                s.count
            )));
        }
        return Ok(());
    };
    if dir.join(MANIFEST).exists() {
        return Err(in_use(format!(
            "it holds an unsharded run ({MANIFEST}); choose another --out for --shard {shard}"
        )));
    }
    for (other, path) in &shards {
        if other.count != shard.count {
            return Err(in_use(format!(
                "it holds shards of {} ({}), not of {}; use --shard I/{} or another --out",
                other.count,
                manifest_name(Some(*other)),
                shard.count,
                other.count
            )));
        }
        if let Some(m) = load(dir, &manifest_name(Some(*other)))? {
            if m.panel.name != panel {
                let found = m.panel.name;
                return Err(EvalError::PanelMismatch { dir: path.clone(), found, expected: panel.to_string() });
            }
            // Shards of one run judge with the same models (a report shows other models as another panel).
            if let Some((who, found, given)) = super::models_differ(&m.models, models) {
                return Err(EvalError::ModelsMismatch { dir: path.clone(), who, found, given });
            }
        }
        if *other == shard && !resume {
            return Err(EvalError::FolderInUse { dir: dir.to_path_buf() });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::run_folder::shard_of;

    #[test]
    fn shard_manifests_are_named_and_found() {
        let s = Shard { index: 2, count: 4 };
        assert_eq!(manifest_name(Some(s)), "run.shard-2-of-4.json");
        assert_eq!(manifest_name(None), "run.json");
        assert_eq!(shard_of("run.shard-2-of-4.json"), Some(s));
        assert_eq!(shard_of("run.shard-5-of-4.json"), None);
        assert_eq!(shard_of("run.json"), None);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("run.shard-2-of-4.json"), "{}").unwrap();
        std::fs::write(dir.path().join("run.shard-1-of-4.json"), "{}").unwrap();
        std::fs::write(dir.path().join("a.jsonl"), "").unwrap();
        let found: Vec<Shard> = shard_manifests(dir.path()).into_iter().map(|(s, _)| s).collect();
        assert_eq!(found, [Shard { index: 1, count: 4 }, s]);
    }

    #[test]
    fn shards_of_another_count_or_an_unsharded_run_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = |i, n| Some(Shard { index: i, count: n });
        let none = BTreeMap::new();
        assert!(check_folder(dir.path(), s(1, 2), false, "p", &none).is_ok());
        std::fs::write(dir.path().join("run.shard-1-of-2.json"), "not json").unwrap();
        let e = check_folder(dir.path(), s(1, 3), false, "p", &none).unwrap_err().to_string();
        assert!(e.contains("shards of 2") && e.contains("--shard I/2"), "{e}");
        let e = check_folder(dir.path(), None, false, "p", &none).unwrap_err().to_string();
        assert!(e.contains("--shard I/2"), "{e}");
        std::fs::remove_file(dir.path().join("run.shard-1-of-2.json")).unwrap();
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        let e = check_folder(dir.path(), s(2, 2), false, "p", &none).unwrap_err().to_string();
        assert!(e.contains("unsharded run"), "{e}");
    }
}
