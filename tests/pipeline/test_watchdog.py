"""The stall watchdog: a campaign whose source blocks forever fails with thread stacks in its
directory (library and CLI), and a rerun resumes it to the same results."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import threading
import time

import pytest
from pipeline_helpers import small_config

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.watchdog import CampaignStalled, Watchdog, WatchdogConfig
from drivesim.scenarios.sources import SyntheticSource
from drivesim.scenarios.synthetic import FamilyConfig


class BlockingSource:
    """Synthetic 16-agent highway scenarios; ``load`` of a position >= ``block_from`` waits
    until ``release`` is set (forever, unless the test sets it)."""

    def __init__(self, count: int, block_from: int):
        self.inner = SyntheticSource(["highway"], count, 0, config=FamilyConfig(num_agents=16, steps=10))
        self.block_from = block_from
        self.release = threading.Event()
        self.name = "blocking"

    def __len__(self) -> int:
        return len(self.inner)

    def load(self, position: int):
        if position >= self.block_from:
            self.release.wait()
        return self.inner.load(position)


def test_blocked_source_fails_with_stacks_and_resumes(tmp_path):
    out = tmp_path / "run"
    config = small_config(out, count=48, stall_s=2.0)
    source = BlockingSource(48, block_from=24)
    start = time.monotonic()
    try:
        with pytest.raises(CampaignStalled, match="no batch moved") as info:
            run_campaign(config, source=source)
    finally:
        source.release.set()  # let the stuck loader threads end
    assert time.monotonic() - start < 150  # 2 s limit + start-up and compile on a loaded machine
    dump = info.value.path
    assert dump is not None and dump.parent == out and dump.is_file()
    text = dump.read_text()
    assert "in load" in text and "test_watchdog.py" in text
    # the resume compiles the generated-synthetic program: give it the default limit
    resumed = dataclasses.replace(config, stall_s=300.0)
    done = run_campaign(resumed, source=SyntheticSource(["highway"], 48, 0, config=source.inner.config))
    assert done.done == 48 and done.skipped < 48  # resumed from the ledger
    ids = results.results_table(out).column("scenario_id").to_pylist()
    assert sorted(ids) == list(range(48))


def test_limit_scales_with_batch_time(tmp_path):
    fired = []
    dog = Watchdog(tmp_path, WatchdogConfig(base_s=0.5, factor=10.0, poll_s=0.05), fired.append)
    try:
        for _ in range(3):
            time.sleep(0.1)
            dog.beat()
        assert 0.9 < dog.limit_s() < 2.0  # 10 x the ~0.1 s median gap
        time.sleep(0.5)
        assert not fired  # 0.5 s idle is under the scaled limit
        deadline = time.monotonic() + 10
        while not fired and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fired and isinstance(fired[0], CampaignStalled)
        with pytest.raises(CampaignStalled):
            dog.check()
    finally:
        dog.close()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_cli_exits_nonzero_on_stall(tmp_path):
    fifo = tmp_path / "never.xml"
    os.mkfifo(fifo)  # opening it for reading blocks until a writer comes: forever here
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "drivesim.cli", "run", "--source", f"commonroad:{fifo}"]
    cmd += ["--out", str(out), "--batch-size", "1", "--stall-timeout", "2"]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=120, env=os.environ | {"JAX_PLATFORMS": "cpu"}
    )
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "stalled" in proc.stderr
    dumps = list(out.glob("stall-*.txt"))
    assert dumps and "load_commonroad" in dumps[0].read_text()
