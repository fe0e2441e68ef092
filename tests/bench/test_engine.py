"""Engine benchmark and memory helpers on a small real workload."""

import jax
import pytest

from drivesim.bench.engine import EngineConfig, agent_step_cost_ratio, run_engine, search_name
from drivesim.bench.harness import HarnessConfig, PhaseTimer, compile_timed, time_calls
from drivesim.bench.memory import find_knee
from drivesim.bench.records import BenchRecord
from drivesim.bench.workloads import W32, Workload, make_batch
from drivesim.parallel.memory import compiled_bytes, device_memory, host_rss
from drivesim.parallel.programs import EXECUTOR_PROGRAMS


def test_workload_names_and_shares():
    assert W32.name == "W32" and Workload(64, 8, 10).name == "highway-64x8x10"
    shares = [W32.share(i, 3) for i in range(3)]
    assert sum(s.scenarios for s in shares) == 4096
    assert [s.first_id for s in shares] == [0, 1365, 2730]
    batch = make_batch(Workload(4, 8, 10, first_id=7))
    assert batch.agents.x.shape == (4, 8) and list(batch.scenario_id) == [7, 8, 9, 10]


def test_run_engine_record():
    EXECUTOR_PROGRAMS.clear()  # compile_s > 0 below: this process compiles the program here
    record = run_engine(EngineConfig(Workload(16, 8, 5), HarnessConfig(repeats=3, warmup=1)))
    assert record.kind == "engine" and record.repeats == 3 and record.compile_s > 0
    assert len(record.extra["times_s"]) == 3
    assert record.extra["search"] == "all_pairs/own_route"  # the CPU's at 8 agents (core.search_choice)
    plan = record.extra["search_plan"]  # the resolved SearchPlan: every "auto" filled
    assert plan["neighbours"] == "all_pairs" and plan["block_agents"] == 16384 and "auto" not in plan.values()
    assert search_name(Workload(16, 32, 5)) == "window/own_route"
    assert search_name(Workload(16, 8, 5), "gpu") == "all_pairs/all_lanes"
    assert search_name(Workload(16, 8, 5, "intersection_turns"), "gpu") == "all_pairs/own_route"
    s, a = record.scenarios_per_s, record.agent_steps_per_s
    assert s["n"] == 3 and s["p5"] <= s["median"] <= s["p95"]
    assert a["median"] == pytest.approx(s["median"] * 8 * 5)
    assert record.steps_per_s["median"] == pytest.approx(s["median"] * 5)
    assert record.compiled_bytes > 0 and record.host_rss_bytes > 0
    assert record.device_kind and record.jax_version == jax.__version__
    slower = BenchRecord(kind="engine", agents=128, agent_steps_per_s={"median": a["median"] / 2})
    assert agent_step_cost_ratio(slower, record) == pytest.approx(2.0)


def test_harness_pieces():
    f = jax.jit(lambda x: x * 2)
    compiled, seconds = compile_timed(f, jax.numpy.ones(3))
    assert seconds > 0 and compiled_bytes(compiled) > 0
    calls = []
    call = lambda: calls.append(1) or compiled(jax.numpy.ones(3))  # noqa: E731
    times = time_calls(call, HarnessConfig(repeats=4, warmup=2))
    assert len(times) == 4 and len(calls) == 6
    timer = PhaseTimer()
    with timer.phase("load"):
        pass
    with timer.phase("load"):
        pass
    assert set(timer.as_dict()) == {"load"}
    assert device_memory() == (None, None)  # CPU has no memory_stats
    assert host_rss() > 0


def test_find_knee():
    assert find_knee([64, 256, 1024, 4096], [100.0, 800.0, 950.0, 1000.0]) == 2
    assert find_knee([4096, 64], [1000.0, 999.0]) == 1  # sizes need not be sorted
    assert find_knee([1, 2], [5.0, 1.0]) == 0
