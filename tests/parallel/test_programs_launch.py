"""The bounded program cache and the process-group launcher (real subprocesses)."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from drivesim.parallel.launch import Child, free_port, run_group
from drivesim.parallel.programs import EXECUTOR_PROGRAMS, ProgramCache


def test_program_cache_drops_the_least_recently_used():
    cache = ProgramCache(maxsize=2)
    built = []

    def build(key):
        built.append(key)
        return f"program-{key}"

    assert cache.get("a", lambda: build("a")) == "program-a"
    cache.get("b", lambda: build("b"))
    cache.get("a", lambda: build("a"))  # hit: a is now the most recent
    cache.get("c", lambda: build("c"))  # evicts b, not the whole cache
    assert built == ["a", "b", "c"] and len(cache) == 2
    assert "a" in cache and "b" not in cache and cache.peek("c") == "program-c"
    with pytest.raises(ValueError, match="maxsize"):
        ProgramCache(maxsize=0)


def test_run_group_returns_outputs_and_kills_the_rest_on_a_failure():
    ok = run_group([Child(cmd=[sys.executable, "-c", f"print({i})"]) for i in range(2)], timeout_s=60)
    assert [o.strip() for o in ok] == ["0", "1"]
    failing = Child(cmd=[sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"])
    sleeper = Child(cmd=[sys.executable, "-c", "import time; time.sleep(60)"])
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=r"(?s)worker 0 exited with 3:.*boom"):
        run_group([failing, sleeper], timeout_s=60, what="worker")
    assert time.monotonic() - start < 30  # the sleeper was killed, not waited for
    with pytest.raises(RuntimeError, match="worker 0 timed out after 1 s"):
        run_group([sleeper], timeout_s=1, what="worker")
    assert 0 < free_port() < 65536


def test_program_cache_builds_a_key_once_across_threads():
    cache = ProgramCache(maxsize=4)
    calls = []

    def slow_build():
        calls.append(1)
        time.sleep(0.3)
        return "program"

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: cache.get("k", slow_build), range(4)))
    assert results == ["program"] * 4 and len(calls) == 1 and cache.builds == 1


def test_campaigns_in_one_process_share_compiled_programs(tmp_path):
    """A second campaign of the same shapes compiles nothing (the executors share programs)."""
    from drivesim.pipeline.campaign import run_campaign
    from drivesim.pipeline.config import CampaignConfig

    def config(name):
        return CampaignConfig(
            sources=("synthetic:highway",),
            count=8,
            agents=5,
            num_steps=3,
            batch_size=8,
            out=str(tmp_path / name),
        )

    first = run_campaign(config("a"))
    builds = EXECUTOR_PROGRAMS.builds
    second = run_campaign(config("b"))
    assert first.done == second.done == 8
    assert EXECUTOR_PROGRAMS.builds == builds  # no new program
    assert (tmp_path / "b" / "ledger.sqlite").is_file()
