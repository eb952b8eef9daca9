#!/usr/bin/env bash
# What the embedded model's build (llama.cpp through llama-cpp-sys-2) needs
# from the system: cmake compiles llama.cpp, and libclang lets bindgen
# generate its Rust bindings.
#
#   scripts/build-deps.sh check [--root DIR] [--vulkan | --cuda]   print the missing Debian packages, one a line;
#                                                                 exit 0 when none is missing, 1 otherwise
#   scripts/build-deps.sh install [--vulkan | --cuda]              install what is missing with apt-get, saying so
#
# --vulkan adds what llama.cpp's Vulkan backend (`--features vulkan`) needs:
# the Vulkan headers and loader (libvulkan-dev), the shader compiler glslc
# and the SPIR-V headers (spirv-headers). The headers must be 1.3.272 or
# newer (VK_EXT_layer_settings, which llama.cpp's Vulkan backend uses):
# older ones (Debian 12 ships 1.3.239) fail the build after minutes of
# compiling, so they are reported here instead (exit 3: no package of
# this system's can help).
#
# --cuda checks for what llama.cpp's CUDA backend (`--features cuda`) needs
# and no Debian package of this script's installs: NVIDIA's CUDA toolkit,
# its compiler nvcc (in $CUDA_PATH/bin, /usr/local/cuda/bin, /usr/bin or on
# PATH) and its static cuBLAS (libcublas_static.a, which llama-cpp-sys-2
# links on Linux, unless LLAMA_BUILD_SHARED_LIBS=1 asks for shared
# libraries). Without them it says what is missing (exit 3) rather than
# failing deep in llama.cpp's build.
#
# libclang is looked for the way bindgen (clang-sys) looks for it: a file named
# libclang.so, libclang-<N>.so, libclang.so.<N> or libclang-<N>.so.<N> in the
# directories it searches (LIBCLANG_PATH first). libclang-cpp* is a different
# library (Clang's C++ interface) that bindgen cannot load, so it never counts.
# --root DIR looks under DIR instead of / (used by the tests on fake layouts).
set -euo pipefail

root=""
vulkan=""
cuda=""
cmd="${1:-check}"
shift || true
while [ $# -gt 0 ]; do
	case "$1" in
		--root) root="${2%/}"; shift 2 ;;
		--vulkan) vulkan=1; shift ;;
		--cuda) cuda=1; shift ;;
		*) echo "build-deps.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

libclang_dirs() {
	if [ -z "$root" ] && [ -n "${LIBCLANG_PATH:-}" ]; then
		printf '%s\n' "$LIBCLANG_PATH"
	fi
	local d
	for d in "$root"/usr/lib/llvm-*/lib "$root"/usr/lib64/llvm-*/lib "$root"/usr/local/lib \
		"$root"/usr/lib "$root"/usr/lib64 "$root"/usr/lib/*-linux-gnu "$root"/lib "$root"/lib64 \
		"$root"/lib/*-linux-gnu; do
		[ -d "$d" ] && printf '%s\n' "$d"
	done
	return 0
}

has_libclang() {
	local d f name
	while IFS= read -r d; do
		for f in "$d"/libclang*.so*; do
			[ -e "$f" ] || continue
			name="${f##*/}"
			case "$name" in
				libclang.so | libclang.so.[0-9]*) return 0 ;;
				libclang-[0-9]*.so | libclang-[0-9]*.so.[0-9]*) return 0 ;;
			esac
		done
	done < <(libclang_dirs)
	return 1
}

has_cmake() {
	if [ -z "$root" ]; then
		command -v cmake >/dev/null 2>&1
	else
		local d
		for d in usr/bin usr/local/bin bin; do
			[ -x "$root/$d/cmake" ] && return 0
		done
		return 1
	fi
}

has_file() {
	local f
	for f in "$@"; do
		[ -e "$root$f" ] && return 0
	done
	return 1
}

# The Vulkan headers' VK_HEADER_VERSION, or nothing without the headers.
vulkan_header_version() {
	local h="$root/usr/include/vulkan/vulkan_core.h"
	[ -f "$h" ] || return 0
	sed -n 's/^#define VK_HEADER_VERSION \([0-9][0-9]*\).*/\1/p' "$h" | head -n 1
}

VULKAN_HEADERS_NEEDED=272

# Says so on stderr and fails when the Vulkan headers are too old.
vulkan_headers_new_enough() {
	[ -n "$vulkan" ] || return 0
	local v
	v="$(vulkan_header_version)"
	if [ -n "$v" ] && [ "$v" -lt "$VULKAN_HEADERS_NEEDED" ]; then
		echo "build-deps.sh: the Vulkan headers here are version 1.3.$v; llama.cpp's Vulkan backend needs 1.3.$VULKAN_HEADERS_NEEDED or newer (VK_EXT_layer_settings). This system's packages are too old for it (Debian 12 ships 1.3.239; Debian 13 and Ubuntu 24.04 ship newer ones): build with --features cuda, or without a GPU backend." >&2
		return 1
	fi
	return 0
}

