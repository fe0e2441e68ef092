"""Shared configs, policies and cached core runs for tests/core (one compile per config)."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from drivesim.core.observation import observation_size
from drivesim.core.policies import CONSTANT, MLP, OPEN_LOOP, idm_policy, init_mlp, open_loop_policy
from drivesim.core.search_plan import SearchPlan
from drivesim.core.trajectory import simulate_trajectory
from drivesim.core.types import MLPParams, SimConfig

from . import builders

STEPS = 40
CONFIGS = {
    "idm": SimConfig(num_steps=STEPS),
    "constant": SimConfig(num_steps=STEPS, policy=CONSTANT),
    "open_loop": SimConfig(num_steps=STEPS, policy=OPEN_LOOP),
    "mlp": SimConfig(num_steps=STEPS, policy=MLP),
    "window2": SimConfig(num_steps=STEPS, search=SearchPlan(window=2)),
    "signals": SimConfig(num_steps=STEPS),
    "ballistic": SimConfig(num_steps=STEPS, position_update="ballistic"),
}


def open_loop_actions() -> np.ndarray:
    """(STEPS, 2): accel 0,1,1,3,3,-2,-2,0... (max jerk 50 m/s^3), steer 0 then 0.1 rad from t=12."""
    actions = np.zeros((STEPS, 2), np.float32)
    actions[:, 0] = [0, 1, 1, 3, 3, -2, -2] + [0] * (STEPS - 7)
    actions[12:, 1] = 0.1
    return actions


def small_mlp() -> MLPParams:
    """A seed-0 MLP (obs -> 16 -> 2) with a scaled-down output layer (gentle actions)."""
    params = init_mlp(0, (observation_size(CONFIGS["mlp"].obs_neighbours), 16, 2))
    return dataclasses.replace(params, weights=(params.weights[0], params.weights[1] * 0.3))


POLICIES = {
    "idm": idm_policy(),
    "constant": None,
    "open_loop": open_loop_policy(open_loop_actions()),
    "mlp": small_mlp(),
    "window2": idm_policy(),
    "signals": idm_policy(),
    "ballistic": idm_policy(),
}

# Host scenarios simulated (batched, padded to builders.SHAPE) under each config.
CASES = {
    "idm": {
        "highway0": lambda: builders.highway_case(0, 6),
        "highway1": lambda: builders.highway_case(1, 6),
        "highway2": lambda: builders.highway_case(2, 5),
        "curved": builders.curved_case,
        "crossing_side_ego": lambda: builders.crossing_case(ego=3),
        "crossing_main_ego": lambda: builders.crossing_case(ego=0),
        "uneven25": lambda: builders.highway_case(3, 6, episode_length=25),
        "highway7": lambda: builders.highway_case(7, 5),
        "vru_street": builders.vru_street_case,
        # not compared with the reference (NaN), checked in test_metrics.py:
        "nan_valid": lambda: builders.with_nan(builders.highway_case(7, 5), 2),
        "nan_pad": lambda: builders.with_nan(builders.pad(builders.highway_case(7, 5)), 5),
    },
    "constant": {
        "crash": builders.stopped_car_case,
        "approach10": lambda: builders.stopped_car_case(episode_length=10, ego_accel=1.5),
        "highway4": lambda: builders.highway_case(4, 6),
        "vru_hit": builders.vru_hit_case,
        # traffic signals in a batch where the other scenarios have none:
        "red_runner": lambda: builders.signal_runner_case(green=False),
        "green_runner": lambda: builders.signal_runner_case(green=True),
    },
    "open_loop": {
        "lone": builders.lone_ego_case,
        "lone10": lambda: builders.lone_ego_case(episode_length=10),
        "highway5": lambda: builders.highway_case(5, 6),
    },
    "mlp": {
        "highway6": lambda: builders.highway_case(6, 6),
        "curved": builders.curved_case,
        "highway7": lambda: builders.highway_case(7, 5),
        "nan_pad": lambda: builders.with_nan(builders.pad(builders.highway_case(7, 5)), 5),
    },
    "window2": {
        "platoon": builders.platoon_case,
        "abreast": builders.abreast_case,
    },
    "signals": {
        "queue": builders.signal_queue_case,
        "amber": builders.signal_amber_case,
        "highway8": lambda: builders.highway_case(8, 6),
    },
    "ballistic": {  # the mean-speed position update (a stop within the run, a bend, a platoon)
        "highway0": lambda: builders.highway_case(0, 6),
        "curved": builders.curved_case,
        "stopped": builders.stopped_car_case,
        "platoon": builders.platoon_case,
    },
}

_RUNS: dict = {}


def core_run(config_name: str):
    """(host scenarios by name, metrics by name, trajectory by name) of one config's batch,
    computed once per session with ``simulate_trajectory``."""
    if config_name not in _RUNS:
        names = list(CASES[config_name])
        scenarios = {name: CASES[config_name][name]() for name in names}
        batch = builders.batch([scenarios[n] for n in names])
        metrics, traj = jax.device_get(
            simulate_trajectory(batch, POLICIES[config_name], CONFIGS[config_name])
        )
        pick = lambda tree, b: jax.tree_util.tree_map(lambda v: np.asarray(v[b]), tree)  # noqa: E731
        _RUNS[config_name] = (
            scenarios,
            {n: pick(metrics, b) for b, n in enumerate(names)},
            {n: pick(traj, b) for b, n in enumerate(names)},
        )
    return _RUNS[config_name]


@pytest.fixture(scope="session")
def core_runs():
    """Accessor for the cached core runs: ``core_runs(config_name)``."""
    return core_run
