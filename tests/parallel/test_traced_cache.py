"""Programs traced once per machine (drivesim.core.traced_cache): the executor's program and
``simulate``'s fast pass are written as StableHLO, read back by a later executor or call
without tracing, give the same bits; a damaged file is traced again; a user's policy is never
kept."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest
from trace_count import counting_policy

from drivesim.core import traced_cache
from drivesim.core.policies import IDM, idm_policy
from drivesim.parallel.executor import Executor, ExecutorConfig
from drivesim.parallel.programs import EXECUTOR_PROGRAMS


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setattr(traced_cache, "folder", lambda: tmp_path)
    EXECUTOR_PROGRAMS.clear()  # every executor below builds its program: a new process's view
    yield tmp_path
    EXECUTOR_PROGRAMS.clear()


def _fresh_run(sim, batch):
    EXECUTOR_PROGRAMS.clear()
    return Executor(ExecutorConfig(devices=2), sim).simulate(batch, idm_policy())


def test_a_kept_program_is_read_back_without_tracing_and_gives_the_same_bits(
    folder, batch, sim, reference, assert_bitwise, monkeypatch
):
    assert_bitwise(_fresh_run(sim, batch), reference)
    kept = list(folder.iterdir())
    assert len(kept) == 1 and kept[0].stat().st_size > 0

    def no_trace(*args, **kwargs):
        raise AssertionError("traced again")

    with monkeypatch.context() as patch:
        patch.setattr(jax.export, "export", no_trace)
        assert_bitwise(_fresh_run(sim, batch), reference)
    assert list(folder.iterdir()) == kept  # read, not written again

    kept[0].write_bytes(b"not a program")  # damaged: traced again and written whole
    assert_bitwise(_fresh_run(sim, batch), reference)
    assert kept[0].stat().st_size > len(b"not a program")

    longer = dataclasses.replace(sim, num_steps=sim.num_steps + 1)  # another config, another file
    _fresh_run(longer, batch)
    assert len(list(folder.iterdir())) == 2


def _no_trace(*args, **kwargs):
    raise AssertionError("traced again")


def test_simulate_reads_its_fast_pass_back_without_tracing(
    folder, batch, sim, reference, assert_bitwise, monkeypatch
):
    from drivesim.core.rollout import simulate

    simulate.clear()  # a new process's view
    assert_bitwise(simulate(batch, idm_policy(), sim), reference)
    kept = list(folder.iterdir())
    assert len(kept) == 1
    simulate.clear()
    with monkeypatch.context() as patch:
        patch.setattr(jax.export, "export", _no_trace)
        assert_bitwise(simulate(batch, idm_policy(), sim), reference)
        policy, traces = counting_policy(IDM)  # a user's policy: traced, not kept
        simulate(batch, idm_policy(), dataclasses.replace(sim, policy=policy))
        assert traces.count >= 1
    assert list(folder.iterdir()) == kept
    simulate.clear()


def test_a_users_policy_is_never_kept(folder, batch, sim):
    policy, traces = counting_policy(IDM)  # the same code as IDM, but not a built-in object
    _fresh_run(dataclasses.replace(sim, policy=policy), batch)
    assert traces.count >= 1 and not list(folder.iterdir())


def test_the_key_holds_the_static_fields_of_the_arguments(sim):
    """Two id batches of the same shapes but other families are other programs."""
    from drivesim.parallel.generated import id_batch
    from drivesim.scenarios.families import FamilyConfig

    ids, config = np.arange(8), FamilyConfig().static()
    shardings = [None] * 4
    merge = traced_cache.key("d", sim, (id_batch("merge", ids, 0, config, 8),), shardings)
    highway = traced_cache.key("d", sim, (id_batch("highway", ids, 0, config, 8),), shardings)
    wider = traced_cache.key("d", sim, (id_batch("merge", ids, 0, config, 16),), shardings)
    assert len({merge, highway, wider}) == 3
    assert merge == traced_cache.key("d", sim, (id_batch("merge", ids + 5, 1, config, 8),), shardings)


def test_the_folder_keeps_the_most_recently_used_programs(tmp_path):
    import os

    for k in range(5):
        path = tmp_path / f"p{k}"
        path.write_bytes(b"x" * 100)
        os.utime(path, (1000 + k, 1000 + k))  # p0 the least recently used
    os.utime(tmp_path / "p1", (2000, 2000))  # read since: kept before the others
    traced_cache._trim(tmp_path, most=250)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p1", "p4"]
