"""The run / query / summary commands: help text everywhere, and a tiny run through the CLI."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from drivesim.cli import app

runner = CliRunner()


def test_every_option_has_help():
    import typer.main

    command = typer.main.get_command(app)
    for name in ("run", "query", "summary"):
        sub = command.commands[name]
        assert sub.help, name
        for param in sub.params:
            assert getattr(param, "help", None), f"{name} {param.name} has no help"


def test_run_query_summary(tmp_path):
    out = tmp_path / "c"
    args = [
        "run",
        "--source",
        "synthetic:highway",
        "--count",
        "24",
        "--agents",
        "16",
        "--steps",
        "5",
        "--batch-size",
        "8",
        "--out",
        str(out),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "dashboard" in result.output
    q = runner.invoke(app, ["query", str(out), "SELECT count(*) AS n FROM results", "--json"])
    assert q.exit_code == 0, q.output
    assert json.loads(q.output.strip().splitlines()[-1]) == {"n": 24}
    s = runner.invoke(app, ["summary", str(out)])
    assert s.exit_code == 0 and "campaign summary" in s.output and "throughput" in s.output
    again = runner.invoke(app, ["run", "--resume", str(out)])
    assert again.exit_code == 0 and "24 from an earlier run" in again.output.replace(",", "")


def test_multi_process_options_form_a_config_and_leave_the_environment_alone(monkeypatch):
    import os

    from drivesim.commands.campaign import distributed_config

    for name in ("DRIVESIM_COORDINATOR", "DRIVESIM_NUM_PROCESSES", "DRIVESIM_PROCESS_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DRIVESIM_COORDINATOR", "10.0.0.1:99")
    before = dict(os.environ)
    cfg = distributed_config(None, 4, 3)
    assert (cfg.coordinator, cfg.num_processes, cfg.process_id) == ("10.0.0.1:99", 4, 3)
    assert distributed_config("127.0.0.1:5", None, None).coordinator == "127.0.0.1:5"
    assert dict(os.environ) == before
