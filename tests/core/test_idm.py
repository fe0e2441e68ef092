"""IDM against a direct transcription of the published equation (Treiber et al. 2000)."""

from __future__ import annotations

import numpy as np

from drivesim.core.behavior import MIN_GAP, follow_acceleration, free_road_term, idm_acceleration
from drivesim.core.types import IDMParams


def _random_inputs(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    f = np.float32
    params = dict(
        v0=rng.uniform(10.0, 40.0, n),
        T=rng.uniform(0.8, 2.5, n),
        s0=rng.uniform(1.0, 4.0, n),
        a=rng.uniform(0.3, 2.5, n),
        b=rng.uniform(1.0, 3.0, n),
        delta=rng.choice([2.0, 4.0, 3.5], n),
    )
    v, gap, dv = rng.uniform(0.0, 40.0, n), rng.uniform(0.5, 150.0, n), rng.uniform(-10.0, 10.0, n)
    return {k: p.astype(f) for k, p in params.items()}, v.astype(f), gap.astype(f), dv.astype(f)


def published_idm(v, s, dv, v0, T, s0, a, b, delta):
    """dv/dt = a [1 - (v/v0)^delta - (s*/s)^2], s* = s0 + max(0, vT + v dv / (2 sqrt(ab))),
    float64 (Treiber et al. 2000 with the dynamic part of s* clamped at 0, Treiber & Kesting
    2013, as in Waymax's IDM)."""
    v, s, dv = (np.asarray(q, np.float64) for q in (v, s, dv))
    v0, T, s0, a, b, delta = (np.asarray(q, np.float64) for q in (v0, T, s0, a, b, delta))
    s_star = s0 + np.maximum(0.0, v * T + (v * dv) / (2.0 * np.sqrt(a * b)))
    return a * (1.0 - (v / v0) ** delta - (s_star / s) ** 2), a * (
        1.0 + (v / v0) ** delta + (s_star / s) ** 2
    )


def test_idm_matches_published_equation():
    params, v, gap, dv = _random_inputs()
    got = np.asarray(idm_acceleration(v, gap, dv, IDMParams(**params)))
    want, scale = published_idm(v, gap, dv, **params)
    # 1e-5 relative to the size of the terms (the difference itself may cancel to ~0)
    np.testing.assert_array_less(np.abs(got - want), 1e-5 * scale)


def test_idm_free_road_and_min_gap_guard():
    params, v, gap, dv = _random_inputs(200, seed=1)
    p = IDMParams(**params)
    free = np.asarray(follow_acceleration(v, np.full_like(gap, np.inf), v + 5.0, p))
    want_free = params["a"].astype(np.float64) * (
        1.0 - (v.astype(np.float64) / params["v0"]) ** params["delta"]
    )
    np.testing.assert_allclose(free, want_free, rtol=1e-5, atol=1e-5)
    lead = (v - dv).astype(np.float32)
    tiny = np.asarray(follow_acceleration(v, np.full_like(gap, -3.0), lead, p))
    approach = v.astype(np.float64) - lead.astype(np.float64)
    want_tiny, _ = published_idm(v, np.full_like(gap, MIN_GAP), approach, **params)
    np.testing.assert_allclose(tiny, want_tiny, rtol=1e-5)


def test_desired_gap_is_clamped_at_s0():
    """A faster leader (dv << 0) never shortens the desired gap below s0: at s = s0 and
    v = 0 the interaction term is exactly a (s0/s0)^2."""
    p = IDMParams(*(np.float32(x) for x in (30.0, 1.5, 2.0, 1.0, 1.5, 4.0)))
    fast_leader = float(idm_acceleration(np.float32(10.0), np.float32(40.0), np.float32(-15.0), p))
    want, _ = published_idm(10.0, 40.0, -15.0, 30.0, 1.5, 2.0, 1.0, 1.5, 4.0)
    assert abs(fast_leader - float(want)) < 1e-5 and fast_leader > 0.0
    unclamped = 1.0 * (1.0 - (10.0 / 30.0) ** 4 - ((2.0 + 15.0 - 150.0 / (2 * 1.5**0.5)) / 40.0) ** 2)
    assert fast_leader > unclamped


def test_idm_known_values():
    """Equilibrium: at gap s_e = (s0 + vT) / sqrt(1 - (v/v0)^delta), dv = 0, dv/dt = 0."""
    p = IDMParams(
        v0=np.float32(30.0),
        T=np.float32(1.5),
        s0=np.float32(2.0),
        a=np.float32(1.0),
        b=np.float32(1.5),
        delta=np.float32(4.0),
    )
    v = np.float32(20.0)
    s_e = (2.0 + 20.0 * 1.5) / np.sqrt(1.0 - (20.0 / 30.0) ** 4)
    assert abs(float(idm_acceleration(v, np.float32(s_e), np.float32(0.0), p))) < 1e-5
    assert float(idm_acceleration(np.float32(0.0), np.float32(np.inf), np.float32(0.0), p)) == 1.0


def test_free_road_term_against_float64_power():
    ratio = np.linspace(1e-3, 1.3, 20001).astype(np.float32)
    for delta, bound in ((4.0, 3e-7), (1.0, 2e-6), (2.0, 2e-6), (3.5, 2e-6)):
        got = np.asarray(free_road_term(ratio, np.float32(delta)), np.float64)
        want = ratio.astype(np.float64) ** delta
        assert np.max(np.abs(got - want) / want) < bound, delta
    at_rest = np.asarray(free_road_term(np.float32([0.0, -0.5]), np.float32([3.5, 3.5])))
    assert at_rest[0] == 0.0 and np.isfinite(at_rest[1])
