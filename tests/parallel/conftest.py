"""Shared fixtures of the parallel tests: a small fixed highway batch and its reference
metrics (on 2 devices; the plain one-device engine is compared separately, see
test_executor.test_one_device_matches_many)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.types import SimConfig
from drivesim.parallel.worker import CampaignSpec, host_batch

SPEC = CampaignSpec(count=13, agents=8, steps=10)  # 13: divides none of 2, 3, 8
SIM = SimConfig(num_steps=SPEC.steps)


@pytest.fixture(scope="session")
def spec() -> CampaignSpec:
    return SPEC


@pytest.fixture(scope="session")
def sim() -> SimConfig:
    return SIM


@pytest.fixture(scope="session")
def batch():
    """13 highway scenarios (ids 0..12), 8 agents, host NumPy leaves (13, ...)."""
    return host_batch(range(SPEC.count), SPEC)


@pytest.fixture(scope="session")
def single_device_reference(batch):
    """Per-scenario metrics (13,) of the plain jitted engine on one device, no executor."""
    return jax.tree_util.tree_map(np.asarray, simulate(batch, idm_policy(), SIM))


@pytest.fixture(scope="session")
def reference(batch):
    """Per-scenario metrics (13,) of the batch through the executor on 2 devices."""
    from drivesim.parallel.executor import Executor, ExecutorConfig

    return Executor(ExecutorConfig(devices=2), SIM).simulate(batch, idm_policy())


def _assert_bitwise(got, want) -> None:
    """Every metric field identical, bit for bit (NaN where NaN)."""
    for name in want.__dataclass_fields__:
        a, b = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert a.shape == b.shape, name
        assert a.dtype == b.dtype, name
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), f"{name}: {a} != {b}"


@pytest.fixture(scope="session")
def assert_bitwise():
    """assert_bitwise(got, want): every RolloutMetrics field identical bit for bit."""
    return _assert_bitwise
