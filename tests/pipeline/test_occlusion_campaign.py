"""``drivesim run --occlusion``: the option reaches the observation of a policy that observes,
it is part of the campaign's identity, and campaigns without it keep their identity."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from drivesim.cli import app
from drivesim.core.policies import MLP
from drivesim.pipeline.config import CampaignConfig, sim_config
from drivesim.pipeline.results import query
from drivesim.scenarios.catalogue import FAMILIES

# brakes 1 m/s^2 for every agent its observation shows (the present flags)
COUNTING_POLICY = """
import jax.numpy as jnp

from drivesim.core import EgoPolicy, neighbour_present


def _count(params, ego, config):
    seen = jnp.sum(neighbour_present(ego.observe()))
    return -seen, ego.lane_tan


SEEN = EgoPolicy("seen", lambda config, key: 0.0, _count)
"""


def test_occlusion_hides_the_pedestrian_from_an_observing_policy(tmp_path, monkeypatch):
    (tmp_path / "seen_policy.py").write_text(COUNTING_POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "occluded"
    spec = ["--source", "catalogue:occluded_pedestrian", "--steps", "2", "--policy", "seen_policy:SEEN"]
    spec += ["--devices", "1", "--out", str(out)]
    result = CliRunner().invoke(app, ["run", *spec, "--occlusion"])
    assert result.exit_code == 0, result.output
    progress = query(out, "SELECT progress_m FROM results").column("progress_m").to_pylist()
    # explicit Euler: two steps move the ego 2 v dt + a0 dt^2, a0 the first action. At the
    # start the parked car hides the pedestrian: a0 = -1 (one agent seen), not -2 (both)
    speed, dt = FAMILIES["occluded_pedestrian"].params[2].default, 0.1
    assert progress == [pytest.approx(2 * speed * dt - 1.0 * dt**2, abs=1e-4)]
    result = CliRunner().invoke(app, ["run", *spec])
    message = str(result.exception) if result.exception else result.output
    assert result.exit_code != 0 and "occlusion: True" in message, message  # a resume may not drop it


def test_occlusion_in_the_config_and_the_identity():
    assert sim_config(CampaignConfig(occlusion=True), MLP).occlusion
    assert not sim_config(CampaignConfig(), MLP).occlusion
    assert "occlusion" not in CampaignConfig().identity()  # campaigns from before it resume
    assert CampaignConfig(occlusion=True).identity()["occlusion"] is True
