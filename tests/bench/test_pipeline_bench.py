"""``drivesim bench pipeline``: a real small campaign, its ledger phases, the verdict."""

import json

import pytest
from typer.testing import CliRunner

from drivesim.bench.bottleneck import CATEGORIES
from drivesim.cli import app

pytest.importorskip("drivesim.pipeline.campaign")


def test_bench_pipeline_cli(tmp_path):
    args = [
        "bench",
        "pipeline",
        "--count",
        "32",
        "--agents",
        "8",
        "--steps",
        "5",
        "--batch-size",
        "16",
        "--repeats",
        "2",
        "--json",
        "--out",
        str(tmp_path),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(x) for x in result.stdout.splitlines() if x.strip()]
    assert record["kind"] == "pipeline" and record["scenarios"] == 32 and record["repeats"] == 2
    assert record["bottleneck"] in CATEGORIES and record["recommendation"]
    phases = record["phases"]
    assert phases["compute"] > 0 and phases["load"] > 0 and phases["write"] > 0
    assert record["extra"]["batches"] == 2
    assert sum(record["extra"]["shares"].values()) == pytest.approx(1.0)
    assert (tmp_path / "bench" / "pipeline.jsonl").is_file()
