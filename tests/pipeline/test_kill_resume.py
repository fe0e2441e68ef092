"""SIGKILL a campaign at random moments, resume it, and compare with an uninterrupted run."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pipeline_helpers import COUNT, small_config

from drivesim.parallel import determinism
from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign

WORKER = """
import sys
sys.path.insert(0, {helpers!r})
from pipeline_helpers import small_config
from drivesim.pipeline.campaign import run_campaign
run_campaign(small_config({out!r}, prefetch=1))
"""


def _done_batches(out: Path) -> int:
    ledger = out / "ledger.sqlite"
    if not ledger.exists():
        return 0
    try:
        con = sqlite3.connect(ledger, timeout=5)
        return con.execute("SELECT COUNT(*) FROM batches WHERE status='done'").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _start(out: Path) -> subprocess.Popen:
    code = WORKER.format(helpers=str(Path(__file__).parent), out=str(out))
    # the same devices and FMA-free programs as this process (tests/conftest.py), so the
    # killed runs compute bit for bit what the reference run computes
    flags = determinism.with_flag(os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"))
    env = os.environ | {"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def _kill_at_random_moment(out: Path, rng: random.Random) -> int:
    """Start the campaign and SIGKILL it at a random moment after it wrote 1 or 2 more
    batches (a write, a compute or a load is in flight then); returns the done batches."""
    target = _done_batches(out) + rng.randint(1, 2)
    proc = _start(out)
    deadline = time.time() + 120
    while _done_batches(out) < target and proc.poll() is None and time.time() < deadline:
        time.sleep(0.002)
    time.sleep(rng.uniform(0.0, 0.01))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return _done_batches(out)


def _sorted(table):
    return table.sort_by([("scenario_id", "ascending"), ("policy_id", "ascending")])


@pytest.mark.slow
def test_sigkill_resume_equals_uninterrupted_run(tmp_path, campaign):
    rng = random.Random(int(os.environ.get("DRIVESIM_KILL_SEED", "7")))
    killed = tmp_path / "killed"
    seen = [_kill_at_random_moment(killed, rng) for _ in range(3)]
    assert any(0 < s for s in seen), f"no kill landed after a batch was written: {seen}"
    # resume with the same command until done; the reference is the shared uninterrupted run
    run_campaign(small_config(killed, prefetch=1))
    total_batches = (
        sqlite3.connect(killed / "ledger.sqlite").execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    )
    reference = campaign[0]
    got, want = _sorted(results.results_table(killed)), _sorted(results.results_table(reference))
    assert got.num_rows == COUNT
    assert pc.count_distinct(got.column("scenario_id")).as_py() == COUNT
    assert got.schema == want.schema
    for name in got.column_names:  # exact equality, NaN == NaN
        a, b = got.column(name), want.column(name)
        if pa.types.is_floating(a.type):
            np.testing.assert_array_equal(a.to_numpy(), b.to_numpy(), err_msg=name)
        else:
            assert a.equals(b), f"column {name} differs from the uninterrupted run"
    assert not list((killed / "results").glob(".*.tmp"))
    assert total_batches >= 1 and seen[0] < _done_batches(killed)
    mid = [s for s in seen if 0 < s < total_batches]
    assert len(mid) >= 2, f"fewer than 2 kills landed mid-campaign: {seen} of {total_batches} batches"


@pytest.mark.slow
def test_sigterm_says_what_was_saved_and_closes_the_session(tmp_path):
    """``drivesim run`` stopped by SIGTERM: one line of what was saved, exit status 143, the
    session's end line names the signal, and the ledger matches the shards."""
    import json

    from drivesim.pipeline.verify import check_campaign

    out = tmp_path / "c"
    args = [
        sys.executable,
        "-c",
        "from drivesim.cli import main; main()",
        "run",
        "--source",
        "synthetic:highway",
    ]
    args += ["--count", "4000", "--agents", "16", "--steps", "10", "--batch-size", "8", "--out", str(out)]
    flags = determinism.with_flag(os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"))
    env = os.environ | {"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while _done_batches(out) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, (stdout, stderr)
    assert "Traceback" not in stderr, stderr
    line = next(x for x in (stdout + stderr).splitlines() if "interrupted by SIGTERM" in x)
    assert "scenarios saved" in line and f"drivesim run --resume {out}" in line, line
    sessions = [json.loads(x) for x in (out / "sessions.jsonl").read_text().splitlines()]
    assert sessions[-1]["event"] == "end" and sessions[-1]["interrupted"] == "SIGTERM"
    done = _done_batches(out)
    assert 0 < done and f"{done * 8:,} of 4,000 scenarios saved" in line, line
    report = check_campaign(out)
    assert report.clean and len(report.ok) == done


def _term_after_done(out: Path, log: Path) -> tuple[int, str, str]:
    """Run a small campaign into ``out``; SIGTERM it once ``done:`` is printed."""
    args = [sys.executable, "-c", "from drivesim.cli import main; main()", "run"]
    args += ["--source", "synthetic:highway", "--count", "64", "--agents", "8", "--steps", "10"]
    args += ["--batch-size", "8", "--out", str(out)]
    flags = determinism.with_flag(os.environ.get("XLA_FLAGS", "--xla_force_host_platform_device_count=8"))
    env = os.environ | {"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"}
    with log.open("w") as fh:
        proc = subprocess.Popen(args, env=env, stdout=fh, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 240
        while "done:" not in log.read_text() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=120)
    return proc.returncode, log.read_text(), stderr


def test_sigterm_while_the_report_is_written_exits_143_with_the_results_whole(tmp_path):
    """SIGTERM once ``done:`` is printed (the viewers and the dashboard are being written):
    no abort, exit status 143, one line saying that every result is saved, shards sound. A
    report that finished before the signal landed (exit 0) is tried again."""
    from drivesim.pipeline.verify import check_campaign

    for attempt in range(3):
        out = tmp_path / f"c{attempt}"
        rc, stdout, stderr = _term_after_done(out, tmp_path / f"stdout{attempt}.txt")
        assert rc in (0, 143), (rc, stdout, stderr)
        if rc == 143:
            break
    assert rc == 143, "the report always ended before the signal"
    assert "Traceback" not in stderr, stderr
    line = next(x for x in stderr.splitlines() if "interrupted by SIGTERM" in x)
    assert "all results are saved" in line and f"drivesim report {out}" in line, line
    assert check_campaign(out).clean
