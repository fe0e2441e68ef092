"""Real SUMO (PyPI ``eclipse-sumo``, driven through ``traci``) as a reference for the IDM.

:func:`run_platoon` drives a platoon down one straight lane in SUMO: vehicle 0 (the leader)
follows a prescribed speed profile through TraCI, the others follow it with SUMO's IDM
(``carFollowModel="IDM"``, one iteration per step). It records every vehicle's lane position
(front bumper) and speed after every step, float64, and checks on the way that SUMO did what
was asked (all vehicles inserted at t=0 where they were put, the desired speed v0 exactly,
the leader on its profile), so a mismatch found by a test is the model's, not the harness's.

:func:`idm_platoon` is the same platoon's followers in float64 NumPy, written from SUMO's
source (``MSCFModel_IDM::_v``, ``MSCFModel::finalizeSpeed``, ``MSVehicle::getDeltaPos``), to
check the harness against SUMO itself.

Timing: a vehicle with ``depart="0"`` is inserted at the end of SUMO's step 0, after the
moves, so after the first ``simulationStep()`` (clock 0.1 s) the vehicles stand where they
were put (time 0), and after call k+1 they hold their state at time k dt. Index k of the
arrays is time k dt. A speed set through TraCI before a call is the speed after that call.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROAD_LENGTH = 5000.0  # [m] far beyond where a test platoon gets (the lane end never matters)
NUMERICAL_EPS = 0.001  # SUMO's smallest IDM gap [m] (src/utils/common/StdDefs.h)


@dataclass(frozen=True)
class IDM:
    """IDM parameters (SUMO's vType attributes in brackets): v0 [lane speed limit, with
    speedFactor 1], T [tau], s0 [minGap], a [accel], b [decel], delta [delta]."""

    v0: float = 33.3
    T: float = 1.6
    s0: float = 2.0
    a: float = 0.73
    b: float = 1.67
    delta: float = 4.0


@dataclass(frozen=True)
class Vehicles:
    """What every vehicle of the platoon shares: IDM parameters, box length [m], the step
    dt [s] and SUMO's emergencyDecel [m/s^2] (the strongest braking; drivesim's min_accel)."""

    idm: IDM = IDM()
    length: float = 4.5
    dt: float = 0.1
    emergency_decel: float = 9.0


@dataclass(frozen=True)
class PlatoonRun:
    """One run: time (S+1,) [s]; pos, speed (S+1, N) float64 front-bumper lane position [m]
    and speed [m/s], index k at time k dt, vehicle 0 the leader."""

    time: np.ndarray
    pos: np.ndarray
    speed: np.ndarray


def binary(name: str) -> str:
    """Path of a SUMO program (``sumo``, ``netconvert``) from the eclipse-sumo wheel."""
    import sumo  # the eclipse-sumo wheel's module: SUMO_HOME with bin/

    path = Path(sumo.SUMO_HOME) / "bin" / name
    if path.is_file():
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"SUMO program {name!r} not in {path.parent} nor on PATH")
    return found


def _f(value: float) -> str:
    return repr(float(value))  # shortest string that reads back as the same double


def _write_inputs(
    work: Path,
    front: np.ndarray,
    speed0: np.ndarray,
    vehicles: Vehicles,
) -> tuple[Path, Path]:
    """The network (one lane, speed limit v0, built by netconvert) and the routes file."""
    idm, length, emergency_decel, dt = vehicles.idm, vehicles.length, vehicles.emergency_decel, vehicles.dt
    (work / "road.nod.xml").write_text(
        f'<nodes>\n  <node id="A" x="0" y="0"/>\n  <node id="B" x="{_f(ROAD_LENGTH)}" y="0"/>\n</nodes>\n'
    )
    (work / "road.edg.xml").write_text(
        f'<edges>\n  <edge id="road" from="A" to="B" numLanes="1" speed="{_f(idm.v0)}"/>\n</edges>\n'
    )
    net = work / "road.net.xml"
    subprocess.run(
        [
            binary("netconvert"),
            "--node-files",
            str(work / "road.nod.xml"),
            "--edge-files",
            str(work / "road.edg.xml"),
            "--no-internal-links",
            "--no-turnarounds",
            "--output-file",
            str(net),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    vtype = (
        '<vType id="idm" carFollowModel="IDM"'
        f' accel="{_f(idm.a)}" decel="{_f(idm.b)}" emergencyDecel="{_f(emergency_decel)}"'
        f' tau="{_f(idm.T)}" minGap="{_f(idm.s0)}" delta="{_f(idm.delta)}" stepping="{_f(dt)}"'
        f' length="{_f(length)}" maxSpeed="100" speedFactor="1" speedDev="0" sigma="0"'
        ' lcStrategic="-1" lcCooperative="0" lcSpeedGain="0" lcKeepRight="0"/>'
    )
    vehicles = [
        f'<vehicle id="v{i}" type="idm" route="r" depart="0" departLane="0"'
        f' departPos="{_f(p)}" departSpeed="{_f(v)}" insertionChecks="none"/>'
        for i, (p, v) in enumerate(zip(front, speed0, strict=True))
    ]
    routes = work / "platoon.rou.xml"
    routes.write_text(
        "<routes>\n  " + "\n  ".join([vtype, '<route id="r" edges="road"/>', *vehicles]) + "\n</routes>\n"
    )
    return net, routes


def run_platoon(
    front, speed0, leader_speed, vehicles: Vehicles = Vehicles(), ballistic: bool = True
) -> PlatoonRun:
    """Run the platoon in SUMO for len(leader_speed) - 1 steps of ``vehicles.dt``.

    front, speed0: (N,) initial front-bumper lane positions [m] (descending: vehicle 0 ahead)
    and speeds [m/s]; leader_speed: (S+1,) the leader's speed at each step, leader_speed[0] =
    speed0[0]; ballistic: ``--step-method.ballistic`` (else SUMO's default semi-implicit
    Euler, x += v_new dt).
    """
    import traci

    idm, dt = vehicles.idm, vehicles.dt
    front = np.asarray(front, np.float64)
    speed0 = np.asarray(speed0, np.float64)
    leader_speed = np.asarray(leader_speed, np.float64)
    n, steps = len(front), len(leader_speed) - 1
    if not (np.all(np.diff(front) < 0) and leader_speed[0] == speed0[0] and np.all(leader_speed >= 0)):
        raise ValueError("run_platoon: front descending, leader_speed[0] = speed0[0], speeds >= 0 required")
    ids = [f"v{i}" for i in range(n)]
    pos = np.empty((steps + 1, n))
    speed = np.empty((steps + 1, n))
    time = np.empty(steps + 1)
    with tempfile.TemporaryDirectory(prefix="sumo_platoon_") as tmp:
        net, routes = _write_inputs(Path(tmp), front, speed0, vehicles)
        cmd = [
            binary("sumo"),
            "--net-file", str(net),
            "--route-files", str(routes),
            "--step-length", _f(dt),
            "--step-method.ballistic", "true" if ballistic else "false",
            "--collision.action", "none",
            "--time-to-teleport", "-1",
            "--seed", "0",
            "--no-step-log", "true",
            "--duration-log.disable", "true",
        ]  # fmt: skip
        label = f"platoon-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        traci.start(cmd, label=label, stdout=subprocess.DEVNULL)
        conn = traci.getConnection(label)
        try:
            conn.simulationStep()  # step 0: insertion at its end; the state at time 0
            present = conn.vehicle.getIDList()
            if sorted(present) != sorted(ids):
                raise RuntimeError(f"SUMO inserted {present} at t=0, expected {ids}")
            for k in range(steps + 1):
                if k > 0:
                    conn.vehicle.setSpeed(ids[0], float(leader_speed[k]))
                    conn.simulationStep()
                time[k] = conn.simulation.getTime() - dt
                for i, vid in enumerate(ids):
                    if conn.vehicle.getLaneID(vid) != "road_0":
                        raise RuntimeError(f"SUMO: {vid} left the lane at step {k}")
                    pos[k, i] = conn.vehicle.getLanePosition(vid)
                    speed[k, i] = conn.vehicle.getSpeed(vid)
                if k == 0:
                    conn.vehicle.setSpeedMode(ids[0], 0)  # the leader: no checks, exactly the set speed
                    for vid in ids:
                        if (
                            conn.vehicle.getSpeedFactor(vid) != 1.0
                            or conn.vehicle.getAllowedSpeed(vid) != idm.v0
                        ):
                            raise RuntimeError(f"SUMO: {vid}'s desired speed is not v0={idm.v0}")
        finally:
            conn.close()
    if not np.array_equal(pos[0], front) or not np.array_equal(speed[0], speed0):
        raise RuntimeError(f"SUMO did not insert as asked: pos {pos[0]} speed {speed[0]}")
    if not np.allclose(time, dt * np.arange(steps + 1), rtol=0.0, atol=1e-9):
        raise RuntimeError("SUMO's clock is not one dt per step")
    if np.max(np.abs(speed[:, 0] - leader_speed)) > 1e-9:
        raise RuntimeError("SUMO's leader did not follow the prescribed speed profile")
    return PlatoonRun(time=time, pos=pos, speed=speed)


def idm_platoon(
    front0, speed0, leader_pos, leader_speed, vehicles: Vehicles = Vehicles(), update: str = "ballistic"
) -> tuple[np.ndarray, np.ndarray]:
    """The followers of :func:`run_platoon` in float64, as SUMO computes them.

    front0, speed0: (N,) initial state, vehicle 0 the leader, whose front position and speed
    per step are given, leader_pos and leader_speed (S+1,). update: "ballistic" (SUMO's
    ballistic: x += (v + v_new)/2 dt), "semi_implicit" (SUMO's default: x += v_new dt) or
    "euler" (explicit Euler, x += v dt). Returns pos, speed (S+1, N).

    Per step and follower, from the states at the step's start (all vehicles at once):
    gap = leader back - front (bumper to bumper), s* = s0 + max(0, v T + v (v - v_lead) /
    (2 sqrt(a b))), v_idm = max(0, v + a [1 - (v/v0)^delta - (s*/max(gap, 0.001))^2] dt),
    then no stronger braking than emergencyDecel: v_new = max(v_idm, v - emergencyDecel dt)
    (clamped at 0; IDM never asks for more than ``a``, so SUMO's acceleration cap is idle).
    """
    if update not in ("ballistic", "semi_implicit", "euler"):
        raise ValueError(f"idm_platoon: unknown update {update!r}")
    idm, length, dt = vehicles.idm, vehicles.length, vehicles.dt
    leader_pos = np.asarray(leader_pos, np.float64)
    leader_speed = np.asarray(leader_speed, np.float64)
    steps, n = len(leader_speed) - 1, len(front0)
    pos = np.empty((steps + 1, n))
    speed = np.empty((steps + 1, n))
    pos[0], speed[0] = front0, speed0
    pos[:, 0], speed[:, 0] = leader_pos, leader_speed
    two_sqrt_ab = 2.0 * math.sqrt(idm.a * idm.b)
    for k in range(steps):
        for i in range(1, n):
            v, lead_v = speed[k, i], speed[k, i - 1]
            gap = max(NUMERICAL_EPS, pos[k, i - 1] - length - pos[k, i])
            s_star = max(0.0, v * idm.T + v * (v - lead_v) / two_sqrt_ab) + idm.s0
            acc = idm.a * (1.0 - (v / idm.v0) ** idm.delta - (s_star * s_star) / (gap * gap))
            v_new = max(0.0, v + acc * dt, v - vehicles.emergency_decel * dt)
            travel = {"ballistic": 0.5 * (v + v_new), "semi_implicit": v_new, "euler": v}[update]
            speed[k + 1, i], pos[k + 1, i] = v_new, pos[k, i] + travel * dt
    return pos, speed
