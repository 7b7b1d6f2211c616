# The one task runner. The README and .ci/run call these targets.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
LOGS ?= sample_logs

.PHONY: setup run test lint bench clean

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

## agentcost analyze on the bundled sample logs (or LOGS=path)
run: setup
	$(BIN)/agentcost analyze $(LOGS)

## lint, type-check and the whole test suite (notebooks included)
test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/pytest

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/mypy

## benchmarks against ccusage (see benchmarks/README.md)
bench: setup
	$(PY) -m benchmarks.run --profile

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis
