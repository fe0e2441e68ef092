"""Host-side validation of scenarios (never inside jit).

:class:`ScenarioError` is the one error type for bad scenario input anywhere in drivesim
(CommonRoad files, stores, synthetic families): it names the file, the scenario id, the
field and the reason, so a campaign can record it and go on.
"""

from __future__ import annotations

import numpy as np

from drivesim.core.types import KIND_NAMES, Scenario

MAX_AGENTS = 128  # the largest padding size class


class ScenarioError(ValueError):
    """Bad scenario input. Attributes: path (file or store, "" if none), scenario_id
    (int, str or None), field (element / field path) and reason (what is wrong)."""

    def __init__(self, reason: str, path: str = "", scenario_id=None, field: str = ""):
        self.path = str(path)
        self.scenario_id = scenario_id
        self.field = field
        self.reason = reason
        super().__init__(self._message())

    def _message(self) -> str:
        parts = []
        if self.path:
            parts.append(f"file {self.path}")
        if self.scenario_id is not None:
            parts.append(f"scenario {self.scenario_id}")
        if self.field:
            parts.append(f"field {self.field}")
        where = ", ".join(parts)
        return f"{where}: {self.reason}" if where else self.reason

    def __reduce__(self):  # picklable across processes
        return (ScenarioError, (self.reason, self.path, self.scenario_id, self.field))


def _where(where: str) -> tuple[str, object]:
    """Split a ``where`` hint "path#id" into (path, scenario id)."""
    if "#" in where:
        path, sid = where.rsplit("#", 1)
        return path, sid
    return where, None


def validate_scenario(scenario: Scenario, where: str = "") -> None:
    """Raise ScenarioError when a host scenario (unpadded or padded, unbatched) is unusable:
    zero agents, too many agents, inconsistent shapes, ego index out of range, or a
    non-finite state. ``where``: file or "file#id" to name in the error."""
    path, sid = _where(where)
    if sid is None:
        try:
            sid = int(np.asarray(scenario.scenario_id))
        except (TypeError, ValueError):
            sid = None

    def fail(field: str, reason: str):
        raise ScenarioError(reason, path=path, scenario_id=sid, field=field)

    ag = scenario.agents
    n = np.asarray(ag.x).shape[0] if np.asarray(ag.x).ndim == 1 else -1
    if n < 0:
        fail("agents.x", f"expected shape (N,), got {np.asarray(ag.x).shape}")
    _check_agent_shapes(scenario, n, fail)
    valid = np.asarray(ag.valid, bool)
    real = int(valid.sum())
    if real == 0:
        fail("agents.valid", "zero agents (the scenario has no valid agent)")
    if n > MAX_AGENTS:
        fail("agents", f"too many agents: {n} > {MAX_AGENTS} (the largest size class)")
    ego = int(np.asarray(scenario.ego_index))
    if not 0 <= ego < n or not valid[ego]:
        fail("ego_index", f"ego index {ego} is not a valid agent slot (N = {n})")
    for name in ("x", "y", "heading", "speed", "accel", "length", "width"):
        values = np.asarray(getattr(ag, name))[valid]
        if not np.all(np.isfinite(values)):
            fail(f"agents.{name}", "non-finite value (NaN or Inf)")
    if np.any(np.asarray(ag.length)[valid] <= 0) or np.any(np.asarray(ag.width)[valid] <= 0):
        fail("agents.length/width", "box size must be > 0")
    kind = np.asarray(ag.kind)[valid]
    if np.any((kind < 0) | (kind >= len(KIND_NAMES))):
        bad = int(kind[(kind < 0) | (kind >= len(KIND_NAMES))][0])
        fail("agents.kind", f"unknown road-user type {bad} (0 vehicle, 1 pedestrian, 2 cyclist)")
    if np.any(np.isnan(np.asarray(scenario.stop_s))):
        fail("stop_s", "NaN stop arc length")
    _check_road(scenario, ag, valid, fail)
    _check_log(scenario, n, fail)
    _check_signal(scenario, n, valid, fail)
    _check_mobil(scenario, n, valid, fail)
    if int(np.asarray(scenario.episode_length)) < 1:
        fail("episode_length", "episode length must be >= 1")
    _check_ranges(scenario, valid, fail)


def _check_ranges(scenario: Scenario, valid: np.ndarray, fail) -> None:
    """Physical ranges (drivesim.core.ranges) of the real agents, lanes and log."""
    from drivesim.core.ranges import MAX_LOG_STEPS, range_problem

    ag, idm, road, log = scenario.agents, scenario.idm, scenario.road, scenario.log
    fields = {
        f"agents.{k}": np.asarray(getattr(ag, k))[valid]
        for k in ("x", "y", "speed", "accel", "length", "width")
    }
    fields |= {f"idm.{k}": np.asarray(getattr(idm, k))[valid] for k in idm.__dataclass_fields__}
    lanes = np.asarray(road.lane_valid, bool)
    fields |= {"road.widths": np.asarray(road.widths)[lanes], "road.centers": np.asarray(road.centers)[lanes]}
    if log is not None:
        if np.asarray(log.valid).shape[0] > MAX_LOG_STEPS:
            fail("log", f"{np.asarray(log.valid).shape[0]} log steps, more than the {MAX_LOG_STEPS} allowed")
        lv = np.asarray(log.valid, bool)
        fields |= {"log.xy": np.asarray(log.xy)[lv], "log.speed": np.asarray(log.speed)[lv]}
    problem = range_problem(fields)
    if problem is not None:
        fail(*problem)


