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
# missing); CUDA needs the CUDA toolkit, which you install yourself.
build-vulkan:
	@bash scripts/build-deps.sh install --vulkan
	$(CARGO) build --release --features vulkan

build-cuda: deps
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
