"""The ego's observation (for the MLP policy and the RL environment)."""

from __future__ import annotations

import jax.numpy as jnp

from drivesim.core.interactions import padded, view
from drivesim.core.types import Array

OBS_EGO_FEATURES = 4
OBS_NEIGHBOUR_FEATURES = 4


def observation_size(neighbours: int) -> int:
    """Length of the observation vector for ``neighbours`` agents on each side."""
    return OBS_EGO_FEATURES + OBS_NEIGHBOUR_FEATURES * 2 * neighbours


def at_ego(is_ego: Array, values: Array) -> Array:
    """The ego's entry of ``values`` (N,) as (); a where, not a multiply: 0 * NaN in another
    slot would leak."""
    return jnp.sum(jnp.where(is_ego, values, jnp.zeros((), values.dtype)))


def ego_observation(
    x: Array,
    y: Array,
    cos_h: Array,
    sin_h: Array,
    speed: Array,
    valid: Array,
    is_ego: Array,
    lateral: Array,
    tx: Array,
    ty: Array,
    progress: Array,
    neighbours: int,
) -> Array:
    """Observation of the ego in its own frame; per-agent inputs (N,) in sorted order,
    ``progress`` () metres along the route. Returns (observation_size(neighbours),) float32:

    [speed / 30, lateral offset / 2, heading error (rad), progress / 100] followed, for the
    ``neighbours`` agents behind and ahead in the sorted order, by
    [dx / 50, dy / 50 in the ego frame, (v - v_ego) / 30, present (0/1)] (zeros when absent).
    """
    n = x.shape[0]
    ego = lambda values: at_ego(is_ego, values)  # noqa: E731
    ex, ey, ev = ego(x), ego(y), ego(speed)
    ec, es = ego(cos_h), ego(sin_h)
    etx, ety = ego(tx), ego(ty)
    heading_error = jnp.arctan2(es * etx - ec * ety, ec * etx + es * ety)
    features = [ev / 30.0, ego(lateral) / 2.0, heading_error, progress / 100.0]
    xp, yp, sp = (padded(v, neighbours, 0.0) for v in (x, y, speed))
    vp = padded(valid, neighbours, False)
    for k in [k for k in range(-neighbours, neighbours + 1) if k != 0]:
        there = view(vp, neighbours, k, n)
        present = ego(there.astype(x.dtype))
        dx = ego(jnp.where(there, view(xp, neighbours, k, n), ex)) - ex
        dy = ego(jnp.where(there, view(yp, neighbours, k, n), ey)) - ey
        fx = (dx * ec + dy * es) / 50.0
        fy = (-dx * es + dy * ec) / 50.0
        dv = (ego(jnp.where(there, view(sp, neighbours, k, n), ev)) - ev) / 30.0
        features += [fx, fy, dv, present]
    return jnp.stack(features).astype(jnp.float32)
