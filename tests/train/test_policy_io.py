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
    with pytest.raises(PolicyFileError, match=r"p\.npz.*w0 takes 52 inputs.*28"):
        load_policy(path, obs_size=observation_size(3))


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(PolicyFileError, match="nope.npz: policy file not found"):
        load_policy(tmp_path / "nope.npz")
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(PolicyFileError, match="bad.npz: not a readable"):
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
