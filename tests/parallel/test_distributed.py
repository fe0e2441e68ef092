"""Multi-host: two real processes on 127.0.0.1 (gloo CPU collectives) run one campaign and
give the same per-scenario metrics as one process."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.core.types import METRIC_NAMES
from drivesim.parallel import distributed
from drivesim.parallel.worker import LaunchConfig, launch


def test_single_process_defaults(monkeypatch):
    for name in ("DRIVESIM_NUM_PROCESSES", "JAX_NUM_PROCESSES"):
        monkeypatch.delenv(name, raising=False)
    distributed.initialize()  # no-op for one process
    assert distributed.process_positions(10) == range(0, 10)
    monkeypatch.setenv("DRIVESIM_NUM_PROCESSES", "2")
    monkeypatch.setenv("DRIVESIM_PROCESS_ID", "1")
    monkeypatch.setenv("JAX_COORDINATOR_ADDRESS", "127.0.0.1:1234")
    cfg = distributed.config_from_env()
    assert (cfg.coordinator, cfg.num_processes, cfg.process_id) == ("127.0.0.1:1234", 2, 1)


def test_initialize_needs_a_coordinator():
    with pytest.raises(ValueError, match="coordinator"):
        distributed.initialize(distributed.DistributedConfig(num_processes=2, process_id=0))


@pytest.mark.slow
def test_two_processes_match_one(tmp_path, spec, reference):
    summaries = launch(spec, tmp_path, LaunchConfig(processes=2, devices_per_process=2, timeout_s=240))
    assert [s["processes"] for s in summaries] == [2, 2]
    assert [s["devices"] for s in summaries] == [4, 4]
    ranks = [np.load(tmp_path / f"rank-{r}.npz") for r in range(2)]
    assert [len(r["scenario_id"]) for r in ranks] == [6, 7]  # each loaded only its own share
    np.testing.assert_array_equal(np.concatenate([r["scenario_id"] for r in ranks]), np.arange(13))
    for name in METRIC_NAMES:
        got = np.concatenate([r[name] for r in ranks])
        want = getattr(reference, name)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), name
    agg = summaries[0]["aggregate"]
    assert agg == summaries[1]["aggregate"]  # all-reduced: every process holds the global value
    assert agg["scenarios"] == 13.0
    assert agg["mean_progress_m"] == pytest.approx(
        float(np.mean(reference.progress_m.astype(np.float64))), rel=1e-5
    )
