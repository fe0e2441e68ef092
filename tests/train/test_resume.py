"""Checkpoint and resume: K/2 updates, a checkpoint, fresh objects, K/2 more == K in one go."""

from __future__ import annotations

import json
import pathlib
import struct

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
    board = _tensorboard_scalars(tmp_path / "b" / "train" / "tensorboard")
    assert sorted(board["train/mean_reward"]) == [row["env_steps"] for row in curve]
    for row in curve:
        assert board["train/mean_reward"][row["env_steps"]] == np.float32(row["mean_reward"])


def _tensorboard_scalars(directory: pathlib.Path) -> dict[str, dict[int, float]]:
    """{tag: {step: value}} read from the event files (TFRecord framing, Event protos) in
    file order, with TensorBoard's purge rule: a SessionLog START at step P drops the
    earlier files' events at steps >= P."""
    from tensorboardX.proto.event_pb2 import Event, SessionLog

    out: dict[str, dict[int, float]] = {}
    for path in sorted(directory.glob("events.out.tfevents.*"), key=lambda p: p.stat().st_mtime_ns):
        data, at = path.read_bytes(), 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at : at + 8])
            event = Event.FromString(data[at + 12 : at + 12 + length])
            at += 12 + length + 4
            if event.HasField("session_log") and event.session_log.status == SessionLog.START:
                out = {tag: {k: v for k, v in steps.items() if k < event.step} for tag, steps in out.items()}
            for value in event.summary.value:
                out.setdefault(value.tag, {})[event.step] = value.simple_value
    return out


def test_resume_with_a_different_config_is_refused(tmp_path, one_device):
    train(tiny_config(updates=2, chunk=2), tmp_path, devices=one_device)
    cfg = tiny_config(updates=4, chunk=2)
    changed = cfg.__class__(**{**cfg.__dict__, "seed": 1})
    with pytest.raises(ValueError, match=r"different config.*seed"):
        train(changed, tmp_path, devices=one_device)


def test_corrupt_newest_checkpoint_falls_back_to_the_previous(tmp_path, one_device, caplog):
    """A damaged newest checkpoint does not block resume: the previous one is used, and said."""
    train(tiny_config(updates=4, chunk=2), tmp_path, devices=one_device)
    ckpts = tmp_path / "train" / "checkpoints"
    assert sorted(int(p.name) for p in ckpts.iterdir() if p.name.isdigit()) == [2, 4]
    for path in (ckpts / "4").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\0garbage")  # every file of the newest checkpoint damaged
    with caplog.at_level("WARNING", logger="drivesim.train"):
        resumed = train(tiny_config(updates=6, chunk=2), tmp_path, devices=one_device)
    assert resumed.resumed_from == 2 and int(resumed.state.update) == 6
    assert "checkpoint 4 could not be restored" in caplog.text
    assert "resumed from checkpoint 2" in caplog.text
    assert (tmp_path / "train" / "corrupt-checkpoints").is_dir()
