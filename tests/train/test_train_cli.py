"""``drivesim train``: help text and a tiny run writing the curve, checkpoints and policy."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from drivesim.cli import app


def test_train_help_lists_the_options():
    result = CliRunner().invoke(app, ["train", "--help"])
    assert result.exit_code == 0
    for option in ("--family", "--steps", "--envs", "--out", "--resume"):
        assert option in result.output


def test_train_json_run_writes_curve_checkpoint_and_policy(tmp_path):
    args = [
        "train",
        "--steps",
        "2048",
        "--envs",
        "64",
        "--agents",
        "8",
        "--episode-steps",
        "40",
        "--rollout",
        "16",
        "--pool",
        "256",
        "--lr",
        "1e-3",
        "--chunk",
        "2",
        "--checkpoint-every",
        "2",
        "--devices",
        "1",
        "--out",
        str(tmp_path),
        "--json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert [row["update"] for row in lines] == [1, 2]
    train_dir = tmp_path / "train"
    assert (train_dir / "policy.npz").is_file() and (train_dir / "checkpoints" / "2").is_dir()
    assert len((train_dir / "curve.jsonl").read_text().splitlines()) == 2


def test_train_rejects_bad_settings(tmp_path):
    result = CliRunner().invoke(app, ["train", "--rollout", "10", "--out", str(tmp_path)])
    assert result.exit_code != 0
    assert "minibatches" in result.output
