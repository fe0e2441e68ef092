"""Fixtures of the report tests: campaign directories (see report_fixtures.py) and chromium."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from report_fixtures import HOSTILE_DIR, make_campaign, write_bench


@pytest.fixture(scope="session")
def campaign_dir(tmp_path_factory) -> Path:
    """A full campaign directory (shared; tests must not modify it)."""
    return make_campaign(tmp_path_factory.mktemp("campaign") / HOSTILE_DIR)


@pytest.fixture
def fresh_campaign(tmp_path) -> Path:
    """A campaign directory a test may change."""
    return make_campaign(tmp_path / "camp")


@pytest.fixture
def bench_only_dir(tmp_path) -> Path:
    """A bench/scale output directory without results or ledger."""
    root = tmp_path / "scaleout"
    root.mkdir()
    write_bench(root)
    return root


@pytest.fixture(scope="session")
def chromium() -> str:
    """Path of a chromium binary, or skip saying why."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip(
        "chromium not found on PATH (make test installs Debian's chromium via "
        "scripts/ensure_chromium.sh); browser tests cannot run here"
    )
