"""The agents' packed route rows (core.road.route_rows) give back every RouteSegments field
bit for bit: lo, hi and ok are derived, not stored."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from drivesim.core.road import RouteSegments, agent_segments, from_rows, route_rows
from drivesim.core.types import RoadMap


def _road(rng) -> RoadMap:
    """Five lanes of 6 points: a bent one, one with repeated (padding) points at its end,
    one with a zero-length segment inside, one of a single real segment, one all padding."""
    lanes = np.cumsum(rng.uniform(-40.0, 60.0, (5, 6, 2)), axis=1).astype(np.float32) + 2000.0
    lanes[1, 3:] = lanes[1, 2]
    lanes[2, 3] = lanes[2, 2]
    lanes[3, 2:] = lanes[3, 1]
    lanes[4, :] = lanes[4, 0]
    return RoadMap(
        centers=jnp.asarray(lanes),
        widths=jnp.full(5, 3.6, jnp.float32),
        lane_valid=jnp.ones(5, bool),
        sort_axis=jnp.asarray([1.0, 0.0], jnp.float32),
        conflict_xy=jnp.zeros(2, jnp.float32),
        conflict_radius=jnp.zeros((), jnp.float32),
    )


def test_rows_give_back_every_field():
    rng = np.random.default_rng(3)
    road = _road(rng)
    route = jnp.asarray([0, 1, 2, 3, 4, -1, 7, 0, 2], jnp.int32)  # -1 and 7 match no lane
    seg = agent_segments(road, route)
    rows = route_rows(seg)
    assert rows.shape == (6 * 5 + 1, route.shape[0])
    back = from_rows(rows)
    for name in RouteSegments.__dataclass_fields__:
        a, b = np.asarray(getattr(seg, name)), np.asarray(getattr(back, name))
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b)), name
    hi = np.asarray(seg.hi)
    assert np.isinf(hi[:, :5]).sum(axis=0).tolist() == [1, 1, 1, 1, 1]  # each lane's last real segment
    assert not np.isinf(hi[:, 5:7]).any()  # no lane: every field 0
