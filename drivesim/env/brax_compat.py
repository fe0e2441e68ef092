"""What Brax's trainers need from JAX that this JAX no longer has.

Brax 0.14 (the newest release) calls ``jax.device_put_replicated``, which JAX 0.10 removed
(Brax issue #671). :func:`patch_jax` puts back a drop-in built on ``jax.device_put`` with a
``NamedSharding`` (JAX's documented replacement) where JAX lacks it, and does nothing
where JAX still has it. Call it before ``brax.training.agents.ppo.train``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P


def device_put_replicated(x, devices):
    """``x`` (a PyTree) stacked once per device along a new leading axis, one slice on each
    of ``devices`` (what ``jax.device_put_replicated`` returned)."""
    sharding = NamedSharding(Mesh(np.array(devices), ("replica",)), P("replica"))
    return jax.tree_util.tree_map(lambda leaf: jax.device_put(jnp.stack([leaf] * len(devices)), sharding), x)


def patch_jax() -> bool:
    """Give ``jax`` a ``device_put_replicated`` where it has none; True where one was added."""
    try:
        jax.device_put_replicated  # noqa: B018  (an attribute lookup that raises where removed)
        return False
    except AttributeError:
        jax.device_put_replicated = device_put_replicated
        return True
