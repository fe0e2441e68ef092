"""The scenarios an environment samples from: read once from a campaign ``--source`` spec
on the host, kept on the devices with their initial states and observations.

Synthetic specs are generated in one batched call per family (ids ``first_id ..``); every
other kind (``catalogue:``, ``store:``, ``commonroad:``, ...) is opened through the same
registry a campaign uses and read position by position, each scenario validated.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import jax
import numpy as np

from drivesim.core import search_choice, switches
from drivesim.core.rollout import SimState, reset
from drivesim.core.types import Array, Scenario, SimConfig, pytree_dataclass, replace


@dataclass(frozen=True)
class PoolSpec:
    """Which scenarios: ``specs`` (campaign source specs), at most ``size`` of them (synthetic:
    exactly ``size``, ids ``first_id`` .. ``first_id + size - 1``), ``agents`` agent slots
    (synthetic: the agent count; recorded: padded to at least this), campaign ``seed``."""

    specs: tuple[str, ...]
    size: int = 1024
    agents: int = 16
    seed: int = 0
    first_id: int = 0


@pytree_dataclass
class ScenarioPool:
    """Scenarios on the devices; leading axis M = pool size.

    scenarios: Scenario (M, ...); states: their initial SimState (M, ...);
    obs: (M, observation_size) float32 initial observations; searches: static, the pool's
    search switches fixed as Python bools (core.switches; None: every search, every step).
    """

    scenarios: Scenario
    states: SimState
    obs: Array
    searches: Any = field(default=None, metadata={"static": True})


def host_scenarios(spec: PoolSpec, steps: int) -> Scenario:
    """The pool's scenarios stacked as NumPy (M, ...), ``steps`` steps each at most."""
    if spec.size < 1 or spec.agents < 2:
        raise ValueError(
            f"drivesim.env: pool size must be >= 1 and agents >= 2 (got {spec.size}, {spec.agents})"
        )
    if all(s.startswith("synthetic:") for s in spec.specs):
        records = _synthetic(spec, steps)
    else:
        records = _recorded(spec, steps)
    from drivesim.scenarios.batching import pad_and_stack

    scenarios = [r.scenario for r in records]
    agents = max(spec.agents, max(s.agents.x.shape[0] for s in scenarios))
    return pad_and_stack(scenarios, agents)


def _synthetic(spec: PoolSpec, steps: int) -> list:
    from drivesim.pipeline.sources import family_config
    from drivesim.scenarios.registry import check_synthetic, synthetic_options
    from drivesim.scenarios.synthetic import generate_many

    names: list[str] = []
    options: dict[str, bool] = {}
    for s in spec.specs:
        arg = s.split(":", 1)[1]
        check_synthetic(arg)
        more, flags = synthetic_options(arg)
        names += more
        options.update(flags)
    config = replace(family_config(spec.agents, steps, spec.seed), **options)
    ids = spec.first_id + np.arange(spec.size)
    records: list = [None] * spec.size
    for k, name in enumerate(names):  # position p is family p % len(names), as a campaign's
        positions = range(k, spec.size, len(names))
        for p, record in zip(
            positions, generate_many(name, [int(ids[p]) for p in positions], config), strict=True
        ):
            records[p] = record
    return records


def _recorded(spec: PoolSpec, steps: int) -> list:
    from drivesim.pipeline.sources import open_source

    source = open_source(spec.specs, spec.size, spec.seed, spec.agents, steps)
    return [source.load(p) for p in range(min(len(source), spec.size))]


def build_pool(spec: PoolSpec, config: SimConfig, observe) -> tuple[ScenarioPool, SimConfig]:
    """Read the scenarios, resolve the engine's searches for them (the platform's choices,
    core.search_choice, and the direct searches the pool needs as fixed switches,
    core.switches, kept in ``pool.searches``) and compute their initial states and
    ``observe(sim, scenario, config)`` observations on the device. Returns (pool, resolved
    config)."""
    scenarios = jax.device_put(host_scenarios(spec, config.num_steps))
    config = search_choice.of_scenarios(config, scenarios)
    searches = switches.of_batch(scenarios, config)
    build = jax.jit(lambda batch: initial_pool(batch, config, searches, observe))  # observe: any object
    return build(scenarios), config


def initial_pool(scenarios: Scenario, config: SimConfig, searches, observe) -> ScenarioPool:
    """The ScenarioPool of ``scenarios`` (M, ...): each one's reset state and its
    ``observe(sim, scenario, config)`` observation, with the fixed ``searches`` its steps
    run (trace it in a jit)."""

    def one(scenario):
        sim = reset(scenario, config)
        return sim, observe(sim, scenario, config)

    states, obs = jax.vmap(one)(scenarios)
    return ScenarioPool(scenarios=scenarios, states=states, obs=obs, searches=searches)


def pick(pool: ScenarioPool, index: Array) -> tuple[SimState, Scenario, Array]:
    """The initial state, scenario and observation of pool entry ``index`` (an int32 array
    of any shape: the results gain its axes)."""
    take = lambda leaf: leaf[index]  # noqa: E731
    return (
        jax.tree_util.tree_map(take, pool.states),
        jax.tree_util.tree_map(take, pool.scenarios),
        pool.obs[index],
    )
