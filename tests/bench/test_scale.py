"""``drivesim scale`` end to end with 1 and 2 pinned processes (small workload)."""

import json

import pytest
from typer.testing import CliRunner

from drivesim.bench.scaling import cpu_cores, device_counts, probe, worker_env
from drivesim.cli import app


def test_device_counts():
    assert device_counts(8, None) == [1, 2, 4, 8]
    assert device_counts(8, 2) == [1, 2]
    assert device_counts(6, None) == [1, 2, 4, 6]
    assert device_counts(1, 4) == [1]


def test_probe_counts_cores_on_cpu():
    assert probe("cpu") == ("cpu", len(cpu_cores()))


def test_worker_env_drops_forced_devices(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8 --xla_foo=1")
    env = worker_env("cpu")
    assert env["XLA_FLAGS"] == "--xla_foo=1" and env["JAX_PLATFORMS"] == "cpu"
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
    assert "XLA_FLAGS" not in worker_env("cpu")


@pytest.mark.slow
@pytest.mark.skipif(len(cpu_cores()) < 2, reason="needs 2 CPU cores for 2 pinned processes")
def test_scale_cli_strong_one_and_two_processes(tmp_path):
    args = [
        "scale",
        "--mode",
        "strong",
        "--max-devices",
        "2",
        "--scenarios",
        "32",
        "--agents",
        "8",
        "--steps",
        "5",
        "--repeats",
        "2",
        "--price",
        "1.0",
        "--json",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.strip()]
    assert all(isinstance(x, dict) for x in lines)
    scale = [x for x in lines if x["kind"] == "scale"]
    fit = [x for x in lines if x["kind"] == "amdahl"]
    assert [x["device_count"] for x in scale] == [1, 2] and [x["process_count"] for x in scale] == [1, 2]
    assert all(x["backend"] == "processes" and x["platform"] == "cpu" for x in scale)
    assert all(x["scenarios"] == 32 and x["extra"]["pinned"] for x in scale)
    one, two = scale
    assert one["speedup"] == 1.0 and one["efficiency"] == 1.0
    thr1, thr2 = one["scenarios_per_s"]["median"], two["scenarios_per_s"]["median"]
    assert two["efficiency"] == pytest.approx(thr2 / (2 * thr1))
    assert two["cost_per_million"] == pytest.approx(1e6 / thr2 / 3600 * 2 * 1.0)
    assert len(fit) == 1 and fit[0]["extra"]["devices"] == [1, 2]
    p = fit[0]["serial_fraction"]
    assert p == pytest.approx(2 / two["speedup"] - 1)  # 1/S - 1/2 = p/2 for N=2
    stored = (tmp_path / "scale" / "strong.jsonl").read_text().splitlines()
    assert len(stored) == 3