# Where a CUDA toolkit may be: one folder a line, each with bin/nvcc.
cuda_dirs() {
	if [ -z "$root" ]; then
		[ -n "${CUDA_PATH:-}" ] && printf '%s\n' "${CUDA_PATH%/}"
		local nvcc
		nvcc="$(command -v nvcc 2>/dev/null || true)"
		[ -n "$nvcc" ] && printf '%s\n' "$(dirname "$(dirname "$(readlink -f "$nvcc")")")"
	fi
	local d
	for d in "$root"/usr/local/cuda "$root"/usr/local/cuda-* "$root"/opt/cuda "$root"/usr; do
		[ -x "$d/bin/nvcc" ] && printf '%s\n' "$d"
	done
	return 0
}

# Says so on stderr and fails when --cuda is asked and the toolkit, or its
# static cuBLAS, is missing.
cuda_toolkit_found() {
	[ -n "$cuda" ] || return 0
	local d l first=""
	while IFS= read -r d; do
		[ -x "$d/bin/nvcc" ] || continue
		first="${first:-$d}"
		# A build against llama.cpp's and CUDA's shared libraries links no static cuBLAS.
		[ -z "$root" ] && [ "${LLAMA_BUILD_SHARED_LIBS:-}" = 1 ] && return 0
		for l in "$d"/lib64 "$d"/lib "$d"/targets/*/lib "$d"/lib/*-linux-gnu; do
			[ -e "$l/libcublas_static.a" ] && return 0
		done
	done < <(cuda_dirs)
	if [ -z "$first" ]; then
		echo "build-deps.sh: no CUDA toolkit found (nvcc in \$CUDA_PATH/bin, /usr/local/cuda/bin, /usr/bin or on PATH). The cuda feature compiles llama.cpp's CUDA kernels with it and links its cuBLAS: install NVIDIA's CUDA toolkit (docs/local-model.md, GPU offload), or build without a GPU backend." >&2
	else
		echo "build-deps.sh: the CUDA toolkit in $first has no static cuBLAS (libcublas_static.a), which the cuda feature links: install the toolkit's cuBLAS development files, or build with LLAMA_BUILD_SHARED_LIBS=1 against the shared ones (docs/local-model.md, GPU offload)." >&2
	fi
	return 1
}

missing() {
	has_cmake || echo cmake
	has_libclang || echo libclang-dev
	if [ -n "$vulkan" ]; then
		has_file /usr/include/vulkan/vulkan.hpp || echo libvulkan-dev
		has_file /usr/bin/glslc /usr/local/bin/glslc || echo glslc
		has_file /usr/include/spirv/unified1/spirv.hpp || echo spirv-headers
	fi
	return 0
}

case "$cmd" in
	check)
		out="$(missing)"
		if [ -n "$out" ]; then
			printf '%s\n' "$out"
			exit 1
		fi
		vulkan_headers_new_enough || exit 3
		cuda_toolkit_found || exit 3
		exit 0
		;;
	install)
		out="$(missing | tr '\n' ' ')"
		out="${out% }"
		if [ -z "$out" ]; then
			vulkan_headers_new_enough || exit 3
			cuda_toolkit_found || exit 3
			echo "Build dependencies present (cmake, libclang${vulkan:+, Vulkan})."
			exit 0
		fi
		if ! command -v apt-get >/dev/null 2>&1; then
			echo "The embedded model needs: $out (cmake builds llama.cpp, libclang generates its bindings)." >&2
			echo "Install them with your package manager, or build without it: cargo build --no-default-features" >&2
			exit 1
		fi
		sudo=""
		[ "$(id -u)" -eq 0 ] || sudo="sudo"
		echo "Installing $out with apt-get: cmake builds llama.cpp, libclang generates its Rust bindings${vulkan:+, the Vulkan packages build its GPU backend}."
		# shellcheck disable=SC2086
		$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $out
		still="$(missing | tr '\n' ' ')"
		if [ -n "$still" ]; then
			echo "Still missing after apt-get: $still" >&2
			exit 1
		fi
		vulkan_headers_new_enough || exit 3
		cuda_toolkit_found || exit 3
		;;
	*)
		echo "usage: scripts/build-deps.sh check [--root DIR] [--vulkan | --cuda] | install [--vulkan | --cuda]" >&2
		exit 2
		;;
esac
