"""The ego's observation (for the MLP policy and the RL environment)."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.interactions import shift
from drivesim.core.types import Array

OBS_EGO_FEATURES = 4
OBS_NEIGHBOUR_FEATURES = 4


def observation_size(neighbours: int) -> int:
    """Length of the observation vector for ``neighbours`` agents on each side."""
    return OBS_EGO_FEATURES + OBS_NEIGHBOUR_FEATURES * 2 * neighbours


def ego_observation(
    x: Array, y: Array, cos_h: Array, sin_h: Array, speed: Array, valid: Array,
    is_ego: Array, lateral: Array, tx: Array, ty: Array, progress: Array, neighbours: int,
) -> Array:
    """Observation of the ego in its own frame; per-agent inputs (N,) in sorted order,
    ``progress`` () metres along the route. Returns (observation_size(neighbours),) float32:

    [speed / 30, lateral offset / 2, heading error (rad), progress / 100] followed, for the
    ``neighbours`` agents behind and ahead in the sorted order, by
    [dx / 50, dy / 50 in the ego frame, (v - v_ego) / 30, present (0/1)] (zeros when absent).
    """
    def at_ego(values):  # where, not multiply: 0 * NaN in another slot would leak
        return jnp.sum(jnp.where(is_ego, values, 0.0))

    ex, ey, ev = at_ego(x), at_ego(y), at_ego(speed)
    ec, es = at_ego(cos_h), at_ego(sin_h)
    etx, ety = at_ego(tx), at_ego(ty)
    heading_error = jnp.arctan2(es * etx - ec * ety, ec * etx + es * ety)
    features = [ev / 30.0, at_ego(lateral) / 2.0, heading_error, progress / 100.0]
    for k in [k for k in range(-neighbours, neighbours + 1) if k != 0]:
        there = shift(valid, k, False)
        present = at_ego(there.astype(x.dtype))
        dx = at_ego(jnp.where(there, shift(x, k, 0.0), ex)) - ex
        dy = at_ego(jnp.where(there, shift(y, k, 0.0), ey)) - ey
        fx = (dx * ec + dy * es) / 50.0
        fy = (-dx * es + dy * ec) / 50.0
        dv = (at_ego(jnp.where(there, shift(speed, k, 0.0), ev)) - ev) / 30.0
        features += [fx, fy, dv, present]
    return jnp.stack(features).astype(jnp.float32)
