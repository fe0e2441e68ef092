"""Padding, vmap vs loop, compilation reuse and uneven episode lengths (``simulate``)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from trace_count import counting_policy

from drivesim.core.policies import IDM
from drivesim.core.rollout import simulate
from drivesim.core.types import METRIC_NAMES, replace

from . import builders
from .conftest import CONFIGS, POLICIES

CONFIG, POLICY = CONFIGS["idm"], POLICIES["idm"]
UNEVEN = 25


def _host():
    return [builders.highway_case(10, 6), builders.highway_case(11, 4), builders.curved_case()]


def _metrics(batch, config=CONFIG):
    return jax.device_get(simulate(batch, POLICY, config))


def _assert_same(got, want, index_got=None, index_want=None):
    for name in METRIC_NAMES:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        g = g if index_got is None else g[index_got]
        w = w if index_want is None else w[index_want]
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.fixture(scope="module")
def batch_metrics():
    return _metrics(builders.batch(_host()))


def test_padding_agents_change_nothing(batch_metrics):
    bigger = builders.batch(_host(), num_agents=9, num_lanes=6, num_points=16)
    _assert_same(_metrics(bigger), batch_metrics)


def test_vmapped_batch_equals_loop_over_single_scenarios(batch_metrics):
    for b, sc in enumerate(_host()):
        _assert_same(_metrics(builders.batch([sc])), batch_metrics, index_got=0, index_want=b)


def test_same_shapes_do_not_recompile_and_uneven_lengths_freeze(batch_metrics):
    policy, traces = counting_policy(IDM)
    config = replace_policy(CONFIG, policy)
    first = _metrics(builders.batch(_host()), config)
    size = traces.count
    assert size >= 1
    host = _host()
    host[0] = replace(host[0], episode_length=np.asarray(UNEVEN, np.int32))
    uneven = builders.batch(host)
    long_run = _metrics(uneven, config)  # new values, same shapes and config
    assert traces.count == size, "a second call with the same shapes recompiled"
    short_run = _metrics(uneven, replace_steps(config, UNEVEN))
    assert traces.count == 2 * size  # the counter does see a new compilation
    _assert_same(first, batch_metrics)
    assert int(long_run.steps[0]) == UNEVEN and int(long_run.steps[1]) == CONFIG.num_steps
    _assert_same(long_run, short_run, index_got=0, index_want=0)
    _assert_same(long_run, batch_metrics, index_got=1, index_want=1)  # neighbours run on


def replace_policy(config, policy):
    import dataclasses

    return dataclasses.replace(config, policy=policy)


def replace_steps(config, steps):
    import dataclasses

    return dataclasses.replace(config, num_steps=steps)


def test_uneven_trajectory_frozen_after_episode(core_runs):
    _, metrics, traj = core_runs("idm")
    t = traj["uneven25"]
    assert int(metrics["uneven25"].steps) == UNEVEN
    moved = np.hypot(t.x[UNEVEN - 1] - t.x[UNEVEN - 2], t.y[UNEVEN - 1] - t.y[UNEVEN - 2]).max()
    assert moved > 0.5
    for name in ("x", "y", "heading", "speed", "valid"):
        values = getattr(t, name)
        np.testing.assert_array_equal(
            values[UNEVEN:], np.broadcast_to(values[UNEVEN - 1], values[UNEVEN:].shape)
        )
