"""``drivesim bench engine|memory --json`` and ``drivesim profile``: stdout holds JSON only."""

import json

from typer.testing import CliRunner

from drivesim.bench.profile import busy_fractions
from drivesim.cli import app


def _json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]  # every line must be JSON


def test_bench_engine_json(tmp_path):
    args = [
        "bench",
        "engine",
        "--agents",
        "8",
        "--scenarios",
        "16",
        "--steps",
        "5",
        "--repeats",
        "2",
        "--json",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = _json_lines(result.stdout)
    assert [r["agents"] for r in records] == [8]
    assert all(r["kind"] == "engine" and r["repeats"] == 2 for r in records)
    assert "records appended" in result.stderr
    assert len((tmp_path / "bench" / "engine.jsonl").read_text().splitlines()) == 1


def test_bench_engine_family_against_highway(tmp_path):
    args = ["bench", "engine", "--agents", "8", "--scenarios", "16", "--steps", "5", "--repeats", "1"]
    family = ["--family", "intersection_turns", "--json", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args + family)
    assert result.exit_code == 0, result.output
    highway, turns = _json_lines(result.stdout)
    assert (highway["extra"]["family"], turns["extra"]["family"]) == ("highway", "intersection_turns")
    assert turns["workload"] == "intersection_turns-16x8x5" and "vs_highway" not in highway["extra"]
    ratio = turns["scenarios_per_s"]["median"] / highway["scenarios_per_s"]["median"]
    assert abs(turns["extra"]["vs_highway"] - ratio) < 1e-9
    assert "x highway (goal >= 0.7)" in result.stderr
    bad = CliRunner().invoke(app, args + ["--family", "roundabout", "--out", str(tmp_path)])
    assert bad.exit_code == 2 and "unknown --family 'roundabout'" in bad.stderr
    assert bad.stderr.count("\n") == 1


def test_bench_memory_marks_one_knee(tmp_path):
    args = [
        "bench",
        "memory",
        "--sizes",
        "8,16",
        "--agents",
        "8",
        "--steps",
        "5",
        "--repeats",
        "2",
        "--json",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = _json_lines(result.stdout)
    assert [r["batch_size"] for r in records] == [8, 16]
    assert sum(r["knee"] for r in records) == 1
    assert all(r["kind"] == "memory" and r["compiled_bytes"] > 0 for r in records)
    assert records[1]["compiled_bytes"] > records[0]["compiled_bytes"]


def test_profile_command(tmp_path):
    args = [
        "profile",
        "--out",
        str(tmp_path),
        "--scenarios",
        "16",
        "--agents",
        "8",
        "--steps",
        "5",
        "--devices",
        "2",
        "--repeats",
        "1",
        "--json",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (record,) = _json_lines(result.stdout)
    assert record["kind"] == "profile" and set(record["busy"]) == {"cpu:0", "cpu:1"}
    assert "busy" in result.stderr and (tmp_path / "profile" / "busy.json").is_file()
    xplane = next((tmp_path / "profile" / "trace").rglob("*.xplane.pb"))
    assert [b.device for b in busy_fractions(xplane)] == ["cpu:0", "cpu:1"]
