"""Line of sight (core.occlusion, separating axes in float32) against float64 segment clipping,
and the ego observation with occlusion on against a float64 loop over every sight line."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from drivesim.core.observation import neighbour_present
from drivesim.core.occlusion import crosses_box, sight_points
from drivesim.core.policies import CONSTANT, MLP
from drivesim.core.rollout import observation_of, reset
from drivesim.core.types import SimConfig
from drivesim.scenarios.catalogue import make_record
from drivesim.scenarios.catalogue.build import LANE_WIDTH
from drivesim.scenarios.catalogue.families import PARK_CLEARANCE

CASES = 4000


def _segment_hits_box(a, b, box) -> tuple[bool, float]:
    """float64 test of the closed segment a-b against the open box (x, y, heading, length,
    width): (hit, by Liang-Barsky clipping of the segment's parameter to the box's slabs; the
    smallest overlap over the separating axes, near 0 where the answer is a rounding matter).
    The engine uses the separating axes alone, in float32."""
    x, y, heading, length, width = box
    u = np.array([np.cos(heading), np.sin(heading)])
    v = np.array([-np.sin(heading), np.cos(heading)])
    d = b - a
    lo, hi, overlaps = 0.0, 1.0, []
    for axis, half in ((u, 0.5 * length), (v, 0.5 * width)):
        origin, step = np.dot(a - (x, y), axis), np.dot(d, axis)
        if step == 0:
            lo, hi = (lo, hi) if abs(origin) < half else (1.0, 0.0)
        else:
            t_a, t_b = sorted(((-half - origin) / step, (half - origin) / step))
            lo, hi = max(lo, t_a), min(hi, t_b)
        ends = sorted((origin, origin + step))
        overlaps.append(min(ends[1] + half, half - ends[0]))
    normal = np.array([-d[1], d[0]])
    if np.hypot(*normal) > 0:
        normal = normal / np.hypot(*normal)
        reach = abs(np.dot(u, normal)) * 0.5 * length + abs(np.dot(v, normal)) * 0.5 * width
        overlaps.append(reach - abs(np.dot(a - (x, y), normal)))
    return lo < hi, min(overlaps)


def test_crosses_box_matches_segment_clipping():
    rng = np.random.default_rng(0)
    a = rng.uniform(-6, 6, (CASES, 2))
    b = rng.uniform(-6, 6, (CASES, 2))
    b[:50] = a[:50]  # points: blocked only inside a box
    b[50:100, 1] = a[50:100, 1]  # segments parallel to x
    box = np.column_stack(
        [rng.uniform(-3, 3, CASES), rng.uniform(-3, 3, CASES), rng.uniform(-np.pi, np.pi, CASES)]
        + [rng.uniform(0.3, 5, CASES), rng.uniform(0.3, 2.5, CASES)]
    )
    box[100:150, 2] = 0.0  # axis-aligned boxes with axis-parallel segments
    f32 = lambda v: jnp.asarray(v, jnp.float32)  # noqa: E731
    got = crosses_box(
        (f32(a[:, 0]), f32(a[:, 1])),
        (f32(b[:, 0]), f32(b[:, 1])),
        (
            f32(box[:, 0]),
            f32(box[:, 1]),
            f32(np.cos(box[:, 2])),
            f32(np.sin(box[:, 2])),
            f32(box[:, 3]),
            f32(box[:, 4]),
        ),
    )
    ref = [_segment_hits_box(a[i], b[i], box[i]) for i in range(CASES)]
    want = np.array([hit for hit, _ in ref])
    clear = np.array([abs(margin) > 1e-4 for _, margin in ref])
    assert clear.mean() > 0.99 and 0.2 < want.mean() < 0.8
    np.testing.assert_array_equal(np.asarray(got)[clear], want[clear])


def test_sight_points_are_centre_and_corners():
    px, py = sight_points(*(jnp.asarray([v], jnp.float32) for v in (1.0, 2.0, 0.0, 1.0, 4.0, 2.0)))
    # heading +y: along is +y, across (left) is -x
    np.testing.assert_allclose(np.asarray(px)[0], [1.0, 0.0, 2.0, 0.0, 2.0], atol=1e-6)
    np.testing.assert_allclose(np.asarray(py)[0], [2.0, 4.0, 4.0, 0.0, 0.0], atol=1e-6)


def _reference_present(a, neighbours: int) -> tuple[list[bool], list[bool]]:
    """float64 present flags of the ego's neighbour slots -K..K (0 left out) from sorted
    agents ``a`` (numpy fields (N,)), and whether each is clear of rounding (every sight
    line's margin against every box above 1e-4 m)."""
    n, ego = len(a["x"]), int(np.argmax(a["is_ego"]))
    eye = np.array([a["x"][ego], a["y"][ego]])
    present, clear = [], []
    for k in [k for k in range(-neighbours, neighbours + 1) if k != 0]:
        j = ego + k
        if not (0 <= j < n and a["valid"][j]):
            present.append(False)
            clear.append(True)
            continue
        c, s = np.cos(a["heading"][j]), np.sin(a["heading"][j])
        seen, margins = False, []
        for du, dv in zip((0, 1, 1, -1, -1), (0, 1, -1, 1, -1), strict=True):
            u, v = du * 0.5 * a["length"][j], dv * 0.5 * a["width"][j]
            point = np.array([a["x"][j] + u * c - v * s, a["y"][j] + u * s + v * c])
            blocked = False
            for b in range(n):
                if b in (ego, j) or not a["valid"][b]:
                    continue
                box = (a["x"][b], a["y"][b], a["heading"][b], a["length"][b], a["width"][b])
                hit, margin = _segment_hits_box(eye, point, box)
                blocked |= hit
                margins.append(abs(margin))
            seen |= not blocked
        present.append(seen)
        clear.append(min(margins, default=1.0) > 1e-4)
    return present, clear


def test_observation_present_flags_match_a_float64_sight_line_loop():
    """Initial states of 16 highway scenarios of 24 agents (queues on 2-5 lanes: most
    neighbours hide behind others): the observation's present flags under occlusion equal
    the float64 loop over every sight line and every box."""
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    k = 6
    batch = pad_and_stack([generate("highway", i, FamilyConfig(num_agents=24)).scenario for i in range(16)])
    config = SimConfig(policy=MLP, occlusion=True, obs_neighbours=k)
    states = jax.jit(jax.vmap(lambda sc: reset(sc, config)))(batch)
    obs = np.asarray(jax.jit(jax.vmap(lambda st: observation_of(st, config)))(states))
    hidden = agreed = 0
    for b in range(obs.shape[0]):
        a = jax.tree_util.tree_map(lambda v, b=b: np.asarray(v[b]), states.agents)  # one scenario's rows
        names = ("x", "y", "heading", "length", "width", "valid", "is_ego")
        want, clear = _reference_present({f: np.asarray(getattr(a, f), np.float64) for f in names}, k)
        got = neighbour_present(obs[b]) > 0.5
        sure = np.array(clear)
        np.testing.assert_array_equal(got[sure], np.array(want)[sure], err_msg=f"scenario {b}")
        agreed += int(sure.sum())
        slots = int(np.argmax(a.is_ego)) + np.r_[-k:0, 1 : k + 1]
        inside = (slots >= 0) & (slots < len(a.x))
        hidden += int((inside & np.asarray(a.valid)[np.clip(slots, 0, len(a.x) - 1)] & ~got).sum())
    assert agreed > 0.95 * 16 * 2 * k and hidden > 16  # occlusion hides many, and is checked


def _observation(scenario, occlusion: bool) -> np.ndarray:
    """The ego's observation (2 neighbours each side) in the initial state of ``scenario``."""
    config = SimConfig(policy=CONSTANT, occlusion=occlusion, obs_neighbours=2)
    return np.asarray(observation_of(reset(jax.tree_util.tree_map(jnp.asarray, scenario), config), config))


def test_pedestrian_behind_a_parked_car_is_hidden_until_it_steps_out():
    scene = make_record("occluded_pedestrian", {"tta": 2.0}).scenario  # ego, parked car, pedestrian
    seen, hidden = _observation(scene, False), _observation(scene, True)
    # the present flags of neighbours -2, -1, +1, +2
    np.testing.assert_array_equal(neighbour_present(seen), [0, 0, 1, 1])
    np.testing.assert_array_equal(neighbour_present(hidden), [0, 0, 1, 0])  # +2, the pedestrian, is hidden
    np.testing.assert_array_equal(hidden[:19], seen[:19])  # all else, the parked car included
    np.testing.assert_array_equal(hidden[19:], 0.0)
    # the pedestrian one step out past the car's road-side face: its left corners are seen
    out = dataclasses.replace(scene.agents, y=scene.agents.y.copy())
    out.y[2] = -(0.5 * LANE_WIDTH + PARK_CLEARANCE) + 0.3  # the car's road-side face + 0.3 m
    stepped = dataclasses.replace(scene, agents=out)
    np.testing.assert_array_equal(_observation(stepped, True), _observation(stepped, False))
    # nothing in the way: the same pedestrian without the parked car is seen
    bare = make_record("crossing_pedestrian", {"tta": 2.0}).scenario
    np.testing.assert_array_equal(_observation(bare, True), _observation(bare, False))
