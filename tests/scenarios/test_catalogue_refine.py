"""Grid refinement near the failure boundary, against the red-light runner's closed-form band
(the boxes meet iff |tta| < 3.15 / speed + 3.15 / adv_speed): convergence, no duplicates,
determinism, naming precision and the round's source spec."""

from __future__ import annotations

import itertools
import random

import pytest

from drivesim.scenarios.catalogue import CatalogueError, CatalogueSource, family
from drivesim.scenarios.catalogue.params import parse_grid
from drivesim.scenarios.catalogue.refine import next_points, point_key, round_spec
from drivesim.scenarios.registry import SourceSpecError, check_spec

RUNNER = family("red_light_runner")
HALF_SIZES = 0.5 * 4.5 + 0.5 * 1.8  # [m] L/2 + W/2 of the cars


def band(speed: float, adv_speed: float) -> float:
    """The closed-form band edge [s]: the boxes meet iff |tta| < band."""
    return HALF_SIZES / speed + HALF_SIZES / adv_speed


def collided(point: dict[str, float]) -> bool:
    return abs(point["tta"]) < band(point["speed"], point["adv_speed"])


def refine(grid_text: str, rounds: int, oracle=collided) -> tuple[dict, list[int]]:
    """Every evaluated point {key: point} after ``rounds`` rounds and the points per round."""
    grid = parse_grid(RUNNER.name, RUNNER.params, grid_text)
    evaluated = {point_key(p.values()): p for p in map(grid.point, range(len(grid)))}
    counts = []
    for _ in range(rounds):
        new = next_points(grid, {k: oracle(p) for k, p in evaluated.items()})
        keys = [point_key(p.values()) for p in new]
        assert len(set(keys)) == len(keys) and not set(keys) & set(evaluated)  # no duplicates
        evaluated |= dict(zip(keys, new, strict=True))
        counts.append(len(new))
    return evaluated, counts


def bracket(points, speed: float) -> tuple[float, float]:
    """(largest collided tta, smallest safe tta above it) at one ego speed, tta >= 0."""
    line = sorted((p["tta"], collided(p)) for p in points if p["speed"] == speed and p["tta"] >= 0)
    inside = max(t for t, hit in line if hit)
    return inside, min(t for t, hit in line if not hit and t > inside)


@pytest.mark.parametrize("rounds", [1, 3, 5])
def test_bisection_at_a_fixed_speed_converges_on_the_band_edge(rounds):
    evaluated, counts = refine("tta=-4:4:9,speed=10", rounds)
    edge = band(10.0, 13.89)  # 0.5418 s
    inside, outside = bracket(evaluated.values(), 10.0)
    assert inside < edge < outside and outside - inside == pytest.approx(1.0 / 2**rounds)
    assert counts == [2] * rounds  # one midpoint per boundary crossing (tta > 0 and < 0)


def test_cells_in_two_dimensions_resolve_the_edge_on_every_base_speed():
    evaluated, counts = refine("tta=-4:4:9,speed=5:25:5", 3)
    for speed in (5.0, 10.0, 15.0, 20.0, 25.0):
        inside, outside = bracket(evaluated.values(), speed)
        assert inside < band(speed, 13.89) < outside and outside - inside == pytest.approx(1 / 8)
    # and between them: the new speeds (spacing 5 / 8) resolve the edge as well
    speeds = sorted({p["speed"] for p in evaluated.values()})
    assert 5.625 in speeds and 24.375 in speeds
    dense = 65 * 33  # the grid of the same resolution
    assert 45 + sum(counts) < dense / 4


def test_round_without_disagreement_and_without_swept_parameters_is_empty():
    assert refine("tta=5:8:4,speed=5:25:5", 2)[1] == [0, 0]  # all safe
    assert refine("tta=0,speed=10", 1)[1] == [0]  # a single point has no cell


