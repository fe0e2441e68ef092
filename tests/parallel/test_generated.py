"""Id batches: scenarios generated inside the rollout program equal the host path's, bit for
bit, on any device count and backend; a second batch of the same shape does not recompile."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from drivesim.core import traced_cache
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.types import SimConfig
from drivesim.parallel import generated
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.parallel.generated import id_batch
from drivesim.scenarios.batching import BucketKey, stack_bucket
from drivesim.scenarios.synthetic import FamilyConfig, generate_many

CFG = FamilyConfig(num_agents=8, steps=10, seed=4)
SIM = SimConfig(num_steps=10)
IDS = np.arange(20, 33)  # 13 ids: divides none of 2, 3, 8


@pytest.fixture(scope="module")
def host_reference():
    """Metrics (13,) of the same scenarios generated, cut and re-padded on the host, by the
    plain jitted engine on one device."""
    records = generate_many("merge", IDS, CFG)
    batch = stack_bucket(records, BucketKey(8, 8, 4, None))
    return simulate(batch, idm_policy(), SIM)


@pytest.mark.parametrize(("devices", "backend"), [(1, "sharding"), (8, "sharding"), (3, "shard_map")])
def test_generated_equals_host_path(fma_free, assert_bitwise, host_reference, devices, backend):
    executor = Executor(ExecutorConfig(devices=devices, backend=backend), SIM)
    got = executor.simulate(id_batch("merge", IDS, CFG.seed, CFG, 8), idm_policy())
    assert_bitwise(got, host_reference)


def test_chunks_and_padding_rows_change_nothing(fma_free, assert_bitwise, host_reference):
    executor = Executor(ExecutorConfig(devices=2, chunk=2), SIM)
    got = executor.simulate(id_batch("merge", IDS, CFG.seed, CFG, 8, rows=20), idm_policy())
    assert not np.asarray(got.steps)[13:].any()  # padding rows (id -1) are not simulated
    assert_bitwise(jax.tree_util.tree_map(lambda a: np.asarray(a)[:13], got), host_reference)


def test_second_batch_of_same_shape_does_not_recompile(fma_free):
    executor = Executor(ExecutorConfig(devices=8), SIM)
    executor.simulate(id_batch("merge", IDS, CFG.seed, CFG, 8), idm_policy())
    traces = generated.TRACES[("merge", 8)]
    other = executor.simulate(id_batch("merge", IDS + 100, CFG.seed + 1, CFG, 8), idm_policy())
    assert generated.TRACES[("merge", 8)] == traces
    assert np.asarray(other.progress_m).shape == (13,)


def test_a_batch_of_several_families_equals_each_family_alone(fma_free, assert_bitwise, monkeypatch):
    """The planner's merged remainders (pipeline.generated): rows of three families in one
    program at a larger class (16 agents, merge's 4 road points for all, every family's
    searches) give each family's own results, bit for bit."""
    monkeypatch.setenv(traced_cache.ENV, "off")  # traced here (the count below), not read back
    families = ("highway", "merge", "intersection")
    index = np.arange(len(IDS)) % 3
    executor = Executor(ExecutorConfig(devices=1), SIM)
    mixed = executor.simulate(id_batch(families, IDS, CFG.seed, CFG, 16, family_index=index), idm_policy())
    assert generated.TRACES[("highway+merge+intersection", 16)] >= 1
    for k, name in enumerate(families):
        rows = np.flatnonzero(index == k)
        alone = executor.simulate(id_batch(name, IDS[rows], CFG.seed, CFG, 8), idm_policy())
        assert_bitwise(jax.tree_util.tree_map(lambda a, r=rows: np.asarray(a)[r], mixed), alone)
