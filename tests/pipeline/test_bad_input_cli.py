"""Hostile input through real ``drivesim`` processes: one line naming the file, the right exit
status, and nothing of the campaign overwritten (each case failed before its fix)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from pipeline_helpers import small_config

from drivesim.pipeline.campaign import run_campaign

DRIVESIM = [sys.executable, "-c", "from drivesim.cli import main; main()"]


def _drivesim(*args, cwd=None):
    return subprocess.run(
        [*DRIVESIM, *map(str, args)], capture_output=True, text=True, env=dict(os.environ), cwd=cwd
    )


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


MARKER_MODULE = """
import pathlib, os
pathlib.Path(os.environ["DRIVESIM_TEST_MARKER"]).write_text("imported")
from drivesim.core.policies import CONSTANT as POLICY
"""


@pytest.fixture()
def code_campaign(campaign, tmp_path):
    """A copy of the campaign whose campaign.toml was edited to name a module as its policy;
    the module, when imported, writes a marker file."""
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(campaign, copy)
    toml = copy / "campaign.toml"
    toml.write_text(toml.read_text().replace('policy = "idm"', 'policy = "marker_policy:POLICY"'))
    (tmp_path / "mod").mkdir()
    (tmp_path / "mod" / "marker_policy.py").write_text(MARKER_MODULE)
    marker = tmp_path / "marker"
    env = dict(os.environ, PYTHONPATH=f"{tmp_path / 'mod'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    env["DRIVESIM_TEST_MARKER"] = str(marker)
    return copy, marker, env


def test_reading_a_campaign_never_imports_the_module_its_config_names(code_campaign):
    """report, summary and query read a campaign whose config names code without importing
    it; show and a resume refuse in one line, and import it only with --import-policy."""
    directory, marker, env = code_campaign
    run = lambda *args: subprocess.run([*DRIVESIM, *map(str, args)], capture_output=True, text=True, env=env)  # noqa: E731
    for args in (
        ("report", directory, "--no-viewers"),
        ("summary", directory),
        ("query", directory, "SELECT 1"),
    ):
        proc = run(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert not marker.exists(), args
    for args in (("show", directory, "--scenario", "1"), ("run", "--resume", directory)):
        proc = run(*args)
        assert proc.returncode == 2 and "--import-policy" in _error(proc), (args, proc.stderr)
        assert not marker.exists(), args
    proc = run("show", directory, "--scenario", "1", "--import-policy")
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text() == "imported"


def test_a_config_naming_a_callable_does_not_run_it(code_campaign):
    """``policy = "os:abort"`` in campaign.toml: opening the report runs nothing."""
    directory, _, env = code_campaign
    toml = directory / "campaign.toml"
    toml.write_text(toml.read_text().replace('"marker_policy:POLICY"', '"os:abort"'))
    proc = subprocess.run(
        [*DRIVESIM, "report", str(directory), "--no-viewers"], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr


def test_two_campaign_directories_are_refused(campaign, tmp_path):
    proc = _drivesim("run", campaign, "--out", tmp_path / "other", "--count", "4")
    assert proc.returncode == 2 and "two campaign directories" in _error(proc)
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("where", [("--out", ""), ("", "--resume")])
def test_an_empty_campaign_directory_is_refused(where, tmp_path):
    """``--out ''`` would otherwise name the current directory and write the campaign there."""
    proc = _drivesim("run", *where, "--count", "4", cwd=tmp_path)
    assert proc.returncode == 2 and "an empty path names no campaign directory" in _error(proc)
    assert list(tmp_path.iterdir()) == []


def test_an_emptied_campaign_config_is_not_read_as_the_demo(campaign, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(campaign, copy)
    (copy / "campaign.toml").write_text("")
    proc = _drivesim("run", copy, "--resume")
    assert proc.returncode == 2 and "no sources" in _error(proc), proc.stderr


def test_without_a_ledger_only_drivesim_shards_are_read(campaign, tmp_path):
    """The ledger deleted: a foreign ``part-*.parquet`` dropped beside the shards is left out,
    and a warning says that no ledger checked what was read."""
    import shutil

    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = tmp_path / "copy"
    shutil.copytree(campaign, copy)
    sql = "SELECT count(*) AS n FROM results"
    before = _drivesim("query", copy, sql, "--json")
    (copy / "ledger.sqlite").unlink()
    foreign = pa.table({"scenario_id": [1, 2, 3], "policy_id": ["x"] * 3})
    pq.write_table(foreign, copy / "results" / "part-99999999.parquet")
    after = _drivesim("query", copy, sql, "--json")
    assert after.returncode == 0, after.stderr
    assert after.stdout == before.stdout and '"n"' in after.stdout
    assert "without a ledger" in after.stderr and "not a drivesim results shard" in after.stderr


def test_without_a_ledger_another_campaigns_shard_is_left_out(campaign, tmp_path):
    """The ledger deleted and a shard of another campaign (another seed) copied over one of
    this campaign's: its footer's campaign key differs, so it is left out and named."""
    import shutil

    other = tmp_path / "other"
    run_campaign(small_config(other, count=8, seed=7))
    copy = tmp_path / "copy"
    shutil.copytree(campaign, copy)
    (copy / "ledger.sqlite").unlink()
    mine = sorted((copy / "results").glob("part-*.parquet"))
    theirs = sorted((other / "results").glob("part-*.parquet"))[0]
    kept = 16 - pq.read_metadata(mine[0]).num_rows
    shutil.copy(theirs, mine[0])
    proc = _drivesim("query", copy, "SELECT count(*) AS n FROM results", "--json")
    assert proc.returncode == 0, proc.stderr
    assert f"{mine[0].name}: written by another campaign" in proc.stderr
    assert json.loads(proc.stdout) == {"n": kept}


def test_a_refused_resume_is_one_line_and_nothing_else(campaign, tmp_path):
    """Another campaign's --out, or a campaign whose campaign.toml was edited: the error line
    is all stderr holds (no header or progress lines before it)."""
    import shutil

    other = ("--source", "synthetic:merge", "--count", "8", "--agents", "8", "--steps", "10")
    edited = tmp_path / "edited"
    shutil.copytree(campaign, edited)
    toml = edited / "campaign.toml"
    toml.write_text(toml.read_text().replace("seed = 0", "seed = 5"))
    for proc, named in (
        (_drivesim("run", *other, "--out", campaign), "holds a different campaign"),
        (_drivesim("run", "--resume", edited), "since the campaign started"),
    ):
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and named in lines[0], proc.stderr


def test_refine_without_a_grid_is_one_line(campaign):
    proc = _drivesim("refine", campaign)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "no catalogue grid source" in lines[0], proc.stderr


def test_a_count_no_source_takes_is_refused(tmp_path):
    proc = _drivesim("run", "--source", "catalogue:cut_in", "--count", "4000", "--out", tmp_path / "c")
    assert proc.returncode == 2 and "&samples=N" in _error(proc)
    assert not (tmp_path / "c").exists()


def test_a_campaign_compared_with_itself_is_refused(campaign):
    proc = _drivesim("compare", campaign, f"{campaign}/")
    assert proc.returncode == 2 and "same campaign" in _error(proc)


def test_a_negative_stall_timeout_is_refused(tmp_path):
    proc = _drivesim("run", "--count", "4", "--stall-timeout", "-1", "--out", tmp_path / "c")
    assert proc.returncode == 2 and "stall-timeout" in proc.stderr
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    "command, words",
    [
        (("run", "--count", "4", "--workers", "2", "--out", "{tmp}/c"), "--cluster"),
        (
            ("run", "--count", "4", "--policy", "constant", "--sweep", "{tmp}/s.toml", "--out", "{tmp}/c"),
            "IDM",
        ),
        (("run", "--count", "4", "--num-processes", "2", "--process-id", "5", "--out", "{tmp}/c"), "0..1"),
        (("run", "--count", "4", "--num-processes", "-1", "--out", "{tmp}/c"), "num-processes"),
        (("import", "commonroad", "{tmp}", "--dt", "0", "--out", "{tmp}/s.parquet"), "--dt"),
        (
            ("scenarios", "generate", "highway", "--count", "2", "--seed", "-1", "--out", "{tmp}/g.parquet"),
            "--seed",
        ),
        (("import", "womd", "{tmp}", "--out", "{tmp}/w.parquet"), "no scenario files"),
        (("query", "{dir}", "/* only a comment */"), "no query"),
        (("report", "{tmp}/missing"), "no such directory"),
        (("report", "{tmp}"), "nothing to report"),
        (("export", "{dir}", "--out", "{dir}/.drivesim.lock"), "campaign's own"),
    ],
)
def test_more_usage_errors_are_one_line_with_exit_2(campaign, tmp_path, command, words):
    (tmp_path / "s.toml").write_text("[[policy]]\nT = 1.2\n")
    proc = _drivesim(*(part.format(dir=campaign, tmp=tmp_path) for part in command))
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert words in _error(proc)
    assert not (tmp_path / "c").exists()


def test_an_export_onto_a_hard_link_of_a_campaign_file_is_refused(campaign, tmp_path):
    before = _digest(campaign)
    link = tmp_path / "innocent.csv"
    os.link(campaign / "campaign.toml", link)
    proc = _drivesim("export", campaign, "--out", link)
    assert proc.returncode == 2 and "a link to it" in _error(proc)
    assert _digest(campaign) == before


def test_a_deeply_nested_campaign_toml_is_a_usage_error(campaign, tmp_path):
    import shutil

    copy = tmp_path / "c"
    shutil.copytree(campaign, copy)
    (copy / "campaign.toml").write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    proc = _drivesim("run", "--resume", copy)
    assert proc.returncode == 2 and "campaign.toml" in _error(proc)


def test_an_output_onto_a_device_or_pipe_is_refused(campaign, tmp_path):
    """An atomic write renames over its target: a device node or a FIFO would be replaced."""
    import stat

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for command in (("report", campaign, "--no-viewers", "--out", fifo), ("export", campaign, "--out", fifo)):
        proc = _drivesim(*command)
        assert proc.returncode == 2 and "not a regular file" in _error(proc), proc.stderr
        assert stat.S_ISFIFO(fifo.stat().st_mode)
