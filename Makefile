# The one task runner. The README and .ci/run call these targets.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
LOGS ?= sample_logs
# The native engine (native/, Rust) builds with cargo; rustup puts it here.
export PATH := $(HOME)/.cargo/bin:$(PATH)
SCANNER := Cargo.toml Cargo.lock $(shell find native -name "*.rs")
# Seconds of the scanner's bounded fuzz run in `make test` (CI sets more).
FUZZ_SECONDS ?= 10

.PHONY: setup run test lint rust-check docs bench wheel clean

setup: $(VENV)/.built

# The editable install builds the extension (release mode, maturin); an edit of the Rust
# sources rebuilds it in place.
$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

$(VENV)/.built: $(VENV)/.installed $(SCANNER)
	@if [ -n "$$(find $(SCANNER) -newer $(VENV)/.installed)" ]; then \
		VIRTUAL_ENV=$(abspath $(VENV)) $(BIN)/maturin develop --release --quiet; fi
	touch $@

## agentcost analyze on the bundled sample logs (or LOGS=path)
run: setup
	$(BIN)/agentcost analyze $(LOGS)

# Chromium, tmux, a JDK and the spark extra: what the whole suite needs beyond the package.
$(VENV)/.test-deps: $(VENV)/.installed .ci/install-test-deps
	bash .ci/install-test-deps $(VENV)
	touch $@

## lint, type-check and the whole test suite (notebooks, browser, terminal and Spark included)
test: setup $(VENV)/.test-deps $(VENV)/.wheel-tools rust-check docs
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	PYSPARK_PYTHON=$(abspath $(PY)) $(BIN)/pytest

## the scanner's own checks: format, clippy (warnings are errors), unit tests, a fuzz run
rust-check:
	cargo fmt --check
	cargo clippy --release --all-targets --features python -- -D warnings
	AGENTCOST_FUZZ_SECONDS=$(FUZZ_SECONDS) cargo test --release -- --nocapture

## the documentation site (mkdocs.yml, docs/) into site/: --strict fails on a broken link or
## anchor, or a page left out of the nav; the commands page is written from the CLI's help
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

## benchmarks against ccusage (see benchmarks/README.md)
bench: setup
	$(PY) -m benchmarks.run --profile
	$(PY) -m benchmarks.agents
	$(PY) -m benchmarks.real_home

# ziglang and auditwheel (the wheel extra): what `make wheel` and its test need beyond dev.
$(VENV)/.wheel-tools: $(VENV)/.installed
	bash .ci/install-extra $(VENV) wheel
	touch $@

## the release files, alone in dist/ (see the README): the sdist, and the wheel built from it,
## manylinux_2_17 (linked with zig; auditwheel shows its tag): .ci/build-dist says how. Not
## maturin's own target/wheels/: it also keeps the editable stub of `make setup`, which pip
## cannot install beside the wheel
wheel: $(VENV)/.wheel-tools
	PATH="$(abspath $(BIN)):$$PATH" bash .ci/build-dist dist

clean:
	rm -rf $(VENV) site .pytest_cache .mypy_cache .ruff_cache .hypothesis target dist analytics/*.so
