"""The pure JAX core: state types, the rollout, ego policies, scenario validation."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "AgentState": "drivesim.core.types",
    "IDMParams": "drivesim.core.types",
    "IDM_DEFAULTS": "drivesim.core.types",
    "LaneChangeConfig": "drivesim.core.types",
    "LogTrajectory": "drivesim.core.types",
    "MOBILParams": "drivesim.core.types",
    "METRIC_NAMES": "drivesim.core.types",
    "MLPParams": "drivesim.core.types",
    "OpenLoopParams": "drivesim.core.types",
    "RoadMap": "drivesim.core.types",
    "RolloutMetrics": "drivesim.core.types",
    "Scenario": "drivesim.core.types",
    "SignalPlan": "drivesim.core.types",
    "SimConfig": "drivesim.core.types",
    "SearchPlan": "drivesim.core.search_plan",
    "StepControls": "drivesim.core.types",
    "Trajectory": "drivesim.core.types",
    # road-user types
    "VEHICLE": "drivesim.core.types",
    "PEDESTRIAN": "drivesim.core.types",
    "CYCLIST": "drivesim.core.types",
    "KIND_NAMES": "drivesim.core.types",
    "SimState": "drivesim.core.rollout",
    "advance": "drivesim.core.rollout",
    "observation_of": "drivesim.core.rollout",
    "neighbour_present": "drivesim.core.observation",
    "reset": "drivesim.core.rollout",
    "rollout_batch": "drivesim.core.rollout",
    "rollout_trajectory": "drivesim.core.trajectory",
    "simulate": "drivesim.core.rollout",
    "simulate_trajectory": "drivesim.core.trajectory",
    "EgoInputs": "drivesim.core.policies",
    "EgoPolicy": "drivesim.core.policies",
    "IDM": "drivesim.core.policies",
    "CONSTANT": "drivesim.core.policies",
    "OPEN_LOOP": "drivesim.core.policies",
    "MLP": "drivesim.core.policies",
    "policy_of": "drivesim.core.policies",
    "default_policy_params": "drivesim.core.policies",
    "idm_policy": "drivesim.core.policies",
    "init_mlp": "drivesim.core.policies",
    "open_loop_policy": "drivesim.core.policies",
    "stack_policies": "drivesim.core.policies",
    "steer_tan": "drivesim.core.policies",
    "corrected_tan": "drivesim.core.policies",
    "observation_size": "drivesim.core.observation",
    "ScenarioError": "drivesim.core.validate",
    "validate_scenario": "drivesim.core.validate",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
