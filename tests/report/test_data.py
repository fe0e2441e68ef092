"""Loading a campaign directory and the numbers behind the figures."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest
from report_fixtures import HOSTILE

from drivesim.report import analysis
from drivesim.report.data import device_busy, load_campaign, result_shards


def _table(campaign_dir):
    return pq.ParquetDataset(result_shards(campaign_dir)).read().to_pylist()


def test_outcomes_match_the_parquet(campaign_dir):
    rows = _table(campaign_dir)
    out = load_campaign(campaign_dir).outcomes
    assert out.total == len(rows) == 5 * 16 * 2
    assert out.failed == sum(r["status"] == "failed" for r in rows) > 0
    for group in out.by_family:
        ok = [r for r in rows if r["family"] == group["label"] and r["status"] == "ok"]
        assert group["n"] == sum(r["family"] == group["label"] for r in rows)
        assert np.isclose(group["collision_rate"], np.mean([r["ego_collided"] for r in ok]))
        finite = [r["min_ttc_s"] for r in ok if np.isfinite(r["min_ttc_s"])]
        assert np.isclose(group["min_ttc_s"], np.median(finite), rtol=1e-5)
    assert {g["label"] for g in out.by_family} == {"highway", "merge", HOSTILE}
    assert [p["label"] for p in out.by_policy] == ["idm [0]", "idm[T=1.2,v0=30] [1]"]
    q = {r["label"]: r for r in out.quantiles[("family", "progress_m")]}["merge"]
    assert q["q0"] <= q["q25"] <= q["q50"] <= q["q75"] <= q["q100"]
    assert all(HOSTILE in r["error"] for r in out.failed_rows)
    assert sum(n for _, n in out.failed_reasons) == out.failed


def test_ledger_bench_scale_profile(campaign_dir):
    data = load_campaign(campaign_dir)
    assert data.meta["jax_version"] == "0.10.2"
    assert len(data.phases) == 5 and len(data.batches) == 6
    ends = [p["wall_end"] for p in data.phases]
    assert ends == sorted(ends)
    assert {r["kind"] for r in data.bench} == {"engine", "pipeline", "memory"}
    assert {r["kind"] for r in data.scale} == {"scale", "amdahl"}
    assert any("scale.jsonl:6" in w for w in data.warnings), data.warnings
    busy = device_busy(data.busy)
    assert len(busy.names) == 8 and 0.6 <= min(busy.fractions)


def test_corrupt_shard_becomes_a_warning(fresh_campaign):
    (fresh_campaign / "results" / "part-00000099.parquet").write_bytes(b"stray: no ledger entry names it")
    assert load_campaign(fresh_campaign).outcomes.total == 160  # a stray file is never read
    (fresh_campaign / "results" / "part-00000000.parquet").write_bytes(b"not parquet at all")
    data = load_campaign(fresh_campaign)
    assert 0 < data.outcomes.total < 160  # the other batches' rows
    assert any("left out" in w and "part-00000000.parquet" in w for w in data.warnings), data.warnings
    assert data.phases  # the rest still loads


def test_temporary_shards_are_ignored(fresh_campaign):
    (fresh_campaign / "results" / ".part-00000099.parquet.tmp").write_bytes(b"half written")
    assert load_campaign(fresh_campaign).outcomes.total == 160


def test_empty_directory(tmp_path):
    data = load_campaign(tmp_path)
    assert data.is_empty and not data.warnings


def test_busy_formats():
    assert device_busy({"a": 0.5, "b": 0.25}).fractions == (0.5, 0.25)
    found = device_busy({"busy": {"gpu0": 0.9}, "gpu_util": {"gpu0": 87}})
    assert found.names == ("gpu0",) and found.gpu_util == {"gpu0": 87.0}


def test_throughput_series():
    phases = [dict(wall_start=float(i), wall_end=float(i + 1), num_scenarios=10) for i in range(10)]
    tp = analysis.throughput(phases, window=3)
    assert np.allclose(tp.per_batch, 10.0) and np.allclose(tp.rolling, 10.0)
    assert tp.cumulative[-1] == 100 and tp.t[-1] == 10.0 and tp.mean == 10.0
    assert analysis.throughput([{"wall_start": None}]) is None


def test_bottleneck_and_knee_and_amdahl():
    verdict = analysis.bottleneck([dict(load_s=3.0, h2d_s=0.1, compute_s=1.0, d2h_s=0.0, write_s=0.2)])
    assert verdict.bottleneck == "input-bound" and "loader threads" in verdict.text
    assert analysis.bottleneck([{}]) is None
    sizes, rates = np.array([64, 256, 1024, 4096]), np.array([300.0, 700.0, 880.0, 900.0])
    assert analysis.knee(sizes, rates) == 2
    n = np.array([1, 2, 4, 8, 16])
    assert np.isclose(analysis.fit_amdahl(n, analysis.amdahl_speedup(n, 0.05)), 0.05)
    x, y = analysis.downsample(np.arange(10_000.0), np.ones(10_000), max_points=100)
    assert len(x) == 100 and np.allclose(y, 1.0)


def test_busy_json_from_a_real_profiler_trace(tmp_path):
    """busy.json as drivesim.bench.profile writes it from a jax.profiler trace."""
    profile = pytest.importorskip("drivesim.bench.profile")
    import jax
    import jax.numpy as jnp

    x = jnp.ones((256, 256))
    step = jax.jit(lambda a: (a @ a).sum())
    jax.block_until_ready(step(x))
    result = profile.trace_calls(lambda: step(x), tmp_path / "trace", repeats=3)
    result.write_json(tmp_path / "camp" / "profile" / "busy.json")
    data = load_campaign(tmp_path / "camp")
    busy = device_busy(data.busy)
    assert busy.names and all(0.0 <= f <= 1.0 for f in busy.fractions)
    assert max(busy.fractions) > 0.0


def test_dashboard_verdict_is_the_bench_rule(tmp_path):
    """The dashboard and ``drivesim bench pipeline`` give the same verdict on the same rows:
    load shared by the campaign's loader threads (from campaign.toml), unaccounted wall time
    as host time."""
    from drivesim.bench.bottleneck import totals_from_rows, verdict

    rows = [dict(load_s=3.0, h2d_s=0.1, compute_s=2.0, d2h_s=0.0, write_s=0.2, wall_start=0.0, wall_end=2.5)]
    for threads, expected in ((1, "input-bound"), (4, "compute-bound")):
        found = analysis.bottleneck(rows, threads)
        assert found.bottleneck == verdict(totals_from_rows(rows, threads)).bottleneck == expected
    (tmp_path / "campaign.toml").write_text('sources = ["synthetic:highway"]\nloader_threads = 4\n')
    assert load_campaign(tmp_path).loader_threads == 4
    (tmp_path / "campaign.toml").write_text("loader_threads = [")
    broken = load_campaign(tmp_path)
    assert broken.loader_threads == 1 and any("campaign.toml" in w for w in broken.warnings)
