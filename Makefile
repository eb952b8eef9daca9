# moot: common tasks. The embedded model (llama.cpp) needs cmake and libclang
# to build; `make deps` installs them with apt-get when they are missing.

CARGO ?= cargo
.PHONY: deps build build-vulkan build-cuda run test model bench

# Build tools for llama.cpp: cmake compiles it, libclang generates its Rust
# bindings. scripts/build-deps.sh says what is missing and installs it.
deps:
	@bash scripts/build-deps.sh install

build: deps
	$(CARGO) build --release

# The model's layers on a GPU (docs/local-model.md, GPU offload): Vulkan
# needs libvulkan-dev, glslc and spirv-headers (installed with apt-get when
# missing); CUDA needs the CUDA toolkit, which you install yourself (the
# script says when it is missing).
build-vulkan:
	@bash scripts/build-deps.sh install --vulkan
	$(CARGO) build --release --features vulkan

build-cuda:
	@bash scripts/build-deps.sh install --cuda
	$(CARGO) build --release --features cuda

# Runs the bundled sample panel; the default model is fetched on first use.
run: deps
	$(CARGO) run --release -- run

# The tests fetch the tiny model (smollm2-135m, ~98 MB) into the model cache
# when it is missing; set MOOT_SKIP_LOCAL_MODEL=1 to skip those tests offline.
test: deps
	$(CARGO) test

# Fetches the default model (~491 MB) into the model cache.
model: deps
	$(CARGO) run --release -- model pull

bench: deps
	$(CARGO) bench --bench local

# A headless Chromium for the browser tests of the HTML pages
# (tests/it/html_export.rs skips them, saying so, without one): Debian's
# package, about 100 MB more. Not a dependency of `test`.
.PHONY: browser
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
		|| command -v google-chrome >/dev/null 2>&1; then \
		echo "browser: a Chromium is already installed"; \
	else \
		echo "browser: installing chromium with apt-get"; \
		if [ "$$(id -u)" = 0 ]; then sudo=""; else sudo="sudo"; fi; \
		$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y --no-install-recommends chromium; \
	fi
