"""On-device reductions: replicated results from sharded inputs, no gather."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.parallel.executor import Executor, ExecutorConfig, _reduce_specs
from drivesim.parallel.reductions import reducer


@pytest.fixture(scope="module")
def run8(batch, sim):
    ex = Executor(ExecutorConfig(devices=8), sim)
    return ex, ex.run(ex.put(batch), idm_policy())


def test_reduction_is_replicated_and_never_gathers(run8):
    ex, result = run8
    metrics, valid = result.metrics[0], result.valid[0]
    assert not metrics.progress_m.sharding.is_fully_replicated
    reduce = reducer(result.mesh, *_reduce_specs("sharding", False))
    out = reduce(metrics, valid)
    for value in out.values():
        assert value.shape == () and value.sharding.is_fully_replicated
        assert len(value.addressable_shards) == 8
    hlo = reduce.lower(metrics, valid).compile().as_text()
    assert "all-reduce" in hlo
    assert "all-gather" not in hlo and "all-to-all" not in hlo and "collective-permute" not in hlo


def test_aggregate_matches_numpy(run8, reference):
    ex, result = run8
    agg = ex.aggregate(result)
    assert agg["scenarios"] == 13.0
    assert agg["collision_rate"] == pytest.approx(reference.ego_collided.mean())
    assert agg["offroad_rate"] == pytest.approx(reference.offroad.mean())
    assert agg["mean_progress_m"] == pytest.approx(
        float(np.mean(reference.progress_m.astype(np.float64))), rel=1e-5
    )
    assert agg["min_ttc_s"] == pytest.approx(float(reference.min_ttc_s.min()))
    assert agg["nan_count"] == float(reference.has_nan.sum())
    assert agg["max_collision_pairs"] == float(reference.collision_pairs.max())


def test_reducer_is_built_once_per_layout(run8):
    from drivesim.parallel.reductions import REDUCERS

    _, result = run8
    specs = _reduce_specs("sharding", False)
    first = reducer(result.mesh, *specs)
    builds = REDUCERS.builds
    assert reducer(result.mesh, *specs) is first and REDUCERS.builds == builds
