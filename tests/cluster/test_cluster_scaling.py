"""``drivesim scale --cluster ray``: the steady rate read from a ledger, and a real strong-scaling
run over 1 and 2 pinned Ray workers against the pinned single-process run."""

from __future__ import annotations

import pytest

from drivesim.bench.cluster_scaling import ClusterScaleConfig, run_cluster_scaling, steady_rate
from drivesim.bench.records import append_records
from drivesim.pipeline.ledger import Ledger, PlannedBatch
from drivesim.report import write_dashboard


def test_steady_rate_spans_the_time_every_worker_was_busy(tmp_path):
    # worker a ends batches at 10, 11, 12, 13 (its last: t1 = 13); worker b at 10.5 (its first:
    # t0 = 10.5), 12.5, 13.5
    ends = {0: ("a", 10.0), 1: ("b", 10.5), 2: ("a", 11.0), 3: ("a", 12.0), 4: ("b", 12.5)}
    ends |= {5: ("a", 13.0), 6: ("b", 13.5)}
    with Ledger(tmp_path) as ledger:
        ledger.record_plan(0, 0, 56, [PlannedBatch(b, tuple(range(8 * b, 8 * b + 8)), 0) for b in ends])
        for batch_id, (worker, end) in ends.items():
            phases = dict(num_scenarios=8, wall_start=end - 0.5, wall_end=end)
            ledger.mark_done(batch_id, f"part-{batch_id}.parquet", phases, [], worker=worker)
    # batches ending in (10.5, 13]: 11, 12, 12.5, 13 -> 32 scenarios over 2.5 s
    assert steady_rate(tmp_path) == pytest.approx(32 / 2.5)


def test_steady_rate_of_workers_that_never_overlapped(tmp_path):
    # b's first batch (its start-up) ends at 20, after a's last at 13: no common span, so the
    # sum of each worker's own rate after its first batch: a 16 / 3 s, b 8 / 1 s
    ends = {0: ("a", 10.0), 1: ("a", 11.0), 2: ("a", 13.0), 3: ("b", 20.0), 4: ("b", 21.0)}
    with Ledger(tmp_path) as ledger:
        ledger.record_plan(0, 0, 40, [PlannedBatch(b, tuple(range(8 * b, 8 * b + 8)), 0) for b in ends])
        for batch_id, (worker, end) in ends.items():
            ledger.mark_done(batch_id, f"p{batch_id}", dict(num_scenarios=8, wall_end=end), [], worker=worker)
    assert steady_rate(tmp_path) == pytest.approx(16 / 3 + 8 / 1)


def test_steady_rate_needs_two_batches_per_worker(tmp_path):
    with Ledger(tmp_path) as ledger:
        ledger.record_plan(
            0, 0, 16, [PlannedBatch(0, tuple(range(8)), 0), PlannedBatch(1, tuple(range(8, 16)), 0)]
        )
        ledger.mark_done(0, "p0", dict(num_scenarios=8, wall_end=1.0), [], worker="a")
        ledger.mark_done(1, "p1", dict(num_scenarios=8, wall_end=2.0), [], worker="b")
    with pytest.raises(ValueError, match="several batches per worker"):
        steady_rate(tmp_path)


def test_too_few_batches_is_refused():
    with pytest.raises(ValueError, match="under 4 batches"):
        ClusterScaleConfig(scenarios=100, batch_size=32)


@pytest.mark.slow
def test_strong_scaling_over_pinned_ray_workers(tmp_path, ray_cluster):
    config = ClusterScaleConfig(scenarios=96, batch_size=8, agents=16, steps=10, repeats=1, max_workers=2)
    records = run_cluster_scaling(config, log=lambda _: None)
    assert [(r.backend, r.device_count) for r in records] == [("single", 1), ("ray", 1), ("ray", 2)]
    single = records[0].rate()
    for r in records:
        assert r.kind == "scale" and r.mode == "strong" and r.rate() > 0
        assert len(r.extra["steady_rates"]) == 1
        assert r.efficiency == pytest.approx(r.rate() / (r.device_count * single))
    append_records(tmp_path / "scale" / "cluster.jsonl", records)
    html = write_dashboard(tmp_path).read_text(encoding="utf-8")
    scaling = html.split('<section id="scaling">', 1)[1].split("</section>", 1)[0]
    assert "strong ray" in scaling and "strong single" in scaling
