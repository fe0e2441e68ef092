"""The ego's observation (for the MLP policy and the RL environment)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.interactions import padded
from drivesim.core.occlusion import sight_points, visible
from drivesim.core.types import Array

OBS_EGO_FEATURES = 7
OBS_NEIGHBOUR_FEATURES = 4


def observation_size(neighbours: int) -> int:
    """Length of the observation vector for ``neighbours`` agents on each side."""
    return OBS_EGO_FEATURES + OBS_NEIGHBOUR_FEATURES * 2 * neighbours


def neighbour_present(observation: Array) -> Array:
    """The present flags (..., 2 K) of observations (..., observation_size(K)), neighbours
    -K..-1 then 1..K."""
    return observation[..., OBS_EGO_FEATURES + OBS_NEIGHBOUR_FEATURES - 1 :: OBS_NEIGHBOUR_FEATURES]


def at_ego(is_ego: Array, values: Array) -> Array:
    """The ego's entry of ``values`` (N,) as () (:func:`ego_values`)."""
    return _ego_column(is_ego, values[None])[0]


def ego_values(is_ego: Array, rows: list[Array]) -> list[Array]:
    """The ego's entry of each (N,) row, as float32; list of ()."""
    return list(_ego_column(is_ego, jnp.stack([r.astype(jnp.float32) for r in rows])))


def ego_slot(is_ego: Array) -> tuple[Array, Array]:
    """The ego's slot () int32 (0 without an ego) and whether there is one () bool."""
    slots = jnp.arange(is_ego.shape[0], dtype=jnp.float32)
    slot = jnp.sum(jnp.where(is_ego, slots, 0.0)).astype(jnp.int32)  # exact below 2^24 slots
    return slot, is_ego[slot]


def _normal(has: Array, value: Array) -> Array:
    """``value`` () as the ego's entry reads (:func:`_ego_column`): -0.0 as +0.0, 0 without an ego."""
    zero = jnp.zeros((), value.dtype)
    return jnp.where(has, jnp.where(value == zero, zero, value), zero)


def _at_slot(values: Array, slot: Array, has: Array) -> Array:
    """The ego's entry of ``values`` (N,) read at its ``slot``: the value of :func:`at_ego`."""
    return _normal(has, values[slot])


def _ego_column(is_ego: Array, rows: Array) -> Array:
    """(R,) the ego's column of ``rows`` (R, N), read at its slot: the values a masked sum
    over the agents gives (-0.0 as +0.0, zeros without an ego; a NaN elsewhere does not
    leak), without computing and summing every agent's entry (XLA:CPU ran those sums, and
    argmax, an element at a time)."""
    return column_at(rows, *ego_slot(is_ego))


def column_at(rows: Array, slot: Array, has: Array) -> Array:
    """(R,) column ``slot`` (() int32) of ``rows`` (R, N) as :func:`ego_values` reads the
    ego's: -0.0 as +0.0, zeros where ``has`` (() bool) is False."""
    zero = jnp.zeros((), rows.dtype)
    column = rows[:, slot]
    column = jnp.where(column == zero, zero, column)  # -0.0 -> +0.0 (XLA folds x + 0.0 to x)
    return jnp.where(has, column, zero)


def ego_observation(
    agents, proj, progress: Array, neighbours: int, occlusion: bool = False, leader=None
) -> Array:
    """Observation of the ego in its own frame, from SortedAgents ``agents`` and their route
    Projection ``proj`` (fields (N,), sorted order); ``progress`` () metres along the route.
    Returns (observation_size(neighbours),) float32:

    [speed / 30, lateral offset / 2, heading error (rad), progress / 100, leader gap / 50
    (capped at 2), (leader speed - v_ego) / 30, leader present (0/1)] followed, for the
    ``neighbours`` agents behind and ahead in the sorted order, by
    [dx / 50, dy / 50 in the ego frame, (v - v_ego) / 30, present (0/1)] (zeros when absent).
    With ``occlusion``, an agent no sight line reaches (drivesim.core.occlusion) is absent
    from the neighbours (the leader features are not occluded).
    ``leader``: (gap, speed) (N,) each, every agent's vehicle leader on its route (+inf gap:
    none; SimState.lead_gap / lead_speed), the one the IDM follows; None: no leader.
    """
    slot, has = ego_slot(agents.is_ego)
    return observation_at(agents, proj, progress, slot, has, neighbours, occlusion, leader)


