"""Ego policies through the registry: a user policy from the CLI (package.module:NAME), a
sweep over MLP checkpoints (mlp:FILE,FILE), clear errors, and ``--chunk auto`` chunking."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from pipeline_helpers import small_config
from typer.testing import CliRunner

from drivesim.cli import app
from drivesim.core.observation import observation_size
from drivesim.core.policies import IDM, init_mlp
from drivesim.core.types import SimConfig
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import CampaignConfig, policy_spec
from drivesim.pipeline.policy_names import policy_named, registered_policies
from drivesim.pipeline.results import query
from drivesim.train.policy_io import save_policy

USER_POLICY = """
import jax.numpy as jnp

from drivesim.core.policies import EgoPolicy


def _brake(params, ego, config):
    return jnp.full((), params, jnp.float32), ego.lane_tan


BRAKE = EgoPolicy("brake", lambda config, key: -3.0, _brake)
"""


def _rows(out, columns="scenario_id, policy, progress_m, ego_collided"):
    table = query(out, f"SELECT {columns} FROM results ORDER BY policy_id, scenario_id")
    return {name: table.column(name).to_pylist() for name in table.column_names}


def test_registry_names_and_clear_errors():
    assert {"idm", "constant", "open_loop", "mlp"} <= set(registered_policies())
    assert policy_named("idm") is IDM
    with pytest.raises(
        ValueError, match="SimConfig.policy: expected an EgoPolicy .* got 'idm'; a policy name"
    ):
        SimConfig(policy="idm")  # the core takes objects; names are the pipeline's
    with pytest.raises(ValueError, match="unknown ego policy 'nope'"):
        policy_named("nope")
    with pytest.raises(ValueError, match="CampaignConfig.policy: policy 'idm:x': idm takes no argument"):
        CampaignConfig(policy="idm:x")
    config = CampaignConfig(policy="no_such_module_here:X")  # a config is data: nothing imported yet
    with pytest.raises(ValueError, match="cannot import 'X' from 'no_such_module_here'"):
        policy_spec(config)  # what run does before writing anything


def test_user_policy_from_the_cli(tmp_path, monkeypatch):
    (tmp_path / "user_brake_policy.py").write_text(USER_POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    runner = CliRunner()
    common = ["--source", "synthetic:highway", "--count", "16", "--agents", "16", "--steps", "10"]
    outs = {}
    for policy in ("user_brake_policy:BRAKE", "constant"):
        out = tmp_path / policy.replace(":", "_")
        result = runner.invoke(
            app, ["run", *common, "--policy", policy, "--batch-size", "8", "--out", str(out)]
        )
        assert result.exit_code == 0, result.output
        outs[policy] = _rows(out)
    braking, constant = outs["user_brake_policy:BRAKE"], outs["constant"]
    assert set(braking["policy"]) == {"user_brake_policy:BRAKE"}
    assert len(braking["progress_m"]) == 16
    assert np.all(np.asarray(braking["progress_m"]) < np.asarray(constant["progress_m"]))


def test_sweep_over_mlp_checkpoints_matches_single_runs(tmp_path):
    sizes = (observation_size(SimConfig().obs_neighbours), 8, 2)
    files = [save_policy(tmp_path / f"p{seed}.npz", init_mlp(seed, sizes)) for seed in (1, 2)]
    sweep_out = tmp_path / "sweep"
    run_campaign(small_config(sweep_out, count=16, policy=f"mlp:{files[0]},{files[1]}"))
    sweep = _rows(sweep_out)
    assert sorted(set(sweep["policy"])) == [f"mlp:{files[0]}", f"mlp:{files[1]}"]
    for index, path in enumerate(files):
        single_out = tmp_path / f"single{index}"
        run_campaign(small_config(single_out, count=16, policy=f"mlp:{path}"))
        single = _rows(single_out)
        mine = [i for i, p in enumerate(sweep["policy"]) if p == f"mlp:{path}"]
        assert [sweep["scenario_id"][i] for i in mine] == single["scenario_id"]
        # equal to float32 rounding: the sweep's batched matrix products (one per checkpoint)
        # may accumulate in another order than a single policy's (docs/guides/sweep.md)
        np.testing.assert_allclose([sweep["progress_m"][i] for i in mine], single["progress_m"], rtol=1e-5)
    assert sweep["progress_m"][:16] != sweep["progress_m"][16:]  # two different policies


def test_policy_spec_of_a_checkpoint_is_checked_against_the_observation(tmp_path):
    path = save_policy(tmp_path / "small.npz", init_mlp(0, (5, 4, 2)))
    with pytest.raises(ValueError, match="w0 takes 5 inputs"):
        policy_spec(CampaignConfig(policy=f"mlp:{path}"))


def test_chunk_auto_chooses_a_chunk(tmp_path):
    """--chunk auto reaches the executor, which splits the batch to fit its memory budget."""
    from drivesim.pipeline.devices import DeviceRunner
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.sources import SyntheticSource
    from drivesim.scenarios.synthetic import FamilyConfig

    source = SyntheticSource(["highway"], 32, 0, config=FamilyConfig(num_agents=16, steps=10))
    batch = pad_and_stack([source.load(i).scenario for i in range(32)])
    sim = SimConfig(num_steps=10)
    spec = policy_spec(small_config(tmp_path, chunk=None))
    whole = DeviceRunner(small_config(tmp_path, chunk=None), sim, spec)
    auto = DeviceRunner(small_config(tmp_path, chunk="auto"), sim, spec)
    assert auto.executor.config.chunk == "auto"
    ex = auto.executor
    three_rows = ex.compiled_memory_bytes(_rows_of(batch, 3 * ex.num_devices))
    ex.config = dataclasses.replace(ex.config, memory_budget_bytes=three_rows - 1)  # less than 3 per device
    dbatch = auto.put(batch)
    assert dbatch.layout.chunk == 2 and dbatch.layout.n_chunks == 32 // (2 * ex.num_devices)
    got, want = auto.fetch(auto.run(dbatch), 32), whole.fetch(whole.run(whole.put(batch)), 32)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def _rows_of(batch, rows):
    import jax

    return jax.tree_util.tree_map(lambda a: np.asarray(a)[:rows], batch)
