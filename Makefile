# drivesim: `make run` runs the demo campaign, `make test` runs lint, format check, type check
# and the test suite. Both create .venv and install everything a fresh machine lacks, at the
# versions pinned in constraints.txt (see docs/development.md). `make docs` builds the docs site
# into site/ (strict: a broken link or reference fails it).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

CHECKED := drivesim tests benchmarks
# The suite runs in pytest-xdist worker processes, a test module per worker at a time (its
# module fixtures, such as a Ray cluster or a reference campaign, are built once): one per
# core, at most 4. TEST_WORKERS=0 runs it in this process.
TEST_WORKERS ?= auto

.PHONY: run test setup system-deps lint typecheck docs bench clean

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "drivesim needs Python >= 3.11 (set PYTHON=...)")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt -e ".[dev]"
	touch $(STAMP)

system-deps:
	@bash scripts/ensure_chromium.sh

setup: $(STAMP)

run: setup
	$(BIN)/drivesim run

test: setup system-deps lint typecheck docs
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --maxprocesses 4 --dist loadscope --durations 25

lint: setup
	$(BIN)/ruff check $(CHECKED)
	$(BIN)/ruff format --check $(CHECKED)

typecheck: setup
	$(BIN)/mypy

# MkDocs (Material, mkdocstrings, mkdocs-click): every warning fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) runs artifacts site .pytest_cache .mypy_cache
