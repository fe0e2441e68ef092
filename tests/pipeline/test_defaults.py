"""Campaign defaults live in drivesim.pipeline.defaults: the library's CampaignConfig() is the
demo `drivesim run` runs with no flags, and a start resolves and checks a config once."""

from __future__ import annotations

import pathlib

import pytest
from typer.testing import CliRunner

from drivesim.cli import app
from drivesim.pipeline import campaign as campaign_module
from drivesim.pipeline import defaults, validation
from drivesim.pipeline.config import CampaignConfig, read_config
from drivesim.pipeline.validation import ConfigError


def test_an_empty_config_is_the_demo(monkeypatch, tmp_path, commonroad_dir):
    monkeypatch.setenv("DRIVESIM_DATA", str(commonroad_dir.parent))
    monkeypatch.chdir(tmp_path)
    demo = defaults.resolve(CampaignConfig())
    assert demo.sources == ("synthetic:highway,merge,intersection", f"commonroad:{commonroad_dir.resolve()}")
    assert (demo.count, demo.max_agents, demo.out) == (600, 32, "runs/demo")
    assert demo.sweep == str(defaults.DEMO_SWEEP) and pathlib.Path(demo.sweep).is_file()
    assert defaults.resolve(demo) == demo  # idempotent
    assert defaults.resolve(CampaignConfig(policy="constant")).sweep is None  # the sweep is IDM's
    counted = defaults.resolve(CampaignConfig(count=64))  # the demo's sources, not the demo
    assert counted.sweep is None and counted.out.startswith("runs/run-") and counted.count == 64


def test_a_config_with_sources_gets_its_own_directory():
    config = defaults.resolve(CampaignConfig(sources=("synthetic:highway",)))
    assert config.count == defaults.SOURCES_COUNT and config.sweep is None and config.max_agents is None
    other = defaults.resolve(CampaignConfig(sources=("synthetic:merge",)))
    assert config.out.startswith("runs/run-") and other.out != config.out
    assert defaults.resolve(CampaignConfig(sources=("synthetic:highway",), out="here")).out == "here"
    with pytest.raises(ValueError, match="resolve the config first"):
        _ = CampaignConfig().directory


def test_a_start_checks_once_and_writes_what_was_resolved(monkeypatch, tmp_path):
    calls = []
    real = validation.validate_config

    def counted(config, available_devices=None):
        calls.append(config)
        return real(config, available_devices)

    monkeypatch.setattr(campaign_module, "validate_config", counted)
    monkeypatch.chdir(tmp_path)
    args = ["run", "--source", "synthetic:highway", "--count", "4", "--agents", "4", "--steps", "3"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert len(calls) == 1  # not once by the CLI and again by the library
    (directory,) = (tmp_path / "runs").iterdir()
    assert directory.name.startswith("run-") and read_config(directory) == calls[0]
    other = [*args, "--seed", "1"]  # another campaign, the same compiled programs
    again = CliRunner().invoke(app, other)
    assert again.exit_code == 0, again.output  # in its own directory (another hash)
    assert len(list((tmp_path / "runs").iterdir())) == 2 and len(calls) == 2
    refused = CliRunner().invoke(app, [*other, "--out", str(directory)])
    assert isinstance(refused.exception, ConfigError) and "holds a different" in str(refused.exception)
    assert "campaign" not in refused.output  # refused before anything is printed


def test_an_unreadable_sweep_is_refused_before_any_write(tmp_path):
    config = CampaignConfig(
        sources=("synthetic:highway",), sweep=str(tmp_path / "none.toml"), out=str(tmp_path / "c")
    )
    with pytest.raises(ConfigError, match="sweep"):
        campaign_module.open_campaign(config)
    assert not (tmp_path / "c").exists()
