"""The host-ceiling benchmark: real campaigns with a device program that computes nothing.

``drivesim bench campaign --engine null --json`` prints one object per source with its
marginal rate and stage breakdown; a null-engine campaign writes the real result schema, a
row per scenario (and per policy of a sweep), readable by SQL like any campaign."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from drivesim.bench.host_ceiling import STAGES
from drivesim.bench.null_engine import null_engine
from drivesim.cli import app
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import CampaignConfig
from drivesim.pipeline.results import SCHEMA, query, results_table


@pytest.mark.slow  # eight small campaigns and two stores
def test_bench_campaign_null_json(tmp_path):
    args = ["bench", "campaign", "--engine", "null", "--agents", "8", "--steps", "4", "--batch-size", "64"]
    args += ["--large-batches", "6", "--repeats", "2", "--json", "--out", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]  # stdout is JSON only
    assert [r["source"] for r in records] == ["synthetic", "store"]
    for r in records:
        assert r["engine"] == "null" and r["batch_size"] == 64
        assert r["campaign_scenarios_per_s"]["median"] > 0
        stages = r["stages_us_per_scenario"]
        assert set(stages) == {*STAGES, "marginal", "other"}
        assert all(v >= 0 for v in stages.values())
        rates = [1e6 / r["campaign_scenarios_per_s"][k] for k in ("min", "max")]
        assert min(rates) * 0.99 <= stages["marginal"] <= max(rates) * 1.01  # a pair's own rate
    assert (tmp_path / "bench" / "host.jsonl").is_file()


LAYOUTS = [(1, "sharding"), (2, "sharding"), (1, "shard_map"), (2, "pmap")]


@pytest.mark.parametrize("policies,backend", LAYOUTS)
def test_null_engine_writes_the_real_schema(tmp_path, policies, backend):
    sweep = None
    if policies > 1:  # a sweep of IDM variants: a row per scenario and policy
        sweep = tmp_path / "sweep.toml"
        sweep.write_text("[[policy]]\nT = 1.0\n\n[[policy]]\nT = 2.0\n")
    config = CampaignConfig(
        sources=("synthetic:highway,merge",),
        count=40,
        agents=8,
        num_steps=4,
        batch_size=16,
        sweep=None if sweep is None else str(sweep),
        backend=backend,
        out=str(tmp_path / "c"),
    )
    result = run_campaign(config, engine=null_engine)
    assert result.done == 40 and result.failed == 0
    table = results_table(tmp_path / "c").select(SCHEMA.names)  # the shards' columns (the view adds params)
    assert table.schema.remove_metadata() == SCHEMA.remove_metadata()
    assert table.num_rows == 40 * policies
    ids = np.asarray(table.column("scenario_id"))
    assert sorted(set(ids.tolist())) == list(range(40))
    assert set(table.column("status").to_pylist()) == {"ok"}
    names = query(tmp_path / "c", "SELECT DISTINCT family FROM results ORDER BY family").column(0)
    assert names.to_pylist() == ["highway", "merge"]
