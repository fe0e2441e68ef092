"""Fusions and conditionals per step, counted in the compiled time loop."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from drivesim.bench.step_program import accelerator_counts, fast_pass_counts, step_counts
from drivesim.bench.workloads import Workload, make_batch, sim_config
from drivesim.core.policies import idm_policy

# Per step of the fast pass on the CPU, 8 scenarios x 32 agents (counted 2026-12-02). A count
# that grows by more than 10% fails: a step's kernels are what an accelerator pays for.
CPU_BASELINE = {"highway": (116, 6), "intersection_turns": (175, 12)}
# The program an accelerator builds (all-pairs searches at 32 slots, no store conditionals),
# compiled by XLA:CPU (counted 2026-12-03).
ACCELERATOR_BASELINE = {"highway": (69, 1), "intersection_turns": (91, 1)}


def test_counts_a_known_loop():
    """A scan whose body holds one conditional: one conditional per step, and at least one
    fusion for each side of the loop's arithmetic."""

    def body(carry, i):
        carry = jax.lax.cond(i % 2 == 0, lambda c: jnp.sin(c) * 2.0, lambda c: c, carry)
        return jnp.exp(carry) + 1.0, None

    def rollout(x):  # the name marks the time loop, as core.rollout's scan is found
        return jax.lax.scan(body, x, jnp.arange(5))[0]

    text = jax.jit(rollout).lower(jnp.ones(64)).compile().as_text()
    counts = step_counts(text)
    assert counts.conditionals == 1
    assert counts.fusions >= 1
    assert step_counts(text, loop_functions=("elsewhere",)) == (0, 0)


# program -> (counter, baselines): the CPU's own fast pass and the one an accelerator builds
PROGRAMS = {
    "cpu": (fast_pass_counts, CPU_BASELINE),
    "accelerator": (accelerator_counts, ACCELERATOR_BASELINE),
}


@pytest.mark.parametrize("family", sorted(CPU_BASELINE))
@pytest.mark.parametrize("program", sorted(PROGRAMS))
def test_step_program_does_not_grow(program, family):
    counter, baselines = PROGRAMS[program]
    wl = Workload(scenarios=8, agents=32, family=family)
    counts = counter(jax.device_put(make_batch(wl)), idm_policy(), sim_config(wl))
    fusions, conditionals = baselines[family]
    assert 0 < counts.fusions <= 1.1 * fusions, counts
    assert counts.conditionals <= conditionals, counts
    assert program == "cpu" or conditionals == 1  # an accelerator's step: one conditional
