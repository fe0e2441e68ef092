"""``drivesim run --occlusion``: the option reaches the observation of a policy that observes,
it is part of the campaign's identity, and campaigns without it keep their identity."""

from __future__ import annotations

from typer.testing import CliRunner

from drivesim.cli import app
from drivesim.pipeline.config import CampaignConfig, sim_config
from drivesim.pipeline.results import query

# brakes 1 m/s^2 for every agent its observation shows (the present flags)
COUNTING_POLICY = """
import jax.numpy as jnp

from drivesim.core.policies import EgoPolicy


def _count(params, ego, config):
    seen = jnp.sum(ego.observe()[7::4])
    return -seen, ego.lane_tan


SEEN = EgoPolicy("seen", lambda config, key: 0.0, _count)
"""


def test_occlusion_hides_the_pedestrian_from_an_observing_policy(tmp_path, monkeypatch):
    (tmp_path / "seen_policy.py").write_text(COUNTING_POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    common = [
        "--source",
        "catalogue:occluded_pedestrian?tta=3",
        "--steps",
        "10",
        "--policy",
        "seen_policy:SEEN",
    ]
    common += ["--devices", "1"]
    progress = {}
    for flags in ([], ["--occlusion"]):
        out = tmp_path / ("occluded" if flags else "plain")
        result = CliRunner().invoke(app, ["run", *common, *flags, "--out", str(out)])
        assert result.exit_code == 0, result.output
        progress[bool(flags)] = query(out, "SELECT progress_m FROM results").column("progress_m").to_pylist()
    # braking 2 m/s^2 (car and pedestrian seen) or 1 m/s^2 while the pedestrian is hidden
    # behind the car: at most 1 m/s^2 less over 1 s, so at most 0.5 m (plus a step's rounding)
    plain, occluded = progress[False][0], progress[True][0]
    assert 0.05 < occluded - plain < 0.55
    result = CliRunner().invoke(app, ["run", *common, "--out", str(tmp_path / "occluded")])
    assert result.exit_code != 0 and "occlusion" in result.output  # a resume may not drop it


def test_occlusion_in_the_config_and_the_identity():
    assert sim_config(CampaignConfig(occlusion=True), "mlp").occlusion
    assert not sim_config(CampaignConfig(), "mlp").occlusion
    assert "occlusion" not in CampaignConfig().identity()  # campaigns from before it resume
    assert CampaignConfig(occlusion=True).identity()["occlusion"] is True
