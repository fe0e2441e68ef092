"""The exact fallback compiled apart (drivesim.core.exact_rows, drivesim.parallel.exact_pass):
the same bits as the one program that holds both passes, for ``simulate``, the executor, a
policy sweep and the device aggregate; a batch that flags nothing compiles no fallback."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.core.rollout import rollout_batch, simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.switches import of_batch
from drivesim.core.types import SimConfig
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

SIM = SimConfig(
    num_steps=20, search=SearchPlan(bend_capacity=0)
)  # merge ramps in one group: most merges fall back
ONE_PROGRAM = jax.jit(rollout_batch, static_argnames=("config", "devices", "searches", "exact"))
POLICIES = [idm_policy(), idm_policy(T=0.5)]


def _batch(families, slots=16):
    cfg = FamilyConfig(num_agents=16, steps=20)
    return pad_and_stack([generate(f, i, cfg).scenario for i, f in enumerate(families)], num_agents=slots)


@pytest.fixture(scope="module")
def mixed():
    return _batch(["merge" if i % 3 else "highway" for i in range(12)])


def _one_program(batch, policy):
    device = jax.device_put(batch)
    out = ONE_PROGRAM(device, policy, config=SIM, searches=of_batch(device, SIM))
    return jax.tree_util.tree_map(np.asarray, out)


def test_simulate_equals_the_one_program(mixed, fma_free, assert_bitwise):
    want = _one_program(mixed, POLICIES[0])
    flagged = np.flatnonzero(want.window_overflow)
    assert 0 < flagged.size < 12, f"the batch must mix flagged and proven rows: {flagged}"
    assert_bitwise(jax.tree_util.tree_map(np.asarray, simulate(mixed, POLICIES[0], SIM)), want)


def test_executor_sweep_and_aggregate_equal_the_one_program(mixed, fma_free, assert_bitwise):
    executor = Executor(ExecutorConfig(devices=4, chunk=2), SIM)  # 2 dispatches of 4 x 2 rows
    result = executor.run_sweep(executor.put(mixed), POLICIES)
    got = executor.fetch(result)
    for p, policy in enumerate(POLICIES):
        assert_bitwise(jax.tree_util.tree_map(lambda leaf, p=p: leaf[p], got), _one_program(mixed, policy))
    agg = executor.aggregate(result)
    np.testing.assert_allclose(agg["mean_progress_m"], got.progress_m.mean(axis=1), rtol=1e-6)
    np.testing.assert_array_equal(agg["min_ttc_s"], got.min_ttc_s.min(axis=1))


def test_the_fallback_compiles_only_for_a_batch_that_needs_it():
    executor = Executor(ExecutorConfig(devices=2), SIM)
    proven = _batch(["highway"] * 4, slots=20)  # shapes no other test compiled
    executor.fetch(executor.run(executor.put(proven), POLICIES[0]))
    assert executor.exact_pass.compile_seconds == 0.0
    mixed = _batch(["merge", "highway", "merge", "merge"], slots=20)
    executor.fetch(executor.run(executor.put(mixed), POLICIES[0]))
    first = executor.exact_pass.compile_seconds
    assert first > 0.0
    executor.fetch(executor.run(executor.put(mixed), POLICIES[1]))
    assert executor.exact_pass.compile_seconds == first  # same shapes: compiled once
