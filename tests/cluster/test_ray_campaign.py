"""Campaigns on a real local Ray cluster: same results as the embedded run, a SIGKILLed
worker, a driver stopped mid-way and resumed with another worker count, a node that joins."""

from __future__ import annotations

import io
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest
from cluster_helpers import COUNT, OBJECT_STORE, assert_same_results, batch_workers, cluster_config
from rich.console import Console

from drivesim.pipeline import program_identity, verify
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.worker_stats import worker_throughput
from drivesim.report import write_dashboard
from drivesim.report.live import LiveView

pytestmark = pytest.mark.slow


def test_two_workers_equal_the_embedded_run(tmp_path, ray_cluster, reference):
    buf = io.StringIO()
    with LiveView(total=COUNT, console=Console(file=buf, width=160, color_system=None)) as view:
        result = run_campaign(cluster_config(tmp_path / "ray", workers=2), progress=view.update)
    assert result.done == COUNT and result.failed_batches == 0
    assert_same_results(tmp_path / "ray", reference)
    # the workers' program is recorded (the driver computes nothing); theirs agree: no note
    assert program_identity.recorded(tmp_path / "ray") == program_identity.program()
    assert not [note for note in result.notes if "another program" in note]
    workers = batch_workers(tmp_path / "ray")
    assert len(workers) == 8 and None not in workers.values()
    assert len(set(workers.values())) == 2, workers  # pull-based: both workers got batches
    assert verify.check_campaign(tmp_path / "ray").clean
    per_worker = worker_throughput(tmp_path / "ray")
    assert sorted(r["worker"] for r in per_worker) == sorted(set(workers.values()))
    assert sum(r["scenarios"] for r in per_worker) == COUNT
    assert all(r["scenarios_per_s"] > 0 for r in per_worker)
    assert worker_throughput(reference) == []  # the embedded run has no workers
    assert view.state.workers == {r["worker"]: r["scenarios"] for r in per_worker}  # the live view
    assert "workers (2)" in buf.getvalue()
    html = write_dashboard(tmp_path / "ray").read_text(encoding="utf-8")
    workers_part = html.split('<section id="workers">', 1)[1].split("</section>", 1)[0]
    assert "Throughput per worker" in workers_part and '<div class="plot"' in workers_part
    assert all(name in workers_part for name in set(workers.values()))


def test_sigkilled_worker_batches_are_redone_by_the_other(tmp_path, ray_cluster, reference):
    out = tmp_path / "killed"
    killed: list[str] = []

    def kill_first_worker(event):
        if event.kind == "batch" and not killed:
            name = batch_workers(out)[event.batch_id]
            assert name is not None
            os.kill(int(name.rsplit(":", 1)[1]), signal.SIGKILL)  # the worker's process
            killed.append(name)

    result = run_campaign(cluster_config(out, workers=2), progress=kill_first_worker)
    assert result.done == COUNT and result.failed_batches == 0
    assert any(killed[0] in note and "lost" in note for note in result.notes), result.notes
    assert_same_results(out, reference)
    workers = batch_workers(out)
    assert len(workers) == 8
    assert killed[0] in workers.values()  # what it finished before dying stays done, once
    assert verify.check_campaign(out).clean


class _DriverStopped(Exception):
    pass


def test_driver_stopped_midway_resumes_with_another_worker_count(tmp_path, ray_cluster, reference):
    out = tmp_path / "stopped"
    seen = []

    def stop_after_three(event):
        if event.kind == "batch":
            seen.append(event.batch_id)
            if len(seen) == 3:
                raise _DriverStopped

    with pytest.raises(_DriverStopped):
        run_campaign(cluster_config(out, workers=2), progress=stop_after_three)
    assert len(batch_workers(out)) == 3
    result = run_campaign(cluster_config(out, workers=1))
    assert result.skipped == 3 * 8 and result.done == COUNT
    assert_same_results(out, reference)
    assert len(batch_workers(out)) == 8
    assert verify.check_campaign(out).clean


def test_a_node_that_joins_midway_gets_batches(tmp_path, ray_cluster, reference):
    out = tmp_path / "joined"
    nodes = []

    def join_after_first_batch(event):
        if event.kind != "batch":
            return
        if not nodes:
            nodes.append(ray_cluster.add_node(num_cpus=1, object_store_memory=OBJECT_STORE))
        elif len(set(batch_workers(out).values())) < 2:
            time.sleep(6.0)  # slow the first worker down until the new node's worker is up

    try:
        # batches of 4: 15 batches after the join, so the new worker has ~90 s to start on a
        # loaded machine (results do not depend on the batch size)
        config = cluster_config(out, workers=None, batch_size=4)
        result = run_campaign(config, progress=join_after_first_batch)
    finally:
        for node in nodes:
            ray_cluster.remove_node(node)
    assert any("joined during the run" in note for note in result.notes), result.notes
    assert len(set(batch_workers(out).values())) == 2  # the default: one worker per node
    assert_same_results(out, reference)


def _done_batches(out) -> int:
    try:
        return len(batch_workers(out))
    except sqlite3.OperationalError:  # no ledger (or no table) yet
        return 0


def test_sigkilled_driver_process_resumes_with_one_worker(tmp_path, ray_cluster, compile_cache):
    """A `drivesim run --cluster ray:HOST:PORT` process joins the test's cluster and is
    SIGKILLed mid-campaign (its workers die with it); a rerun with 1 worker completes it."""
    count = 512  # 64 batches, so the kill lands mid-campaign
    want = tmp_path / "embedded"
    run_campaign(cluster_config(want, count=count, cluster=None))
    out = tmp_path / "driver-killed"
    cmd = [
        sys.executable,
        "-c",
        "from drivesim.cli import main; main()",
        "run",
        "--source",
        "synthetic:highway",
    ]
    cmd += ["--count", str(count), "--agents", "16", "--steps", "10", "--batch-size", "8", "--out", str(out)]
    cmd += ["--cluster", f"ray:{ray_cluster.address}", "--workers", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while _done_batches(out) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    at_kill = _done_batches(out)
    assert 4 <= at_kill < count // 8, f"the kill did not land mid-campaign ({at_kill} batches done)"
    result = run_campaign(cluster_config(out, count=count, workers=1, window_batches=8))
    assert result.done == count and result.skipped >= at_kill * 8
    assert_same_results(out, want, count=count)
    assert verify.check_campaign(out).clean
