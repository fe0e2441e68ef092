"""The exact fallback over several devices: each device simulates its own flagged scenarios
(core.rollout.rollout_batch splits the batch by device), and the metrics equal the plain
one-device engine's bit for bit. Real forced CPU devices (8, from tests/conftest.py)."""

from __future__ import annotations

import jax
import numpy as np

from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import SimConfig
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

SIM = SimConfig(
    num_steps=20, search=SearchPlan(bend_capacity=0)
)  # merge ramps in one group: most merges fall back


def test_flagged_scenarios_on_every_device_match_one_device(fma_free, assert_bitwise):
    cfg = FamilyConfig(num_agents=16, steps=20)
    families = ["merge" if i % 3 else "highway" for i in range(16)]  # flagged rows on most devices
    batch = pad_and_stack([generate(f, i, cfg).scenario for i, f in enumerate(families)], num_agents=16)
    single = jax.tree_util.tree_map(np.asarray, simulate(batch, idm_policy(), SIM))
    flagged = np.flatnonzero(single.window_overflow)
    assert len(set(flagged // 2)) >= 5, f"flagged rows {flagged} must fall on several of 8 devices"
    got = Executor(ExecutorConfig(devices=8), SIM).simulate(batch, idm_policy())
    assert_bitwise(got, single)
