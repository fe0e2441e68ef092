"""The bottleneck rule on constructed phase timings."""

import pytest

from drivesim.bench.bottleneck import PhaseTotals, shares, totals_from_rows, verdict


def row(load=0.0, h2d=0.0, compute=0.0, d2h=0.0, write=0.0, start=None, end=None, n=100):
    return {
        "load_s": load,
        "h2d_s": h2d,
        "compute_s": compute,
        "d2h_s": d2h,
        "write_s": write,
        "wall_start": start,
        "wall_end": end,
        "num_scenarios": n,
    }


@pytest.mark.parametrize(
    "phases, expected, hint",
    [
        (dict(load=5.0, compute=1.0), "input-bound", "loader threads"),
        (dict(h2d=3.0, compute=1.0, d2h=0.5), "transfer-bound", "larger chunk"),
        (dict(d2h=3.0, compute=1.0), "transfer-bound", "metrics only"),
        (dict(load=0.2, h2d=0.1, compute=4.0, write=0.3), "compute-bound", "bucket"),
        (dict(compute=1.0, write=2.0), "host-bound", "background thread"),
    ],
)
def test_dominant_phase(phases, expected, hint):
    v = verdict(totals_from_rows([row(**phases), row(**phases)]))
    assert v.bottleneck == expected
    assert hint in v.recommendation
    assert sum(v.shares.values()) == pytest.approx(1.0)


def test_loader_threads_share_the_load():
    rows = [row(load=3.0, compute=2.0)]
    assert verdict(totals_from_rows(rows, loader_threads=1)).bottleneck == "input-bound"
    assert verdict(totals_from_rows(rows, loader_threads=4)).bottleneck == "compute-bound"


def test_unaccounted_wall_time_counts_as_host():
    rows = [row(compute=1.0, start=100.0, end=101.5), row(compute=1.0, start=101.5, end=110.0)]
    totals = totals_from_rows(rows)
    assert totals.wall == pytest.approx(10.0) and totals.other == pytest.approx(8.0)
    assert totals.scenarios == 200 and totals.batches == 2
    assert verdict(totals).bottleneck == "host-bound"


def test_nulls_and_empty():
    totals = totals_from_rows([{"load_s": None, "compute_s": 2.0}])
    assert totals.load == 0.0 and totals.compute == 2.0 and totals.wall is None
    assert shares(PhaseTotals()) == {k: 0.0 for k in shares(PhaseTotals())}
