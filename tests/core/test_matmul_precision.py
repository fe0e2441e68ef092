"""Every matrix product the engine traces runs at full float32 precision (core.matmul).

JAX's default precision for a float32 matmul on NVIDIA GPUs since Ampere rounds each operand
to TensorFloat-32 (10 mantissa bits): the one-hot pick of a route segment 3 km from the
origin would move it by up to 1 m there. The check reads the lowered program (no GPU
needed), so a product added without the precision fails here on any machine.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from trace_count import product_precisions

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core.matmul import matmul
from drivesim.core.observation import observation_size
from drivesim.core.policies import MLP, idm_policy, init_mlp
from drivesim.core.rollout import rollout_batch
from drivesim.core.search_plan import SearchPlan
from drivesim.core.types import LaneChangeConfig, SimConfig

FULL = "HIGHEST,HIGHEST"


def test_the_check_sees_a_default_precision_product():
    def branchy(a):  # a default-precision product inside a conditional
        return jax.lax.cond(a[0, 0] > 0, lambda b: b @ b, lambda b: b, a)

    found = product_precisions(jax.jit(branchy).lower(jnp.ones((3, 3), jnp.float32)).as_text())
    assert found and found[0] != FULL


def _mlp_config() -> tuple[SimConfig, object]:
    config = SimConfig(num_steps=4, policy=MLP)
    return config, init_mlp(0, (observation_size(config.obs_neighbours), 16, 2))


CASES = {
    "highway, IDM ego": ("highway", SimConfig(num_steps=4), idm_policy()),
    "turning intersection, MLP ego": ("intersection_turns", *_mlp_config()),
    "merge, all pairs": (
        "merge",
        SimConfig(num_steps=4, search=SearchPlan(neighbours="all_pairs")),
        idm_policy(),
    ),
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
    text = jax.jit(lambda sc, p: rollout_batch(sc, p, config)).lower(batch, policy).as_text()
    found = product_precisions(text)
    assert found, "the engine traced no product: the check would pass vacuously"
    assert all(p == FULL for p in found), [p for p in found if p != FULL]


def test_a_one_hot_pick_is_exact():
    rng = np.random.default_rng(0)
    route = rng.integers(0, 6, 40)
    onehot = np.eye(6, dtype=np.float32)[route].T  # (6, 40): column n picks lane route[n]
    values = rng.uniform(-3000.0, 3000.0, (7, 6)).astype(np.float32)  # (S, L) lane fields
    picked = np.asarray(matmul(jnp.asarray(values), jnp.asarray(onehot)))
    assert np.array_equal(picked, values[:, route])
