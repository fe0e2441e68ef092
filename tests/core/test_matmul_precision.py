"""Every matrix product the engine traces runs at full float32 precision (core.matmul).

JAX's default precision for a float32 matmul on NVIDIA GPUs since Ampere rounds each operand
to TensorFloat-32 (10 mantissa bits): the one-hot pick of a route segment 3 km from the
origin would move it by up to 1 m there. The check reads the traced program (no GPU needed),
so a product added without the precision fails here on any machine.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core.matmul import PRECISION, matmul
from drivesim.core.observation import observation_size
from drivesim.core.policies import idm_policy, init_mlp
from drivesim.core.rollout import rollout_batch
from drivesim.core.types import LaneChangeConfig, SimConfig

FULL = (PRECISION, PRECISION)


def _sub_jaxprs(value) -> list:
    """The jaxprs inside an equation parameter (a closed jaxpr, a jaxpr, or tuples of them)."""
    if hasattr(value, "jaxpr") and hasattr(value, "consts"):
        return [value.jaxpr]
    if hasattr(value, "eqns"):
        return [value]
    if isinstance(value, tuple | list):
        return [j for v in value for j in _sub_jaxprs(v)]
    return []


def dot_precisions(closed) -> list:
    """The ``precision`` of every dot_general in a closed jaxpr, sub-programs included."""
    found: list = []

    def walk(jaxpr) -> None:
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "dot_general":
                found.append(eqn.params["precision"])
            for value in eqn.params.values():
                for sub in _sub_jaxprs(value):
                    walk(sub)

    walk(closed.jaxpr)
    return found


def test_the_check_sees_a_default_precision_product():
    x = jnp.ones((3, 3), jnp.float32)
    found = dot_precisions(
        jax.make_jaxpr(lambda a: jax.lax.cond(a[0, 0] > 0, lambda b: b @ b, lambda b: b, a))(x)
    )
    assert found and found[0] != FULL


def _mlp_config() -> tuple[SimConfig, object]:
    config = SimConfig(num_steps=4, policy="mlp")
    return config, init_mlp(0, (observation_size(config.obs_neighbours), 16, 2))


CASES = {
    "highway, IDM ego": ("highway", SimConfig(num_steps=4), idm_policy()),
    "turning intersection, MLP ego": ("intersection_turns", *_mlp_config()),
    "merge, all pairs": ("merge", SimConfig(num_steps=4, neighbours="all_pairs"), idm_policy()),
    "highway, lane changes": (
        "highway",
        SimConfig(num_steps=4, lane_changes=LaneChangeConfig()),
        idm_policy(),
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_every_engine_product_is_full_float32(name):
    family, config, policy = CASES[name]
    batch = make_batch(Workload(2, 8, 4, family))
    closed = jax.make_jaxpr(lambda sc, p: rollout_batch(sc, p, config))(batch, policy)
    found = dot_precisions(closed)
    assert found, "the engine traced no product: the check would pass vacuously"
    assert all(p == FULL for p in found), [p for p in found if p != FULL]


def test_a_one_hot_pick_is_exact():
    rng = np.random.default_rng(0)
    route = rng.integers(0, 6, 40)
    onehot = np.eye(6, dtype=np.float32)[route].T  # (6, 40): column n picks lane route[n]
    values = rng.uniform(-3000.0, 3000.0, (7, 6)).astype(np.float32)  # (S, L) lane fields
    picked = np.asarray(matmul(jnp.asarray(values), jnp.asarray(onehot)))
    assert np.array_equal(picked, values[:, route])
