"""Compute a value once, whatever reads it.

XLA fuses a cheap elementwise producer into each of its consumers, so a value that three
fusions read is computed three times. ``jax.lax.optimization_barrier`` does not prevent
it on the CPU: XLA:CPU expands the barrier before fusion (the compiled program holds none).
A reduction's result is never fused into its consumers, so :func:`materialize` passes each
value through an identity reduction (the value and a neutral row, reduced over that axis of
2): one fusion computes it and the consumers read the stored array. The identity is exact:
a maximum against -inf (the type's lowest integer) keeps -0.0 and NaN, and booleans are
or-ed with False. Where the engine stores values this way, and what it gained: BENCHMARKS.md
"Stored once".

One reader defeats it: a reduction of the stored value with the same operation (``any`` of a
stored bool, ``max`` of a stored float). XLA's simplifier merges the two reductions into one
over the unstored value, and that fusion computes the value again; such readers reduce with
another operation (a count, core.bends).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from drivesim.core.types import Array

# Whether :func:`materialize` stores its values (True) or hands them on as they are (False:
# XLA's own fusion decides). Read when a program is traced; False is for measuring what storing
# gains on another backend (benchmarks/engine_variants.py).
STORE = True


def materialize(tree):
    """``tree`` unchanged, each array leaf computed once by the program (see the module)."""
    return jax.tree_util.tree_map(_stored, tree) if STORE else tree


def decided_once(tree):
    """``tree`` unchanged, each leaf computed once whatever STORE says: for decisions that
    several fusions must read alike. A comparison recomputed in each reader can come out
    differently in each: XLA:CPU contracts a multiply-add into an FMA in some kernels and
    not in others, so two readers of a near tie may disagree (core.interactions.odd_even_pass
    swapped one field of an agent pair and not the others this way). The value also passes
    an optimization barrier, which backends that keep barriers through fusion (unlike
    XLA:CPU) honour as well."""
    return jax.tree_util.tree_map(lambda v: _stored(jax.lax.optimization_barrier(v)), tree)


def _stored(value: Array) -> Array:
    value = jnp.asarray(value)
    if value.dtype == jnp.bool_:
        return jnp.any(jnp.stack([value, jnp.zeros_like(value)]), axis=0)
    low = jnp.iinfo(value.dtype).min if jnp.issubdtype(value.dtype, jnp.integer) else -jnp.inf
    return jnp.max(jnp.stack([value, jnp.full_like(value, low)]), axis=0)
