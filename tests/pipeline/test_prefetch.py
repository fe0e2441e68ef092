"""The prefetch stages: order, errors surfacing with their cause, no leaked threads."""

from __future__ import annotations

import threading
import time

import pytest

from drivesim.pipeline.prefetch import PipelineError, Prefetcher, chain


def _stage_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("drivesim-")]


def _count(n: int, fail_at: int | None = None, delay: float = 0.0):
    def produce(stop):
        for i in range(n):
            if stop.is_set():
                return
            if i == fail_at:
                raise KeyError(f"bad item {i}")
            time.sleep(delay)
            yield i, i * i

    return produce


def test_values_arrive_in_order_through_two_stages():
    host = Prefetcher(_count(50), depth=3)
    stage = chain(host, lambda pos, value: value + 1, depth=2)
    assert [v for _, v in stage] == [i * i + 1 for i in range(50)]
    assert _stage_threads() == []


def test_loader_error_surfaces_in_consumer_with_cause():
    host = Prefetcher(_count(20, fail_at=7), depth=2)
    stage = chain(host, lambda pos, value: value, depth=2)
    seen = []
    with pytest.raises(PipelineError) as info:
        for pos, _ in stage:
            seen.append(pos)
    assert seen == list(range(7))
    cause = info.value.__cause__
    assert isinstance(cause, PipelineError) and isinstance(cause.__cause__, KeyError)
    assert _stage_threads() == []


def test_transform_error_surfaces():
    def transform(pos, value):
        if pos == 3:
            raise ZeroDivisionError("device stage")
        return value

    stage = chain(Prefetcher(_count(10), depth=2), transform, depth=1)
    with pytest.raises(PipelineError, match="ZeroDivisionError"):
        list(stage)
    assert _stage_threads() == []


def test_early_stop_leaves_no_thread_running():
    before = set(threading.enumerate())
    stage = chain(Prefetcher(_count(10_000, delay=0.001), depth=4), lambda p, v: v, depth=2)
    for pos, _ in stage:
        if pos == 5:
            break
    stage.close()
    assert _stage_threads() == []
    assert set(threading.enumerate()) <= before


def test_consumer_error_closes_stages():
    stage = chain(Prefetcher(_count(1000, delay=0.001), depth=4), lambda p, v: v, depth=2)
    with pytest.raises(RuntimeError, match="consumer"):
        with stage:
            for pos, _ in stage:
                if pos == 2:
                    raise RuntimeError("consumer failed")
    assert _stage_threads() == []
