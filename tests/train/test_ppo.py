"""PPO pieces: GAE against a hand computation; 1 vs 8 devices give the same updates."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.train.config import tiny_config
from drivesim.train.env import build_pool
from drivesim.train.ppo import Trainer, Transition, gae, make_mesh


def _transitions(value, reward, done, bootstrap):
    return Transition(
        obs=None, action=None, log_prob=None, value=value, reward=reward, done=done, bootstrap=bootstrap
    )


def test_gae_matches_hand_computation():
    reward = jnp.asarray([[1.0], [2.0], [3.0]])
    value = jnp.asarray([[0.5], [1.0], [1.5]])
    done = jnp.asarray([[False], [True], [False]])
    tr = _transitions(value, reward, done, jnp.zeros((3, 1)))
    g, lam = 0.9, 0.8
    adv, ret = gae(tr, jnp.asarray([2.0]), g, lam)
    a2 = 3.0 + g * 2.0 - 1.5
    a1 = 2.0 - 1.0  # episode terminates: no bootstrap
    a0 = (1.0 + g * 1.0 - 0.5) + g * lam * a1
    np.testing.assert_allclose(adv[:, 0], [a0, a1, a2], rtol=1e-6)
    np.testing.assert_allclose(ret, adv + value, rtol=1e-6)


def test_gae_bootstraps_an_episode_cut_by_its_time_limit():
    """A truncated step's target is r + gamma * V(its last observation); the advantage does
    not flow across the reset into the next episode."""
    reward = jnp.asarray([[1.0], [2.0], [3.0]])
    value = jnp.asarray([[0.5], [1.0], [1.5]])
    done = jnp.asarray([[False], [True], [False]])
    bootstrap = jnp.asarray([[0.0], [4.0], [0.0]])  # V of step 1's final observation
    g, lam = 0.9, 0.8
    adv, _ = gae(_transitions(value, reward, done, bootstrap), jnp.asarray([2.0]), g, lam)
    a2 = 3.0 + g * 2.0 - 1.5
    a1 = 2.0 + g * 4.0 - 1.0
    a0 = (1.0 + g * 1.0 - 0.5) + g * lam * a1
    np.testing.assert_allclose(adv[:, 0], [a0, a1, a2], rtol=1e-6)


def test_one_and_eight_devices_learn_the_same():
    assert len(jax.devices()) >= 8, "tests/conftest.py forces 8 CPU devices"
    cfg = tiny_config(updates=2, chunk=2)
    pool = build_pool(cfg.env)
    results = []
    for devices in (jax.devices()[:1], jax.devices()[:8]):
        trainer = Trainer(cfg, pool, make_mesh(devices))
        state, metrics = trainer.run(trainer.init_state(), 2)
        if len(devices) == 8:
            assert len(state.obs.sharding.device_set) == 8  # environments really are sharded
        results.append(jax.device_get((state.params, metrics)))
    (p1, m1), (p8, m8) = results
    for a, b in zip(jax.tree_util.tree_leaves(p1), jax.tree_util.tree_leaves(p8), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    np.testing.assert_allclose(m1.mean_reward, m8.mean_reward, rtol=1e-4)
    np.testing.assert_array_equal(m1.episodes, m8.episodes)
    moved = max(
        float(np.max(np.abs(a - b)))
        for a, b in zip(
            jax.tree_util.tree_leaves(p1),
            jax.tree_util.tree_leaves(
                jax.device_get(Trainer(cfg, pool, make_mesh(jax.devices()[:1])).init_state().params)
            ),
            strict=True,
        )
    )
    assert moved > 1e-4  # the updates changed the parameters (the comparison is not vacuous)


def test_annealed_learning_rate_reaches_zero():
    """anneal_updates=1: the first update learns, the second runs at learning rate 0."""
    base = tiny_config(updates=2, chunk=1)
    cfg = dataclasses.replace(base, ppo=dataclasses.replace(base.ppo, anneal_updates=1))
    trainer = Trainer(cfg, build_pool(cfg.env), make_mesh(jax.devices()[:1]))
    start = trainer.init_state()
    one, _ = trainer.run(start, 1)
    two, _ = trainer.run(one, 1)
    leaves = lambda s: jax.tree_util.tree_leaves(jax.device_get(s.params))  # noqa: E731
    assert any(np.any(a != b) for a, b in zip(leaves(start), leaves(one), strict=True))
    for a, b in zip(leaves(one), leaves(two), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="anneal_updates"):
        dataclasses.replace(base, ppo=dataclasses.replace(base.ppo, anneal_updates=0)).validate()
