"""Policy files: round trip, clear errors naming the file and field."""

from __future__ import annotations

import numpy as np
import pytest

from drivesim.core.observation import observation_size
from drivesim.core.policies import init_mlp
from drivesim.train.policy_io import PolicyFileError, load_policy, load_policy_meta, save_policy


def _params():
    return init_mlp(3, (observation_size(6), 16, 2))


def test_round_trip_keeps_arrays_and_meta(tmp_path):
    params = _params()
    path = save_policy(tmp_path / "p.npz", params, {"update": 7})
    loaded = load_policy(path, obs_size=observation_size(6))
    for a, b in zip(params.weights + params.biases, loaded.weights + loaded.biases, strict=True):
        np.testing.assert_array_equal(np.asarray(a), b)
    meta = load_policy_meta(path)
    assert meta["update"] == 7 and meta["sizes"] == [observation_size(6), 16, 2]


def test_wrong_obs_size_names_file_and_field(tmp_path):
    path = save_policy(tmp_path / "p.npz", _params())
    with pytest.raises(PolicyFileError, match=r"p\.npz.*w0 takes 55 inputs.*31"):
        load_policy(path, obs_size=observation_size(3))


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(PolicyFileError, match="nope.npz: policy file not found"):
        load_policy(tmp_path / "nope.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(PolicyFileError, match="bad.npz: not a .npz policy file"):
        load_policy(bad)


def test_bad_shapes_are_rejected(tmp_path):
    params = _params()
    path = tmp_path / "p.npz"
    save_policy(path, params)
    data = dict(np.load(path))
    data["b1"] = np.zeros(3, np.float32)  # last layer must output 2 values
    np.savez(path, **data)
    with pytest.raises(PolicyFileError, match="layer 1: w1 shape"):
        load_policy(path)


def _rewritten(tmp_path, **changes):
    """A saved policy file with entries replaced (a hostile or foreign file)."""
    import json

    path = save_policy(tmp_path / "p.npz", _params())
    data = dict(np.load(path))
    meta = json.loads(str(data["meta"]))
    for key, value in changes.items():
        if key.startswith("meta_"):
            meta[key[5:]] = value
        else:
            data[key] = value
    data["meta"] = np.asarray(changes.get("meta", json.dumps(meta)))
    np.savez(path, **data)
    return path


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"meta": "[1, 2]"}, "field 'meta' is a JSON list"),
        ({"w0": np.array([object()] * 3, dtype=object)}, "array 'w0' is not a numeric array"),
        ({"w1": np.array([["a", "b"]] * 16)}, "array 'w1' is not a numeric array"),
        ({"meta_sizes": 5}, "field 'meta.sizes'"),
        ({"meta_version": 1}, "field 'meta.version' is 1, expected 2"),
    ],
)
def test_hostile_policy_files_are_one_error_naming_the_field(tmp_path, changes, message):
    path = _rewritten(tmp_path, **changes)
    with pytest.raises(PolicyFileError, match=message) as err:
        load_policy(path)
    assert str(path) in str(err.value)


def test_training_record_of_a_policy_file_for_the_dashboard(tmp_path):
    from drivesim.pipeline import policy_provenance
    from drivesim.train.config import config_to_dict, tiny_config

    cfg = tiny_config()
    trained = save_policy(tmp_path / "t.npz", _params(), {"env_steps": 4096, "config": config_to_dict(cfg)})
    bare = save_policy(tmp_path / "bare.npz", _params())
    records = policy_provenance.training_records(f"mlp:{trained},{bare},{tmp_path / 'gone.npz'}")
    assert records[0]["family"] == "highway" and records[0]["env_steps"] == 4096
    assert records[0]["reward"]["collision_penalty"] == cfg.env.reward.collision_penalty
    text = [policy_provenance.describe(r) for r in records]
    assert text[0].startswith("t.npz: highway, 8 agents, 4,096 env steps, seed 0; reward progress_weight=0.3")
    assert text[1] == "bare.npz: no training record"
    assert text[2].startswith("gone.npz: training record unreadable (") and "gone.npz" in text[2][10:]
    assert policy_provenance.training_records("idm") == []
    assert policy_provenance.describe_meta({"policy_training": "not json"}) == ""
