"""The same scenarios on the accelerator and on the CPU, metric by metric.

    python benchmarks/cross_platform.py --scenarios 512 --families highway merge

For each family builds one batch (the scenarios ``drivesim bench engine`` times, 32 agents)
and simulates it with ``simulate``'s defaults on JAX's default device and on the CPU of the
same process, then, on the default device, once more with the engine's matrix products at
JAX's default precision (``drivesim.core.matmul.PRECISION``; TF32 operands on NVIDIA GPUs
since Ampere), the engine before 2026-11-28. Prints, per family and metric, the scenarios
whose value differs and the largest difference: "device vs cpu" and "default precision vs
full". On a machine without an accelerator both sides are the CPU.
"""

from __future__ import annotations

import argparse
import dataclasses

import jax
import numpy as np

from drivesim.bench.workloads import Workload, make_batch
from drivesim.core import matmul, switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import rollout_batch
from drivesim.core.types import SimConfig


def _metrics(batch, device, config: SimConfig) -> dict[str, np.ndarray]:
    """Every metric of ``batch`` simulated on ``device``, as host arrays by name."""
    placed = jax.device_put(batch, device)
    searches = switches.of_batch(placed, config)
    jax.clear_caches()  # inner jitted functions would keep their trace at the other precision
    run = jax.jit(lambda sc, p: rollout_batch(sc, p, config, searches=searches))
    out = jax.device_get(run(placed, jax.device_put(idm_policy(), device)))
    return {
        f.name: np.asarray(getattr(out, f.name))
        for f in dataclasses.fields(out)
        if getattr(out, f.name) is not None
    }


def compare(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> list[str]:
    """One line per metric that differs: scenarios that differ, largest |difference|."""
    lines = []
    for name, x in a.items():
        y = b[name]
        same = (x == y) | (np.isnan(x) & np.isnan(y)) if x.dtype.kind == "f" else x == y
        if same.all():
            continue
        rows = (~same).reshape(len(x), -1).any(axis=1) if same.ndim else np.array([True])
        diff = np.abs(x.astype(np.float64) - y.astype(np.float64))[~same]
        finite = diff[np.isfinite(diff)]
        largest = f"{finite.max():.4g}" if finite.size else "inf/nan"
        lines.append(f"    {name:28s} {int(rows.sum()):5d} of {len(x)} scenarios, max |diff| {largest}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=512)
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument(
        "--families", nargs="+", default=["highway", "merge", "intersection", "intersection_turns"]
    )
    args = parser.parse_args()
    device, cpu = jax.devices()[0], jax.devices("cpu")[0]
    config = SimConfig(num_steps=args.steps)
    print(f"device {device.platform} ({device.device_kind}), cpu {cpu.device_kind}")
    print(f"{args.scenarios} scenarios x 32 agents x {args.steps} steps per family")
    for family in args.families:
        batch = make_batch(Workload(args.scenarios, 32, args.steps, family))
        on_device = _metrics(batch, device, config)
        on_cpu = _metrics(batch, cpu, config)
        full = matmul.PRECISION
        matmul.PRECISION = jax.lax.Precision.DEFAULT
        try:
            default_precision = _metrics(batch, device, config)
        finally:
            matmul.PRECISION = full
        for title, a, b in (
            ("device vs cpu", on_device, on_cpu),
            ("default precision vs full", default_precision, on_device),
        ):
            lines = compare(a, b) or ["    every metric the same bit for bit"]
            print(f"{family}: {title}:", *lines, sep="\n")


if __name__ == "__main__":
    main()
