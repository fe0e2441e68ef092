"""A real scenario's metrics do not depend on its padding class, bit for bit: the planner
merges a window's partial buckets into one larger-class batch (remainders.merge_partial).

Run in a process of its own with JAX's default XLA flags (the suite's process limits the
CPU to AVX, under which XLA happened to sum this scenario's log divergence the same way at
32 and 64 agents; at the default ISA jnp.sum was 1 ulp apart, core.padded_sum is not)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

FILE = "USA_Lanker-1_1_T-1.xml"


def differing_fields(commonroad_dir: Path) -> list[str]:
    """RolloutMetrics fields of FILE that differ between its own padding classes and larger
    ones (agents 32 -> 64; lanes, points and log steps too)."""
    import jax
    import numpy as np

    from drivesim.core.policies import idm_policy
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig
    from drivesim.scenarios.batching import BucketKey, bucket_key, stack_bucket
    from drivesim.scenarios.commonroad import load_commonroad

    record = load_commonroad(commonroad_dir / FILE)
    key = bucket_key(record.scenario)
    assert key == BucketKey(32, 128, 16, 64)

    def metrics(k):
        got = jax.device_get(simulate(stack_bucket([record], k, 2), idm_policy(), SimConfig(num_steps=80)))
        return {f.name: np.asarray(getattr(got, f.name))[0] for f in dataclasses.fields(got)}

    own = metrics(key)
    assert np.isfinite(own["log_div_mean"])
    found = []
    for larger in (BucketKey(64, 128, 16, 64), BucketKey(32, 256, 32, 128)):
        other = metrics(larger)
        found += [f"{larger}: {n}" for n in own if not np.array_equal(own[n], other[n], equal_nan=True)]
    return found


def test_larger_classes_give_the_same_bits(commonroad_dir):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    proc = subprocess.run(
        [sys.executable, __file__, str(commonroad_dir)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == []


if __name__ == "__main__":
    print(json.dumps(differing_fields(Path(sys.argv[1]))))