def observation_at(
    agents,
    proj,
    progress: Array,
    slot: Array,
    has: Array,
    neighbours: int,
    occlusion: bool = False,
    leader=None,
) -> Array:
    """:func:`ego_observation` of the agent in sorted ``slot`` (() int32; ``has``: () bool,
    False gives the zeros of a scenario without one): that agent in its own frame and its
    neighbours in the sorted order. Batch it over agents with ``jax.vmap``."""
    a = agents
    ego = lambda values: _at_slot(values, slot, has)  # noqa: E731  (the values of at_ego)
    ex, ey, ev = ego(a.x), ego(a.y), ego(a.speed)
    ec, es = ego(a.cos_h), ego(a.sin_h)
    etx, ety = ego(proj.tx), ego(proj.ty)
    heading_error = jnp.arctan2(es * etx - ec * ety, ec * etx + es * ety)
    features = [ev / 30.0, ego(proj.d) / 2.0, heading_error, progress / 100.0]
    features += _leader_features(ego, ev, leader)
    k_max = neighbours
    rows = jnp.stack([padded(v.astype(a.x.dtype), k_max, 0.0) for v in (a.x, a.y, a.speed, a.valid)])
    # columns slot .. slot + 2K of the padded rows: the agents K places behind to K ahead
    near = jax.lax.dynamic_slice_in_dim(rows, slot, 2 * k_max + 1, axis=1)
    offsets = [k for k in range(-k_max, k_max + 1) if k != 0]
    seen = _sighted(a, slot, (ex, ey), offsets) if occlusion else None
    for i, k in enumerate(offsets):
        x_k, y_k, s_k, valid_k = (near[r, k_max + k] for r in range(4))
        there = valid_k > 0
        if seen is not None:
            there = there & seen[i]
        present = _normal(has, there.astype(a.x.dtype))
        dx = _normal(has, jnp.where(there, x_k, ex)) - ex
        dy = _normal(has, jnp.where(there, y_k, ey)) - ey
        fx = (dx * ec + dy * es) / 50.0
        fy = (-dx * es + dy * ec) / 50.0
        dv = (_normal(has, jnp.where(there, s_k, ev)) - ev) / 30.0
        features += [fx, fy, dv, present]
    return jnp.stack(features).astype(jnp.float32)


def _leader_features(ego, ev: Array, leader) -> list[Array]:
    """[gap / 50 capped at 2, (v_lead - v_ego) / 30, present] of the ego's vehicle leader."""
    if leader is None:
        zero = jnp.zeros((), jnp.float32)
        return [zero, zero, zero]
    gap, speed = ego(leader[0]), ego(leader[1])
    present = jnp.isfinite(gap)
    return [
        jnp.where(present, jnp.minimum(gap, 100.0), 100.0) / 50.0,
        jnp.where(present, speed - ev, 0.0) / 30.0,
        present.astype(jnp.float32),
    ]


def _sighted(a, observer: Array, eye: tuple[Array, Array], offsets: list[int]) -> Array:
    """(len(offsets),) bool: whether the agent k places from the observer (sorted slot ``observer``)
    in the sorted order (k in ``offsets``) is visible from ``eye``, the observer's centre
    (drivesim.core.occlusion); every other valid agent may block."""
    n = a.x.shape[0]
    slot = jnp.arange(n, dtype=jnp.int32)
    target = jnp.clip(observer + jnp.asarray(offsets, jnp.int32), 0, n - 1)  # (S,)
    boxes = (a.x, a.y, a.cos_h, a.sin_h, a.length, a.width)
    points = sight_points(*(v[target] for v in boxes))  # (S, 5) each
    blockers = (a.valid & (slot != observer))[None, :] & (slot[None, :] != target[:, None])  # (S, N)
    return visible(eye, points, boxes, blockers)
