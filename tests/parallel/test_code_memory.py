"""Compiled programs are dropped before the process runs out of memory mappings."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from drivesim.parallel import code_memory
from drivesim.parallel.programs import ProgramCache

pytestmark = pytest.mark.skipif(code_memory.mapping_count() is None, reason="needs /proc (Linux)")


def _program(i: int):
    """A distinct compiled program (its own constant), run once so XLA has loaded its code."""
    f = jax.jit(lambda x: jnp.cumsum(jnp.sin(x) * (i + 1)))
    f(jnp.ones(16 + i)).block_until_ready()
    return f


def test_relieve_unmaps_the_code_of_dropped_programs():
    code_memory.drop_compiled_programs()
    cache = ProgramCache(maxsize=64)
    start = code_memory.mapping_count()
    for i in range(40):
        cache.get(("p", i), lambda i=i: _program(i))
    grown = code_memory.mapping_count()
    assert grown - start > 200  # XLA:CPU maps each program's code apart
    assert code_memory.relieve(fraction=1.0) is False  # far below the limit: nothing dropped
    assert len(cache) == 40
    reliefs = code_memory.reliefs
    assert code_memory.relieve(fraction=0.0) is True
    assert len(cache) == 0 and code_memory.reliefs == reliefs + 1
    assert code_memory.mapping_count() - start < 0.2 * (grown - start)


def test_a_program_in_use_survives_and_a_rebuilt_one_gives_the_same_result(monkeypatch):
    cache = ProgramCache(maxsize=4)
    held = cache.get("held", lambda: _program(7))
    x = jnp.linspace(0.0, 1.0, 23)
    before = np.asarray(held(x))
    monkeypatch.setattr(code_memory, "FRACTION", 0.0)  # every miss now drops the caches
    relieved = code_memory.reliefs
    cache.get("other", lambda: _program(8))  # a miss: relieves, then builds
    assert code_memory.reliefs == relieved + 1
    assert "held" not in cache and "other" in cache
    assert np.asarray(held(x)).tobytes() == before.tobytes()  # still callable after the drop
    rebuilt = cache.get("held", lambda: _program(7))
    assert np.asarray(rebuilt(x)).tobytes() == before.tobytes()


def test_limit_is_read_from_the_kernel():
    limit = code_memory.mapping_limit()
    assert limit is None or limit > 1000
