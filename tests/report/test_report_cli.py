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
    result = CliRunner().invoke(app, ["report", str(tmp_path / "missing")])
    assert result.exit_code == 2
    assert "not a directory" in result.output


def test_report_help_text():
    result = CliRunner().invoke(app, ["report", "--help"])
    assert result.exit_code == 0
    assert "self-contained HTML dashboard" in result.output and "--out" in result.output
