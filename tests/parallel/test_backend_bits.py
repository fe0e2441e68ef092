"""The results promise on the CLI's default determinism (FMA on, "paired"): one campaign run by
``drivesim run`` in a process that XLA_FLAGS gives one CPU device and on 8 devices with each
backend (sharding, shard_map, pmap) writes the same
per-scenario metrics, every column bit for bit. Runs in child processes, since this suite's
own processes are FMA-free (drivesim.parallel.determinism)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from drivesim.parallel import determinism

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import pyarrow.parquet as pq
    from drivesim.core.types import METRIC_NAMES
    from drivesim.parallel import determinism
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig

    root = sys.argv[1]
    tables = {"cli, 1 device": (None, pq.read_table(f"{root}/cli/results").sort_by("scenario_id"))}
    runs = {"sharding": ("sharding", None), "shard_map": ("shard_map", None), "pmap": ("pmap", None)}
    for name, (backend, devices) in runs.items():
        out = f"{root}/{name.replace(' ', '_')}"
        config = CampaignConfig(sources=("synthetic:highway",), count=64, agents=16,
                                num_steps=40, seed=7, backend=backend, devices=devices,
                                batch_size=32, out=out)
        result = run_campaign(config)
        table = pq.read_table(f"{out}/results").sort_by("scenario_id")
        tables[name] = (result.device_count, table)
    base = tables["cli, 1 device"][1]
    report = {"fma_free": determinism.active(), "rows": base.num_rows, "devices": {}, "diff": {}}
    for name, (used, table) in tables.items():
        report["devices"][name] = used
        bad = {}
        for column in METRIC_NAMES:
            a = np.ascontiguousarray(table.column(column).to_numpy(zero_copy_only=False))
            b = np.ascontiguousarray(base.column(column).to_numpy(zero_copy_only=False))
            rows = (a.view(np.uint8).reshape(len(a), -1) != b.view(np.uint8).reshape(len(b), -1)).any(1)
            if rows.any():
                bad[column] = int(rows.sum())
        report["diff"][name] = bad
    print(json.dumps(report))
    """
)


CLI = "from drivesim.cli import main; main()"
CAMPAIGN = ["--source", "synthetic:highway", "--count", "64", "--agents", "16", "--steps", "40"]


def _python(args: list[str], devices: int) -> str:
    """Run ``python ARGS`` with ``devices`` forced CPU devices and FMA on; its stdout."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={devices}"  # no ISA cap: FMA on
    env.pop(determinism.FMA_FREE_ENV, None)
    done = subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_every_backend_and_device_count_writes_the_same_bits(tmp_path):
    run = ["run", *CAMPAIGN, "--seed", "7", "--batch-size", "32", "--out", str(tmp_path / "cli")]
    _python(["-c", CLI, *run], devices=1)
    stdout = _python(["-c", SCRIPT, str(tmp_path)], devices=8)
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report["fma_free"] is False and report["rows"] == 64
    assert report["devices"] == {
        "cli, 1 device": None,
        "sharding": 8,
        "shard_map": 8,
        "pmap": 8,
    }
    assert report["diff"] == {name: {} for name in report["devices"]}
