"""Cache blocking (core.blocking): block counts, and bit-equal results blocked vs unblocked,
on one device and on a batch sharded over 8 devices (no data moved between them)."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from drivesim.core.blocking import cache_blocks
from drivesim.core.rollout import simulate
from drivesim.core.types import METRIC_NAMES

from . import builders
from .conftest import CONFIGS, POLICIES

CONFIG, POLICY = CONFIGS["idm"], POLICIES["idm"]


@pytest.mark.parametrize(
    ("batch", "agents", "devices", "limit", "blocks"),
    [
        (4096, 128, 8, 16384, 4),  # W128 on 8 devices: 512 x 128 per device -> 4 blocks of 128
        (4096, 32, 8, 16384, 1),  # W32 on 8 devices fits in one block
        (4096, 32, 1, 16384, 8),
        (12, 8, 1, 16, 6),
        (7, 8, 1, 16, 7),  # 7 is prime: the smallest divisor >= 4 wanted
        (12, 8, 5, 16, 6),  # 5 devices do not divide 12: sized as one device
        (4096, 128, 8, None, 1),
        (1, 128, 1, 1, 1),
    ],
)
def test_cache_blocks(batch, agents, devices, limit, blocks):
    assert cache_blocks(batch, agents, devices, limit) == blocks


def test_block_agents_is_validated():
    with pytest.raises(ValueError, match="block_agents"):
        CONFIG.with_search(block_agents=0)


def _host(count: int):
    return builders.batch([builders.highway_case(100 + k, 3 + k % 4) for k in range(count)])


def _assert_same(got, want):
    for name in METRIC_NAMES:
        g, w = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        np.testing.assert_array_equal(g, w, err_msg=name)


@pytest.mark.parametrize("count", [12, 7])
def test_blocked_equals_unblocked_on_one_device(count):
    host = _host(count)
    whole = jax.device_get(simulate(host, POLICY, CONFIG.with_search(block_agents=None)))
    blocked = jax.device_get(simulate(host, POLICY, CONFIG.with_search(block_agents=16)))
    assert cache_blocks(count, host.num_agents, 1, 16) > 1
    _assert_same(blocked, whole)


def test_blocked_sharded_batch_equals_one_device_and_moves_nothing():
    devices = jax.devices()
    if len(devices) < 8:
        pytest.skip("needs 8 (forced CPU) devices")
    host = _host(32)
    whole = jax.device_get(simulate(host, POLICY, CONFIG.with_search(block_agents=None)))
    sharding = NamedSharding(Mesh(np.array(devices[:8]), ("batch",)), PartitionSpec("batch"))
    sharded = jax.device_put(host, sharding)
    config = CONFIG.with_search(block_agents=2 * host.num_agents)  # 2 scenarios per device per block
    assert cache_blocks(32, host.num_agents, 8, config.search.block_agents) == 2
    # the window search moves nothing between devices; the exact fallback (drivesim.core.fallback)
    # gathers the few scenarios it must redo from every device, so it is left out of this check
    fast = config.with_search(neighbours="window_only")
    hlo = simulate.lower(sharded, POLICY, config=fast, devices=8).compile().as_text()
    assert "all-gather" not in hlo and "all-to-all" not in hlo and "collective-permute" not in hlo
    _assert_same(jax.device_get(simulate(sharded, POLICY, config, devices=8)), whole)
