"""The one error path of the CLI (real ``drivesim`` processes) and the exit codes."""

from __future__ import annotations

import math
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
from pipeline_helpers import small_config

from drivesim.commands.errors import CampaignFailed
from drivesim.pipeline import results
from drivesim.pipeline.campaign import CampaignResult, run_campaign
from drivesim.report.strict_json import dumps as json_line

DRIVESIM = [sys.executable, "-c", "from drivesim.cli import main; main()"]


def _drivesim(*args, env=None, cwd=None):
    env = {**os.environ, **(env or {})}
    return subprocess.run([*DRIVESIM, *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd)


def _one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert lines and lines[-1].startswith("drivesim: error: "), proc.stderr
    return lines[-1]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("small")
    run_campaign(small_config(out, count=16))
    return out


def test_usage_error_is_one_line_exit_2_and_debug_shows_traceback(tmp_path):
    out = tmp_path / "c"
    proc = _drivesim("run", "--source", "bogus:x", "--count", "4", "--out", out)
    assert proc.returncode == 2
    assert "bogus:x" in _one_error_line(proc)
    assert not out.exists()
    debug = _drivesim("run", "--source", "bogus:x", "--out", out, env={"DRIVESIM_DEBUG": "1"})
    assert debug.returncode == 2 and "Traceback" in debug.stderr


def test_broken_campaign_toml_and_bad_sql(small, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(small, broken)
    (broken / "campaign.toml").write_text("count = [1,\n")
    proc = _drivesim("run", "--resume", broken)
    assert proc.returncode == 2 and "campaign.toml" in _one_error_line(proc)
    sql = _drivesim("query", small, "SELEC oops FROM results")
    assert sql.returncode == 2 and "syntax error" in _one_error_line(sql).lower()
    missing = _drivesim("summary", tmp_path / "nowhere")
    assert missing.returncode == 1 and "nowhere" in _one_error_line(missing)


def test_verify_exits_non_zero_on_damage(small, tmp_path):
    damaged = tmp_path / "d"
    shutil.copytree(small, damaged)
    assert _drivesim("verify", damaged).returncode == 0
    shard = sorted((damaged / "results").glob("part-*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:-100])
    proc = _drivesim("verify", damaged)
    assert proc.returncode == 1
    assert f"damaged shard: results/{shard.name}" in proc.stdout


def test_query_is_locked_down_unless_unsafe(small, tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    for sql in (
        f"SELECT * FROM read_csv('{secret}')",
        f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'",
        "INSTALL httpfs",
        "SET enable_external_access = true",
    ):
        with pytest.raises(Exception, match="(Permission|configuration|disabled)"):
            results.query(small, sql)
    assert not (tmp_path / "out.csv").exists()
    assert results.query(small, f"SELECT * FROM read_csv('{secret}')", unsafe=True).num_rows == 1
    assert results.query(small, "SELECT count(*) AS n FROM results").column("n")[0].as_py() == 16


def test_strict_json():
    assert json_line({"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": "x"}) == (
        '{"a": null, "b": [null, null, 1.5], "c": "x"}'
    )


def _result(**changes) -> CampaignResult:
    values = dict(
        directory=pathlib.Path("."),
        total=16,
        done=16,
        failed=0,
        skipped=0,
        failed_batches=0,
        elapsed_s=1.0,
        scenarios_per_s=16.0,
        device_count=1,
    )
    return CampaignResult(**(values | changes))


def test_exit_codes_tell_the_truth(small):
    from rich.console import Console

    from drivesim.commands.run_outcome import check_outcome as _check_outcome

    console = Console(file=open(os.devnull, "w"))  # noqa: SIM115
    _check_outcome(_result(), small, console)
    _check_outcome(_result(failed=3), small, console)  # failed scenarios: summarized, rc 0
    with pytest.raises(CampaignFailed, match="1 batches failed"):
        _check_outcome(_result(failed_batches=1, done=8), small, console)
    with pytest.raises(CampaignFailed, match="nothing was computed"):
        _check_outcome(_result(failed=16), small, console)
