"""Timing harness: compile apart, warm-up excluded, N timed repeats, rates with a CI.

``measure(fn, args, config)`` times a jitted function: it lowers and compiles it once
(``compile_s``), runs ``warmup`` untimed calls, then ``repeats`` timed calls, each ended by
``jax.block_until_ready``. ``PhaseTimer`` accumulates named phase times of a pipeline.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import jax

from drivesim.bench.stats import Summary, rates


@dataclass(frozen=True)
class HarnessConfig:
    """repeats: timed calls (>= 1; >= 5 for a published figure); warmup: untimed calls;
    ci_method: "t" or "bootstrap"."""

    repeats: int = 5
    warmup: int = 1
    ci_method: str = "t"

    def __post_init__(self):
        if self.repeats < 1 or self.warmup < 0:
            raise ValueError("HarnessConfig: repeats must be >= 1 and warmup >= 0")


@dataclass(frozen=True)
class Timing:
    """compile_s: lower + compile seconds; times: (repeats,) seconds of the timed calls."""

    compile_s: float
    times: tuple[float, ...]
    compiled: object = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class Work:
    """The work of one call: scenarios, agent slots per scenario, steps per scenario."""

    scenarios: int
    agents: int
    steps: int


@dataclass(frozen=True)
class Throughput:
    """Rates of one measured configuration (each a Summary over the repeats)."""

    scenarios_per_s: Summary
    steps_per_s: Summary
    agent_steps_per_s: Summary

    def as_fields(self) -> dict:
        return {
            "scenarios_per_s": self.scenarios_per_s.to_dict(),
            "steps_per_s": self.steps_per_s.to_dict(),
            "agent_steps_per_s": self.agent_steps_per_s.to_dict(),
        }


def compile_timed(jitted, *args, **static) -> tuple[Any, float]:
    """Lower and compile ``jitted`` for ``args``; returns (compiled, seconds)."""
    start = time.perf_counter()
    compiled = jitted.lower(*args, **static).compile()
    return compiled, time.perf_counter() - start


def time_calls(call, config: HarnessConfig) -> tuple[float, ...]:
    """Run ``call()`` warmup times untimed, then repeats times timed (blocking on the result)."""
    for _ in range(config.warmup):
        jax.block_until_ready(call())
    times = []
    for _ in range(config.repeats):
        start = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - start)
    return tuple(times)


def measure(jitted, args: tuple, config: HarnessConfig, static: dict | None = None) -> Timing:
    """Compile ``jitted`` for ``args`` (timed apart), then time repeated calls of the
    compiled executable on the same (device-resident) arguments."""
    compiled, compile_s = compile_timed(jitted, *args, **(static or {}))
    times = time_calls(lambda: compiled(*args), config)
    return Timing(compile_s=compile_s, times=times, compiled=compiled)


def throughput(work: Work, times, ci_method: str = "t") -> Throughput:
    """scenarios/s, steps/s (scenario-steps) and agent-steps/s from repeated call times."""
    return Throughput(
        scenarios_per_s=rates(work.scenarios, times, ci_method),
        steps_per_s=rates(work.scenarios * work.steps, times, ci_method),
        agent_steps_per_s=rates(work.scenarios * work.steps * work.agents, times, ci_method),
    )


def environment() -> dict:
    """Where a result was measured: device kind, platform, device/process counts, JAX version."""
    devices = jax.devices()
    return {
        "device_kind": devices[0].device_kind,
        "platform": devices[0].platform,
        "device_count": len(devices),
        "process_count": jax.process_count(),
        "jax_version": jax.__version__,
    }


class PhaseTimer:
    """Accumulates wall seconds per named phase: ``with timer.phase("load"): ...``."""

    def __init__(self):
        self.seconds: dict[str, float] = defaultdict(float)

    @contextmanager
    def phase(self, name: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def as_dict(self) -> dict[str, float]:
        return dict(self.seconds)
