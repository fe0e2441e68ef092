"""Padding host scenarios to fixed shapes and stacking them into host batches."""

from __future__ import annotations

import numpy as np

from drivesim.core.types import IDM_DEFAULTS, AgentState, IDMParams, LogTrajectory, RoadMap, Scenario


def _pad_axis(values: np.ndarray, axis: int, size: int, fill) -> np.ndarray:
    """Pad ``values`` along ``axis`` to ``size`` with ``fill`` (or the last entry if fill='edge')."""
    missing = size - values.shape[axis]
    if missing < 0:
        raise ValueError(f"cannot pad axis {axis} of size {values.shape[axis]} down to {size}")
    if missing == 0:
        return values
    if fill == "edge":
        last = np.take(values, [-1], axis=axis)
        pad = np.repeat(last, missing, axis=axis)
    else:
        shape = list(values.shape)
        shape[axis] = missing
        pad = np.full(shape, fill, values.dtype)
    return np.concatenate([values, pad], axis=axis)


def pad_scenario(sc: Scenario, num_agents: int, num_lanes: int, num_points: int, log_steps: int | None = None) -> Scenario:
    """Pad one host scenario to (N, L, P[, T]) = (num_agents, num_lanes, num_points, log_steps).

    Padding agents have valid=False, unit box size and default IDM parameters; padding
    lanes have lane_valid=False; polylines repeat their last point.
    """
    ag = sc.agents
    pa = lambda v, fill: _pad_axis(np.asarray(v), 0, num_agents, fill)  # noqa: E731
    agents = AgentState(
        x=pa(ag.x, 0.0), y=pa(ag.y, 0.0), heading=pa(ag.heading, 0.0), speed=pa(ag.speed, 0.0),
        accel=pa(ag.accel, 0.0), length=pa(ag.length, 1.0), width=pa(ag.width, 1.0),
        valid=pa(ag.valid, False), route=pa(ag.route, 0),
    )
    idm = IDMParams(**{k: pa(getattr(sc.idm, k), IDM_DEFAULTS[k]) for k in IDM_DEFAULTS})
    centers = _pad_axis(np.asarray(sc.road.centers), 1, num_points, "edge")
    centers = _pad_axis(centers, 0, num_lanes, 0.0)
    road = RoadMap(
        centers=centers, widths=_pad_axis(np.asarray(sc.road.widths), 0, num_lanes, 0.0),
        lane_valid=_pad_axis(np.asarray(sc.road.lane_valid), 0, num_lanes, False),
        sort_axis=np.asarray(sc.road.sort_axis), conflict_xy=np.asarray(sc.road.conflict_xy),
        conflict_radius=np.asarray(sc.road.conflict_radius),
    )
    log = None
    if sc.log is not None:
        steps = log_steps or sc.log.valid.shape[0]
        pt = lambda v, fill: _pad_axis(_pad_axis(np.asarray(v), 1, num_agents, fill), 0, steps, fill)  # noqa: E731
        log = LogTrajectory(
            xy=pt(sc.log.xy, 0.0), heading=pt(sc.log.heading, 0.0), speed=pt(sc.log.speed, 0.0),
            valid=pt(sc.log.valid, False), replay=pa(sc.log.replay, False),
        )
    return Scenario(
        agents=agents, idm=idm, stop_s=pa(sc.stop_s, np.inf), road=road, ego_index=sc.ego_index,
        episode_length=sc.episode_length, scenario_id=sc.scenario_id, valid=sc.valid, log=log,
    )


def stack_scenarios(scenarios: list[Scenario]) -> Scenario:
    """Stack equally shaped host scenarios along a new leading batch axis."""
    import jax

    return jax.tree_util.tree_map(lambda *leaves: np.stack([np.asarray(v) for v in leaves]), *scenarios)


def pad_and_stack(scenarios: list[Scenario], num_agents: int | None = None) -> Scenario:
    """Pad scenarios to common (N, L, P, T) (the maximum, or ``num_agents``) and stack them."""
    n = num_agents or max(s.agents.x.shape[0] for s in scenarios)
    lanes = max(s.road.widths.shape[0] for s in scenarios)
    points = max(s.road.centers.shape[1] for s in scenarios)
    logs = [s.log.valid.shape[0] for s in scenarios if s.log is not None]
    steps = max(logs) if logs else None
    return stack_scenarios([pad_scenario(s, n, lanes, points, steps) for s in scenarios])
