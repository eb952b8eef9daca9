# moot: common tasks. The embedded model (llama.cpp) needs cmake and libclang
# to build; `make deps` installs them with apt-get when they are missing.

CARGO ?= cargo
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)

.PHONY: deps build run test model bench

# Build tools for llama.cpp: cmake compiles it, libclang generates its Rust bindings.
deps:
	@missing=""; \
	command -v cmake >/dev/null 2>&1 || missing="$$missing cmake"; \
	{ ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || ldconfig -p 2>/dev/null | grep -q libclang; } \
		|| missing="$$missing libclang-dev"; \
	if [ -n "$$missing" ]; then \
		if ! command -v apt-get >/dev/null 2>&1; then \
			echo "The embedded model needs:$$missing (cmake builds llama.cpp, libclang generates its bindings)."; \
			echo "Install them with your package manager, or build without it: cargo build --no-default-features"; \
			exit 1; \
		fi; \
		echo "Installing$$missing with apt-get: cmake builds llama.cpp, libclang generates its Rust bindings."; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y $$missing; \
	else \
		echo "Build dependencies present (cmake, libclang)."; \
	fi

build: deps
	$(CARGO) build --release

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
