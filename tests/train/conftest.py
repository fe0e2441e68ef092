"""Shared tiny training setup: 64 environments x 8 agents, 40-step episodes (CI-sized)."""

from __future__ import annotations

import jax
import pytest

from drivesim.train.config import tiny_config

LEARN_UPDATES = 300


@pytest.fixture(scope="session")
def one_device():
    return jax.devices()[:1]


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory, one_device):
    """One short training run from scratch (LEARN_UPDATES updates on one device)."""
    from drivesim.train.loop import train

    out = tmp_path_factory.mktemp("trained")
    return train(tiny_config(LEARN_UPDATES, anneal_updates=LEARN_UPDATES), out, devices=one_device)
