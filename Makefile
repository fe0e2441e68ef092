# drivesim: `make run` runs the demo campaign, `make test` runs the test suite.
# Both create .venv and install everything a fresh machine lacks.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test setup system-deps lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	touch $(STAMP)

system-deps:
	@bash scripts/ensure_chromium.sh

setup: $(STAMP)

run: setup
	$(BIN)/drivesim run

test: setup system-deps
	$(BIN)/ruff check drivesim tests benchmarks
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check drivesim tests benchmarks
	$(BIN)/ruff format --check drivesim tests benchmarks

clean:
	rm -rf $(VENV) runs artifacts .pytest_cache
