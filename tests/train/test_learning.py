"""Learning is real: a short run from scratch beats the untrained policy on held-out ids,
evaluated the way users evaluate policies (a campaign with --policy mlp:FILE)."""

from __future__ import annotations

import importlib.util
import json

import jax
import numpy as np
import pytest

from drivesim.core.policies import CONSTANT
from drivesim.train.config import tiny_config
from drivesim.train.env import build_pool
from drivesim.train.evaluate import evaluate_campaign, evaluate_direct, evaluate_policy, held_out_ids
from drivesim.train.policy_io import load_policy
from drivesim.train.ppo import _init_state

LEARN_UPDATES = 300

HELD_OUT = 128


@pytest.fixture(scope="module")
def untrained_params():
    cfg = tiny_config(LEARN_UPDATES, anneal_updates=LEARN_UPDATES)
    return jax.device_get(_init_state(build_pool(cfg.env), cfg))


def test_trained_policy_beats_untrained_on_held_out_ids(trained_run, untrained_params):
    cfg = tiny_config(LEARN_UPDATES, anneal_updates=LEARN_UPDATES).env
    ids = held_out_ids(cfg, HELD_OUT)
    before = evaluate_direct(untrained_params.params.actor, cfg, ids)
    policy = load_policy(trained_run.policy_path, obs_size=cfg.obs_size)
    after = evaluate_direct(policy, cfg, ids)
    # the untrained actor's near-zero actions follow and keep the lane as the IDM ego does
    # (both are corrections), so it rarely fails: learning must add progress, not failures
    assert after.collision_rate <= before.collision_rate + 0.01, (before, after)
    assert after.offroad_rate <= before.offroad_rate + 0.01, (before, after)
    assert after.progress_m > before.progress_m + 3.0, (before, after)


def test_trained_ego_is_as_safe_as_the_constant_speed_ego_and_makes_more_progress(trained_run):
    """What a user expects of a trained policy: on held-out ids it collides and leaves the road
    no more often than the constant-speed ego (within one point, one scenario of 128: the
    tolerance of BENCHMARKS.md's goal), and gets further."""
    cfg = tiny_config(LEARN_UPDATES, anneal_updates=LEARN_UPDATES).env
    ids = held_out_ids(cfg, HELD_OUT)
    trained = evaluate_direct(load_policy(trained_run.policy_path, obs_size=cfg.obs_size), cfg, ids)
    constant = evaluate_policy(CONSTANT, None, cfg, ids)
    assert trained.collision_rate <= constant.collision_rate + 0.01, (trained, constant)
    assert trained.offroad_rate <= constant.offroad_rate + 0.01, (trained, constant)
    assert trained.progress_m > constant.progress_m, (trained, constant)


def test_learning_curve_is_written_and_improves(trained_run):
    rows = [json.loads(line) for line in trained_run.curve_path.read_text().splitlines()]
    assert len(rows) == LEARN_UPDATES and rows[-1]["env_steps"] == LEARN_UPDATES * 64 * 16
    keys = {
        "update",
        "env_steps",
        "mean_return",
        "collision_rate",
        "progress",
        "mean_reward",
        "steps_per_s",
        "wall_s",
    }
    assert keys <= set(rows[0])
    early = np.nanmean([r["mean_return"] for r in rows[:20] if r["mean_return"] is not None])
    late = np.nanmean([r["mean_return"] for r in rows[-20:] if r["mean_return"] is not None])
    assert late > early


CAMPAIGN = importlib.util.find_spec("drivesim.pipeline.campaign") is not None


@pytest.mark.skipif(not CAMPAIGN, reason="no campaign runner")
def test_campaign_evaluation_of_the_saved_policy(trained_run, untrained_params, tmp_path):
    """The issue's check: evaluated through a campaign (drivesim run --policy mlp:FILE)."""
    cfg = tiny_config(LEARN_UPDATES, anneal_updates=LEARN_UPDATES).env
    after = evaluate_campaign(trained_run.policy_path, cfg, HELD_OUT, tmp_path / "after")
    assert after.scenarios == HELD_OUT
    direct = evaluate_direct(load_policy(trained_run.policy_path), cfg, held_out_ids(cfg, HELD_OUT))
    assert after.progress_m == pytest.approx(direct.progress_m, rel=1e-4)
    assert after.collision_rate == pytest.approx(direct.collision_rate)
    before = evaluate_direct(untrained_params.params.actor, cfg, held_out_ids(cfg, HELD_OUT))
    assert after.collision_rate <= before.collision_rate + 0.01
    assert after.offroad_rate <= before.offroad_rate + 0.01
    assert after.progress_m > before.progress_m + 3.0
    # the evaluation campaign's dashboard says what the policy was trained on
    from drivesim.report.dashboard import header_fields
    from drivesim.report.data import load_campaign

    header = header_fields(load_campaign(tmp_path / "after"))
    assert header["policy"].startswith("mlp:") and header["policy"].endswith("policy.npz")
    steps = f"{LEARN_UPDATES * 64 * 16:,} env steps"
    assert header["trained"].startswith(f"policy.npz: highway, 8 agents, {steps}, seed 0; reward ")
    assert "collision_penalty=300" in header["trained"]
