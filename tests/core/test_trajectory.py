"""simulate_trajectory: one scan over the batch with the batch's searches fixed in the program
gives what simulate and a vmap of rollout_trajectory give, bit for bit."""

from __future__ import annotations

import jax
import pytest

from drivesim.core import switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.search_choice import of_scenarios
from drivesim.core.trajectory import rollout_trajectory, simulate_trajectory
from drivesim.core.types import SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

STEPS = 12


@pytest.mark.parametrize("name", ["merge", "intersection_turns"])
def test_trajectories_equal_simulate_and_one_scenario_scans(name, assert_bitwise):
    family = FamilyConfig(num_agents=16, steps=STEPS)
    batch = pad_and_stack([generate(name, i, family).scenario for i in range(6)], num_agents=16)
    config, policy = SimConfig(num_steps=STEPS), idm_policy()
    metrics, trajectory = jax.device_get(simulate_trajectory(batch, policy, config))
    assert_bitwise(metrics, jax.device_get(simulate(batch, policy, config)))
    resolved = of_scenarios(config, batch)  # the searches and switches simulate_trajectory takes
    on = switches.of_batch(batch, config)
    one = jax.jit(jax.vmap(lambda sc: rollout_trajectory(sc, policy, resolved, zone_on=on)))
    want = jax.device_get(one(batch))
    proven = ~metrics.window_overflow  # flagged rows come from the exact pass in both
    assert proven.any()
    rows = lambda tree: jax.tree_util.tree_map(lambda a: a[proven], tree)  # noqa: E731
    assert_bitwise(rows(metrics), rows(want[0]))
    assert_bitwise(rows(trajectory), rows(want[1]))
