"""synthetic:intersection_turns: turning routes are circular fillets tangent to their lanes
(checked in float64 from the generated points), the turn mix, determinism per id, and the
engine's turning agents: lateral acceleration > 0 on turns, none on straight routes, no agent
off the road."""

from __future__ import annotations

from functools import partial

import jax
import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import SimConfig
from drivesim.scenarios.families import FamilyConfig, generate_batch, turns

NAME = "intersection_turns"
SIZE = 32


@partial(jax.jit, static_argnames=("cfg", "size"))
def _gen(seed, ids, cfg, size):
    return generate_batch(NAME, seed, ids, cfg, size)


@pytest.fixture(scope="module")
def batch():
    out = _gen(np.uint32(0), np.arange(128, dtype=np.int32), FamilyConfig(num_agents=SIZE), SIZE)
    return jax.tree_util.tree_map(np.asarray, out)


def _straight_count(b, k):
    return int(b.road.lane_valid[k].sum()) - 8


def _circle(p):
    """Centre (2,) and radius of the circle through three points (3, 2), float64."""
    (ax, ay), (bx, by), (cx, cy) = p.astype(np.float64)
    d = 2.0 * (ax * (by - cy) + bx * (cy - ay) + cx * (ay - by))
    a2, b2, c2 = ax * ax + ay * ay, bx * bx + by * by, cx * cx + cy * cy
    ux = (a2 * (by - cy) + b2 * (cy - ay) + c2 * (ay - by)) / d
    uy = (a2 * (cx - bx) + b2 * (ax - cx) + c2 * (bx - ax)) / d
    return np.array([ux, uy]), float(np.hypot(ax - ux, ay - uy))


def test_turn_routes_are_fillets_tangent_to_their_lanes(batch):
    for k in range(16):
        total = _straight_count(batch, k)
        lines = batch.road.centers[k]
        assert batch.road.lane_valid[k, : total + 8].all() and not batch.road.lane_valid[k, total + 8 :].any()
        radii = []
        for j in range(8):
            route = lines[total + j]
            arc = route[1:-1]
            centre, r = _circle(arc[[0, turns.ARC // 2, turns.ARC]])
            assert np.allclose(np.hypot(*(arc - centre).T), r, atol=2e-3 * r)  # every point on it
            lo, hi = (6.0, 10.0) if j % 2 else (9.0, 14.0)
            assert lo - 1e-3 <= r <= hi + 1e-3
            radii.append(r)
            d_in, d_out = route[1] - route[0], route[-1] - route[-2]
            left = d_in[0] * d_out[1] - d_in[1] * d_out[0] > 0
            assert left == (j % 2 == 0)  # left turns, then right turns
            # tangent: the arc's first chord turns by half a chord angle from the lane direction
            t_in, t_arc = d_in / np.linalg.norm(d_in), (arc[1] - arc[0]) / np.linalg.norm(arc[1] - arc[0])
            chord = np.linalg.norm(arc[1] - arc[0])
            assert np.degrees(np.arccos(np.clip(t_in @ t_arc, -1, 1))) == pytest.approx(
                np.degrees(np.arcsin(0.5 * chord / r)), abs=0.05
            )
            # the incoming lane is one of the straight lanes (same line)
            straight = lines[:total, :2]
            cross = lambda a, b: a[0] * b[1] - a[1] * b[0]  # noqa: E731
            on_line = [abs(cross(b - a, route[0] - a)) / np.linalg.norm(b - a) for a, b in straight]
            assert min(on_line) < 1e-2
        assert np.ptp(radii[0::2]) < 1e-3 and np.ptp(radii[1::2]) < 1e-3  # one radius per turn kind


def test_turn_mix_and_priority(batch):
    valid = batch.agents.valid
    total = batch.road.lane_valid.sum(axis=1) - 8
    turning = valid & (batch.agents.route >= total[:, None])
    left = turning & ((batch.agents.route - total[:, None]) % 2 == 0)
    share = turning.sum() / valid.sum()
    assert 0.12 < share < 0.22  # 20% drawn, fewer where a turner starts past its turn
    assert 0.3 < left.sum() / turning.sum() < 0.7
    v0 = batch.idm.v0[turning]
    assert v0.max() <= np.sqrt(turns.A_LAT * 14.0) + 1e-3
    assert (batch.agents.speed[turning] <= 0.9 * v0 + 1e-3).all()
    # right turners of the major road keep priority; every left turner yields
    assert np.isfinite(batch.stop_s[left]).all()


def test_same_id_same_scenario_whatever_the_batch():
    ids = np.arange(500, 564, dtype=np.int32)
    cfg = FamilyConfig(max_agents=SIZE)
    full = jax.tree_util.tree_map(np.asarray, _gen(np.uint32(3), ids, cfg, SIZE))
    part = jax.tree_util.tree_map(np.asarray, _gen(np.uint32(3), ids[[5]], cfg, SIZE))
    for a, b in zip(jax.tree_util.tree_leaves(part), jax.tree_util.tree_leaves(full), strict=True):
        assert np.array_equal(a.view(np.uint8), b[[5]].view(np.uint8))


def test_turning_agents_turn_on_the_road(batch):
    sub = jax.tree_util.tree_map(lambda a: a[:16], batch)
    metrics, traj = jax.device_get(simulate_trajectory(sub, idm_policy(), SimConfig(num_steps=80)))
    heading, speed = np.asarray(traj.heading), np.asarray(traj.speed)
    lateral = np.abs(speed[:, 1:] * np.diff(heading, axis=1) / 0.1)  # [m/s^2]
    both = traj.valid[:, 1:] & traj.valid[:, :-1]
    total = sub.road.lane_valid.sum(axis=1) - 8
    others = sub.agents.valid & (np.arange(SIZE)[None] != sub.ego_index[:, None])
    turning = others & (sub.agents.route >= total[:, None])
    straight = others & ~turning
    on_turn = both & turning[:, None, :]
    assert lateral[on_turn].max() > 1.0  # some turner is in its arc
    assert lateral[on_turn].max() <= 1.3 * turns.A_LAT
    assert lateral[both & straight[:, None, :]].max() < 1e-3
    assert not np.asarray(metrics.has_nan).any()
    assert int(np.asarray(metrics.agents_offroad).sum()) == 0
