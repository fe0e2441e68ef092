"""Neighbour-window leaders, oriented-box overlap and the odd-even re-sort."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core.interactions import boxes_overlap, find_leaders, odd_even_pass

from .reference import box_corners, polygon_overlap, sat_separation

WINDOW = 3


def _layout(rng, n=24):
    """Random agents sorted along +x in 3 lanes (tangents tilted a little); (N,) arrays."""
    x = np.sort(rng.uniform(0.0, 8.0 * n, n)).astype(np.float32)
    lane = rng.integers(0, 3, n)
    y = (lane * 3.5 + rng.normal(0.0, 0.3, n)).astype(np.float32)
    theta = rng.normal(0.0, 0.05, n)
    tx, ty = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    lateral = (y - lane * 3.5).astype(np.float32)  # offset from own lane centre
    return dict(
        x=x,
        y=y,
        speed=rng.uniform(0.0, 30.0, n).astype(np.float32),
        length=rng.uniform(3.5, 10.0, n).astype(np.float32),
        valid=rng.random(n) > 0.15,
        tx=tx,
        ty=ty,
        lateral=lateral,
        lane_width=np.full(n, 3.5, np.float32),
    )


def _brute_leader(d, i):
    best_ds, best = np.inf, None
    for j in range(len(d["x"])):
        if j == i or not (d["valid"][i] and d["valid"][j]):
            continue
        rx, ry = float(d["x"][j] - d["x"][i]), float(d["y"][j] - d["y"][i])
        ds = rx * d["tx"][i] + ry * d["ty"][i]
        lat = -rx * d["ty"][i] + ry * d["tx"][i] + d["lateral"][i]
        if ds > 0 and abs(lat) < 0.5 * d["lane_width"][i] and ds < best_ds:
            best_ds, best = ds, j
    return best, best_ds


_leaders = jax.jit(find_leaders, static_argnames="window")


@pytest.mark.parametrize("seed", range(6))
def test_find_leaders_matches_brute_force_within_window(seed):
    d = _layout(np.random.default_rng(seed))
    gap, speed, found = (np.asarray(v) for v in _leaders(**d, window=WINDOW))
    checked = 0
    for i in range(len(d["x"])):
        j, ds = _brute_leader(d, i)
        if j is None:
            assert not found[i], f"agent {i}: window found a leader brute force did not"
        elif abs(j - i) <= WINDOW:
            checked += 1
            assert found[i], f"agent {i}: leader {j} missed"
            np.testing.assert_allclose(
                gap[i], ds - 0.5 * (d["length"][i] + d["length"][j]), rtol=1e-5, atol=1e-4
            )
            assert speed[i] == d["speed"][j]
        elif found[i]:  # leader beyond the window: whatever was found is not nearer
            assert gap[i] + 0.5 * d["length"][i] >= ds - 0.5 * max(d["length"]) - 1e-3
    assert checked > 5


def _overlap(xi, yi, hi, li, wi, xj, yj, hj, lj, wj):
    return bool(
        boxes_overlap(
            jnp.float32(xj - xi),
            jnp.float32(yj - yi),
            jnp.cos(jnp.float32(hi)),
            jnp.sin(jnp.float32(hi)),
            jnp.cos(jnp.float32(hj)),
            jnp.sin(jnp.float32(hj)),
            li / 2,
            wi / 2,
            lj / 2,
            wj / 2,
        )
    )


def test_boxes_overlap_hand_built():
    # touching end to end (4 + 4 = 8 between centres) and side by side (2 between centres)
    assert _overlap(0, 0, 0, 4, 2, 4.0, 0, 0, 4, 2)
    assert _overlap(0, 0, 0, 4, 2, 0, 2.0, 0, 4, 2)
    assert not _overlap(0, 0, 0, 4, 2, 4.01, 0, 0, 4, 2)
    assert not _overlap(0, 0, 0, 4, 2, 0, 2.01, 0, 4, 2)
    # contained (small box inside a big one), either way round
    assert _overlap(0, 0, 0.3, 10, 4, 0.5, 0.2, 1.0, 1, 1)
    assert _overlap(0.5, 0.2, 1.0, 1, 1, 0, 0, 0.3, 10, 4)
    # rotated 45 degrees: a 2x2 square's corner reaches sqrt(2) from its centre
    q = np.pi / 4
    assert _overlap(0, 0, 0, 2, 2, 1 + np.sqrt(2) - 0.01, 0, q, 2, 2)
    assert not _overlap(0, 0, 0, 2, 2, 1 + np.sqrt(2) + 0.01, 0, q, 2, 2)
    # separated only along a diagonal axis (the axis-aligned projections overlap)
    assert not _overlap(0, 0, q, 4, 1, 2.2, -2.2, q, 4, 1)
    assert _overlap(0, 0, q, 4, 1, 0.5, -0.5, q, 4, 1)
    # far apart, crossing at right angles
    assert not _overlap(0, 0, 0, 4.5, 1.8, 20, 0, np.pi / 2, 4.5, 1.8)
    assert _overlap(0, 0, 0, 4.5, 1.8, 1.0, 1.0, np.pi / 2, 4.5, 1.8)


def test_boxes_overlap_random_against_polygons():
    rng = np.random.default_rng(3)
    n = 3000
    xi, yi, xj, yj = (rng.uniform(-6, 6, n) for _ in range(4))
    hi, hj = rng.uniform(-np.pi, np.pi, n), rng.uniform(-np.pi, np.pi, n)
    li, lj = rng.uniform(1, 8, n), rng.uniform(1, 8, n)
    wi, wj = rng.uniform(0.5, 3, n), rng.uniform(0.5, 3, n)
    got = np.asarray(
        boxes_overlap(
            *(
                jnp.asarray(v, jnp.float32)
                for v in (
                    xj - xi,
                    yj - yi,
                    np.cos(hi),
                    np.sin(hi),
                    np.cos(hj),
                    np.sin(hj),
                    li / 2,
                    wi / 2,
                    lj / 2,
                    wj / 2,
                )
            )
        )
    )
    compared = hits = 0
    for k in range(n):
        ci = box_corners(xi[k], yi[k], hi[k], li[k], wi[k])
        cj = box_corners(xj[k], yj[k], hj[k], lj[k], wj[k])
        sep = sat_separation(ci, cj)
        if abs(sep) < 1e-3:  # borderline: float32 may go either way
            continue
        want = polygon_overlap(ci, cj)
        assert want == (sep <= 0), f"case {k}: reference SAT and polygon test disagree"
        assert got[k] == want, f"case {k}: boxes_overlap={got[k]}, polygons say {want}"
        compared += 1
        hits += want
    assert compared > 0.99 * n and 0.2 * n < hits < 0.8 * n


def test_odd_even_pass_is_a_permutation_that_sorts():
    rng = np.random.default_rng(5)
    key = jnp.asarray(rng.permutation(9).astype(np.float32))
    ids = jnp.arange(9, dtype=jnp.float32)
    swap = jax.jit(odd_even_pass)
    for t in range(9):  # odd-even transposition sort: N passes sort N keys
        ids, key = swap((ids, key), key, jnp.asarray(t % 2))
        assert sorted(np.asarray(ids).tolist()) == list(range(9)), f"pass {t} (parity {t % 2}) lost an agent"
    np.testing.assert_array_equal(np.asarray(key), np.arange(9))
