"""The re-sort moves whole agents (core.interactions.odd_even_pass decides its swaps once).

With FMA contraction on (the CLI's default on x86 CPUs with FMA; the suite itself runs
FMA-free), XLA:CPU contracted the sort key's multiply-add in some of the kernels that read the
swap decision and not in others. In merge scenario 280 (8 agents) a near tie of two keys then
swapped an agent's x into its neighbour's slot while the neighbour kept it: the agent jumped
3.6 m sideways in one step and the all-pairs engine reported a collision that the window
engine did not. The check runs in a child process with contraction on. On a processor without
FMA nothing is contracted and the check passes either way.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json
import jax, numpy as np
from drivesim.bench.workloads import Workload, make_batch
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import SimConfig
from drivesim.core.search_plan import SearchPlan

batch = make_batch(Workload(2, 8, 80, "merge", first_id=280))
out = {}
for name, config in {
    "all_pairs": SimConfig(search=SearchPlan(neighbours="all_pairs", edge_search="all_lanes")),
    "window": SimConfig(search=SearchPlan(neighbours="window", edge_search="own_route")),
}.items():
    _, tr = jax.device_get(simulate_trajectory(batch, idm_policy(), config))
    both = tr.valid[:, 1:] & tr.valid[:, :-1]
    moved = np.hypot(np.diff(tr.x, axis=1), np.diff(tr.y, axis=1))
    reach = np.maximum(tr.speed[:, 1:], tr.speed[:, :-1]) * config.dt
    out[name] = {
        "worst_excess_m": float(np.max(np.where(both, moved - reach, -np.inf))),
        "collision_pairs": np.asarray(simulate(batch, idm_policy(), config).collision_pairs).tolist(),
    }
print(json.dumps(out))
"""


def test_no_agent_jumps_with_fma_contraction():
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "DRIVESIM_FMA_FREE")}
    env["JAX_PLATFORMS"] = "cpu"
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600, check=True
    )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    for name, got in out.items():
        assert got["worst_excess_m"] < 0.01, f"{name}: an agent moved farther than its speed allows: {got}"
    assert out["all_pairs"]["collision_pairs"] == out["window"]["collision_pairs"] == [0, 0]
