"""Shared fixtures of the parallel tests: two small fixed batches and their reference metrics
from the plain jitted engine on one device (no executor).

The programs must be FMA-free for one device to agree bitwise with many (see
drivesim.parallel.determinism): the flag is added to XLA_FLAGS here, before JAX starts its
backend (tests/conftest.py should add it too, so a full-suite run cannot start JAX first)."""

from __future__ import annotations

from drivesim.parallel import determinism

FMA_FREE = determinism.enable()  # before anything below touches a device

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from drivesim.core.policies import idm_policy  # noqa: E402
from drivesim.core.rollout import simulate  # noqa: E402
from drivesim.core.types import SimConfig  # noqa: E402
from drivesim.parallel.worker import CampaignSpec, host_batch  # noqa: E402
from drivesim.scenarios.batching import pad_and_stack  # noqa: E402
from drivesim.scenarios.synthetic import FamilyConfig, highway  # noqa: E402

SPEC = CampaignSpec(count=13, agents=8, steps=10)  # 13: divides none of 2, 3, 8
SIM = SimConfig(num_steps=SPEC.steps)
# A second batch: other ids, seed, agent count and length (11 scenarios: divides none of 2, 3, 8).
FAMILY_B = FamilyConfig(num_agents=5, steps=16, seed=3)
SIM_B = SimConfig(num_steps=FAMILY_B.steps)


@pytest.fixture(scope="session")
def spec() -> CampaignSpec:
    return SPEC


@pytest.fixture(scope="session")
def sim() -> SimConfig:
    return SIM


@pytest.fixture(scope="session")
def sim_b() -> SimConfig:
    return SIM_B


@pytest.fixture(scope="session")
def fma_free() -> None:
    """Fails (never skips) when this process's CPU programs may use FMA contraction."""
    assert FMA_FREE and determinism.active(), (
        f"JAX started before {determinism.FLAG} reached XLA_FLAGS; add it in tests/conftest.py"
    )


@pytest.fixture(scope="session")
def batch():
    """13 highway scenarios (ids 0..12), 8 agents, host NumPy leaves (13, ...)."""
    return host_batch(range(SPEC.count), SPEC)


@pytest.fixture(scope="session")
def batch_b():
    """11 highway scenarios (ids 50..60, seed 3), 5 agents, 16 steps."""
    return pad_and_stack([highway(i, FAMILY_B).scenario for i in range(50, 61)], num_agents=5)


def _plain(batch, sim):
    return jax.tree_util.tree_map(np.asarray, simulate(batch, idm_policy(), sim))


@pytest.fixture(scope="session")
def single_device_reference(batch):
    """Per-scenario metrics (13,) of the plain jitted engine on one device, no executor."""
    return _plain(batch, SIM)


@pytest.fixture(scope="session")
def single_device_reference_b(batch_b):
    """Per-scenario metrics (11,) of batch_b by the plain jitted engine on one device."""
    return _plain(batch_b, SIM_B)


@pytest.fixture(scope="session")
def reference(batch):
    """Per-scenario metrics (13,) of the batch through the executor on 2 devices (equal to
    single_device_reference bit for bit: checked in test_executor)."""
    from drivesim.parallel.executor import Executor, ExecutorConfig

    return Executor(ExecutorConfig(devices=2), SIM).simulate(batch, idm_policy())
