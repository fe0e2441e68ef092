"""Compute a value once, whatever reads it.

XLA fuses a cheap elementwise producer into each of its consumers, so a value that three
fusions read is computed three times. ``jax.lax.optimization_barrier`` does not prevent
it on the CPU: XLA:CPU expands the barrier before fusion (the compiled program holds none).
A reduction's result is never fused into its consumers, so :func:`materialize` passes each
value through an identity reduction (the value and a neutral row, reduced over that axis of
2): one fusion computes it and the consumers read the stored array. The identity is exact:
a maximum against -inf (the type's lowest integer) keeps -0.0 and NaN, and booleans are
or-ed with False.

XLA:CPU computes a reduction's fused producer one element at a time. Inside a rollout's
step on the CPU (:func:`stores_by_branch`) a value passes through a conditional instead,
which XLA never fuses either and whose operand it computes as vector code.

One reader defeats it: a reduction of the stored value with the same operation (``any`` of a
stored bool, ``max`` of a stored float). XLA's simplifier merges the two reductions into one
over the unstored value, and that fusion computes the value again; such readers reduce with
another operation (a count, core.bends).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import jax
import jax.numpy as jnp
from jax.extend.core import get_opaque_trace_state

from drivesim.core import search_plan
from drivesim.core.search_choice import on_cpu
from drivesim.core.types import Array


class _Open(threading.local):
    """The open stores_by_branch contexts of this thread (JAX traces per thread), innermost
    last: (predicate, the trace it belongs to)."""

    def __init__(self) -> None:
        self.stack: list[tuple[Array, object]] = []


_OPEN = _Open()


@contextlib.contextmanager
def stores_by_branch(step_index) -> Iterator[None]:
    """Inside, on the CPU, :func:`materialize` and :func:`decided_once` store through a
    conditional on ``step_index`` (the unbatched () int32 counter of a scan body shared by a
    whole batch; a batched one would make the conditional a select of both branches). Both
    branches give the value, one as it is and one through the identity reduction, so the
    result does not depend on the predicate. A conditional's operand is computed by a loop
    of its own, vector code on XLA:CPU, where a reduction's fused producer runs one element
    at a time (where the current SearchPlan's ``branch_stores`` is False, every store takes
    the reduction). Stores traced inside nested control
    flow or transformations (another trace than the counter's) take the reduction: a
    conditional there would capture the counter from the outer trace."""
    use = search_plan.current().branch_stores and step_index is not None and on_cpu()
    if use:
        _OPEN.stack.append((step_index >= 0, get_opaque_trace_state()))
    try:
        yield
    finally:
        if use:
            _OPEN.stack.pop()


def materialize(tree):
    """``tree`` unchanged, each array leaf computed once by the program (see the module;
    the current SearchPlan's ``store`` False hands it on as it is)."""
    return _store_tree(tree) if search_plan.current().store else tree


def decided_once(tree):
    """``tree`` unchanged, each leaf computed once whatever SearchPlan.store says: for decisions that
    several fusions must read alike. A comparison recomputed in each reader can come out
    differently in each: XLA:CPU contracts a multiply-add into an FMA in some kernels and
    not in others, so two readers of a near tie may disagree (core.interactions.odd_even_pass
    swapped one field of an agent pair and not the others this way). The value also passes
    an optimization barrier, which backends that keep barriers through fusion (unlike
    XLA:CPU) honour as well."""
    return _store_tree(jax.tree_util.tree_map(jax.lax.optimization_barrier, tree))


def _store_tree(tree):
    """``tree`` with every leaf stored: through one conditional inside
    :func:`stores_by_branch`, else through the identity reduction."""
    stack = _OPEN.stack
    if stack and stack[-1][1] == get_opaque_trace_state():
        return jax.lax.cond(stack[-1][0], lambda t: t, _reduced_tree, tree)
    return _reduced_tree(tree)


def _reduced_tree(tree):
    return jax.tree_util.tree_map(_stored, tree)


def _stored(value: Array) -> Array:
    value = jnp.asarray(value)
    if value.dtype == jnp.bool_:
        return jnp.any(jnp.stack([value, jnp.zeros_like(value)]), axis=0)
    low = jnp.iinfo(value.dtype).min if jnp.issubdtype(value.dtype, jnp.integer) else -jnp.inf
    return jnp.max(jnp.stack([value, jnp.full_like(value, low)]), axis=0)
