"""The trace parser on a real trace of a small run on two (forced CPU) devices."""

import json

import pytest

from drivesim.bench.profile import (
    ProfileConfig,
    busy_fractions,
    merge_intervals,
    nvml_utilisation,
    profile_simulate,
)


def test_merge_intervals():
    assert merge_intervals([]) == 0.0
    assert merge_intervals([(0, 2), (1, 3), (5, 6)]) == 4.0
    assert merge_intervals([(5, 6), (0, 10)]) == 10.0
    assert merge_intervals([(0, 1), (1, 2)]) == 2.0


def test_real_trace_busy_fractions(tmp_path):
    result = profile_simulate(
        ProfileConfig(scenarios=16, agents=8, steps=5, devices=2, repeats=2), tmp_path / "trace"
    )
    assert result.xplane.endswith(".xplane.pb")
    names = [b.device for b in result.busy]
    assert names == ["cpu:0", "cpu:1"]  # the sharded batch ran on both devices, and only there
    for b in result.busy:
        assert 0.0 < b.fraction <= 1.0 + 1e-9
        assert 0.0 < b.busy_s <= b.wall_s + 1e-9
        assert b.events > 10
    assert result.seconds > 0
    again = busy_fractions(result.xplane)
    assert [b.fraction for b in again] == pytest.approx([b.fraction for b in result.busy])
    payload = json.loads(result.write_json(tmp_path / "busy.json").read_text())
    assert [d["device"] for d in payload["devices"]] == names
    assert all(0 < d["busy_fraction"] <= 1 for d in payload["devices"])
    assert result.gpu_util == nvml_utilisation() or result.gpu_util is None
