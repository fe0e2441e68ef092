"""Counting traces (``chex.assert_max_traces`` style) instead of reading private jit caches,
and counting what a compiled program holds.

``counting_policy(base)`` makes a copy of an ego policy whose ``act`` bumps a counter each
time JAX traces it: one rollout trace (a compilation of the batched program) = one more.
``conditionals(hlo_text)`` counts the real conditionals of a compiled program's text;
``product_precisions(text)`` lists the precision of each matrix product of a lowered one.
"""

from __future__ import annotations

import dataclasses
import itertools
import re

from drivesim.core.policies import EgoPolicy

_ids = itertools.count()


class TraceCounter:
    """``count``: how many times the wrapped function was traced (called in Python)."""

    def __init__(self):
        self.count = 0

    def wrap(self, fn):
        def counted(*args, **kwargs):
            self.count += 1
            return fn(*args, **kwargs)

        return counted


def counting_policy(base: EgoPolicy) -> tuple[EgoPolicy, TraceCounter]:
    """A copy of ``base`` (same init and actions, its own name) and its counter."""
    counter = TraceCounter()
    policy = dataclasses.replace(
        base, name=f"{base.name}-counted-{next(_ids)}", act_fn=counter.wrap(base.act_fn)
    )
    return policy, counter


def conditionals(hlo_text: str) -> int:
    """How many real conditionals (HLO ``conditional``) a compiled program holds, from its
    text (``jax.jit(f).lower(...).compile().as_text()``)."""
    return len(re.findall(r" conditional\(", hlo_text))


def product_precisions(program_text: str) -> list[str]:
    """The operand precisions of every matrix product (``stablehlo.dot_general``) in a lowered
    program's text (``jax.jit(f).lower(...).as_text()``, nested bodies included), one
    "HIGHEST,HIGHEST" / "DEFAULT,DEFAULT" ... per product ("none" where it names none)."""
    found = []
    for line in program_text.splitlines():
        if "stablehlo.dot_general" in line:
            match = re.search(r"precision = \[(\w+), (\w+)\]", line)
            found.append(",".join(match.groups()) if match else "none")
    return found