def test_points_are_deterministic_whatever_the_outcome_order():
    grid = parse_grid(RUNNER.name, RUNNER.params, "tta=-4:4:9,speed=5:25:5")
    evaluated, _ = refine("tta=-4:4:9,speed=5:25:5", 2)
    items = [(k, collided(p)) for k, p in evaluated.items()]
    first = next_points(grid, dict(items))
    random.Random(1).shuffle(items)
    assert next_points(grid, dict(items)) == first
    assert first == sorted(first, key=lambda p: tuple(p.values()))


def test_values_keep_six_significant_digits_and_names_hold_them():
    evaluated, _ = refine("tta=0:1:4,speed=10", 4, oracle=lambda p: p["tta"] < 0.3)
    base = {0.0, 1 / 3, 2 / 3, 1.0}
    for key, point in evaluated.items():
        assert point["tta"] in base or float(f"{point['tta']:.6g}") == point["tta"]
        assert key == point_key(point.values())
    assert 1 / 3 in [p["tta"] for p in evaluated.values()]  # a grid value is simulated as is ...
    assert any(p["tta"] == 0.291667 for p in evaluated.values())  # ... a refined one is rounded


def test_unknown_outcomes_are_neither_repeated_nor_compared():
    grid = parse_grid(RUNNER.name, RUNNER.params, "tta=0:2:3,speed=10")
    keys = [point_key(grid.point(p).values()) for p in range(3)]
    assert next_points(grid, {keys[0]: True, keys[1]: None, keys[2]: False}) == []
    assert [p["tta"] for p in next_points(grid, {keys[0]: True, keys[1]: False, keys[2]: None})] == [0.5]


def test_a_hanging_point_of_a_finer_neighbour_splits_a_coarse_cell():
    # cell x in [0, 1], y in [0, 1] agrees at its corners, but its right neighbour was split and
    # put a failing point on their shared edge: the coarse cell is split too
    grid = parse_grid(RUNNER.name, RUNNER.params, "tta=0:2:3,speed=10:20:2")
    outcomes = {point_key(grid.point(p).values()): False for p in range(len(grid))}
    for tta, speed in itertools.product((1.0, 1.5, 2.0), (10.0, 15.0, 20.0)):
        outcomes.setdefault(point_key([tta, 13.89, speed]), False)
    outcomes[point_key([1.0, 13.89, 15.0])] = True
    new = next_points(grid, outcomes)
    assert {(p["tta"], p["speed"]) for p in new} >= {(0.5, 15.0), (0.0, 15.0), (0.5, 10.0), (0.5, 20.0)}


def test_round_spec_is_a_catalogue_source_numbered_from_first():
    points = [dict(tta=0.5, adv_speed=13.89, speed=10.0), dict(tta=-0.25, adv_speed=13.89, speed=12.5)]
    spec = round_spec("red_light_runner", points, 2, 45, None)
    check_spec(spec)
    source = CatalogueSource(spec.removeprefix("catalogue:"), steps=20)
    assert len(source) == 2 and source.first_id == 45
    record = source.load(1)
    assert record.scenario_id == 46 and record.name == "red_light_runner?tta=-0.25,adv_speed=13.89,speed=12.5"
    assert "refinement round 2: 2 points" in source.describe()


@pytest.mark.parametrize(
    "arg, words",
    [
        ("red_light_runner?tta=1&round=1", "round=R&first=F"),
        ("red_light_runner?tta=1&round=0&first=3", "option round='0' must be an integer >= 1"),
        ("red_light_runner?tta=1&round=1&first=-1", "option first='-1' must be an integer >= 0"),
        ("red_light_runner?tta=1&round=1&first=2&size=3", "refinement option 'size=3'"),
        ("red_light_runner?tta=99&round=1&first=2", "parameter tta=99 outside"),
        ("red_light_runner?&round=1&first=2", "needs points"),
    ],
)
def test_bad_round_specs_are_one_line_errors(arg, words):
    with pytest.raises((CatalogueError, SourceSpecError)) as err:
        check_spec("catalogue:" + arg)
    assert words in str(err.value) and "\n" not in str(err.value)
