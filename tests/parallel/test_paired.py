"""The CLI's default determinism (drivesim.parallel.determinism, "paired"): FMA on, a single CPU
device run as a pair, and per-scenario metrics bitwise equal across device counts and batch
sizes. Runs in a child process, since this suite's own processes are FMA-free."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from drivesim.parallel import determinism

SCRIPT = textwrap.dedent(
    """
    import json
    import jax
    import numpy as np
    from drivesim.bench.workloads import Workload, make_batch
    from drivesim.core.policies import idm_policy
    from drivesim.core.types import SimConfig
    from drivesim.parallel import determinism
    from drivesim.parallel.executor import Executor, ExecutorConfig

    batch = make_batch(Workload(scenarios=24, agents=16, steps=30, family="intersection"))
    sim = SimConfig(num_steps=30)

    def metrics(devices, rows):
        ex = Executor(ExecutorConfig(devices=devices), sim)
        part = jax.tree_util.tree_map(lambda a: a[:rows], batch)
        out = ex.fetch(ex.run(ex.put(part), idm_policy()))
        leaves = [np.ascontiguousarray(np.asarray(v)) for v in jax.tree_util.tree_leaves(out)]
        return ex.num_devices, leaves

    def differing(a, b):
        return sum(int(np.sum(x[: len(y)].view(np.uint8) != y.view(np.uint8))) for x, y in zip(a, b))

    used, base = metrics(8, 24)
    report = {"fma_free": determinism.active(), "devices_8": used, "diff": {}}
    for devices, rows in ((1, 24), (3, 24), (1, 1)):
        used, values = metrics(devices, rows)
        report["diff"][f"{devices}x{rows}"] = [used, differing(base, values)]
    print(json.dumps(report))
    """
)


def test_single_cpu_device_runs_as_a_pair_and_matches_every_device_count():
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # no ISA cap: FMA on
    env.pop(determinism.FMA_FREE_ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["fma_free"] is False and report["devices_8"] == 8
    # devices x rows -> [devices used, bytes differing from the 8-device run]
    assert report["diff"] == {"1x24": [2, 0], "3x24": [3, 0], "1x1": [2, 0]}
