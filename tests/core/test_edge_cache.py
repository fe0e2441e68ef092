"""Road-edge candidates on large maps (drivesim.core.edge_cache): what they decide is what
every lane says, after the agents moved and after their candidates were taken again; and
on real recorded traffic a rollout with them gives the every-lane metrics bit for bit with
no scenario left to the exact fallback."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core import edge_cache, road
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import simulate
from drivesim.core.types import SimConfig

LANES, POINTS, AGENTS = 40, 12, 96


def _area(seed: int) -> road.Drivable:
    """A dense map of LANES wandering lanes of POINTS points in a 120 m square (some lanes
    invalid, some segments of zero length), prepared for candidates."""
    rng = np.random.default_rng(seed)
    start = rng.uniform(0.0, 120.0, (LANES, 1, 2))
    steps = rng.normal(0.0, 4.0, (LANES, POINTS - 1, 2))
    steps[:, -2:] = 0.0  # padding: the last points repeated
    centers = np.concatenate([start, start + np.cumsum(steps, axis=1)], axis=1).astype(np.float32)
    widths = rng.uniform(2.5, 4.0, LANES).astype(np.float32)
    valid = rng.uniform(size=LANES) > 0.1
    segments = jax.tree_util.tree_map(
        lambda v: jnp.swapaxes(v, -1, -2), road.lane_segments(jnp.asarray(centers))
    )
    area = road.Drivable(seg=segments, widths=jnp.asarray(widths), lane_valid=jnp.asarray(valid))
    return edge_cache.prepare(area, None)[0]


def _boxes(rng, centre_x, centre_y, spread: float):
    """Box corners (cx, cy) (AGENTS, 4) of cars around the points, moved up to ``spread``."""
    x = centre_x + rng.uniform(-spread, spread, AGENTS).astype(np.float32)
    y = centre_y + rng.uniform(-spread, spread, AGENTS).astype(np.float32)
    heading = rng.uniform(-np.pi, np.pi, AGENTS).astype(np.float32)
    length = np.full(AGENTS, 4.5, np.float32)
    width = np.full(AGENTS, 1.9, np.float32)
    return (
        jnp.asarray(x),
        jnp.asarray(y),
        road.box_corners(x, y, np.cos(heading), np.sin(heading), length, width),
    )


def _every_lane(cx, cy, area) -> np.ndarray:
    """(AGENTS,) the every-lane signed distance of each box's worst corner."""
    return np.asarray(jnp.min(road.edge_distance(cx, cy, area), axis=-1))


@pytest.mark.parametrize(("seed", "candidates"), [(0, 4), (1, 4), (2, edge_cache.CANDIDATES)])
def test_what_the_candidates_decide_is_what_every_lane_says(seed, candidates, monkeypatch):
    """With few candidates many corners lie in segments left out: only the bound decides them."""
    monkeypatch.setattr(edge_cache, "CANDIDATES", candidates)
    area = _area(seed)
    assert area.flat is not None and area.flat.shape == (7, LANES * (POINTS - 1))
    rng = np.random.default_rng(100 + seed)
    x0 = rng.uniform(-10.0, 130.0, AGENTS).astype(np.float32)
    y0 = rng.uniform(-10.0, 130.0, AGENTS).astype(np.float32)
    rows = edge_cache.start(jnp.asarray(x0), jnp.asarray(y0), area)
    assert rows.shape == (7 * candidates + 3, AGENTS)
    decided = 0
    for spread in (0.0, 1.0, 5.0, 20.0):  # the further the boxes moved, the less is decided
        x, y, (cx, cy) = _boxes(rng, x0, y0, spread)
        on, off = map(np.asarray, edge_cache.decide(cx, cy, rows))
        edge = _every_lane(cx, cy, area)
        assert not (on & off).any()
        assert (edge[on] >= 0.0).all(), "a box decided on the road has a corner off it"
        assert (edge[off] < 0.0).all(), "a box decided off the road is on it"
        decided += int(on.sum() + off.sum())
        # the boxes measured against every lane take their candidates where they are
        slots = jnp.asarray(np.arange(AGENTS, dtype=np.int32))
        moved = edge_cache.refresh(rows, slots, x, y, area)
        on2, off2 = map(np.asarray, edge_cache.decide(cx, cy, moved))
        assert (edge[on2] >= 0.0).all() and (edge[off2] < 0.0).all()
        assert (on2 | off2).sum() >= (on | off).sum()
    assert decided > AGENTS  # the test is not vacuous: most boxes near their start are decided


