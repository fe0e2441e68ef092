"""Shared campaigns of the pipeline tests (run once per session, small workloads)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pipeline_helpers import small_config  # noqa: E402

from drivesim.pipeline.campaign import run_campaign  # noqa: E402


@pytest.fixture(scope="session")
def campaign(tmp_path_factory):
    """The reference campaign (``small_config()``, uninterrupted): (dir, result, events)."""
    out = tmp_path_factory.mktemp("campaign")
    events = []
    result = run_campaign(small_config(out), progress=events.append)
    return out, result, events
