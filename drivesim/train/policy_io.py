"""Saving and loading a trained ego policy (NumPy only, one ``.npz`` file).

The file holds the actor's mean network as arrays ``w0, b0, w1, b1, ...`` (weights (in, out),
biases (out,), float32) and a JSON string ``meta`` (format, version, obs_size, hidden sizes,
plus whatever the trainer adds: config, update, env steps). ``drivesim run --policy mlp:FILE``
evaluates it with ``SimConfig(policy=drivesim.core.policies.MLP)``.
"""

from __future__ import annotations

import json
import os
import pathlib

import numpy as np

from drivesim.core.observation import observation_size
from drivesim.core.types import MLPParams, SimConfig

FORMAT = "drivesim-mlp-policy"
# 2: the network's acceleration is a correction to the ego's car follower (version 1 files
# held an absolute acceleration; they would drive differently, so they are refused)
VERSION = 2


class PolicyFileError(ValueError):
    """A policy file is missing, unreadable or has the wrong shapes (message names the file)."""


def save_policy(path, params: MLPParams, meta: dict | None = None) -> pathlib.Path:
    """Write ``params`` and ``meta`` to ``path`` (.npz) atomically; returns the path."""
    path = pathlib.Path(path)
    weights = [np.asarray(w, np.float32) for w in params.weights]
    biases = [np.asarray(b, np.float32) for b in params.biases]
    _check_layers(path, weights, biases, None)
    info = {
        **(meta or {}),
        "format": FORMAT,
        "version": VERSION,
        "obs_size": int(weights[0].shape[0]),
        "sizes": [int(weights[0].shape[0])] + [int(w.shape[1]) for w in weights],
    }
    arrays = {f"w{i}": w for i, w in enumerate(weights)} | {f"b{i}": b for i, b in enumerate(biases)}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        np.savez(fh, meta=np.asarray(json.dumps(info)), **arrays)  # type: ignore[arg-type]  # numpy stubs: **kwds
    os.replace(tmp, path)
    return path


def load_policy_meta(path) -> dict:
    """The JSON meta entry of a policy file."""
    with _open(path) as data:
        return _meta(path, data)


def load_policy(path, obs_size: int | None = None) -> MLPParams:
    """Read a policy file into MLPParams (NumPy float32 arrays).

    obs_size: expected input size (``observation_size(config.obs_neighbours)``); checked if given.
    Raises PolicyFileError naming the file and the field that is wrong.
    """
    with _open(path) as data:
        meta = _meta(path, data)
        sizes = meta.get("sizes")
        if not isinstance(sizes, list) or len(sizes) < 2:
            raise PolicyFileError(f"{path}: field 'meta.sizes' must list at least 2 layer sizes")
        weights: list[np.ndarray] = []
        biases: list[np.ndarray] = []
        for i in range(len(sizes) - 1):
            for name, out in ((f"w{i}", weights), (f"b{i}", biases)):
                out.append(_array(path, data, name))
    _check_layers(path, weights, biases, obs_size)
    return MLPParams(weights=tuple(weights), biases=tuple(biases))


def read_params(path, config: SimConfig) -> MLPParams:
    """The ``mlp`` policy's loader (``--policy mlp:FILE``): :func:`load_policy` checked
    against the observation size of ``config``."""
    return load_policy(path, observation_size(config.obs_neighbours))


def _open(path):
    path = pathlib.Path(path)
    if not path.is_file():
        raise PolicyFileError(f"{path}: policy file not found")
    try:
        data = np.load(path, allow_pickle=False)
    except Exception:  # zipfile / format errors of a corrupt file (numpy's text blames pickles)
        raise PolicyFileError(f"{path}: not a .npz policy file (not a zip of .npy arrays)") from None
    if not hasattr(data, "files"):  # a bare .npy array
        raise PolicyFileError(f"{path}: not a .npz policy file (a single .npy array)")
    return data


def _array(path, data, name: str) -> np.ndarray:
    """Array ``name`` of the file as float32; PolicyFileError naming it when it is missing or
    not numbers (object arrays are refused without being unpickled)."""
    if name not in data.files:
        raise PolicyFileError(f"{path}: missing array {name!r}")
    try:
        raw = data[name]
        if raw.dtype.kind not in "fiu":
            raise ValueError(f"dtype {raw.dtype}, not numbers")
        return np.asarray(raw, np.float32)
    except (ValueError, OSError, EOFError) as exc:
        raise PolicyFileError(f"{path}: array {name!r} is not a numeric array ({exc})") from None
    except MemoryError:  # a header claiming a shape far larger than the file
        raise PolicyFileError(f"{path}: array {name!r} claims more memory than there is") from None


def _meta(path, data) -> dict:
    if "meta" not in data.files:
        raise PolicyFileError(f"{path}: missing the 'meta' entry")
    try:
        meta = json.loads(str(data["meta"]))
    except (json.JSONDecodeError, ValueError) as exc:
        raise PolicyFileError(f"{path}: field 'meta' is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise PolicyFileError(f"{path}: field 'meta' is a JSON {type(meta).__name__}, expected an object")
    if meta.get("format") != FORMAT:
        raise PolicyFileError(f"{path}: field 'meta.format' is {meta.get('format')!r}, expected {FORMAT!r}")
    if meta.get("version") != VERSION:
        raise PolicyFileError(
            f"{path}: field 'meta.version' is {meta.get('version')!r}, expected {VERSION} (version 1 "
            "policies set the acceleration itself; version 2 corrects the car follower's: retrain it)"
        )
    return meta


def _check_layers(path, weights, biases, obs_size) -> None:
    if not weights or len(weights) != len(biases):
        raise PolicyFileError(
            f"{path}: need as many weight matrices as bias vectors (got {len(weights)} and {len(biases)})"
        )
    for i, (w, b) in enumerate(zip(weights, biases, strict=True)):
        if w.ndim != 2 or b.shape != (w.shape[1],):
            raise PolicyFileError(
                f"{path}: layer {i}: w{i} shape {w.shape} and b{i} shape {b.shape} "
                "do not match (expected (in, out) and (out,))"
            )
        if i and w.shape[0] != weights[i - 1].shape[1]:
            raise PolicyFileError(
                f"{path}: layer {i}: w{i} has {w.shape[0]} inputs, the previous "
                f"layer gives {weights[i - 1].shape[1]}"
            )
        if not (np.all(np.isfinite(w)) and np.all(np.isfinite(b))):
            raise PolicyFileError(f"{path}: layer {i}: w{i}/b{i} hold NaN or Inf")
    if weights[-1].shape[1] != 2:
        raise PolicyFileError(
            f"{path}: the last layer outputs {weights[-1].shape[1]} values, expected 2 (accel, steer)"
        )
    if obs_size is not None and weights[0].shape[0] != obs_size:
        raise PolicyFileError(
            f"{path}: w0 takes {weights[0].shape[0]} inputs but the observation has "
            f"{obs_size} (check SimConfig.obs_neighbours)"
        )
