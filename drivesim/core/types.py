"""State types of the simulation core: frozen dataclasses registered as JAX PyTrees.

The same classes hold NumPy arrays on the host (one scenario, unpadded, or a stacked host
batch) and JAX arrays on the devices. Shapes are written for one scenario; a batch adds
leading axes ``(...)``. ``N`` = agents, ``L`` = lanes/routes, ``P`` = points per lane
polyline, ``T`` = log steps.

Validation lives in :func:`drivesim.core.validate.validate_scenario`, never inside jit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, TypeVar, dataclass_transform

import jax
import numpy as np

from drivesim.core.search_plan import SearchPlan

Array = jax.Array | np.ndarray  # host (NumPy) or device (JAX) arrays

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def pytree_dataclass(cls: type[_T]) -> type[_T]:
    """Freeze ``cls`` and register it as a PyTree whose fields are all data fields,
    except those declared with ``field(metadata={"static": True})``."""
    frozen: Any = dataclass(frozen=True)(cls)
    data = [f.name for f in fields(frozen) if not f.metadata.get("static")]
    meta = [f.name for f in fields(frozen) if f.metadata.get("static")]
    return jax.tree_util.register_dataclass(frozen, data_fields=data, meta_fields=meta)


def replace(obj, **changes):
    """``dataclasses.replace`` for the frozen PyTree dataclasses."""
    return dataclasses.replace(obj, **changes)


@pytree_dataclass
class AgentState:
    """Kinematic state of every agent slot.

    x, y: (..., N) float32 centre position [m].
    heading: (..., N) float32 yaw [rad], counter-clockwise from +x.
    speed: (..., N) float32 longitudinal speed [m/s], >= 0.
    accel: (..., N) float32 last applied acceleration [m/s^2] (for jerk).
    length, width: (..., N) float32 box size [m].
    valid: (..., N) bool; False marks a padding slot that never affects anything.
    route: (..., N) int32 index of the agent's route polyline in ``RoadMap.centers``.
    kind: (..., N) int32 road-user type: VEHICLE, PEDESTRIAN or CYCLIST (padding slots 0).
    """

    x: Array
    y: Array
    heading: Array
    speed: Array
    accel: Array
    length: Array
    width: Array
    valid: Array
    route: Array
    kind: Array


# road-user types of AgentState.kind (limits and default sizes: drivesim.core.road_users)
VEHICLE, PEDESTRIAN, CYCLIST = 0, 1, 2
KIND_NAMES = ("vehicle", "pedestrian", "cyclist")


@pytree_dataclass
class IDMParams:
    """Intelligent Driver Model parameters (Treiber, Hennecke, Helbing 2000).

    Each field is (..., N) float32 per agent, or (...) for an ego policy.
    v0 desired speed [m/s]; T time headway [s]; s0 jam distance [m];
    a max acceleration [m/s^2]; b comfortable deceleration [m/s^2]; delta exponent.
    """

    v0: Array
    T: Array
    s0: Array
    a: Array
    b: Array
    delta: Array


IDM_DEFAULTS = dict(v0=33.3, T=1.6, s0=2.0, a=0.73, b=1.67, delta=4.0)


@pytree_dataclass
class RoadMap:
    """Lane / route centre lines; the drivable area is the union of lane corridors
    (centre line +- width / 2).

    centers: (..., L, P, 2) float32 polyline points, padded by repeating the last point.
    widths: (..., L) float32 lane width [m].
    lane_valid: (..., L) bool.
    sort_axis: (..., 2) float32 unit vector; agents are ordered by position along it
        (the road's main direction) for the neighbour window.
    conflict_xy: (..., 2) float32 centre of a conflict zone (intersection), if any.
    conflict_radius: (...) float32 radius of the conflict zone; 0 means none.
    """

    centers: Array
    widths: Array
    lane_valid: Array
    sort_axis: Array
    conflict_xy: Array
    conflict_radius: Array


@pytree_dataclass
class LogTrajectory:
    """Recorded trajectories, resampled to the simulation dt; step 0 is the initial state.

    xy: (..., T, N, 2) float32; heading, speed: (..., T, N) float32;
    valid: (..., T, N) bool (agent present in the log at that step);
    replay: (..., N) bool, True = the agent follows its log instead of IDM.
    """

    xy: Array
    heading: Array
    speed: Array
    valid: Array
    replay: Array


@pytree_dataclass
class SignalPlan:
    """Fixed-time traffic signal met by each agent on its route (drivesim.core.signals).

    line_s: (..., N) float32 arc length of the signal's stop line along the agent's route
        [m]; +inf: the agent meets no signal.
    cycle: (..., N) float32 cycle length [s], > 0.
    offset: (..., N) float32 time at which a green starts [s]: the light is green while
        (t - offset) mod cycle < green, then amber for ``amber`` seconds, then red for the
        rest of the cycle (all-red clearance included).
    green, amber: (..., N) float32 durations [s], >= 0, green + amber <= cycle.
    """

    line_s: Array
    cycle: Array
    offset: Array
    green: Array
    amber: Array


@pytree_dataclass
class MOBILParams:
    """Per-agent MOBIL lane-change parameters (Kesting, Treiber, Helbing 2007), each
    (..., N): politeness p [-], b_safe [m/s^2] (largest braking imposed on the new follower),
    threshold [m/s^2] (least incentive), enabled bool (the agent may change lanes; the ego
    and replayed agents never do). Used when ``SimConfig.lane_changes`` is set; without
    them every agent takes the LaneChangeConfig values."""

    politeness: Array
    b_safe: Array
    threshold: Array
    enabled: Array


@pytree_dataclass
class Scenario:
    """One traffic scenario.

    agents: AgentState with (..., N) fields.
    idm: IDMParams with (..., N) fields (behaviour of every non-ego agent).
    stop_s: (..., N) float32 arc length along the agent's route where it must yield
        when the conflict zone is busy; +inf for agents with priority.
    road: RoadMap.
    ego_index: (...) int32 slot of the ego agent.
    episode_length: (...) int32 steps to simulate (<= SimConfig.num_steps).
    scenario_id: (...) int32 global id (the scenario's random stream derives from it).
    valid: (...) bool; False marks a padding scenario (dropped from results).
    log: LogTrajectory or None.
    signal: SignalPlan or None (no traffic signals; costs nothing in the rollout).
    mobil: MOBILParams (per-agent lane-change parameters) or None.
    """

    agents: AgentState
    idm: IDMParams
    stop_s: Array
    road: RoadMap
    ego_index: Array
    episode_length: Array
    scenario_id: Array
    valid: Array
    log: LogTrajectory | None = None
    signal: SignalPlan | None = None
    mobil: MOBILParams | None = None

    @property
    def num_agents(self) -> int:
        """Agent slots N (padding included)."""
        return self.agents.x.shape[-1]

    @property
    def num_road_segments(self) -> int:
        """Lane slots L times segments per lane P - 1 (padding included)."""
        lanes, points = self.road.centers.shape[-3:-1]
        return lanes * (points - 1)


@pytree_dataclass
class RolloutMetrics:
    """Per-scenario metrics, each (...) for a batch.

    ego_collided: bool, ego box overlapped another valid agent's box at some step.
    collision_step: int32 first step (0-based) with an ego collision, -1 if none.
    collision_pairs: int32 most agent pairs overlapping at the same step.
    offroad: bool, a corner of the ego's box left the drivable area at some step.
    progress_m: float32 ego arc-length progress along its route [m].
    min_ttc_s: float32 ego minimum time-to-collision with its vehicle leader (stop lines
        excluded) [s] (inf if never closing).
    max_jerk: float32 ego max |da/dt| from step 1 on [m/s^3].
    steps: int32 steps simulated.
    has_nan: bool, some valid agent's state became NaN/Inf.
    log_div_mean: float32 mean distance simulated-vs-log over non-replayed logged agents [m]
        (NaN without a log).
    log_div_final: float32 that mean at the last simulated step [m] (NaN without a log).
    window_overflow: bool, the neighbour window could not be proven exact at some step, so
        the scenario was simulated again with the all-pairs search (results stay exact).
    min_road_edge_distance_m: float32 smallest signed distance of an ego box corner to the
        drivable area's edge [m] (< 0: off-road).
    collided_with: int32 agent slot the ego first overlapped, -1 if none.
    agents_collided: int32 agents (ego included) that overlapped another at some step.
    agents_offroad: int32 agents (ego included) with a box corner off-road at some step.
    collided_with_kind: int32 road-user type (AgentState.kind) of ``collided_with``, -1 if none.
    pedestrians_collided, cyclists_collided: int32 pedestrians / cyclists among
        ``agents_collided``.
    red_light_violation: bool, the ego's front bumper crossed its signal stop line during a
        step that began with its light red (False without signals).
    ade_1s, ade_3s, ade_8s: float32 average displacement error of the simulated traffic
        against the log over the first 1, 3, 8 s [m]: the distance of every non-replayed
        logged agent to its logged position, averaged over the agents and the steps up to
        the horizon (drivesim.core.metrics.LOG_HORIZONS_S).
    fde_1s, fde_3s, fde_8s: float32 final displacement error at 1, 3, 8 s [m]: that
        distance averaged over the agents logged at the horizon's step. Both NaN without a
        log, or where the run or the log ends before the horizon (or no non-replayed agent
        is logged at it).
    """

    ego_collided: Array
    collision_step: Array
    collision_pairs: Array
    offroad: Array
    progress_m: Array
    min_ttc_s: Array
    max_jerk: Array
    steps: Array
    has_nan: Array
    log_div_mean: Array
    log_div_final: Array
    window_overflow: Array
    min_road_edge_distance_m: Array
    collided_with: Array
    agents_collided: Array
    agents_offroad: Array
    # road-user types (drivesim.core.road_users)
    collided_with_kind: Array
    pedestrians_collided: Array
    cyclists_collided: Array
    red_light_violation: Array
    # displacement against the log (drivesim.core.metrics.LOG_HORIZONS_S)
    ade_1s: Array
    ade_3s: Array
    ade_8s: Array
    fde_1s: Array
    fde_3s: Array
    fde_8s: Array


METRIC_NAMES = tuple(f.name for f in fields(RolloutMetrics))
# the tree of a RolloutMetrics, for programs called with flat outputs (core.traced_cache)
METRICS_TREE = jax.tree_util.tree_structure(RolloutMetrics(*[np.zeros(())] * len(METRIC_NAMES)))


@pytree_dataclass
class Trajectory:
    """Full trajectory of a rollout, in the scenario's original agent order.

    x, y, heading, speed: (..., S, N) float32 after each step (S = num_steps).
    valid: (..., S, N) bool.
    """

    x: Array
    y: Array
    heading: Array
    speed: Array
    valid: Array


@pytree_dataclass
class OpenLoopParams:
    """Open-loop ego action sequence. actions: (..., S, 2) float32 [accel, steer]."""

    actions: Array


@pytree_dataclass
class MLPParams:
    """Small MLP ego policy. weights: tuple of (in, out) float32 matrices;
    biases: tuple of (out,) float32 vectors. Hidden layers use tanh; the last
    layer outputs (accel, steer) squashed by tanh into the limits."""

    weights: tuple
    biases: tuple


@dataclass(frozen=True)
class LaneChangeConfig:
    """MOBIL lane changes (drivesim.core.mobil; Kesting, Treiber, Helbing 2007), hashable.

    politeness p [-]; b_safe: the new follower may brake at most this hard [m/s^2];
    threshold: the incentive must exceed this [m/s^2]; duration_s: the lateral move's
    length [s] (and the least time between two changes of one agent); decide_every: MOBIL
    decisions run every this many steps. The values are every IDM agent's (ego and replayed
    agents never change lanes); the engine holds them per agent (drivesim.core.mobil rows).
    """

    politeness: float = 0.3
    b_safe: float = 4.0
    threshold: float = 0.1
    duration_s: float = 4.0
    decide_every: int = 5

    def __post_init__(self):
        if not (self.decide_every >= 1 and self.duration_s > 0 and self.b_safe > 0):
            raise ValueError("LaneChangeConfig: decide_every >= 1, duration_s > 0 and b_safe > 0 required")


@dataclass(frozen=True)
class StepControls:
    """What a caller of ``core.rollout.advance`` may set for one step besides the model
    (every field optional; the default steps as a plain rollout does).

    ego_action: (accel [m/s^2], steer [rad]) pair of () arrays that overrides the policy (the
        RL env): accel a correction to the ego's car follower (core.policies.corrected_accel),
        steer a correction to the lane keeper (core.policies.corrected_tan), as the MLP policy
        drives; or a core.actions.AgentActions of corrections for several agents (an ego not in
        it follows ``SimConfig.policy``).
    step_index: unbatched () step counter shared by a whole batch (rollouts pass it so the
        re-sort can be a real branch under vmap).
    zone_on: core.neighbours.SearchesOn of unbatched () bools, False where no scenario of the
        batch has crossing routes (skips the junction zone) or agents on bent routes.
    full_edges: unbatched () bool, every box corner against every lane (the exact fallback's
        last round, core.edges.search).
    """

    ego_action: Any = None
    step_index: Any = None
    zone_on: Any = None
    full_edges: Any = None


POSITION_UPDATES = ("euler", "ballistic")  # SimConfig.position_update


@dataclass(frozen=True)
class SimConfig:
    """Static simulation settings: the model simulated (hashable; a jit static argument).

    policy: the ego policy, an object: drivesim.core.policies.EgoPolicy (IDM, CONSTANT,
        OPEN_LOOP, MLP or a user's); None: IDM. Names (``idm``, ``mlp:FILE``,
        ``package.module:NAME``) are read by drivesim.pipeline.policy_names, not here.
    lane_changes: MOBIL lane changes of IDM agents on straight parallel lanes
        (LaneChangeConfig), or None (agents keep their lanes).
    occlusion: the ego's observation (MLP and user policies that call ``observe()``) leaves
        out agents that no sight line from the ego's centre reaches past other agents' boxes
        (drivesim.core.occlusion). The IDM ego and the other agents react to their leaders in
        their lanes whatever is hidden.
    position_update: how a step moves an agent (drivesim.core.dynamics.bicycle_step).
        "euler": by the speed before the step (explicit Euler, the default of every
        campaign written so far); "ballistic": by the mean of the speeds before and after
        the step (constant acceleration over the step; SUMO's ``--step-method.ballistic``,
        recommended for the IDM at dt = 0.1 s by Treiber & Kanagaraj 2015).
    search: how the engine searches (drivesim.core.search_plan.SearchPlan: neighbour and
        road-edge searches, window, re-sort, cache blocks, capacities, store switches),
        apart from the model; ``with_search(**changes)`` replaces some of its fields.
    """

    dt: float = 0.1
    num_steps: int = 80
    policy: Any = None  # a drivesim.core.policies.EgoPolicy
    max_accel: float = 4.0
    min_accel: float = -9.0
    max_steer: float = 0.5
    max_speed: float = 60.0
    wheelbase_ratio: float = 0.6
    lookahead_time: float = 1.0
    min_lookahead: float = 5.0
    yield_horizon_s: float = 4.0
    obs_neighbours: int = 6
    occlusion: bool = False
    lane_changes: LaneChangeConfig | None = None
    position_update: str = "euler"
    search: SearchPlan = SearchPlan()

    def __post_init__(self):
        if self.position_update not in POSITION_UPDATES:
            raise ValueError(
                f"SimConfig.position_update: expected euler|ballistic, got {self.position_update!r}"
            )
        policy = self.policy
        if policy is not None and not (callable(getattr(policy, "act", None)) and hasattr(policy, "init")):
            raise ValueError(
                f"SimConfig.policy: expected an EgoPolicy (drivesim.core.policies.IDM, MLP, ...) or None, "
                f"got {policy!r}; a policy name is read by drivesim.pipeline.policy_names.policy_named"
            )
        if self.num_steps < 1:
            raise ValueError(f"SimConfig.num_steps: must be >= 1, got {self.num_steps!r}")
        if not isinstance(self.search, SearchPlan):
            raise ValueError(f"SimConfig.search: expected a SearchPlan, got {self.search!r}")

    def with_search(self, **changes) -> SimConfig:
        """This config with its SearchPlan's ``changes`` (keywords of SearchPlan's fields)."""
        return dataclasses.replace(self, search=self.search.replace(**changes))
