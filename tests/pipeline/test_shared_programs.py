"""A small campaign's buckets share programs: highway (straight lanes, 2 points per lane) and
merge scenarios (4 points) of one agent class, loaded on the host (as beside files, in the
demo), run one program, with the same result rows as when each bucket compiles its own."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pipeline_helpers import small_config

from drivesim.parallel.programs import EXECUTOR_PROGRAMS
from drivesim.pipeline import plan, results
from drivesim.pipeline.campaign import run_campaign
from drivesim.scenarios.batching import BucketKey
from drivesim.scenarios.remainders import shared_keys


def test_keys_alike_in_logs_go_to_their_largest_classes():
    straight, bent, wide = BucketKey(32, 8, 2, None), BucketKey(32, 8, 4, None), BucketKey(16, 32, 2, None)
    logged, longer = BucketKey(16, 128, 32, 64), BucketKey(32, 32, 16, 128)
    got = shared_keys([straight, bent, wide, logged, longer])
    plain, logs = BucketKey(32, 32, 4, None), BucketKey(32, 128, 32, 128)
    assert got == {straight: plain, bent: plain, wide: plain, logged: logs, longer: logs}
    assert shared_keys([]) == {}


def _campaign(out, steps: int):
    config = small_config(
        out, count=24, sources=("synthetic:highway,merge",), num_steps=steps, batch_size=4, window_batches=8
    )
    before = EXECUTOR_PROGRAMS.builds
    result = run_campaign(config)
    assert result.done == 24 and result.failed == 0
    return results.results_table(out).sort_by("scenario_id"), EXECUTOR_PROGRAMS.builds - before


def test_highway_and_merge_share_one_program_with_the_same_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("DRIVESIM_HOST_SYNTHETIC", "1")  # host batches (device-generated ones: per family)
    steps = 7  # a SimConfig of this test alone: its programs are new to the process
    shared, shared_builds = _campaign(tmp_path / "shared", steps)
    monkeypatch.setattr(plan, "SHARE_BELOW", 0)
    own, own_builds = _campaign(tmp_path / "own", steps)
    assert shared_builds == 1  # one program for both families
    assert own_builds == 1  # the highway program of its own (merge's is the shared run's)
    assert set(pc.unique(shared.column("family")).to_pylist()) == {"highway", "merge"}
    assert shared.column_names == own.column_names
    for name in set(shared.column_names) - {"batch_id"}:  # the plans differ, every row's values not
        assert _bits(shared.column(name)) == _bits(own.column(name)), name


def _bits(column) -> list:
    """A column's values, floats as their bit patterns (NaN rows compare, -0.0 differs from 0.0)."""
    if pa.types.is_floating(column.type):
        values = column.to_numpy(zero_copy_only=False)
        return values.view(np.uint32 if values.dtype == np.float32 else np.uint64).tolist()
    return column.to_pylist()
