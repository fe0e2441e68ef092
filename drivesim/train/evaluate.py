"""Held-out evaluation of a trained policy.

The training pool uses scenario ids [pool_start, pool_start + pool_size) (default from
1,000,000); held-out evaluation uses the ids a campaign gives its synthetic scenarios,
[0, count), so ``drivesim run --source synthetic:highway --policy mlp:FILE`` and
:func:`evaluate_campaign` see the same held-out scenarios.
"""

from __future__ import annotations

import dataclasses
import pathlib
from dataclasses import dataclass

import jax
import numpy as np

from drivesim.core.policies import MLP, EgoPolicy, default_policy_params
from drivesim.core.rollout import simulate
from drivesim.core.types import MLPParams
from drivesim.train.config import EnvConfig
from drivesim.train.env import host_scenarios, scenario_ids


@dataclass(frozen=True)
class EvalSummary:
    """Held-out metrics of one policy over ``scenarios`` episodes."""

    scenarios: int
    collision_rate: float
    offroad_rate: float
    progress_m: float
    max_jerk: float


def held_out_ids(cfg: EnvConfig, count: int) -> np.ndarray:
    """Ids [0, count), checked disjoint from the training pool."""
    ids = np.arange(count, dtype=np.int64)
    if np.intersect1d(ids, scenario_ids(cfg)).size:
        raise ValueError(
            f"EnvConfig.pool_start={cfg.pool_start}: the training pool overlaps the held-out ids [0, {count})"
        )
    return ids


def evaluate_direct(params: MLPParams, cfg: EnvConfig, ids) -> EvalSummary:
    """Roll the deterministic policy over scenarios ``ids`` with ``simulate`` (no campaign)."""
    return evaluate_policy(MLP, params, cfg, ids)


def evaluate_policy(policy: EgoPolicy, params, cfg: EnvConfig, ids) -> EvalSummary:
    """Roll the ego ``policy`` (drivesim.core.policies: MLP, IDM, CONSTANT, ...) with ``params``
    (None: its defaults) over scenarios ``ids`` of ``cfg`` with ``simulate``: the baselines a
    trained ego is compared with, on the same scenarios."""
    sim = dataclasses.replace(cfg.sim, policy=policy)
    if params is None:
        params = default_policy_params(sim)
    metrics = jax.device_get(simulate(host_scenarios(cfg, ids), params, sim))
    return _summary(metrics.ego_collided, metrics.offroad, metrics.progress_m, metrics.max_jerk)


def evaluate_campaign(policy_file, cfg: EnvConfig, count: int, out_dir) -> EvalSummary:
    """Evaluate a policy file through a campaign (``drivesim run``) on held-out ids [0, count)."""
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig
    from drivesim.pipeline.results import query

    held_out_ids(cfg, count)
    config = CampaignConfig(
        sources=(f"synthetic:{cfg.family}",),
        count=count,
        policy=f"mlp:{pathlib.Path(policy_file).resolve()}",
        agents=cfg.num_agents,
        num_steps=cfg.episode_steps,
        seed=cfg.family_seed,
        out=str(out_dir),
        batch_size=min(count, 256),
    )
    run_campaign(config)
    sql = "SELECT ego_collided, offroad, progress_m, max_jerk FROM results WHERE status = 'ok'"
    table = query(out_dir, sql)
    cols = {name: np.asarray(table.column(name).to_pylist()) for name in table.column_names}
    return _summary(cols["ego_collided"], cols["offroad"], cols["progress_m"], cols["max_jerk"])


def _summary(collided, offroad, progress, jerk) -> EvalSummary:
    return EvalSummary(
        scenarios=int(np.size(collided)),
        collision_rate=float(np.mean(collided)),
        offroad_rate=float(np.mean(offroad)),
        progress_m=float(np.mean(progress)),
        max_jerk=float(np.mean(jerk)),
    )
