//! `scripts/build-llama-server.sh --dry-run` on fake cargo registries: it
//! must find the llama.cpp source of the llama-cpp-sys-2 version moot
//! locks, take the server's files from elsewhere only when that source
//! lacks them, and say what to do when the source is not there.

use std::path::Path;
use std::process::Command;

/// The llama-cpp-sys-2 version in Cargo.lock.
fn locked_version() -> String {
    let lock = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock")).unwrap();
    let at = lock.find("name = \"llama-cpp-sys-2\"").expect("Cargo.lock names llama-cpp-sys-2");
    let line = lock[at..].lines().nth(1).unwrap();
    line.trim_start_matches("version = ").trim_matches('"').to_string()
}

/// A cargo home whose registry holds the locked crate's llama.cpp, with
/// `files` under it.
fn cargo_home(files: &[&str]) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    let src = home.path().join(format!("registry/src/index.example/llama-cpp-sys-2-{}/llama.cpp", locked_version()));
    for f in files {
        let path = src.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"").unwrap();
    }
    home
}

fn dry_run(home: &Path, build: &Path) -> (i32, String, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-llama-server.sh");
    let out = Command::new("bash")
        .arg(script)
        .args(["--dry-run", "--jobs", "2", "--build-dir"])
        .arg(build)
        .env("CARGO_HOME", home)
        .env_remove("LLAMA_SERVER_SOURCE")
        .output()
        .expect("bash runs");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn the_crates_source_without_the_server_gets_it_laid_over_a_copy() {
    let home = cargo_home(&["CMakeLists.txt"]);
    let build = home.path().join("build");
    let (code, out, err) = dry_run(home.path(), &build);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("llama-cpp-sys-2 {}", locked_version())), "{out}");
    assert!(out.contains("pip download --quiet --no-deps --no-binary :all: llama-cpp-python=="), "{out}");
    assert!(out.contains("+ cp -an "), "the crate's files win: {out}");
    let cmake = out.lines().find(|l| l.contains(" -S ")).expect("a configure step");
    assert!(cmake.contains(&format!("-S {}", build.join("src").display())), "{cmake}");
    for flag in ["-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_CURL=OFF", "-DGGML_NATIVE=ON", "-DLLAMA_USE_PREBUILT_UI=OFF"] {
        assert!(cmake.contains(flag), "{flag}: {cmake}");
    }
    assert!(out.contains("--target llama-server -j 2"), "{out}");
    assert_eq!(out.lines().last(), Some(build.join("out/bin/llama-server").to_str().unwrap()), "the binary last");
    assert!(!build.exists(), "a dry run makes nothing");
}

#[test]
fn a_source_with_the_server_is_built_as_it_is() {
    let home = cargo_home(&["CMakeLists.txt", "tools/server/server.cpp"]);
    let (code, out, err) = dry_run(home.path(), &home.path().join("build"));
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("pip download") && !out.contains("cp -a"), "{out}");
    assert!(out.contains(&format!("llama-cpp-sys-2-{}/llama.cpp -B", locked_version())), "{out}");
}

#[test]
fn a_missing_source_says_to_fetch_it() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = dry_run(home.path(), &home.path().join("build"));
    assert_eq!(code, 1, "{out}");
    assert!(err.contains("is not under") && err.contains("cargo fetch"), "{err}");
}
