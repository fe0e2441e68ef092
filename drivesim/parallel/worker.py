"""A small multi-process campaign: each process runs its share of a fixed set of highway
scenarios through the Executor and writes its own results (no gather).

Run one process per rank (``python -m drivesim.parallel.worker --out DIR ...`` with the
DRIVESIM_COORDINATOR / DRIVESIM_NUM_PROCESSES / DRIVESIM_PROCESS_ID variables set), or let
:func:`launch` start them all on this machine (drivesim.parallel.launch: 127.0.0.1, a free
port, optional ``taskset`` pinning, a timeout, and every child killed if one fails). Used
by the multi-process tests and by benchmarks/executor.py.

Each rank writes ``DIR/rank-<id>.npz``: scenario_id and every metric for its own rows, plus
``DIR/rank-<id>.json``: the global aggregate (all-reduced on the devices) and timings.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
from dataclasses import dataclass, fields

from drivesim.parallel.launch import Child, free_port, run_group


@dataclass(frozen=True)
class CampaignSpec:
    """The fixed campaign: ``count`` highway scenarios with ``agents`` agents, ``steps`` steps."""

    count: int = 16
    agents: int = 8
    steps: int = 10
    backend: str = "sharding"
    chunk: int | None = None
    repeats: int = 1

    def argv(self) -> list[str]:
        out = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                out += [f"--{f.name}", str(value)]
        return out


def host_batch(positions: range, spec: CampaignSpec):
    """Host batch of the highway scenarios at ``positions`` (ids = positions), padded to
    ``spec.agents`` agents."""
    from drivesim.scenarios.batching import pad_and_stack
    from drivesim.scenarios.synthetic import FamilyConfig, highway

    family = FamilyConfig(num_agents=spec.agents, steps=spec.steps)
    return pad_and_stack([highway(i, family).scenario for i in positions], num_agents=spec.agents)


def run_rank(spec: CampaignSpec, out: pathlib.Path) -> None:
    """Join the job, run this process's share, write its results (see module docstring)."""
    from drivesim.parallel import distributed

    distributed.initialize()
    import jax
    import numpy as np

    from drivesim.core.policies import idm_policy
    from drivesim.core.types import METRIC_NAMES, SimConfig
    from drivesim.parallel.executor import Executor, ExecutorConfig

    positions = distributed.process_positions(spec.count)
    batch = host_batch(positions, spec)
    executor = Executor(
        ExecutorConfig(backend=spec.backend, chunk=spec.chunk), SimConfig(num_steps=spec.steps)
    )
    policy = idm_policy()
    times = []
    for _ in range(spec.repeats + 1):  # the first run compiles (not timed)
        start = time.perf_counter()
        result = executor.run(executor.put(batch), policy)
        metrics = executor.fetch(result)
        times.append(time.perf_counter() - start)
    aggregate = executor.aggregate(result)
    rank = jax.process_index()
    out.mkdir(parents=True, exist_ok=True)
    arrays = {name: getattr(metrics, name) for name in METRIC_NAMES}
    np.savez(out / f"rank-{rank}.npz", scenario_id=np.asarray(list(positions), np.int32), **arrays)
    summary = {
        "rank": rank,
        "processes": jax.process_count(),
        "devices": executor.num_devices,
        "rows": len(positions),
        "aggregate": aggregate,
        "times_s": times[1:] or times,
    }
    (out / f"rank-{rank}.json").write_text(json.dumps(summary))


@dataclass(frozen=True)
class LaunchConfig:
    """How :func:`launch` starts the ranks: process count, CPUs to pin each rank to
    (``taskset -c``; None = no pinning), CPU devices per process, timeout, and whether the
    ranks run FMA-free (drivesim.parallel.determinism: results bitwise equal to one device)."""

    processes: int = 2
    cpus: tuple[int, ...] | None = None
    devices_per_process: int = 1
    timeout_s: float = 180.0
    fma_free: bool = True


def _child_flags(cfg: LaunchConfig) -> str:
    from drivesim.parallel.cpu_devices import COUNT_FLAG
    from drivesim.parallel.determinism import with_flag

    flags = f"--{COUNT_FLAG}={cfg.devices_per_process}"
    return with_flag(flags) if cfg.fma_free else flags


def launch(spec: CampaignSpec, out: pathlib.Path, cfg: LaunchConfig = LaunchConfig()) -> list[dict]:
    """Start ``cfg.processes`` ranks of :func:`run_rank` on this machine, wait for them
    (killing all on a failure or timeout) and return each rank's summary."""
    port = free_port()
    children = []
    for rank in range(cfg.processes):
        env = dict(os.environ)
        env.update(
            DRIVESIM_COORDINATOR=f"127.0.0.1:{port}",
            DRIVESIM_NUM_PROCESSES=str(cfg.processes),
            DRIVESIM_PROCESS_ID=str(rank),
            JAX_PLATFORMS="cpu",
            XLA_FLAGS=_child_flags(cfg),
        )
        if cfg.processes == 1:
            env.pop("DRIVESIM_NUM_PROCESSES")
        cmd = [sys.executable, "-m", "drivesim.parallel.worker", "--out", str(out), *spec.argv()]
        cpu = None if cfg.cpus is None else cfg.cpus[rank % len(cfg.cpus)]
        children.append(Child(cmd=cmd, env=env, cpu=cpu))
    run_group(children, cfg.timeout_s, what="worker rank")
    return [json.loads((out / f"rank-{rank}.json").read_text()) for rank in range(cfg.processes)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=pathlib.Path, required=True)
    for f in fields(CampaignSpec):
        kind = str if f.name == "backend" else int
        parser.add_argument(f"--{f.name}", type=kind, default=f.default)
    args = parser.parse_args(argv)
    spec = CampaignSpec(**{f.name: getattr(args, f.name) for f in fields(CampaignSpec)})
    run_rank(spec, args.out)


if __name__ == "__main__":
    main()
