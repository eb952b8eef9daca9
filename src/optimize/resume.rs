//! What resuming an optimisation needs from its log: the options the run was
//! started with (recorded on `optimize_started` since version 2 of the log),
//! whether the run ended, and the check that the panel and the data are still
//! what the run read.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::log::{LOG_FILE, OptEvent, OptKind, read_log};

/// The command-line options of a run, as given (the seed and the output
/// paths as the run resolved them): enough to start the same run again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// The panel file (absolute when it was a path) or bundled name.
    pub panel: String,
    /// The labelled data (absolute when it was a path).
    pub data: String,
    pub threshold: f64,
    pub max_iter: Option<u32>,
    pub holdout: f64,
    pub objective: String,
    pub dimension: Option<String>,
    pub clusters: Option<u32>,
    pub cluster_by: Option<String>,
    pub per_cluster: Option<u32>,
    pub test: Option<f64>,
    pub few_shot: bool,
    pub judge_temperature: Option<f32>,
    pub preset: String,
    pub concurrency: u32,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub moderator: Option<String>,
    /// The seed the run used (given, the panel's or drawn).
    pub seed: u64,
    /// The run folder and the panel file the result goes to, as the run
    /// named them, and the folder it ran in (a resumed run goes on there).
    pub out: PathBuf,
    pub output: PathBuf,
    pub dir: PathBuf,
    pub no_cache: bool,
}

/// `path` made absolute when it names an existing file or folder (a bundled
/// panel's name stays as it is).
pub fn absolute(path: &str) -> String {
    let p = Path::new(path);
    match p.exists().then(|| std::path::absolute(p)) {
        Some(Ok(abs)) => abs.display().to_string(),
        _ => path.to_string(),
    }
}

/// The log of a run named by its folder, its `optimize.jsonl`, or its id
/// (`runs/optimize-<id>`).
pub fn log_path(run: &str) -> anyhow::Result<PathBuf> {
    let given = Path::new(run);
    let candidates = [given.to_path_buf(), Path::new("runs").join(format!("optimize-{run}"))];
    for c in candidates {
        let file = if c.is_dir() { c.join(LOG_FILE) } else { c };
        if file.is_file() {
            return Ok(file);
        }
    }
    anyhow::bail!("--resume: {run}: no optimisation log there (give the run folder, its {LOG_FILE} or the run id)")
}

/// A run's log ready to resume: its events (complete lines), and its options.
#[derive(Debug)]
pub struct Interrupted {
    pub events: Vec<OptEvent>,
    pub options: RunOptions,
    pub run_id: String,
    pub review: bool,
    /// A torn last line will be removed.
    pub torn: bool,
}

/// Read the log at `path` for resuming; refuses a run that ended and a log
/// written before runs recorded their options.
pub fn interrupted(path: &Path) -> anyhow::Result<Interrupted> {
    let events = read_log(path)?;
    let text = std::fs::read(path).map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let torn = !text.is_empty() && !text.ends_with(b"\n");
    if let Some(OptKind::OptimizeEnded { status, reason, .. }) = events.last().map(|e| &e.kind) {
        let at = events.last().map(|e| e.t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)).unwrap_or_default();
        anyhow::bail!(
            "{}: the run ended ({}: {reason}) at {at}; nothing to resume",
            path.display(),
            serde_json::to_value(status).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
        );
    }
    let Some(OptKind::OptimizeStarted { run_id, options, review, schema_version, .. }) =
        events.first().map(|e| e.kind.clone())
    else {
        anyhow::bail!("{}: does not begin with optimize_started", path.display());
    };
    let Some(options) = options else {
        anyhow::bail!(
            "{}: written by an earlier moot (log version {schema_version}), which did not record the run's options; \
             it cannot be resumed: run it again with the same --seed (the response cache answers what it asked)",
            path.display()
        );
    };
    Ok(Interrupted { events, options, run_id, review, torn })
}

/// Why a run started again with the recorded options would not be the same
/// run: the first field of `optimize_started` that differs, named with what
/// it comes from. `None` when they agree.
pub fn differs(logged: &OptKind, now: &OptKind) -> Option<String> {
    let (Ok(serde_json::Value::Object(a)), Ok(serde_json::Value::Object(b))) =
        (serde_json::to_value(logged), serde_json::to_value(now))
    else {
        return Some("the first event cannot be compared".into());
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    for key in keys {
        if matches!(key.as_str(), "moot_version" | "schema_version") || a.get(key) == b.get(key) {
            continue;
        }
        let what = match key.as_str() {
            "prompt" | "scale_min" | "scale_max" => "the panel's judge text or scale changed",
            "train" | "holdout" | "test" => "the labelled examples changed",
            "models" => "the providers or models that are configured changed",
            _ => "the run's settings differ",
        };
        return Some(format!("{what} (`{key}` is not what the log recorded)"));
    }
    None
}

/// Remove a last line that a crash left incomplete (no newline).
pub fn cut_torn_line(path: &Path) -> std::io::Result<bool> {
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(path)?;
    let mut text = Vec::new();
    f.read_to_end(&mut text)?;
    if text.is_empty() || text.ends_with(b"\n") {
        return Ok(false);
    }
    let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    f.set_len(keep as u64)?;
    f.seek(SeekFrom::End(0))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_cut_and_a_whole_log_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOG_FILE);
        std::fs::write(&path, "{\"a\":1}\n{\"b\":").unwrap();
        assert!(cut_torn_line(&path).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
        assert!(!cut_torn_line(&path).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"a\":1}\n");
    }

    fn started(train: &[&str], guidance: &str) -> OptKind {
        serde_json::from_value(serde_json::json!({
            "type": "optimize_started", "run_id": "r", "schema_version": 2, "moot_version": "0.1.0",
            "panel": "p.toml", "data": "d.jsonl", "dimension": "match", "scale_min": 0.0, "scale_max": 1.0,
            "objective": "agreement", "threshold": 0.9, "max_iter": 2, "seed": 1, "per_cluster": 1,
            "train": train.iter().map(|id| serde_json::json!({"id": id, "cluster": 0})).collect::<Vec<_>>(),
            "holdout": ["h"], "models": {},
            "prompt": {"task": "t", "rubric": "", "guidance": guidance, "examples": ""}, "review": false
        }))
        .unwrap()
    }

    #[test]
    fn a_changed_panel_or_data_file_is_named() {
        let logged = started(&["a", "b"], "");
        assert_eq!(differs(&logged, &started(&["a", "b"], "")), None);
        let data = differs(&logged, &started(&["a", "c"], "")).unwrap();
        assert!(data.contains("the labelled examples changed") && data.contains("`train`"), "{data}");
        let panel = differs(&logged, &started(&["a", "b"], "Be lenient.")).unwrap();
        assert!(panel.contains("judge text") && panel.contains("`prompt`"), "{panel}");
    }

    #[test]
    fn a_missing_run_is_named() {
        let err = log_path("/nonexistent/optimize-x").unwrap_err().to_string();
        assert!(err.contains("/nonexistent/optimize-x") && err.contains("no optimisation log"), "{err}");
    }
}
