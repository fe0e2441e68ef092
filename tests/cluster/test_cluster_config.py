"""The cluster option without a cluster: parsing, no Ray import on the embedded path, the
ledger's worker column, and the CLI's one-line error for a bad value."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from drivesim.pipeline.cluster import parse_cluster
from drivesim.pipeline.ledger import Ledger, PlannedBatch, ShardCheck
from drivesim.pipeline.validation import ConfigError


@pytest.mark.parametrize(
    ("spec", "address"),
    [
        ("ray", None),
        ("ray:auto", "auto"),
        ("ray:10.0.0.1:6379", "10.0.0.1:6379"),
        ("ray://head:10001", "ray://head:10001"),
    ],
)
def test_cluster_values(spec, address):
    assert parse_cluster(spec) == address


@pytest.mark.parametrize("spec", ["", "dask", "ray:", "ray://", "spark://x"])
def test_bad_cluster_value_names_it(spec):
    with pytest.raises(ConfigError, match="cluster"):
        parse_cluster(spec)


def test_embedded_path_never_imports_ray():
    code = (
        "import sys; import drivesim.cli, drivesim.pipeline.campaign, drivesim.pipeline.cluster, "
        "drivesim.pipeline.ray_worker; assert 'ray' not in sys.modules, 'ray imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_old_ledger_gains_the_worker_column(tmp_path):
    con = sqlite3.connect(tmp_path / "ledger.sqlite")
    con.execute(
        "CREATE TABLE batches(batch_id INTEGER PRIMARY KEY, scenario_ids TEXT, status TEXT, error TEXT,"
        " attempts INTEGER DEFAULT 0, shard TEXT, updated_at REAL, size_class INTEGER, window_id INTEGER)"
    )
    con.commit()
    con.close()
    with Ledger(tmp_path) as ledger:
        ledger.record_batch(0, PlannedBatch(0, (0, 1), 8))
        ledger.mark_done(
            0, "results/part-00000000.parquet", {}, [], check=ShardCheck(2, "ab"), worker="w1@host:42"
        )
        assert ledger.conn.execute("SELECT worker FROM batches").fetchall() == [("w1@host:42",)]


def test_cli_rejects_a_bad_cluster_in_one_line(tmp_path):
    cmd = [
        sys.executable,
        "-c",
        "from drivesim.cli import main; main()",
        "run",
        "--source",
        "synthetic:highway",
    ]
    cmd += ["--count", "8", "--out", str(tmp_path / "c"), "--cluster", "dask://x"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("drivesim: error: cluster: 'dask://x'"), proc.stderr
