#!/usr/bin/env bash
# Builds llama.cpp's `llama-server` from the llama.cpp source that moot's
# embedded model is built from (the llama-cpp-sys-2 crate in the cargo
# registry), so an HTTP run and an embedded run use the same inference code.
#
#   scripts/build-llama-server.sh [--build-dir DIR] [--jobs N] [--dry-run]
#
# Prints the binary's path on its last line. --dry-run prints the source it
# found and the commands it would run, and runs none of them.
#
# The crate leaves llama.cpp's tools/server and tools/ui (and
# scripts/ui-assets.cmake, which the server's build runs) out of its
# package. They are taken from the llama.cpp source that the
# llama-cpp-python sdist carries (PyPI, LLAMA_SERVER_SDIST below, fetched
# with pip once into the build dir) and laid over a copy of the crate's
# tree without replacing any file the crate has: llama, ggml, common and
# mtmd stay the crate's own, and two lines of the server that meet a
# changed API (neither on a path moot uses) are patched to the crate's. A
# llama.cpp checkout of your own can be given instead with
# LLAMA_SERVER_SOURCE=DIR (its tools/ and scripts/ are laid over the same
# way). With a crate that ships tools/server, its own tree is built as is.
#
# The build is llama.cpp's default CPU build for this machine (GGML_NATIVE,
# OpenMP), as moot's release build with .cargo/config.toml's target-cpu=native;
# on x86-64 the AMX kernels are left out, as there (see .cargo/config.toml).
# cmake comes from PATH, or from PyPI (`pip install cmake`) when PATH has none.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${LLAMA_SERVER_BUILD_DIR:-$here/target/llama-server}"
jobs="$(nproc 2>/dev/null || echo 2)"
dry=""
while [ $# -gt 0 ]; do
	case "$1" in
		--build-dir) build="${2%/}"; shift 2 ;;
		--jobs | -j) jobs="$2"; shift 2 ;;
		--dry-run) dry=1; shift ;;
		-h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
		*) echo "build-llama-server.sh: unknown argument '$1'" >&2; exit 2 ;;
	esac
done

LLAMA_SERVER_SDIST="${LLAMA_SERVER_SDIST:-llama-cpp-python==0.3.36}"

# The llama-cpp-sys-2 version moot locks.
version="$(awk '/^name = "llama-cpp-sys-2"$/ { getline; gsub(/version = |"/, ""); print; exit }' "$here/Cargo.lock")"
if [ -z "$version" ]; then
	echo "build-llama-server.sh: Cargo.lock names no llama-cpp-sys-2 (is this moot's checkout?)" >&2
	exit 1
fi
registry="${CARGO_HOME:-$HOME/.cargo}/registry/src"
crate_src=""
for d in "$registry"/*/"llama-cpp-sys-2-$version/llama.cpp"; do
	[ -f "$d/CMakeLists.txt" ] && crate_src="$d" && break
done
if [ -z "$crate_src" ]; then
	echo "build-llama-server.sh: llama-cpp-sys-2 $version's source is not under $registry; run \`cargo fetch\` first" >&2
	exit 1
fi
echo "llama.cpp source: $crate_src (llama-cpp-sys-2 $version)"

run() {
	echo "+ $*"
	[ -n "$dry" ] || "$@"
}

if [ -n "$dry" ]; then
	cmake_bin="cmake"
elif command -v cmake >/dev/null 2>&1; then
	cmake_bin="$(command -v cmake)"
else
	echo "No cmake on PATH: installing it from PyPI (pip install cmake) into $build/tools"
	python3 -m pip install --quiet --target "$build/tools" cmake
	cmake_bin="$build/tools/bin/cmake"
	export PYTHONPATH="$build/tools${PYTHONPATH:+:$PYTHONPATH}"
fi

src="$crate_src"
if [ ! -f "$crate_src/tools/server/server.cpp" ]; then
	src="$build/src"
	server_src="${LLAMA_SERVER_SOURCE:-}"
	if [ -z "$server_src" ]; then
		sdist_name="${LLAMA_SERVER_SDIST%%==*}"
		sdist_dir="$build/sdist"
		server_src="$sdist_dir/${sdist_name//-/_}-${LLAMA_SERVER_SDIST##*==}/vendor/llama.cpp"
		if [ ! -f "$server_src/tools/server/server.cpp" ]; then
			echo "The crate leaves out tools/server: taking it from $LLAMA_SERVER_SDIST's sdist (PyPI)"
			run mkdir -p "$sdist_dir"
			run python3 -m pip download --quiet --no-deps --no-binary :all: "$LLAMA_SERVER_SDIST" -d "$sdist_dir"
			if [ -z "$dry" ]; then
				tar -xzf "$sdist_dir"/*.tar.gz -C "$sdist_dir"
			fi
		fi
	fi
	if [ -z "$dry" ] && [ ! -f "$server_src/tools/server/server.cpp" ]; then
		echo "build-llama-server.sh: no tools/server/server.cpp under $server_src" >&2
		exit 1
	fi
	echo "server source: $server_src/tools and scripts (laid over the crate's tree; the crate's files win)"
	run rm -rf "$src"
	run mkdir -p "$src"
	run cp -a "$crate_src/." "$src/"
	run cp -an "$server_src/tools/." "$src/tools/"
	run cp -an "$server_src/scripts/." "$src/scripts/"
	# The two changes of llama.cpp's API between the two trees that the
	# server meets, neither on a path moot uses: mtmd_get_memory_usage
	# (multimodal projectors) returns a struct holding the map, and common
	# has no fs_open_ifstream (reading an MCP config file).
	if [ -n "$dry" ] || grep -q 'backend_mem_usage' "$src/tools/mtmd/mtmd.h"; then
		run sed -i 's/auto mmproj_mem = mtmd_get_memory_usage(mmproj_path.c_str(), mparams);/auto mmproj_mem = mtmd_get_memory_usage(mmproj_path.c_str(), mparams).backend_mem_usage;/' \
			"$src/tools/server/server-context.cpp"
	fi
	if [ -n "$dry" ] || ! grep -q 'fs_open_ifstream' "$src/common/common.h"; then
		run sed -i 's/std::ifstream f = fs_open_ifstream(params.mcp_servers_config, std::ios::in);/std::ifstream f(params.mcp_servers_config, std::ios::in);/' \
			"$src/tools/server/server-mcp.cpp"
	fi
fi

flags=()
case "$(uname -m)" in
	x86_64) flags=(-DCMAKE_C_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
		-DCMAKE_CXX_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16") ;;
esac

run "$cmake_bin" -S "$src" -B "$build/out" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
	-DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DGGML_NATIVE=ON -DGGML_OPENMP=ON \
	-DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
	"${flags[@]}"
run "$cmake_bin" --build "$build/out" --target llama-server -j "$jobs"

bin="$build/out/bin/llama-server"
if [ -z "$dry" ] && [ ! -x "$bin" ]; then
	echo "build-llama-server.sh: the build ended without $bin" >&2
	exit 1
fi
echo "$bin"