def test_a_refresh_writes_only_its_slots():
    area = _area(3)
    rng = np.random.default_rng(7)
    x0 = jnp.asarray(rng.uniform(0.0, 120.0, AGENTS).astype(np.float32))
    y0 = jnp.asarray(rng.uniform(0.0, 120.0, AGENTS).astype(np.float32))
    rows = edge_cache.start(x0, y0, area)
    slots = jnp.asarray([5, AGENTS], jnp.int32)  # AGENTS: an empty slot, dropped
    moved = edge_cache.refresh(rows, slots, x0[jnp.asarray([5, 0])] + 30.0, y0[jnp.asarray([5, 0])], area)
    changed = np.flatnonzero(np.any(np.asarray(moved) != np.asarray(rows), axis=0))
    assert changed.tolist() == [5]
    assert float(moved[-2, 5]) == pytest.approx(float(x0[5]) + 30.0)


def test_a_small_map_keeps_no_candidates():
    centers = jnp.zeros((5, 2, 2)).at[:, 1, 0].set(100.0)
    seg = jax.tree_util.tree_map(lambda v: jnp.swapaxes(v, -1, -2), road.lane_segments(centers))
    area, fits = edge_cache.prepare(
        road.Drivable(seg=seg, widths=jnp.full(5, 3.5), lane_valid=jnp.ones(5, bool)), 1
    )
    assert bool(fits) and area.flat is None and edge_cache.start(jnp.zeros(4), jnp.zeros(4), area) is None


def test_the_table_keeps_the_real_segments_and_measures_as_every_slot():
    full = _area(4)
    real = np.asarray((full.seg.ok > 0) & full.lane_valid).reshape(-1)
    kept, fits = edge_cache.prepare(dataclasses.replace(full, flat=None), int(real.sum()) + 5)
    assert bool(fits) and kept.flat.shape == (7, int(real.sum()) + 5)
    fields = [np.asarray(getattr(full.seg, name)).reshape(-1)[real] for name in edge_cache.FIELDS]
    half = np.broadcast_to(0.5 * np.asarray(full.widths), full.seg.ax.shape).reshape(-1)[real]
    np.testing.assert_array_equal(np.asarray(kept.flat)[:, : real.sum()], np.stack([*fields, half]))
    assert np.all(np.asarray(kept.flat)[6, real.sum() :] == -np.inf)  # empty slots: never near
    rng = np.random.default_rng(5)
    x, y = (jnp.asarray(rng.uniform(-20.0, 140.0, (64, 4)).astype(np.float32)) for _ in range(2))
    slots = road.edge_distance(x, y, dataclasses.replace(full, flat=None))  # every (S, L) slot
    np.testing.assert_array_equal(np.asarray(road.edge_distance(x, y, kept)), np.asarray(slots))
    _, fits = edge_cache.prepare(dataclasses.replace(full, flat=None), int(real.sum()) - 1)
    assert not bool(fits)


def test_recorded_traffic_runs_without_the_fallback_and_as_every_lane(womd_dir, assert_bitwise):
    """WOMD files, where up to 42 agents a step sit near their corridor's edge: the default
    searches (all pairs on these maps, each corner against its own route and candidates,
    the real segments in one table) flag no scenario and give every lane's metrics bit for
    bit; with a table too small for the maps every scenario is flagged, and the fallback
    gives the same metrics."""
    from drivesim.scenarios.batching import bucket_key, stack_bucket
    from drivesim.scenarios.commonroad import ImportConfig
    from drivesim.scenarios.remainders import merged_key
    from drivesim.scenarios.womd import load_womd

    records = [load_womd(p, ImportConfig(replay=True)) for p in sorted(womd_dir.glob("*.json"))]
    batch = stack_bucket(records, merged_key(bucket_key(r.scenario) for r in records))
    config = SimConfig(num_steps=80)
    got = jax.device_get(simulate(batch, idm_policy(), config))
    assert not got.window_overflow.any()
    every_lane = config.with_search(neighbours="all_pairs", edge_search="all_lanes")
    assert_bitwise(got, jax.device_get(simulate(batch, idm_policy(), every_lane)), ())
    assert int(np.sum(got.agents_offroad)) > 0  # off-road agents were found, not skipped
    small = jax.device_get(simulate(batch, idm_policy(), config.with_search(map_segments=64)))
    assert small.window_overflow.all()
    assert_bitwise(got, small, ("window_overflow",))
