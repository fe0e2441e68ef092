"""Hostile input through real ``drivesim`` processes: one line naming the file, the right exit
status, and nothing of the campaign overwritten (each case failed before its fix)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from pipeline_helpers import small_config

from drivesim.pipeline.campaign import run_campaign

DRIVESIM = [sys.executable, "-c", "from drivesim.cli import main; main()"]


def _drivesim(*args):
    return subprocess.run([*DRIVESIM, *map(str, args)], capture_output=True, text=True, env=dict(os.environ))


def _error(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert lines and "error" in lines[-1], proc.stderr
    return lines[-1]


def _digest(directory) -> dict:
    return {
        p.relative_to(directory).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and not p.name.endswith(("-wal", "-shm"))
    }


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("bad-input") / "c"
    run_campaign(small_config(out, count=16))
    return out


@pytest.mark.parametrize(
    "command",
    [
        ("export", "{dir}", "--format", "jsonl", "--out", "{dir}/ledger.sqlite"),
        ("export", "{dir}", "--format", "csv", "--out", "{dir}/results/part-00000000.parquet"),
        ("report", "{dir}", "--no-viewers", "--out", "{dir}/campaign.toml"),
        ("show", "{dir}", "--scenario", "1", "--out", "{dir}/sessions.jsonl"),
    ],
)
def test_outputs_never_overwrite_the_campaign(campaign, command):
    before = _digest(campaign)
    proc = _drivesim(*(part.format(dir=campaign) for part in command))
    assert proc.returncode == 2
    assert "the campaign's own" in _error(proc)
    assert _digest(campaign) == before


def test_empty_sql_is_a_usage_error(campaign):
    proc = _drivesim("query", campaign, "  ")
    assert proc.returncode == 2 and "empty statement" in _error(proc)


def test_a_port_out_of_range_is_a_usage_error(campaign):
    proc = _drivesim("report", campaign, "--serve", "--port", "99999")
    assert proc.returncode == 2 and "--port" in _error(proc) and "65535" in proc.stderr


def test_a_damaged_ledger_is_named(tmp_path):
    out = tmp_path / "c"
    run_campaign(small_config(out, count=8))
    (out / "ledger.sqlite").write_bytes(b"not a database at all, " * 100)
    for proc in (_drivesim("summary", out), _drivesim("run", "--resume", out)):
        line = _error(proc)
        assert proc.returncode == 1 and "ledger.sqlite" in line and "damaged" in line


def test_a_sweep_naming_a_key_twice_is_refused(tmp_path):
    sweep = tmp_path / "sweep.json"
    sweep.write_text('[{"T": 1.0, "T": 2.0}]')
    args = ("--source", "synthetic:highway", "--count", "4", "--sweep", sweep, "--out", tmp_path / "c")
    proc = _drivesim("run", *args)
    assert proc.returncode == 2
    line = _error(proc)
    assert "sweep.json" in line and "'T' given twice" in line
    assert not (tmp_path / "c").exists()


def test_import_refuses_a_device_file(tmp_path):
    # /dev/zero passed the size check (st_size 0) and was read until the kernel killed the process
    proc = _drivesim("import", "commonroad", "/dev/zero", "--out", tmp_path / "s.parquet")
    assert proc.returncode == 1 and "/dev/zero: not a regular file or a pipe" in proc.stdout + proc.stderr
    assert "wrote 0 scenarios" in proc.stdout
