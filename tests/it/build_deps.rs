//! `scripts/build-deps.sh check --root DIR` on fake directory layouts: it
//! must find the libclang that bindgen loads, and never take Clang's C++
//! interface library (`libclang-cpp*`) for it; with `--vulkan` or `--cuda`,
//! it must say what a GPU backend lacks.

use std::path::Path;
use std::process::Command;

/// Runs `check` with `flags` under `root`: its exit code, the missing
/// packages (stdout, a line each) and what it said on stderr.
fn check_with(root: &Path, flags: &[&str]) -> (i32, Vec<String>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/build-deps.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg("check")
        .args(flags)
        .arg("--root")
        .arg(root)
        .env_remove("LIBCLANG_PATH")
        .output()
        .expect("bash runs");
    let missing = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
    (out.status.code().unwrap_or(-1), missing, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Runs the check under `root`; returns its exit code and the missing packages.
fn check(root: &Path) -> (i32, Vec<String>) {
    let (code, missing, _) = check_with(root, &[]);
    (code, missing)
}

/// A fake root with the given files (empty) and an executable cmake.
fn layout(files: &[&str], cmake: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in files {
        let path = dir.path().join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, b"").unwrap();
    }
    if cmake {
        program(&dir.path().join("usr/bin/cmake"));
    }
    dir
}

/// An executable shell script at `path`, its folders made.
fn program(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, b"#!/bin/sh\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn only_the_cpp_interface_library_means_libclang_is_missing() {
    let root = layout(&["usr/lib/llvm-14/lib/libclang-cpp.so.14"], true);
    assert_eq!(check(root.path()), (1, vec!["libclang-dev".to_string()]));
}

#[test]
fn a_versioned_libclang_is_found() {
    let root = layout(&["usr/lib/llvm-14/lib/libclang-cpp.so.14", "usr/lib/llvm-14/lib/libclang-14.so.1"], true);
    assert_eq!(check(root.path()), (0, vec![]));
    let root = layout(&["usr/lib/x86_64-linux-gnu/libclang.so.1"], true);
    assert_eq!(check(root.path()), (0, vec![]));
    let root = layout(&["usr/lib/llvm-16/lib/libclang.so"], true);
    assert_eq!(check(root.path()), (0, vec![]));
}

#[test]
fn an_empty_machine_misses_both() {
    let root = layout(&[], false);
    assert_eq!(check(root.path()), (1, vec!["cmake".to_string(), "libclang-dev".to_string()]));
}

#[test]
fn cmake_is_missing_without_its_program() {
    let root = layout(&["usr/lib/llvm-14/lib/libclang-14.so.1"], false);
    assert_eq!(check(root.path()), (1, vec!["cmake".to_string()]));
}

#[test]
fn vulkan_adds_its_three_packages_only_when_asked() {
    let run = |root: &Path| {
        let (code, missing, _) = check_with(root, &["--vulkan"]);
        (code, missing)
    };
    let root = layout(&["usr/lib/llvm-16/lib/libclang.so"], true);
    assert_eq!(check(root.path()), (0, vec![]), "not asked");
    assert_eq!(run(root.path()), (1, ["libvulkan-dev", "glslc", "spirv-headers"].map(String::from).to_vec()));
    let root = layout(
        &[
            "usr/lib/llvm-16/lib/libclang.so",
            "usr/include/vulkan/vulkan.hpp",
            "usr/bin/glslc",
            "usr/include/spirv/unified1/spirv.hpp",
        ],
        true,
    );
    assert_eq!(run(root.path()), (0, vec![]));
}

#[test]
fn vulkan_headers_older_than_llama_cpp_needs_are_reported_before_a_build() {
    let with_headers = |version: u32| {
        let root = layout(
            &[
                "usr/lib/llvm-16/lib/libclang.so",
                "usr/include/vulkan/vulkan.hpp",
                "usr/bin/glslc",
                "usr/include/spirv/unified1/spirv.hpp",
            ],
            true,
        );
        std::fs::write(
            root.path().join("usr/include/vulkan/vulkan_core.h"),
            format!("// Version of this file\n#define VK_HEADER_VERSION {version}\n"),
        )
        .unwrap();
        let (code, _, said) = check_with(root.path(), &["--vulkan"]);
        (code, said)
    };
    let (code, said) = with_headers(239);
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("1.3.239") && said.contains("1.3.272 or newer"), "{said}");
    assert_eq!(with_headers(272), (0, String::new()));
    assert_eq!(with_headers(309), (0, String::new()));
}

#[test]
fn cuda_needs_the_toolkit_and_its_static_cublas() {
    let run = |root: &Path| {
        let (code, _, said) = check_with(root, &["--cuda"]);
        (code, said)
    };
    let root = layout(&["usr/lib/llvm-16/lib/libclang.so"], true);
    assert_eq!(check(root.path()), (0, vec![]), "not asked");
    let (code, said) = run(root.path());
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("no CUDA toolkit found"), "{said}");
    program(&root.path().join("usr/local/cuda-13.0/bin/nvcc"));
    let (code, said) = run(root.path());
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("cuda-13.0 has no static cuBLAS (libcublas_static.a)"), "{said}");
    let lib = root.path().join("usr/local/cuda-13.0/targets/x86_64-linux/lib/libcublas_static.a");
    std::fs::create_dir_all(lib.parent().unwrap()).unwrap();
    std::fs::write(&lib, b"").unwrap();
    assert_eq!(run(root.path()), (0, String::new()));
}
