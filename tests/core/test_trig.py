"""The vectorised sine and cosine against float64 NumPy."""

from __future__ import annotations

import jax
import numpy as np

from drivesim.core.trig import sin_cos

_sin_cos = jax.jit(sin_cos)


def _errors(x: np.ndarray) -> tuple[float, float]:
    s, c = (np.asarray(v, np.float64) for v in _sin_cos(x))
    xs = x.astype(np.float64)
    return float(np.abs(s - np.sin(xs)).max()), float(np.abs(c - np.cos(xs)).max())


def test_sin_cos_within_1e_7_of_float64():
    rng = np.random.default_rng(0)
    for limit in (4.0, 1000.0):
        x = rng.uniform(-limit, limit, 400_000).astype(np.float32)
        assert max(_errors(x)) < 1e-7
    # quadrant boundaries and their neighbours in float32
    edges = (np.arange(-40, 41) * (np.pi / 4)).astype(np.float32)
    near = np.concatenate(
        [np.nextafter(edges, np.float32(-np.inf)), edges, np.nextafter(edges, np.float32(np.inf))]
    )
    assert max(_errors(near)) < 1e-7


def test_sin_cos_special_values():
    s, c = (np.asarray(v) for v in _sin_cos(np.array([0.0, 1e-30, np.nan, np.inf, -np.inf], np.float32)))
    assert s[0] == 0.0 and c[0] == 1.0 and s[1] == np.float32(1e-30) and c[1] == 1.0
    assert np.isnan(s[2:]).all() and np.isnan(c[2:]).all()
