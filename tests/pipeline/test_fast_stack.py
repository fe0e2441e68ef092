"""stack_bucket's vectorised path equals padding each scenario and stacking, bit for bit."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from drivesim.core.types import LogTrajectory, replace
from drivesim.scenarios.batching import BucketKey, _pad_then_stack, bucket_key, stack_bucket
from drivesim.scenarios.record import ScenarioRecord
from drivesim.scenarios.synthetic import FamilyConfig, generate


def _assert_identical(got, want) -> None:
    got_leaves, got_tree = jax.tree_util.tree_flatten(got)
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for a, b in zip(got_leaves, want_leaves, strict=True):
        a, b = np.asarray(a), np.asarray(b)
        assert a.dtype == b.dtype and a.shape == b.shape
        assert a.tobytes() == b.tobytes()


def _with_log(record: ScenarioRecord, steps: int, seed: int) -> ScenarioRecord:
    """The record with a random log of ``steps`` steps over its agents."""
    rng = np.random.default_rng(seed)
    n = record.num_agents
    f = np.float32
    log = LogTrajectory(
        xy=rng.normal(size=(steps, n, 2)).astype(f),
        heading=rng.normal(size=(steps, n)).astype(f),
        speed=rng.normal(size=(steps, n)).astype(f),
        valid=rng.random((steps, n)) > 0.3,
        replay=rng.random(n) > 0.5,
    )
    return ScenarioRecord(replace(record.scenario, log=log), record.family, record.source, record.name)


def _key(records, agents=None) -> BucketKey:
    keys = [bucket_key(r.scenario) for r in records]
    logs = [k.log_steps for k in keys if k.log_steps is not None]
    return BucketKey(
        agents or max(k.agents for k in keys),
        max(k.lanes for k in keys),
        max(k.points for k in keys),
        max(logs) if logs else None,
    )


@pytest.mark.parametrize("batch_size", [None, 16])
def test_mixed_families_and_sizes(batch_size):
    cfg = FamilyConfig(min_agents=3, max_agents=30)
    records = [generate(f, i, cfg) for i in range(4) for f in ("highway", "merge", "intersection")]
    key = _key(records, agents=32)
    want = _pad_then_stack([r.scenario for r in records], key, batch_size)
    _assert_identical(stack_bucket(records, key, batch_size), want)


def test_logs_of_different_lengths():
    cfg = FamilyConfig(min_agents=3, max_agents=14)
    records = [_with_log(generate("merge", i, cfg), steps, i) for i, steps in enumerate((20, 31, 31, 7))]
    key = _key(records)
    assert key.log_steps == 32
    got = stack_bucket(records, key, 6)
    _assert_identical(got, _pad_then_stack([r.scenario for r in records], key, 6))
    assert np.asarray(got.valid).tolist() == [True] * 4 + [False] * 2
    assert np.asarray(got.scenario_id)[4:].tolist() == [-1, -1]


def test_unusual_input_takes_the_reference_path():
    records = [generate("highway", i, FamilyConfig(num_agents=6)) for i in range(3)]
    ag = records[1].scenario.agents
    wide = replace(ag, x=np.asarray(ag.x, np.float64))  # mixed dtypes: the stack upcasts
    records[1] = dataclasses.replace(records[1], scenario=replace(records[1].scenario, agents=wide))
    key = _key(records)
    got = stack_bucket(records, key, 4)
    assert np.asarray(got.agents.x).dtype == np.float64
    _assert_identical(got, _pad_then_stack([r.scenario for r in records], key, 4))
    with pytest.raises(ValueError, match="cannot pad"):
        stack_bucket(records, dataclasses.replace(key, agents=4), 4)
