"""unprotected_left_turn simulated for real: the constant-speed ego collides exactly inside the
collision band of a float64 reference of the planned geometry (ego on the exact arc, oncoming
car on its line, separating-axis box test at 1 ms), which the closed-form tangent band matches;
its lateral acceleration through the turn is v^2 / R; the IDM ego yields; the window search
is certified and agrees with the all-pairs search."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import jax
import numpy as np
import pytest

from drivesim.core.policies import CONSTANT, default_policy_params
from drivesim.core.rollout import simulate
from drivesim.core.search_plan import SearchPlan
from drivesim.core.trajectory import rollout_trajectory
from drivesim.core.types import SimConfig
from drivesim.pipeline.policy_names import policy_named
from drivesim.scenarios.batching import pad_and_stack
from drivesim.scenarios.catalogue import CatalogueError, build, make_record
from drivesim.scenarios.catalogue import left_turn as lt

STEPS = 100
FAMILY = "unprotected_left_turn"
L, W = 4.5, 1.8  # car box [m]
MARGIN = 0.2  # [s] test points this far inside / outside the reference band


def _ego_pose(t: np.ndarray, speed: float, x0: float):
    """Centre (T, 2) and heading (T,) of the ego driving its route exactly at ``speed``."""
    r = lt.TURN_RADIUS
    a = np.clip(speed * t - x0, 0.0, None)  # arc length past the turn's start
    theta = np.minimum(a / r, 0.5 * np.pi)
    beyond = np.maximum(a - 0.5 * np.pi * r, 0.0)
    x = np.where(a > 0, x0 + r * np.sin(theta), speed * t)
    y = r * (1.0 - np.cos(theta)) + beyond
    return np.stack([x, y], axis=-1), theta


def _overlap(p1, h1, p2, h2) -> np.ndarray:
    """Separating-axis overlap of car boxes at centres p1, p2 (T, 2), headings h1, h2 (T,)."""
    d = p2 - p1
    axes_of = lambda h: [np.stack([np.cos(h), np.sin(h)], -1), np.stack([-np.sin(h), np.cos(h)], -1)]  # noqa: E731
    a1, a2 = axes_of(h1), axes_of(h2)
    apart = np.zeros(len(d), bool)
    for axis in a1 + a2:
        along = lambda v: np.abs(np.sum(axis * v, -1))  # noqa: E731, B023
        r = sum(0.5 * L * along(u[0]) + 0.5 * W * along(u[1]) for u in (a1, a2))
        apart |= np.abs(np.sum(d * axis, -1)) > r
    return ~apart


def _reference_hit(gap: float, speed: float, adv_speed: float) -> bool:
    t = np.arange(0.0, STEPS * 0.1, 1e-3)
    x0 = lt.turn_start(speed, gap)
    xc, yc = lt.conflict_point(x0)
    pe, he = _ego_pose(t, speed, x0)
    t_onc = lt.ego_arrival(gap) + gap
    po = np.stack([xc - adv_speed * (t - t_onc), np.full_like(t, yc)], -1)
    return bool(np.any(_overlap(pe, he, po, np.full_like(t, np.pi))))


@functools.cache
def _reference_band(speed: float, adv_speed: float) -> tuple[float, float]:
    """(lo, hi) [s]: the reference collides for gap in (lo, hi) (bisection to 1 ms)."""
    edges = []
    for outside in (-6.0, 8.0):
        inside = 0.0
        while abs(outside - inside) > 1e-3:
            mid = 0.5 * (inside + outside)
            inside, outside = (mid, outside) if _reference_hit(mid, speed, adv_speed) else (inside, mid)
        edges.append(0.5 * (inside + outside))
    return edges[0], edges[1]


SPEEDS = [(6.0, 13.89), (8.0, 13.89), (4.0, 5.0)]


def _band_cases():
    cases = []
    for speed, adv in SPEEDS:
        lo, hi = _reference_band(speed, adv)
        cases += [
            (speed, adv, lo - MARGIN, False),
            (speed, adv, lo + MARGIN, True),
            (speed, adv, 0.0, True),
            (speed, adv, hi - MARGIN, True),
            (speed, adv, hi + MARGIN, False),
        ]
    cases.append((6.0, 13.89, 3.0, False))  # the turn taken in a wide gap
    return cases


@functools.cache
def _simulate(policy: str):
    """Cases, metrics (B,) and trajectories (B, S, N) under ``policy`` (all-pairs search)."""
    cases = _band_cases()
    records = [make_record(FAMILY, dict(speed=s, adv_speed=a, gap=g), STEPS) for s, a, g, _ in cases]
    batch = pad_and_stack([r.scenario for r in records], num_agents=8)
    config = SimConfig(
        num_steps=STEPS, policy=policy_named(policy), search=SearchPlan(neighbours="all_pairs")
    )
    run = jax.jit(jax.vmap(lambda sc, p: rollout_trajectory(sc, p, config), in_axes=(0, None)))
    metrics, traj = jax.device_get(run(batch, default_policy_params(config)))
    return cases, metrics, traj


@pytest.mark.parametrize(("speed", "adv_speed"), SPEEDS)
def test_tangent_band_is_close_to_the_reference_band(speed, adv_speed):
    lo, hi = _reference_band(speed, adv_speed)
    band = lt.tangent_band(speed, adv_speed)
    assert -lo == pytest.approx(band, abs=0.1) and hi == pytest.approx(band, abs=0.1)


def test_constant_ego_collides_exactly_inside_the_reference_band():
    cases, m, _ = _simulate("constant")
    for k, (speed, adv, gap, hit) in enumerate(cases):
        assert bool(m.ego_collided[k]) == hit, (speed, adv, gap)
        if hit:
            assert int(m.collided_with[k]) == 1
        assert int(m.agents_offroad[k]) == 0, (speed, adv, gap)  # the turn stays on the road


def test_constant_ego_lateral_acceleration_is_v2_over_r():
    cases, _, traj = _simulate("constant")
    k = len(cases) - 1
    speed = cases[k][0]
    heading, v = traj.heading[k, :, 0], traj.speed[k, :, 0]
    lateral = v[1:] * np.diff(heading) / 0.1  # [m/s^2] v * yaw rate
    assert np.allclose(v, speed)
    assert lateral.max() == pytest.approx(speed**2 / lt.TURN_RADIUS, rel=0.07)
    assert heading[-1] == pytest.approx(0.5 * np.pi, abs=0.02)  # left the turn along +y
    x0 = lt.turn_start(speed, cases[k][2])
    assert traj.x[k, -1, 0] == pytest.approx(x0 + lt.TURN_RADIUS, abs=0.1)  # in the exit lane


def test_idm_ego_yields_to_the_oncoming_car():
    cases, m, traj = _simulate("idm")
    for k, (speed, _adv, gap, hit) in enumerate(cases):
        if hit and abs(gap) < 0.5:  # a conflict as planned: the IDM ego slows at its yield line
            assert traj.speed[k, :, 0].min() < 0.5 * speed, gap
            assert not bool(m.ego_collided[k]), gap


def test_window_search_is_certified_and_agrees_with_all_pairs():
    """The band cases again with the window search and no fallback: every step certified
    (window_overflow False) and the same collisions as the all-pairs search."""
    cases, ref, _ = _simulate("constant")
    records = [make_record(FAMILY, dict(speed=s, adv_speed=a, gap=g), STEPS) for s, a, g, _ in cases]
    batch = pad_and_stack([r.scenario for r in records], num_agents=8)
    config = SimConfig(num_steps=STEPS, policy=CONSTANT, search=SearchPlan(neighbours="window_only"))
    win = jax.device_get(simulate(batch, None, config))
    assert not np.any(win.window_overflow)
    for field in ("ego_collided", "collision_step", "collided_with", "agents_collided", "progress_m"):
        assert np.array_equal(getattr(win, field), getattr(ref, field)), field


def test_too_slow_an_ego_would_start_inside_its_turn():
    with pytest.raises(CatalogueError, match="unprotected_left_turn: parameter speed"):
        lt.check_box(dict(speed=2.0, gap=0.0), dict(speed=3.0, gap=0.0))
    assert math.isclose(lt.conflict_point(0.0)[1], 3.5)


def _platoon(gap: float, speed: float, followers: int = 9, headway: float = 1.2):
    """The left turn at ``gap`` with ``followers`` more oncoming cars behind the first, each
    ``headway`` [s] later (more agents than the neighbour window: the certificate has work)."""
    steps = STEPS
    layout = lt.make(dict(gap=gap, adv_speed=10.0, speed=speed), steps)
    first = layout.actors[0]
    more = [replace(first, x=first.x + 10.0 * headway * k) for k in range(1, followers + 1)]
    return build.scenario(replace(layout, actors=[first, *more]), steps, 0)


def test_window_search_with_a_platoon_equals_all_pairs():
    """Turning ego against a platoon of 10 oncoming cars over a sweep of gaps: what the engine
    delivers (window, all-pairs fallback where not proven) equals the all-pairs search."""
    scenarios = [_platoon(g, s) for g in np.linspace(-1.5, 9.0, 8) for s in (4.0, 7.0)]
    batch = pad_and_stack(scenarios, num_agents=16)
    out = {}
    for neighbours in ("window", "all_pairs"):
        config = SimConfig(num_steps=STEPS, policy=CONSTANT, search=SearchPlan(neighbours=neighbours))
        out[neighbours] = jax.device_get(simulate(batch, None, config))
    win, ref = out["window"], out["all_pairs"]
    for field in ("ego_collided", "collision_step", "collided_with", "agents_collided", "min_ttc_s"):
        assert np.array_equal(getattr(win, field), getattr(ref, field)), field
    assert len(set(ref.collided_with[ref.ego_collided].tolist())) >= 2  # hits different cars
