"""drivesim's IDM with ``SimConfig(position_update="ballistic")`` against real SUMO (issue #53).

A braking platoon on one straight lane: the leader cruises at 20 m/s, brakes at 3.5 m/s^2 to
5 m/s, holds, then speeds up at 1.5 m/s^2 to 15 m/s; four IDM followers (the last is the IDM
ego) start off equilibrium. SUMO (eclipse-sumo, ``--step-method.ballistic``, IDM with one
iteration per 0.1 s step) drives the leader on that profile through TraCI; drivesim replays
SUMO's recorded leader and simulates the followers. Their speeds must agree to float32
rounding, 1e-3 m/s, at every step; the default explicit-Euler update must not.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from drivesim.core.policies import idm_policy
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import IDM_DEFAULTS, LogTrajectory, SimConfig, replace

from . import builders
from .sumo_reference import IDM, Vehicles, idm_platoon, run_platoon

DT = 0.1
STEPS = 200  # 20 s
LENGTH = 4.5
FRONT = np.array([160.0, 125.0, 92.0, 60.0, 24.0])  # front bumpers [m], leader first
SPEED0 = np.array([20.0, 20.0, 19.0, 21.0, 20.5])
VEHICLES = Vehicles(length=LENGTH, dt=DT)
TOL_V = 1e-3  # [m/s] float32 rounding over 200 steps


def leader_profile(steps: int = STEPS, dt: float = DT) -> np.ndarray:
    """(steps+1,) leader speed: 20 m/s to t=2 s, -3.5 m/s^2 down to 5 m/s, 5 m/s to t=11 s,
    +1.5 m/s^2 up to 15 m/s."""
    v = np.empty(steps + 1)
    v[0] = 20.0
    for k in range(steps):
        t = (k + 1) * dt  # the end of step k
        if t <= 2.0 + 1e-9:
            v[k + 1] = 20.0
        elif t <= 11.0 + 1e-9:
            v[k + 1] = max(5.0, v[k] - 3.5 * dt)
        else:
            v[k + 1] = min(15.0, v[k] + 1.5 * dt)
    return v


def drivesim_platoon(sumo_pos: np.ndarray, sumo_speed: np.ndarray, position_update: str):
    """drivesim's run of the platoon: vehicle 0 replays SUMO's leader, the others are IDM
    agents (the last the ego); front position and speed (STEPS+1, N) float64, step 0 the
    initial state."""
    n = len(FRONT)
    centre = sumo_pos - 0.5 * LENGTH  # drivesim x is the box centre, SUMO's the front bumper
    sc = builders.make_scenario(
        [(x, 0.0) for x in centre[0]],
        0.0,
        sumo_speed[0],
        [0] * n,
        builders.straight_lanes(1, length=1000.0),
        [3.6],
        ego=n - 1,
        length=LENGTH,
        episode_length=STEPS,
    )
    f32 = np.float32
    log = LogTrajectory(
        xy=np.stack([centre, np.zeros_like(centre)], -1).astype(f32),
        heading=np.zeros(centre.shape, f32),
        speed=sumo_speed.astype(f32),
        valid=np.ones(centre.shape, bool),
        replay=np.arange(n) == 0,
    )
    config = SimConfig(num_steps=STEPS, dt=DT, position_update=position_update)
    _, traj = jax.device_get(
        simulate_trajectory(builders.batch([replace(sc, log=log)]), idm_policy(), config)
    )
    x = np.concatenate([centre[:1], np.asarray(traj.x[0, :, :n], np.float64)]) + 0.5 * LENGTH
    v = np.concatenate([sumo_speed[:1], np.asarray(traj.speed[0, :, :n], np.float64)])
    assert (
        np.all(traj.valid[0, :, :n])
        and np.all(traj.y[0, :, :n] == 0.0)
        and np.all(traj.heading[0, :, :n] == 0.0)
    )
    return x, v


@pytest.fixture(scope="module")
def runs():
    """SUMO ballistic and default (semi-implicit Euler) runs; drivesim ballistic and Euler
    runs replaying SUMO ballistic's leader, and Euler replaying SUMO semi-implicit's (the
    same leader speeds, other positions; the same compiled Euler rollout)."""
    assert IDM() == IDM(**IDM_DEFAULTS), "the SUMO vType must carry drivesim's IDM defaults"
    profile = leader_profile()
    sumo = run_platoon(FRONT, SPEED0, profile, VEHICLES, ballistic=True)
    sumo_euler = run_platoon(FRONT, SPEED0, profile, VEHICLES, ballistic=False)
    return dict(
        sumo=sumo,
        sumo_euler=sumo_euler,
        ballistic=drivesim_platoon(sumo.pos, sumo.speed, "ballistic"),
        euler=drivesim_platoon(sumo.pos, sumo.speed, "euler"),
        euler_si=drivesim_platoon(sumo_euler.pos, sumo_euler.speed, "euler"),
    )


def _max_diff(ours, sumo):
    """max |dx|, max |dv| over the followers and all steps."""
    x, v = ours
    return float(np.max(np.abs(x[:, 1:] - sumo.pos[:, 1:]))), float(
        np.max(np.abs(v[:, 1:] - sumo.speed[:, 1:]))
    )


def test_harness_reproduces_sumo_in_float64(runs):
    """The platoon is what the harness means it to be: SUMO's followers are, to the last bit
    or nearly, a float64 transcription of SUMO's IDM step (so the leader, the insertion, the
    timing and the parameters all arrived as meant) for both of SUMO's updates."""
    for name, update in (("sumo", "ballistic"), ("sumo_euler", "semi_implicit")):
        run = runs[name]
        pos, speed = idm_platoon(FRONT, SPEED0, run.pos[:, 0], run.speed[:, 0], VEHICLES, update=update)
        np.testing.assert_allclose(speed, run.speed, rtol=0, atol=1e-9, err_msg=name)
        np.testing.assert_allclose(pos, run.pos, rtol=0, atol=1e-9, err_msg=name)
    sumo = runs["sumo"]
    braking = np.diff(sumo.speed, axis=0) / DT
    assert braking[:, 0].min() == pytest.approx(-3.5) and braking[:, 1:].min() < -1.5  # a braking platoon
    assert np.min(sumo.pos[:, :-1] - LENGTH - sumo.pos[:, 1:]) > 5.0  # never near a collision


