"""Occlusion's cost: an observing ego policy (the MLP) on the highway with and without
``SimConfig.occlusion`` (sight lines tested in every observation).

    .venv/bin/python benchmarks/occlusion.py             # 512 highway scenarios of 32 agents, 5 rounds
    .venv/bin/python benchmarks/occlusion.py --quick     # 64 scenarios, 1 round (smoke test)

Each round times one ``simulate`` call of each variant, the order alternating between rounds;
the first call of each (compile included) is reported apart. Prints a JSON line per variant
(median and range of wall and process CPU seconds over the rounds) and the ratio of the
medians, plus how many of the ego's observed neighbour slots occlusion emptied at the start.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def _timed(run) -> tuple[float, float]:
    """(wall, process CPU) seconds of ``run()`` with its result fetched."""
    import jax

    wall, cpu = time.perf_counter(), time.process_time()
    jax.block_until_ready(run())
    return time.perf_counter() - wall, time.process_time() - cpu


def hidden_slots(host, config) -> tuple[int, int]:
    """(present slots without occlusion, present slots with it) over the batch's initial
    observations."""
    import dataclasses

    import jax
    import numpy as np

    from drivesim.core.observation import neighbour_present
    from drivesim.core.rollout import observation_of, reset

    def present(occlusion: bool):
        cfg = dataclasses.replace(config, occlusion=occlusion)
        obs = jax.jit(jax.vmap(lambda sc: observation_of(reset(sc, cfg), cfg)))(host)
        return int(np.asarray(neighbour_present(obs)).sum())

    return present(False), present(True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 scenarios, 1 round")
    parser.add_argument("--scenarios", type=int, default=512)
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    scenarios, rounds = (64, 1) if args.quick else (args.scenarios, args.rounds)
    import jax

    from drivesim.bench.workloads import Workload, make_batch
    from drivesim.core.policies import MLP, default_policy_params
    from drivesim.core.rollout import simulate
    from drivesim.core.types import SimConfig

    host = make_batch(Workload(scenarios=scenarios, agents=args.agents, steps=80))
    batch = jax.device_put(host)
    configs = {
        name: SimConfig(num_steps=80, policy=MLP, occlusion=name == "occlusion")
        for name in ("plain", "occlusion")
    }
    params = default_policy_params(configs["plain"])
    runs = {name: (lambda c=c: simulate(batch, params, c)) for name, c in configs.items()}
    first = {name: _timed(run)[0] for name, run in runs.items()}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for r in range(rounds):
        for name in list(runs)[:: 1 if r % 2 == 0 else -1]:
            times[name].append(_timed(runs[name]))
    medians = {}
    for name, samples in times.items():
        wall, cpu = [s[0] for s in samples], [s[1] for s in samples]
        medians[name] = statistics.median(wall)
        print(
            json.dumps(
                dict(
                    variant=name,
                    scenarios=scenarios,
                    agents=args.agents,
                    first_call_s=round(first[name], 2),
                    wall_median_s=round(medians[name], 3),
                    wall_range_s=[round(min(wall), 3), round(max(wall), 3)],
                    cpu_median_s=round(statistics.median(cpu), 3),
                )
            )
        )
    seen, kept = hidden_slots(batch, configs["plain"])
    print(json.dumps(dict(ratio_plain_over_occlusion=round(medians["plain"] / medians["occlusion"], 3))))
    print(json.dumps(dict(initial_slots_present=seen, initial_slots_present_with_occlusion=kept)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
