"""core.lane_order against a brute-force loop over every agent pair, with many ties."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.core import lane_order
from drivesim.core.lane_order import every_lane, in_lane, rows_of

LANES, AGENTS = 3, 12


def _brute(along, lateral, width, valid, claims):
    """(lead, lead_ds, follow, follow_ds) (L, N) by the all-pairs rule: nearest member ahead
    (ds > 0) and behind (ds <= 0, not the agent itself), first index on ties; N: none."""
    num_lanes, n = along.shape
    lead = np.full((num_lanes, n), n)
    follow = np.full((num_lanes, n), n)
    lead_ds = np.full((num_lanes, n), np.inf, np.float32)
    follow_ds = np.full((num_lanes, n), -np.inf, np.float32)
    for lane in range(num_lanes):
        for i in range(n):
            for j in range(n):
                inside = abs(lateral[lane, j]) < 0.5 * width[lane] or claims[j, lane]
                if j == i or not (inside and valid[j] and np.isfinite(along[lane, j])):
                    continue
                ds = np.float32(along[lane, j] - along[lane, i])
                if ds > 0 and ds < lead_ds[lane, i]:
                    lead[lane, i], lead_ds[lane, i] = j, ds
                if ds <= 0 and ds > follow_ds[lane, i]:
                    follow[lane, i], follow_ds[lane, i] = j, ds
    return lead, lead_ds, follow, follow_ds


def _case(seed: int):
    rng = np.random.default_rng(seed)
    along = rng.integers(-4, 5, (LANES, AGENTS)).astype(np.float32) * 2.5  # many exact ties
    lateral = rng.choice([-3.0, -1.0, 0.0, 1.0, 1.75, 3.0], (LANES, AGENTS)).astype(np.float32)
    width = np.full(LANES, 3.5, np.float32)
    valid = rng.random(AGENTS) > 0.15
    claims = np.zeros((AGENTS, LANES), bool)
    claims[rng.integers(0, AGENTS, 3), rng.integers(0, LANES, 3)] = True
    if seed % 4 == 0:
        along[0, 0] = np.nan  # an agent off every frame: no neighbours, and nobody's neighbour
    return along, lateral, width, valid, claims


@pytest.mark.parametrize("count_max", [AGENTS, 0], ids=["counting", "sorting"])
def test_every_lane_matches_brute_force_with_ties(count_max, monkeypatch):
    monkeypatch.setattr(lane_order, "COUNT_MAX_AGENTS", count_max)
    run = jax.jit(lambda *args: every_lane(*args))  # a fresh trace per parameter
    tied = 0
    for seed in range(30):
        case = _case(seed)
        got = jax.device_get(run(*map(jnp.asarray, case)))
        lead, lead_ds, follow, follow_ds = _brute(*case)
        np.testing.assert_array_equal(got.lead, lead, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(got.follow, follow, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(got.lead_ds, lead_ds, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(got.follow_ds, follow_ds, err_msg=f"seed {seed}")
        np.testing.assert_array_equal(got.has_follow, follow < AGENTS)
        tied += int(np.sum(follow_ds == 0.0))
    assert tied > 20, tied  # the cases exercise followers level with the agent


def test_in_lane_picks_rows_and_none():
    case = _case(1)
    lanes = jax.device_get(every_lane(*map(jnp.asarray, case)))
    lane = np.arange(AGENTS) % LANES
    has = np.arange(AGENTS) % 5 != 0
    got = jax.device_get(in_lane(lanes, jnp.asarray(np.where(has, lane, -1))))
    cols = np.arange(AGENTS)
    np.testing.assert_array_equal(got.lead, np.where(has, lanes.lead[lane, cols], AGENTS))
    np.testing.assert_array_equal(got.offset, np.where(has, case[1][lane, cols], 0.0))
    assert not np.any(got.has_follow[~has])
    table = np.arange(AGENTS * 2, dtype=np.float32).reshape(AGENTS, 2) + 1.0
    picked = np.asarray(rows_of(jnp.asarray(table), got.lead))
    want = np.where((got.lead < AGENTS)[:, None], table[np.minimum(got.lead, AGENTS - 1)], 0.0)
    np.testing.assert_array_equal(picked, want)