def test_ballistic_matches_sumo(runs):
    dx, dv = _max_diff(runs["ballistic"], runs["sumo"])
    print(f"\ndrivesim ballistic vs SUMO ballistic: max |dv| = {dv:.2e} m/s, max |dx| = {dx:.2e} m")
    assert dv <= TOL_V
    assert dx <= 1e-3  # float32 positions up to ~450 m (ulp 3e-5 m) over 200 steps


def test_euler_does_not_match_sumo(runs):
    """The default explicit-Euler update misses SUMO ballistic by far more than the
    tolerance (so the test above can fail); against SUMO's own default (semi-implicit Euler,
    x += v_new dt) it misses too (informative). A step's move differs from theirs by a dt^2 / 2
    and a dt^2, and the followers' IDM feeds the position error back into the speeds."""
    dx, dv = _max_diff(runs["euler"], runs["sumo"])
    dx_si, dv_si = _max_diff(runs["euler_si"], runs["sumo_euler"])
    print(
        f"\ndrivesim euler vs SUMO ballistic: max |dv| = {dv:.2e} m/s, max |dx| = {dx:.2e} m"
        f"\ndrivesim euler vs SUMO semi-implicit Euler: max |dv| = {dv_si:.2e} m/s, max |dx| = {dx_si:.2e} m"
    )
    assert dv > 10 * TOL_V
    assert dv_si > 10 * TOL_V
