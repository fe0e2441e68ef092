"""Long queues stay on the mapped road: a 128-agent highway or merge starts every agent inside
a lane corridor and keeps it there for the whole episode (a NumPy float64 check of the centres
against the lane segments, independent of the engine's own off-road test)."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate_trajectory
from drivesim.core.types import SimConfig
from drivesim.scenarios.families import FamilyConfig, generate_batch

STEPS = 80
AGENTS = 128


@partial(jax.jit, static_argnames=("name", "cfg", "size"))
def _gen(name, seed, ids, cfg, size):
    return generate_batch(name, seed, ids, cfg, size)


def _outside(x, y, valid, road) -> np.ndarray:
    """(..., N) valid agents whose centre (x, y) lies outside every valid lane corridor of
    their scenario (segments clipped at the lane ends). x, y, valid: (B, S, N); road: host
    RoadMap of B scenarios."""
    centers = np.asarray(road.centers, np.float64)  # (B, L, P, 2)
    a, seg = centers[:, :, :-1], np.diff(centers, axis=2)  # (B, L, P-1, 2)
    length = np.linalg.norm(seg, axis=-1)
    u = seg / np.maximum(length, 1e-9)[..., None]
    p = np.stack([x, y], -1).astype(np.float64)[:, :, :, None, None, :]  # (B, S, N, 1, 1, 2)
    rel = p - a[:, None, None]
    along = np.clip(np.sum(rel * u[:, None, None], -1), 0.0, length[:, None, None])
    dist = np.linalg.norm(rel - along[..., None] * u[:, None, None], axis=-1)
    dist = np.where(length[:, None, None] > 1e-6, dist, np.inf).min(-1)  # (B, S, N, L)
    half = 0.5 * np.asarray(road.widths, np.float64)[:, None, None]
    inside = (dist <= half) & np.asarray(road.lane_valid)[:, None, None]
    return valid & ~inside.any(-1)


@pytest.mark.parametrize("name", ["highway", "merge"])
def test_long_queues_start_and_stay_on_the_road(name):
    cfg = FamilyConfig(num_agents=AGENTS, steps=STEPS)
    ids = np.arange(6, dtype=np.int32)
    batch = jax.tree_util.tree_map(np.asarray, _gen(name, np.uint32(0), ids, cfg, AGENTS))
    metrics, traj = simulate_trajectory(batch, idm_policy(), SimConfig(num_steps=STEPS))
    a = batch.agents
    start = _outside(a.x[:, None], a.y[:, None], a.valid[:, None], batch.road)
    assert not start.any(), f"{name}: {int(start.sum())} agents start off the mapped road"
    off = _outside(np.asarray(traj.x), np.asarray(traj.y), np.asarray(traj.valid), batch.road)
    assert not off.any(), f"{name}: {int(off.sum())} agent-steps off the mapped road"
    assert not np.asarray(metrics.agents_offroad).any()
