"""Fusions and conditionals per step, read from the compiled program's time loop.

On an accelerator a step costs the latency of its kernels more than their work: each fusion
is a kernel launch and each conditional reads its predicate back before it branches. Both
counts are exact and the same on every run, so they are measured (and tested) where a
timing would drift.

Counted in the step loop of the fast pass (:func:`drivesim.core.rollout.fast_pass`,
with the batch's search switches fixed as ``simulate`` fixes them), compiled alone for the
batch's shapes: the exact fallback, compiled into the same program by ``simulate``, runs
only for the scenarios the fast pass flags and is left out. A conditional counts once and
its branch with the most fusions adds its fusions (one branch runs per step).
"""

from __future__ import annotations

import re
from typing import NamedTuple

import jax

from drivesim.bench.step_work import frame_names
from drivesim.core import switches
from drivesim.core.rollout import fast_pass
from drivesim.core.search_choice import of_scenarios, resolved

_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$")


class StepCounts(NamedTuple):
    """Per step of the time loop: fusions (kernels) and conditionals."""

    fusions: int
    conditionals: int


def computations(hlo_text: str) -> dict[str, list[str]]:
    """The instruction lines of each computation of a compiled module's text, by name."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in hlo_text.split("\n"):
        header = _COMPUTATION.match(line) if not line.startswith(" ") else None
        if header:
            current = found.setdefault(header.group(1), [])
        elif line.startswith("}"):
            current = None
        elif current is not None and " = " in line:
            current.append(line)
    return found


def _branches(line: str) -> list[str]:
    names = []
    for key in ("branch_computations", "true_computation", "false_computation"):
        match = re.search(key + r"=\{([^}]*)\}", line) or re.search(key + r"=%?([\w.\-]+)", line)
        if match:
            names += [n.strip().lstrip("%") for n in match.group(1).split(",") if n.strip()]
    return names


def _count(name: str, comps: dict[str, list[str]]) -> StepCounts:
    fusions = conditionals = 0
    for line in comps.get(name, []):
        if " fusion(" in line:
            fusions += 1
        elif " conditional(" in line:
            inner = [_count(b, comps) for b in _branches(line)]
            conditionals += 1 + max((c.conditionals for c in inner), default=0)
            fusions += max((c.fusions for c in inner), default=0)
        elif " call(" in line:  # a called computation runs inline, every step
            called = re.search(r"to_apply=%?([\w.\-]+)", line)
            if called:
                inner_counts = _count(called.group(1), comps)
                fusions += inner_counts.fusions
                conditionals += inner_counts.conditionals
    return StepCounts(fusions, conditionals)


def step_counts(hlo_text: str, loop_functions: tuple[str, ...] = ("rollout", "rollouts")) -> StepCounts:
    """StepCounts of the time loop in a compiled module's text (``compiled.as_text()``):
    the body of the ``while`` whose source frame is one of ``loop_functions`` (the scans of
    core.rollout.rollout and core.rollout.rollouts); the largest such body if there are several."""
    comps = computations(hlo_text)
    frames = _frame_functions(hlo_text)
    best = StepCounts(0, 0)
    for lines in comps.values():
        for line in lines:
            if " while(" not in line:
                continue
            frame = re.search(r"stack_frame_id=(\d+)", line)
            body = re.search(r"body=%?([\w.\-]+)", line)
            function = frames.get(int(frame.group(1)), "") if frame else ""
            if body and function.rsplit(".", 1)[-1] in loop_functions:
                counts = _count(body.group(1), comps)
                best = max(best, counts)
    return best


def _frame_functions(hlo_text: str) -> dict[int, str]:
    """stack_frame_id -> the function name of its innermost frame (the module's tables)."""
    return {frame: name.split(":", 1)[-1] for frame, name in frame_names(hlo_text.split("\n")).items()}


def fast_pass_counts(scenarios, policy, config) -> StepCounts:
    """StepCounts of the fast pass of ``simulate`` for a device batch ``scenarios`` (leading
    axis B >= 2) under ``policy`` and SimConfig ``config`` (compiles it once)."""
    searches = switches.of_batch(scenarios, config)
    config = of_scenarios(config, scenarios)
    text = jax.jit(lambda b, p: fast_pass(b, p, config, searches=searches)).lower(scenarios, policy)
    return step_counts(text.compile().as_text() or "")


def accelerator_counts(scenarios, policy, config, platform: str = "gpu") -> StepCounts:
    """StepCounts of the fast pass an accelerator builds for this batch: ``platform``'s
    searches (core.search_choice: all pairs up to 32 agent slots) and stores without the
    CPU's conditionals (core.materialize.stores_by_branch), compiled here by XLA:CPU. The
    conditionals are the accelerator program's own; its fusions are XLA:CPU's grouping of
    that program, a proxy where no accelerator is lent (XLA:GPU fuses by its own rules)."""
    platform_config = resolved(config, scenarios.num_agents, platform, scenarios.num_road_segments)
    searches = (
        switches.of_batch(scenarios, config) if platform_config.search.neighbours != "all_pairs" else None
    )
    accelerator = platform_config.with_search(branch_stores=False)  # no store conditionals
    program = jax.jit(lambda b, p: fast_pass(b, p, accelerator, searches=searches))
    return step_counts(program.lower(scenarios, policy).compile().as_text() or "")


def main(families=("highway", "intersection_turns")) -> None:
    """Print both counts of 8 scenarios x 32 agents of each family."""
    from drivesim.bench.workloads import Workload, make_batch, sim_config
    from drivesim.core.policies import idm_policy

    for family in families:
        wl = Workload(scenarios=8, agents=32, family=family)
        batch, policy, config = jax.device_put(make_batch(wl)), idm_policy(), sim_config(wl)
        cpu, accelerator = fast_pass_counts(batch, policy, config), accelerator_counts(batch, policy, config)
        print(
            f"{family}: CPU {cpu.fusions} fusions, {cpu.conditionals} conditionals; "
            f"accelerator program {accelerator.fusions} fusions, {accelerator.conditionals} conditionals"
        )


if __name__ == "__main__":
    main()
