"""Metric semantics on hand-built scenarios with values computed by hand."""

from __future__ import annotations

import numpy as np

from drivesim.core.types import METRIC_NAMES


def test_constant_speed_ego_crashes_into_stopped_car(core_runs):
    _, metrics, traj = core_runs("constant")
    m = metrics["crash"]
    assert bool(m.ego_collided) and int(m.collision_pairs) == 1
    # ego x after step t is 50 + 2 (t + 1); boxes 4.5 long first overlap at x >= 95.5: t = 22
    assert int(m.collision_step) == 22
    np.testing.assert_allclose(traj["crash"].x[:, 1], 100.0)  # the stopped car never moves
    np.testing.assert_allclose(float(m.progress_m), 80.0, rtol=1e-5)
    assert float(m.min_ttc_s) == 0.0  # the gap reached zero while closing at 20 m/s
    assert not bool(m.offroad) and not bool(m.has_nan)


def test_ttc_jerk_progress_by_hand(core_runs):
    _, metrics, _ = core_runs("constant")
    m = metrics["approach10"]
    assert not bool(m.ego_collided) and int(m.collision_step) == -1 and int(m.steps) == 10
    # before step t the gap is 100 - (50 + 2t) - 4.5, closing speed 20: min at t = 9
    np.testing.assert_allclose(float(m.min_ttc_s), (45.5 - 18.0) / 20.0, rtol=1e-5)
    # initial accel 1.5, constant-speed ego applies 0 from step 0 on: the one jump (15 m/s^3)
    # is at step 0, which max_jerk leaves out (jerk is measured from step 1), so 0
    assert float(m.max_jerk) == 0.0
    np.testing.assert_allclose(float(m.progress_m), 20.0, rtol=1e-5)


def test_open_loop_jerk_progress_and_offroad(core_runs):
    _, metrics, traj = core_runs("open_loop")
    short, full = metrics["lone10"], metrics["lone"]
    # accel 0,1,1,3,3,-2,-2,0,0,0 from 10 m/s: x advances by v_before * dt each step
    speeds_before = 10.0 + 0.1 * np.cumsum([0, 0, 1, 1, 3, 3, -2, -2, 0, 0])
    np.testing.assert_allclose(float(short.progress_m), 0.1 * speeds_before.sum(), rtol=1e-5)
    np.testing.assert_allclose(float(short.max_jerk), 50.0, rtol=1e-4)  # 3 -> -2 in one step
    assert not bool(short.offroad)
    assert bool(full.offroad)  # steering 0.1 rad from step 12 leaves the 3.6 m lane
    assert abs(traj["lone"].y[-1, 0]) > 1.8


def test_nan_flag_valid_vs_padding(core_runs):
    _, metrics, _ = core_runs("idm")
    assert bool(metrics["nan_valid"].has_nan)
    assert not bool(metrics["nan_pad"].has_nan)
    for name in METRIC_NAMES:  # a NaN in a padding slot changes no metric
        np.testing.assert_array_equal(
            getattr(metrics["nan_pad"], name), getattr(metrics["highway7"], name), name
        )


def test_nan_in_padding_slot_does_not_reach_mlp_ego(core_runs):
    """Padding agents never affect anything, also through the MLP observation."""
    _, metrics, traj = core_runs("mlp")
    assert not bool(metrics["nan_pad"].has_nan)
    for name in ("x", "y", "speed"):
        np.testing.assert_array_equal(
            getattr(traj["nan_pad"], name)[:, :5], getattr(traj["highway7"], name)[:, :5]
        )
    for name in METRIC_NAMES:
        np.testing.assert_array_equal(
            getattr(metrics["nan_pad"], name), getattr(metrics["highway7"], name), name
        )
