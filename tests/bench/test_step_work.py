"""Work per step counted in compiled programs (drivesim.bench.step_work)."""

import re

import jax
import jax.numpy as jnp

from drivesim.bench.step_work import count, family_program


def scaled_sum(i, x):
    return x * 1.5 + 0.25


def program(x):
    return jax.lax.fori_loop(0, 3, scaled_sum, x) - 3.0


def _program_text() -> str:
    """The compiled text of ``program`` vmapped over 4 rows of 128."""
    text = jax.jit(jax.vmap(program)).lower(jnp.ones((4, 128))).compile().as_text()
    assert text
    return text


def test_counts_the_loop_body_by_function():
    """A multiply and an add on (4, 128) in the loop, by the function that wrote them; the
    subtraction after the loop is not counted."""
    work = count(_program_text())
    assert work.arith["test_step_work.py:scaled_sum"] == 2 * 4 * 128
    assert sum(work.arith.values()) < 2 * 4 * 128 + 4 * 128  # at most the loop counter besides
    assert work.top(1)[0][0] == "test_step_work.py:scaled_sum"
    files = work.by_file()
    assert files.arith["test_step_work.py"] == sum(work.arith.values()) and files.total() == work.total()


def test_an_engine_step_without_the_fallback():
    program = family_program("highway:16", scenarios=4, steps=5)
    assert program.workload.agents == 16 and program.workload.scenarios == 4
    work = program.work()
    names = [name for name, _, _ in work.top(40)]
    assert "road.py:project" in names and "interactions.py:boxes_overlap" in names
    assert work.arith["?"] == 0  # every instruction attributed to a function
    again = family_program("highway:16", scenarios=8, steps=5).work()
    # batched elements grow with the batch; the loop's unbatched scalars do not
    assert 1.99 < again.total() / work.total() <= 2.0


def test_every_loop_counts_more_than_the_step():
    """The exact fallback's loops are in the program but not in the step's count."""
    text = _program_text()
    assert count(text, re.compile("nothing")).total() == 0
    assert count(text, re.compile(".*")).total() > count(text).total()