def _check_agent_shapes(scenario: Scenario, n: int, fail) -> None:
    ag = scenario.agents
    for name in ag.__dataclass_fields__:
        if np.asarray(getattr(ag, name)).shape != (n,):
            fail(f"agents.{name}", f"shape {np.asarray(getattr(ag, name)).shape} != ({n},)")
    for name in scenario.idm.__dataclass_fields__:
        if np.asarray(getattr(scenario.idm, name)).shape != (n,):
            fail(f"idm.{name}", f"shape {np.asarray(getattr(scenario.idm, name)).shape} != ({n},)")
    if np.asarray(scenario.stop_s).shape != (n,):
        fail("stop_s", f"shape {np.asarray(scenario.stop_s).shape} != ({n},)")


def _check_road(scenario: Scenario, ag, valid: np.ndarray, fail) -> None:
    road = scenario.road
    centers = np.asarray(road.centers)
    if centers.ndim != 3 or centers.shape[-1] != 2 or centers.shape[0] < 1 or centers.shape[1] < 2:
        fail("road.centers", f"expected shape (L>=1, P>=2, 2), got {centers.shape}")
    lanes = centers.shape[0]
    for name in ("widths", "lane_valid"):
        if np.asarray(getattr(road, name)).shape != (lanes,):
            fail(f"road.{name}", f"shape {np.asarray(getattr(road, name)).shape} != ({lanes},)")
    if not np.all(np.isfinite(centers)):
        fail("road.centers", "non-finite lane point")
    axis = np.asarray(road.sort_axis)
    if axis.shape != (2,) or not np.isclose(np.linalg.norm(axis), 1.0, atol=1e-3):
        fail("road.sort_axis", "must be a (2,) unit vector")
    route = np.asarray(ag.route)[valid]
    if np.any(route < 0) or np.any(route >= lanes):
        fail("agents.route", f"route index outside [0, {lanes})")
    if not np.all(np.asarray(road.lane_valid)[route]):
        fail("agents.route", "an agent's route is a padding lane")


def _check_mobil(scenario: Scenario, n: int, valid: np.ndarray, fail) -> None:
    """Per-agent MOBIL parameters: shapes (N,), politeness finite, b_safe > 0, threshold finite."""
    mob = scenario.mobil
    if mob is None:
        return
    for name in mob.__dataclass_fields__:
        if np.asarray(getattr(mob, name)).shape != (n,):
            fail(f"mobil.{name}", f"shape {np.asarray(getattr(mob, name)).shape} != ({n},)")
    for name in ("politeness", "threshold"):
        if not np.all(np.isfinite(np.asarray(getattr(mob, name))[valid])):
            fail(f"mobil.{name}", "non-finite value (NaN or Inf)")
    b_safe = np.asarray(mob.b_safe)[valid]
    if not np.all(np.isfinite(b_safe) & (b_safe > 0)):
        fail("mobil.b_safe", "must be finite and > 0 [m/s^2]")


def _check_log(scenario: Scenario, n: int, fail) -> None:
    log = scenario.log
    if log is None:
        return
    steps = np.asarray(log.valid).shape[0] if np.asarray(log.valid).ndim == 2 else 0
    expect = {
        "xy": (steps, n, 2),
        "heading": (steps, n),
        "speed": (steps, n),
        "valid": (steps, n),
        "replay": (n,),
    }
    for name, shape in expect.items():
        if steps < 1 or np.asarray(getattr(log, name)).shape != shape:
            fail(f"log.{name}", f"shape {np.asarray(getattr(log, name)).shape} != {shape}")
    lv = np.asarray(log.valid, bool)
    if not np.all(np.isfinite(np.asarray(log.xy)[lv])) or not np.all(np.isfinite(np.asarray(log.speed)[lv])):
        fail("log.xy", "non-finite logged state")


def _check_signal(scenario: Scenario, n: int, valid: np.ndarray, fail) -> None:
    """Shapes and values of the SignalPlan (drivesim.core.signals), real agents only."""
    plan = scenario.signal
    if plan is None:
        return
    values = {}
    for name in plan.__dataclass_fields__:
        value = np.asarray(getattr(plan, name))
        if value.shape != (n,):
            fail(f"signal.{name}", f"shape {value.shape} != ({n},)")
        values[name] = value[valid].astype(np.float64)
        if np.any(np.isnan(values[name])):
            fail(f"signal.{name}", "NaN value")
    if np.any(values["line_s"] == -np.inf):
        fail("signal.line_s", "stop line at -inf (use +inf for an agent without a signal)")
    for name in ("cycle", "offset", "green", "amber"):
        if not np.all(np.isfinite(values[name])):
            fail(f"signal.{name}", "non-finite value (Inf)")
    if np.any(values["cycle"] <= 0):
        fail("signal.cycle", "cycle length must be > 0 s")
    for name in ("green", "amber"):
        if np.any(values[name] < 0):
            fail(f"signal.{name}", "duration must be >= 0 s")
    if np.any(values["green"] + values["amber"] > values["cycle"] * (1 + 1e-6)):
        fail("signal.green", "green + amber longer than the cycle")
