"""Checkpoint and resume: K/2 updates, a checkpoint, fresh objects, K/2 more == K in one go."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from drivesim.train.config import tiny_config
from drivesim.train.loop import read_curve, train


def test_resume_equals_uninterrupted(tmp_path, one_device):
    straight = train(tiny_config(updates=4, chunk=2), tmp_path / "a", devices=one_device)
    first = train(tiny_config(updates=2, chunk=2), tmp_path / "b", devices=one_device)
    assert first.resumed_from is None and int(first.state.update) == 2
    resumed = train(tiny_config(updates=4, chunk=2), tmp_path / "b", devices=one_device)
    assert resumed.resumed_from == 2 and int(resumed.state.update) == 4
    a = jax.tree_util.tree_leaves(jax.device_get(straight.state))
    b = jax.tree_util.tree_leaves(jax.device_get(resumed.state))
    for x, y in zip(a, b, strict=True):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-6)
    curve = read_curve(tmp_path / "b")
    assert [row["update"] for row in curve] == [1, 2, 3, 4]
    uninterrupted = read_curve(tmp_path / "a")[3]
    for key in ("mean_return", "mean_reward"):
        assert curve[3][key] == uninterrupted[key]
    saved = json.loads((tmp_path / "b" / "train" / "config.json").read_text())
    assert saved["ppo"]["num_envs"] == 64


def test_resume_with_a_different_config_is_refused(tmp_path, one_device):
    train(tiny_config(updates=2, chunk=2), tmp_path, devices=one_device)
    cfg = tiny_config(updates=4, chunk=2)
    changed = cfg.__class__(**{**cfg.__dict__, "seed": 1})
    with pytest.raises(ValueError, match=r"different config.*seed"):
        train(changed, tmp_path, devices=one_device)
