"""Engine throughput of synthetic family variants against each other in one run.

The benchmarks of the signalled and the pedestrian intersection (benchmarks/signals.py,
benchmarks/crosswalks.py) time several workloads the same way: host records of each
(family, FamilyConfig flags) stacked by ``pad_and_stack``, one compile and warm-up each,
then ``repeats`` rounds timing every workload once per round (interleaved, so a change of
the machine's load hits all of them), and rates relative to ``highway``.
"""

from __future__ import annotations

import time

import jax
import numpy as np


def family_batch(family: str, flags: dict, count: int, agents: int, steps: int):
    """Scenarios 0..count-1 of ``family`` with FamilyConfig ``flags``, stacked on the device."""
    from drivesim.scenarios import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, generate_many

    cfg = FamilyConfig(num_agents=agents, steps=steps, **flags)
    records = generate_many(family, np.arange(count), cfg)
    return jax.device_put(pad_and_stack([r.scenario for r in records], num_agents=agents))


def family_batches(workloads: dict, count: int, agents: int, steps: int) -> dict:
    """{name: :func:`family_batch`} of ``workloads`` {name: (family, FamilyConfig flags)}."""
    return {name: family_batch(f, flags, count, agents, steps) for name, (f, flags) in workloads.items()}


def interleaved_throughput(batches: dict, count: int, agents: int, steps: int, repeats: int):
    """Per workload name of ``batches`` (one must be "highway"): median agent-steps/s with
    min and max over ``repeats``, median scenarios/s and the ratio to highway; and each
    workload's metrics from its warm-up call. Returns (rates by name, metrics by name)."""
    from drivesim.core import SimConfig, default_policy_params, simulate

    config = SimConfig(num_steps=steps)
    policy = default_policy_params(config)
    metrics = {}
    for name, batch in batches.items():  # compile + warm-up
        metrics[name] = jax.device_get(jax.block_until_ready(simulate(batch, policy, config)))
    times: dict[str, list[float]] = {name: [] for name in batches}
    for _ in range(repeats):
        for name, batch in batches.items():
            start = time.perf_counter()
            jax.block_until_ready(simulate(batch, policy, config))
            times[name].append(time.perf_counter() - start)
    work = count * agents * steps
    result = {}
    for name, ts in times.items():
        rates = work / np.asarray(ts)
        result[name] = dict(
            median_agent_steps_per_s=float(np.median(rates)),
            min=float(rates.min()),
            max=float(rates.max()),
            scenarios_per_s=float(np.median(count / np.asarray(ts))),
        )
    base = result["highway"]["median_agent_steps_per_s"]
    for name in result:
        result[name]["vs_highway"] = result[name]["median_agent_steps_per_s"] / base
    return result, metrics
