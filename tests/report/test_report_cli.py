"""`drivesim report DIR [--out FILE]` through the real typer app."""

from __future__ import annotations

from typer.testing import CliRunner

from drivesim.cli import app


def test_report_command_writes_file(campaign_dir, tmp_path):
    out = tmp_path / "sub" / "report.html"
    result = CliRunner().invoke(app, ["report", str(campaign_dir), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and "dashboard written to" in result.output
    assert '<section id="outcomes">' in out.read_text(encoding="utf-8")


def test_report_command_rejects_missing_directory(tmp_path):
    """A usage error (ConfigError: the CLI prints one line and exits 2, see
    tests/pipeline/test_bad_input_cli.py)."""
    from drivesim.pipeline.validation import ConfigError

    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert isinstance(result.exception, ConfigError) and "no such directory" in str(result.exception)


def test_report_help_text():
    result = CliRunner().invoke(app, ["report", "--help"])
    assert result.exit_code == 0
    assert "self-contained HTML dashboard" in result.output and "--out" in result.output
