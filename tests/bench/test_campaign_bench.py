"""``drivesim bench campaign --json``: one object per source with the marginal campaign rate,
the engine rate of the same workload and their ratio."""

import json

import pytest
from typer.testing import CliRunner

from drivesim.cli import app


@pytest.mark.slow  # six small campaigns and an engine run
def test_bench_campaign_json(tmp_path):
    args = ["bench", "campaign", "--agents", "8", "--steps", "20", "--batch-size", "16"]
    # the campaigns share their compiled program (one compile in the warm-up), so the 11 extra
    # batches of 20 steps make the large campaign clearly slower than the small one
    # (a pair where it is not gives no rate, and no rate at all is an error)
    args += ["--large-batches", "12", "--repeats", "2", "--json", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]  # stdout is JSON only
    assert [r["extra"]["source"] for r in records] == ["synthetic", "store"]
    for r in records:
        assert r["kind"] == "campaign" and r["batch_size"] == 16
        campaign = r["extra"]["campaign_scenarios_per_s"]["median"]
        engine = r["extra"]["engine_scenarios_per_s"]["median"]
        assert campaign > 0 and engine > 0
        assert abs(r["extra"]["ratio_to_engine"] - campaign / engine) < 1e-9
        assert r["extra"]["large_scenarios"] - r["extra"]["small_scenarios"] == 11 * 16
    assert (tmp_path / "bench" / "campaign.jsonl").is_file()
