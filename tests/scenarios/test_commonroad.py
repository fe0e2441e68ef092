"""CommonRoad import: the real files, log replay, resampling and bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scenario_xml_cases import BILLION_LAUGHS, LANELET, PROBLEM, document, obstacle

from drivesim.core.types import CYCLIST, PEDESTRIAN, VEHICLE
from drivesim.scenarios.commonroad import ImportConfig, load_commonroad, resample_log
from drivesim.scenarios.sources import ScenarioError

# file -> (dynamic obstacles, log steps at 0.1 s, max plausible speed [m/s])
REAL = {
    "USA_US101-4_1_T-1.xml": (22, 101, 45.0),
    "USA_Lanker-1_1_T-1.xml": (24, 41, 45.0),
    "USA_Peach-4_8_T-1.xml": (9, 61, 45.0),
    "FRA_Anglet-1_1_T-1.xml": (8, 34, 45.0),
}


@pytest.fixture(scope="module")
def real(commonroad_dir):
    return {name: load_commonroad(commonroad_dir / name, ImportConfig(replay=True)) for name in REAL}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_file_loads(real, name):
    obstacles, steps, vmax = REAL[name]
    record = real[name]
    sc, log = record.scenario, record.scenario.log
    assert record.family == "commonroad" and record.name == name.removesuffix(".xml")
    assert sc.num_agents == obstacles + 1  # + the planning problem's ego (slot 0)
    assert int(sc.ego_index) == 0
    assert log.valid.shape == (steps, obstacles + 1)
    assert int(sc.episode_length) == steps - 1
    speeds = log.speed[log.valid]
    assert 0.0 <= speeds.min() and speeds.max() <= vmax
    assert log.replay[1:].all() and not log.replay[0]
    assert sc.road.centers.shape[1] <= 32  # modest polylines
    assert np.isclose(np.linalg.norm(sc.road.sort_axis), 1.0, atol=1e-5)


def test_layouts_and_sort_axis(real):
    # US-101 is a one-way highway heading south-east: the sort axis follows it.
    axis = real["USA_US101-4_1_T-1.xml"].scenario.road.sort_axis
    assert axis[0] > 0.6 and axis[1] < -0.6
    # Both layouts parse: Lanker is 2018b (<obstacle><role>), the others 2020a.
    assert real["USA_Lanker-1_1_T-1.xml"].num_agents == 25


def test_replay_reproduces_log(real):
    from drivesim.core.policies import idm_policy
    from drivesim.core.trajectory import simulate_trajectory
    from drivesim.core.types import SimConfig
    from drivesim.scenarios.batching import BucketKey, stack_bucket

    records = [real[n] for n in sorted(REAL)]
    batch = stack_bucket(records, BucketKey(agents=32, lanes=128, points=32, log_steps=128))
    _, traj = simulate_trajectory(batch, idm_policy(), SimConfig(num_steps=100))
    x, y = np.asarray(traj.x), np.asarray(traj.y)
    checked = 0
    for b, record in enumerate(records):
        log, n = record.scenario.log, record.num_agents
        for t in range(log.valid.shape[0] - 1):
            seen = log.valid[t + 1, 1:n]  # step t lands on log step t + 1; slot 0 is the ego
            np.testing.assert_allclose(x[b, t, 1:n][seen], log.xy[t + 1, 1:n, 0][seen], atol=1e-4)
            np.testing.assert_allclose(y[b, t, 1:n][seen], log.xy[t + 1, 1:n, 1][seen], atol=1e-4)
            assert np.asarray(traj.valid)[b, t, 1:n][seen].all()
            checked += int(seen.sum())
    assert checked > 2000


def test_idm_mode_and_log_divergence(commonroad_dir):
    from drivesim.core.policies import idm_policy
    from drivesim.core.trajectory import simulate_trajectory
    from drivesim.core.types import SimConfig
    from drivesim.scenarios.batching import BucketKey, stack_bucket

    records = [load_commonroad(commonroad_dir / n) for n in sorted(REAL)]
    assert not any(r.scenario.log.replay.any() for r in records)  # all present at step 0
    batch = stack_bucket(records, BucketKey(agents=32, lanes=128, points=32, log_steps=128))
    m, traj = simulate_trajectory(batch, idm_policy(), SimConfig(num_steps=100))  # same shapes: no recompile
    mean, final = np.asarray(m.log_div_mean), np.asarray(m.log_div_final)
    assert np.all((mean > 0.0) & (mean < 20.0)) and np.all((final > 0.0) & (final < 50.0))
    assert not np.asarray(m.has_nan).any()
    reached = 0
    for b, record in enumerate(records):  # ADE/FDE at 1, 3, 8 s against float64 NumPy
        ade, fde = _displacement_reference(record.scenario, np.asarray(traj.x)[b], np.asarray(traj.y)[b])
        for h in ("1s", "3s", "8s"):
            got_ade, got_fde = float(getattr(m, f"ade_{h}")[b]), float(getattr(m, f"fde_{h}")[b])
            if np.isnan(fde[h]):
                assert np.isnan(got_ade) and np.isnan(got_fde), (record.name, h)
                continue
            reached += 1
            np.testing.assert_allclose([got_ade, got_fde], [ade[h], fde[h]], rtol=1e-5, atol=1e-5)
    assert reached >= 6  # every file reaches 1 s and 3 s; the 41-step Lankershim log not 8 s


def _displacement_reference(scenario, x, y) -> tuple[dict, dict]:
    """ADE/FDE of the non-replayed logged agents at 1, 3 and 8 s from a trajectory (T, N):
    step t lands on log step t + 1; NaN where the run or the log ends before the horizon."""
    log = scenario.log
    steps = min(x.shape[0], int(scenario.episode_length))
    n = len(scenario.agents.valid)
    ade, fde = {}, {}
    for name, horizon in (("1s", 10), ("3s", 30), ("8s", 80)):
        total, count, last = 0.0, 0, np.nan
        for t in range(min(steps, horizon)):
            if t + 1 >= log.valid.shape[0]:
                break
            logged = log.valid[t + 1, :n] & scenario.agents.valid & ~log.replay[:n]
            dist = np.hypot(x[t, :n] - log.xy[t + 1, :n, 0], y[t, :n] - log.xy[t + 1, :n, 1])
            total, count = total + float(dist[logged].sum()), count + int(logged.sum())
            if t + 1 == horizon and logged.any():
                last = float(dist[logged].mean())
        fde[name] = last
        ade[name] = np.nan if np.isnan(last) else total / count
    return ade, fde


def test_resampling_to_coarser_dt(commonroad_dir):
    fine = load_commonroad(commonroad_dir / "USA_US101-4_1_T-1.xml")
    coarse = load_commonroad(commonroad_dir / "USA_US101-4_1_T-1.xml", ImportConfig(dt=0.2))
    assert coarse.scenario.log.valid.shape[0] == 51
    valid = fine.scenario.log.valid[::2]
    np.testing.assert_array_equal(coarse.scenario.log.valid, valid)
    np.testing.assert_array_equal(coarse.scenario.log.xy[valid], fine.scenario.log.xy[::2][valid])


def test_resample_interpolates_and_masks():
    xy = np.array([[[0.0, 0.0]], [[1.0, 2.0]], [[2.0, 4.0]]])
    heading = np.array([[3.1], [-3.1], [-3.1]])
    speed = np.array([[1.0], [3.0], [5.0]])
    valid = np.array([[True], [True], [False]])
    out_xy, out_h, out_v, out_valid = resample_log(xy, heading, speed, valid, 0.2, 0.1)
    assert out_xy.shape == (5, 1, 2)
    np.testing.assert_allclose(out_xy[1, 0], [0.5, 1.0])
    assert abs(abs(out_h[1, 0]) - np.pi) < 0.01  # shorter arc through +-pi, not through 0
    assert out_v[1, 0] == 2.0 and out_valid[:, 0].tolist() == [True, True, True, False, False]


def test_2018b_layout_and_intervals(tmp_path):
    path = tmp_path / "old.xml"
    obstacles = obstacle(1, layout="2018b") + obstacle(2, 70.0, layout="2018b")
    path.write_text(document(obstacles, version="2018b"))
    record = load_commonroad(path)
    assert record.num_agents == 3
    assert record.scenario.log.speed[1, 1] == 10.0  # centre of the interval [9, 11]


def _error(tmp_path, text: str | bytes, name: str = "bad.xml") -> ScenarioError:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ScenarioError) as info:
        load_commonroad(path)
    err = info.value
    assert err.path == str(path) and str(path) in str(err)
    return err


def test_truncated_file(tmp_path, commonroad_dir):
    data = (commonroad_dir / "USA_Peach-4_8_T-1.xml").read_bytes()[:5000]
    err = _error(tmp_path, data)
    assert "malformed or truncated" in err.reason and err.field.startswith("line")


def test_wrong_root(tmp_path):
    err = _error(tmp_path, document(obstacle(1), root="scenario"))
    assert err.field == "root element" and "<commonRoad>" in err.reason


def test_entity_expansion_refused(tmp_path):
    err = _error(tmp_path, BILLION_LAUGHS)
    assert "forbidden XML construct" in err.reason


def test_unknown_layout(tmp_path):
    err = _error(tmp_path, document(obstacle(1), version="1999z"))
    assert "unknown CommonRoad layout" in err.reason


def test_nan_coordinate(tmp_path):
    err = _error(tmp_path, document(obstacle(7, x_text="nan")))
    assert err.scenario_id == "TEST-1"
    assert err.field == "dynamicObstacle[id=7]/trajectory/state[1]/position/point/x"
    assert "non-finite" in err.reason


def test_a_huge_coordinate_is_one_error_without_warnings(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no NumPy overflow warning before the error
        err = _error(tmp_path, document(obstacle(7, x_text="1e300")))
    assert err.field.endswith("position/point/x") and "outside the physical range" in err.reason


def test_missing_field(tmp_path):
    orientation = "<orientation><exact>0</exact></orientation>"
    text = document(obstacle(3)).replace(orientation, "", 1)
    err = _error(tmp_path, text)
    assert err.field == "dynamicObstacle[id=3]/initialState/orientation" and "missing" in err.reason
    ego = "<velocity><exact>10</exact></velocity>\n    </initialState>\n  </planningProblem>"
    err = _error(tmp_path, document(obstacle(3)).replace(ego, "</initialState></planningProblem>"))
    assert err.field.endswith("initialState/velocity") and "missing" in err.reason


def test_a_state_without_velocity_gets_it_from_the_motion(tmp_path):
    """commonroad-io allows a state without velocity: the speed is the distance to the next
    recorded position over the time between them."""
    velocity = "<velocity><intervalStart>9</intervalStart><intervalEnd>11</intervalEnd></velocity>"
    text = document(obstacle(3)).replace(velocity + "</initialState>", "</initialState>", 1)
    log = _load(tmp_path, text).scenario.log
    assert float(log.speed[0, 1]) == pytest.approx(10.0)  # 1 m in 0.1 s to the state at step 1


def test_zero_agents(tmp_path):
    text = document("").replace(PROBLEM, "").replace(LANELET, "")
    err = _error(tmp_path, text)
    assert "zero agents" in err.reason


SECOND_LANELET = LANELET.replace('id="1"', 'id="2"').replace("1.75", "5.25").replace("-1.75", "1.75")


def test_a_map_alone_gets_generated_traffic_on_its_lanelets(tmp_path):
    """No dynamic obstacle, no planning problem: IDM traffic placed along the lanelets from
    the scenario id alone (the same file, the same traffic), the ego on the longest lanelet,
    no log; the episode is ImportConfig.steps_without_log steps."""
    text = document("").replace(PROBLEM, "").replace(LANELET, LANELET + SECOND_LANELET)
    record = _load(tmp_path, text)
    sc = record.scenario
    n = record.num_agents
    assert 8 <= n <= 16  # two 200 m lanelets, 25-45 m apart
    assert sc.log is None and int(sc.episode_length) == ImportConfig().steps_without_log
    assert (
        int(sc.ego_index) == 0 and abs(float(sc.agents.x[0])) <= 0.5
    )  # re-centred on the ego's start (to 1 m)
    y = np.asarray(sc.agents.y, np.float64)  # on a lane centre (y = 0 or 3.5) less the origin (0 or 4)
    on_centre = [np.abs((y + oy)[:, None] - np.array([0.0, 3.5])).min(axis=1) < 1e-4 for oy in (0.0, 4.0)]
    assert any(ok.all() for ok in on_centre)
    speed = np.asarray(sc.agents.speed)
    assert np.all((speed >= 0.6 * 13.9 - 1e-4) & (speed <= 0.9 * 13.9 + 1e-4))  # no limit given: 50 km/h
    again = load_commonroad(tmp_path / "ok.xml").scenario  # the same file: the same traffic
    np.testing.assert_array_equal(again.agents.x, sc.agents.x)
    np.testing.assert_array_equal(again.agents.speed, sc.agents.speed)
    other = _load(tmp_path, text, "copy.xml").scenario  # another file: another id, other traffic
    assert int(other.scenario_id) != int(sc.scenario_id)
    assert not np.array_equal(np.asarray(other.agents.x), np.asarray(sc.agents.x))


def test_a_map_of_short_lanelets_gets_the_ego_alone(tmp_path):
    short = LANELET.replace("<x>200</x>", "<x>2</x>")
    record = _load(tmp_path, document("").replace(PROBLEM, "").replace(LANELET, short))
    assert record.num_agents == 1 and record.scenario.log is None


def _load(tmp_path, text: str, name: str = "ok.xml"):
    path = tmp_path / name
    path.write_text(text)
    return load_commonroad(path)


def test_a_map_without_dynamic_obstacles_is_the_ego_alone(tmp_path):
    record = _load(tmp_path, document(""))
    assert record.num_agents == 1 and float(record.scenario.agents.speed[0]) == 10.0
    assert record.scenario.log is None and int(record.scenario.episode_length) == 80  # not 1 step


def test_without_a_planning_problem_the_first_obstacle_is_the_ego(tmp_path):
    record = _load(tmp_path, document(obstacle(5, 40.0) + obstacle(6, 70.0)).replace(PROBLEM, ""))
    sc = record.scenario
    assert record.num_agents == 2 and int(sc.ego_index) == 0
    # re-centred on the ego's start: obstacle 5 at x = 40 is the origin, obstacle 6 30 m ahead
    assert float(sc.agents.x[0]) == 0.0 and float(sc.agents.x[1]) == 30.0
    assert not bool(sc.log.replay[0])  # the ego is driven, not replayed


def test_point_mass_states_take_the_velocity_direction(tmp_path):
    pm = (
        "<state><position><point><x>{x}</x><y>{y}</y></point></position><time><exact>{t}</exact></time>"
        "<velocity><exact>3</exact></velocity><velocityY><exact>4</exact></velocityY></state>"
    )
    states = "".join(pm.format(x=40 + 0.3 * t, y=0.4 * t, t=t) for t in range(1, 4))
    text = document(obstacle(7)).replace(
        text_between(document(obstacle(7)), "<trajectory>", "</trajectory>"), states
    )
    log = _load(tmp_path, text).scenario.log
    assert float(log.speed[1, 1]) == pytest.approx(5.0)
    assert float(log.heading[1, 1]) == pytest.approx(np.arctan2(4, 3), abs=1e-6)


def test_an_occupancy_set_prediction_gives_the_shape_centres(tmp_path):
    occ = (
        "<occupancy><shape><rectangle><length>4.5</length><width>1.8</width><orientation>0.1</orientation>"
        "<center><x>{x}</x><y>0</y></center></rectangle></shape><time><exact>{t}</exact></time></occupancy>"
    )
    body = document(obstacle(8))
    sets = "<occupancySet>" + "".join(occ.format(x=40 + 2 * t, t=t) for t in range(1, 5)) + "</occupancySet>"
    text = body.replace(
        "<trajectory>" + text_between(body, "<trajectory>", "</trajectory>") + "</trajectory>", sets
    )
    sc = _load(tmp_path, text).scenario
    log = sc.log
    origin = 10.0  # the ego's start
    np.testing.assert_allclose(
        np.asarray(log.xy)[1:5, 1, 0], [42 - origin, 44 - origin, 46 - origin, 48 - origin]
    )
    assert float(log.speed[2, 1]) == pytest.approx(20.0)  # 2 m per 0.1 s step
    assert float(log.heading[2, 1]) == pytest.approx(0.1, abs=1e-6)


def test_two_files_with_one_benchmark_id_get_two_scenario_ids(tmp_path):
    a = _load(tmp_path, document(obstacle(1)), "TEST-1.xml")
    b = _load(tmp_path, document(obstacle(1)), "TEST-1_copy.xml")
    assert int(a.scenario.scenario_id) != int(b.scenario.scenario_id)
    assert a.name == "TEST-1" and b.name == "TEST-1 (TEST-1_copy.xml)"


def text_between(text: str, start: str, end: str) -> str:
    i = text.index(start) + len(start)
    return text[i : text.index(end, i)]


def test_too_many_agents(tmp_path):
    many = "".join(f'<dynamicObstacle id="{i}"/>' for i in range(100_000))
    err = _error(tmp_path, document(many))
    assert "too many agents" in err.reason and "100000" in err.reason


def test_an_obstacle_id_twice_is_refused(tmp_path):
    """Two obstacles with one id would be two agents overlapping from step 0."""
    err = _error(tmp_path, document(obstacle(4) + obstacle(9) + obstacle(4)))
    assert err.field == "dynamicObstacle[id=4]" and "more than once" in err.reason


def test_oversized_file(tmp_path):
    path = tmp_path / "big.xml"
    path.write_text(document(obstacle(1)))
    with pytest.raises(ScenarioError, match="more than the 100 allowed"):
        load_commonroad(path, ImportConfig(max_bytes=100))


@pytest.mark.parametrize("layout", ["2020a", "2018b"])
def test_pedestrian_and_bicycle_obstacles_import_with_their_types(tmp_path, layout):
    def typed(oid: int, x0: float, kind: str) -> str:
        return obstacle(oid, x0, layout=layout).replace("<type>car</type>", f"<type>{kind}</type>")

    obstacles = typed(1, 40.0, "pedestrian") + typed(2, 60.0, "bicycle") + typed(3, 80.0, "motorcycle")
    path = tmp_path / "vru.xml"
    path.write_text(document(obstacles, version=layout))
    kind = load_commonroad(path).scenario.agents.kind
    assert kind.dtype == np.int32
    assert kind.tolist() == [VEHICLE, PEDESTRIAN, CYCLIST, VEHICLE]  # ego, then the obstacles in order


def test_real_files_have_only_vehicles(real):
    """The shipped files hold cars, a truck and a motorcycle: all import as vehicles."""
    for record in real.values():
        assert not record.scenario.agents.kind.any(), record.name
