"""Executor: bitwise-identical per-scenario metrics whatever the split, sweeps, donation,
device failure, chunk="auto". Real forced CPU devices (8, from tests/conftest.py)."""

from __future__ import annotations

import dataclasses
import warnings

import jax
import numpy as np
import pytest
from trace_count import counting_policy

from drivesim.core.policies import IDM, idm_policy, stack_policies
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.parallel.failover import FailureInjector
from drivesim.parallel.mesh import slice_rows

SPLITS = [  # sharding over 1, 2, 3, 8 devices without chunks: see test_every_device_count_...
    ("sharding", 2, 1),
    ("shard_map", 8, None),
    ("pmap", 8, None),
    ("sharding", 8, 1),
    ("shard_map", 3, 2),
]


@pytest.mark.parametrize(("backend", "devices", "chunk"), SPLITS)
def test_metrics_bitwise_identical_across_splits(
    batch, sim, reference, assert_bitwise, backend, devices, chunk
):
    ex = Executor(ExecutorConfig(backend=backend, devices=devices, chunk=chunk), sim)
    dbatch = ex.put(batch)
    assert ex.num_devices == devices
    assert dbatch.layout.padded_rows % devices == 0  # 13 scenarios padded, never rejected
    assert_bitwise(ex.fetch(ex.run(dbatch, idm_policy())), reference)


# (devices, chunk) per batch; 13 and 11 scenarios divide none of 2, 3, 8 (padded dispatches).
DEVICE_COUNTS = [(1, 3), (2, None), (3, None), (8, None)]


@pytest.mark.parametrize(("devices", "chunk"), DEVICE_COUNTS)
def test_every_device_count_matches_one_device(
    fma_free, batch, sim, single_device_reference, assert_bitwise, devices, chunk
):
    """All metrics of 1, 2, 3, 8 devices equal the plain one-device engine, bit for bit."""
    ex = Executor(ExecutorConfig(devices=devices, chunk=chunk), sim)
    assert_bitwise(ex.simulate(batch, idm_policy()), single_device_reference)


@pytest.mark.parametrize(("devices", "chunk"), DEVICE_COUNTS)
def test_every_device_count_matches_one_device_second_batch(
    fma_free, batch_b, sim_b, single_device_reference_b, assert_bitwise, devices, chunk
):
    """The same on another batch (ids, seed, agents, steps): a batch where FMA contraction
    used to change the last bits of progress_m between 1 and N devices."""
    ex = Executor(ExecutorConfig(devices=devices, chunk=chunk), sim_b)
    assert_bitwise(ex.simulate(batch_b, idm_policy()), single_device_reference_b)


def test_put_shards_straight_onto_every_device(batch, sim):
    ex = Executor(ExecutorConfig(devices=8), sim)
    dbatch = ex.put(batch)
    leaf = dbatch.chunks[0].agents.x
    assert leaf.sharding.spec[0] == "data" and len(leaf.addressable_shards) == 8
    assert {s.device for s in leaf.addressable_shards} == set(ex.devices)
    assert all(s.data.shape[0] == 2 for s in leaf.addressable_shards)


def test_donated_batch_is_consumed_without_warnings(batch, sim):
    ex = Executor(ExecutorConfig(devices=2), sim)
    dbatch = ex.put(batch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ex.run(dbatch, idm_policy())
        ex.fetch(result)
    # donated buffers that an output can alias are consumed (on CPU the others are kept)
    assert any(leaf.is_deleted() for leaf in jax.tree_util.tree_leaves(dbatch.chunks[0]))
    assert not [w for w in caught if "donat" in str(w.message)]


def test_second_run_does_not_recompile(batch, sim):
    policy, traces = counting_policy(IDM)
    ex = Executor(ExecutorConfig(devices=2), dataclasses.replace(sim, policy=policy))
    ex.simulate(batch, idm_policy())
    before = traces.count
    assert before >= 1
    ex.simulate(batch, idm_policy(v0=20.0))
    assert traces.count == before


def test_policy_sweep_matches_single_policy_runs(batch, sim, assert_bitwise):
    ex = Executor(ExecutorConfig(devices=8), sim)
    variants = [idm_policy(), idm_policy(v0=20.0, T=1.0), idm_policy(a=1.5, b=2.5)]
    result = ex.run_sweep(ex.put(batch), stack_policies(variants))
    table = ex.fetch(result)
    assert table.progress_m.shape == (3, 13)
    for p, policy in enumerate(variants):
        row = jax.tree_util.tree_map(lambda a, p=p: a[p], table)
        assert_bitwise(row, ex.simulate(batch, policy))
    agg = ex.aggregate(result)
    assert agg["mean_progress_m"].shape == (3,) and np.all(agg["scenarios"] == 13)
    assert not np.allclose(table.progress_m[0], table.progress_m[1])  # the variants differ


def test_device_failure_retries_on_fewer_devices(batch, sim, reference, assert_bitwise):
    injector = FailureInjector(device_id=3, at_dispatch=1)
    ex = Executor(ExecutorConfig(devices=4, chunk=2, inject_failure=injector), sim)  # 2 dispatches
    result = ex.run(ex.put(batch), idm_policy())
    assert injector.fired == 1
    assert ex.num_devices == 3 and 3 not in [d.id for d in ex.devices]
    assert_bitwise(ex.fetch(result), reference)


def test_device_failure_propagates_after_retries(batch, sim):
    injector = FailureInjector(device_id=0, times=10)
    ex = Executor(ExecutorConfig(devices=1, chunk=3, inject_failure=injector), sim)
    with pytest.raises(jax.errors.JaxRuntimeError, match="device 0"):
        ex.run(ex.put(batch), idm_policy())


def test_auto_chunk_fits_budget_and_keeps_results(batch, sim, reference, assert_bitwise):
    probe = Executor(ExecutorConfig(devices=2), sim)
    two, four = (probe.compiled_memory_bytes(slice_rows(batch, 0, 2 * c)) for c in (2, 4))
    assert 0 < two < four
    budget = two + (four - two) // 2  # room for about 3 scenarios per device, not all 7
    ex = Executor(ExecutorConfig(devices=2, chunk="auto", memory_budget_bytes=budget), sim)
    assert ex.memory_budget() == budget
    dbatch = ex.put(batch)
    c = dbatch.layout.chunk
    assert 1 <= c < 7 and dbatch.layout.n_chunks > 1
    assert probe.compiled_memory_bytes(slice_rows(batch, 0, 2 * c)) <= budget
    assert_bitwise(ex.fetch(ex.run(dbatch, idm_policy())), reference)


def test_bad_config_is_rejected(sim):
    with pytest.raises(ValueError, match="backend"):
        ExecutorConfig(backend="tpu-magic")
    with pytest.raises(ValueError, match="chunk"):
        ExecutorConfig(chunk=0)
