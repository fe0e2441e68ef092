"""Long queues stay on the mapped road: a 128-agent highway or merge starts every agent inside
a lane corridor and keeps it there for the whole episode (the float64 NumPy corridor check of
drivesim.bench.fidelity, independent of the engine's own off-road test)."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.bench.fidelity import outside_lanes
from drivesim.core.policies import idm_policy
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import SimConfig
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.synthetic import FamilyConfig, generate

STEPS = 80
AGENTS = 128


def _outside(x, y, valid, road) -> np.ndarray:
    """(B, ...) valid agents of B scenarios whose centre lies off every lane corridor of its
    scenario; x, y, valid: (B, ...); road: host RoadMap of the B scenarios."""
    return np.stack(
        [
            valid[b] & outside_lanes(x[b], y[b], road.centers[b], road.widths[b], road.lane_valid[b])
            for b in range(len(x))
        ]
    )


@pytest.mark.parametrize("name", ["highway", "merge"])
def test_long_queues_start_and_stay_on_the_road(name):
    cfg = FamilyConfig(num_agents=AGENTS, steps=STEPS)
    batch = pad_and_stack([generate(name, i, cfg).scenario for i in range(6)])
    metrics, traj = simulate_trajectory(batch, idm_policy(), SimConfig(num_steps=STEPS))
    a, road = batch.agents, batch.road
    start = _outside(a.x, a.y, a.valid, road)
    assert not start.any(), f"{name}: {int(start.sum())} agents start off the mapped road"
    off = _outside(np.asarray(traj.x), np.asarray(traj.y), np.asarray(traj.valid), road)
    assert not off.any(), f"{name}: {int(off.sum())} agent-steps off the mapped road"
    assert not np.asarray(metrics.agents_offroad).any()
