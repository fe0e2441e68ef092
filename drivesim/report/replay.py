"""Re-simulate scenarios of a campaign for the viewer: find a scenario by its id in the
campaign's own sources (``campaign.toml``), rerun it under one of the campaign's policies
with the full trajectory, and render it (:mod:`drivesim.report.viewer`).

Scenario ids are those of the ``results`` view: synthetic ids are positions, CommonRoad ids
``crc32(benchmark id) & 0x7fffffff``, store ids the store's ``scenario_id`` column.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import jax
import numpy as np

if TYPE_CHECKING:
    from drivesim.scenarios.record import ScenarioRecord

VIEWERS_DIR = "viewers"


@dataclass
class Replay:
    """One re-simulated scenario: its record, the policy (id, name), the campaign's result row
    (None when absent), the replayed metrics {name: value} and the trajectory (S, N)."""

    scenario_id: int
    record: ScenarioRecord
    scenario: object  # the padded single Scenario that was simulated
    policy_id: int
    policy: str
    row: dict | None
    metrics: dict
    trajectory: object


def result_rows(directory, scenario_id: int) -> list[dict]:
    """The ``results`` rows of one scenario (every policy), as dicts."""
    from drivesim.pipeline import results

    table = results.query(directory, f"SELECT * FROM results WHERE scenario_id = {int(scenario_id)}")
    return table.to_pylist()


def _parts(source) -> list:
    return list(getattr(source, "sources", [source]))


def locate(directory, scenario_id: int, rows: list[dict] | None = None):
    """The ScenarioRecord with ``scenario_id`` in the campaign's sources; ValueError if none."""
    from drivesim.pipeline.config import read_config
    from drivesim.pipeline.defaults import resolve
    from drivesim.pipeline.sources import campaign_source
    from drivesim.scenarios import sources as real

    config = resolve(read_config(directory))
    source = campaign_source(config)
    rows = result_rows(directory, scenario_id) if rows is None else rows
    origin = rows[0]["source"] if rows else None
    for part in _parts(source):
        if isinstance(part, real.SyntheticSource):
            if origin in (None, "synthetic") and 0 <= scenario_id - part.first_id < len(part):
                return part.load(scenario_id - part.first_id)
        elif isinstance(part, real.CommonRoadSource):
            for k, path in enumerate(part.paths):
                if str(path) == origin or (origin is None and _crc(path.stem) == scenario_id):
                    record = part.load(k)
                    if record.scenario_id == scenario_id or str(path) == origin:
                        return record
        else:
            record = _find_in(part, scenario_id, rows[0].get("name") if rows else None)
            if record is not None:
                return record
    raise ValueError(f"{directory}: scenario id {scenario_id} is not in the campaign's sources")


def _find_in(part, scenario_id: int, name: str | None):
    """The record of ``part`` with ``scenario_id`` (and ``name``, when the results give one:
    several sources of one campaign may number their scenarios alike), or None. Position
    ``scenario_id`` (less the source's ``first_id``, if any: a catalogue refinement round) is
    tried first (catalogue and most user sources use the position as the id; a source with
    ``ids_are_positions`` is not searched further), then every position."""
    matches = lambda r: r.scenario_id == scenario_id and name in (None, r.name)  # noqa: E731
    position = scenario_id - getattr(part, "first_id", 0)
    if 0 <= position < len(part):
        record = part.load(position)
        if matches(record):
            return record
    if getattr(part, "ids_are_positions", False):
        return None
    at = getattr(part, "scenario_id_at", None)  # a store: its id column, no row decoded
    for k in range(len(part)):
        if callable(at) and at(k) != scenario_id:
            continue
        try:
            record = part.load(k)
        except ValueError:  # a bad row (a failed result) is not the one asked for
            continue
        if matches(record):
            return record
    return None


def _crc(name: str) -> int:
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def pick_policy(rows: list[dict], names: tuple[str, ...], policy: str | None) -> int:
    """Policy id from ``policy`` (an id or a name); default: the row with a collision, else
    the lowest TTC, else policy 0."""
    if policy is not None:
        if policy.isdigit() and int(policy) < len(names):
            return int(policy)
        if policy in names:
            return names.index(policy)
        raise ValueError(
            f"--policy {policy!r}: the campaign's policies are {list(names)} (or 0..{len(names) - 1})"
        )
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        return 0

    def badness(r):
        ttc = r.get("min_ttc_s")
        ttc = ttc if ttc is not None and math.isfinite(ttc) else math.inf
        return (not r.get("ego_collided"), ttc)

    return int(min(ok, key=badness)["policy_id"])


def replay(directory, scenario_id: int, policy: str | None = None, import_policy: bool = False) -> Replay:
    """Re-simulate one scenario of a campaign with its trajectory (see :func:`replay_many`)."""
    return replay_many(directory, [(scenario_id, policy)], import_policy)[0]


def replay_many(
    directory, wanted: Sequence[tuple[int, str | None]], import_policy: bool = False
) -> list[Replay]:
    """Re-simulate several scenarios: those with the same log layout are padded to one shape
    and run as one batch per policy (one compilation for every policy of a sweep).
    import_policy: import a ``package.module:NAME`` policy named in the campaign's config
    (off: a ConfigError says so; a campaign's files are data)."""
    from drivesim.pipeline.config import policy_spec, read_config, sim_config

    config = read_config(directory)
    spec = policy_spec(config, allow_import=import_policy)
    sim = sim_config(config, spec.policy)
    jobs = []
    for scenario_id, policy in wanted:
        rows = result_rows(directory, scenario_id)
        pid = pick_policy(rows, spec.names, policy)
        row = next((r for r in rows if r["policy_id"] == pid), rows[0] if rows else None)
        jobs.append((int(scenario_id), pid, row, locate(directory, int(scenario_id), rows)))
    groups: dict[bool, list[int]] = {}
    for k, job in enumerate(jobs):
        groups.setdefault(job[3].scenario.log is not None, []).append(k)
    out: list[Replay | None] = [None] * len(jobs)
    for members in groups.values():
        batch = _stack([jobs[k][3] for k in members])
        for pid in sorted({jobs[k][1] for k in members}):
            metrics, traj = _simulate(batch, spec.params[pid], sim)
            for b, k in enumerate(members):
                sid, job_pid, row, record = jobs[k]
                if job_pid != pid:
                    continue
                take = lambda tree, b=b: jax.tree_util.tree_map(lambda a: np.asarray(a)[b], tree)  # noqa: E731
                values = {n: np.asarray(v)[b].item() for n, v in vars(metrics).items()}
                out[k] = Replay(sid, record, take(batch), pid, spec.names[pid], row, values, take(traj))
    done = [r for r in out if r is not None]
    assert len(done) == len(out)  # every job's policy is simulated in its group
    return done


def _simulate(batch, policy, sim):
    """(metrics, trajectory) of a stacked host batch under one policy."""
    from drivesim.core.trajectory import simulate_trajectory

    metrics, traj = simulate_trajectory(batch, policy, sim)
    return jax.device_get(metrics), jax.device_get(traj)


def _stack(records):
    """Records padded to their common bucket (the largest class of each dimension) and stacked."""
    from drivesim.scenarios.batching import BucketKey, bucket_key, stack_bucket

    keys = [bucket_key(r.scenario) for r in records]
    logs = [k.log_steps for k in keys if k.log_steps is not None]
    key = BucketKey(
        max(k.agents for k in keys),
        max(k.lanes for k in keys),
        max(k.points for k in keys),
        max(logs) if logs else None,
    )
    return stack_bucket(records, key)


def render_replay(rep: Replay, dt: float = 0.1) -> str:
    """The viewer page of a replay; the campaign's row (when present) decides the collision
    step and the agent hit (``collided_with``, where the results have it)."""
    from drivesim.report.viewer import render

    row = rep.row or {}
    step = rep.metrics["collision_step"]
    hit = row.get("collided_with")
    info = {
        "scenario": rep.scenario_id,
        "name": rep.record.name,
        "family": rep.record.family,
        "policy": rep.policy,
        "collided": bool(rep.metrics["ego_collided"]),
        "collision step": step if step >= 0 else None,
        "hit road user": _kind_name(rep.metrics.get("collided_with_kind", -1)),
        "min TTC [s]": _num(rep.metrics["min_ttc_s"]),
        "progress [m]": _num(rep.metrics["progress_m"]),
        "off-road": bool(rep.metrics["offroad"]),
        "red light run": bool(rep.metrics["red_light_violation"]),
    }
    if (
        row
        and row.get("status") == "ok"
        and bool(row.get("ego_collided")) != bool(rep.metrics["ego_collided"])
    ):
        info["note"] = "the replay's collision differs from the campaign's result row"
    title = f"{rep.record.name} · scenario {rep.scenario_id} · {rep.policy}"
    return render(
        rep.scenario,
        rep.trajectory,
        title=title,
        dt=dt,
        collision_step=step,
        hit=None if hit is None else int(hit),
        info=info,
    )


def _kind_name(kind) -> str | None:
    """Name of a road-user type (AgentState.kind); None for -1 (no collision)."""
    from drivesim.core.types import KIND_NAMES

    return KIND_NAMES[int(kind)] if 0 <= int(kind) < len(KIND_NAMES) else None


def _num(value) -> float | None:
    return round(float(value), 2) if value is not None and math.isfinite(float(value)) else None


def viewer_name(scenario_id: int, policy_id: int) -> str:
    """File name of a scenario's viewer page inside ``DIR/viewers``."""
    return f"scenario-{int(scenario_id)}-p{int(policy_id)}.html"


def write_viewers(
    directory, wanted: Sequence[tuple[int, str | None]], import_policy: bool = False
) -> list[Path]:
    """Write ``DIR/viewers/scenario-ID-pP.html`` for each wanted (scenario id, policy);
    import_policy as for :func:`replay_many`."""
    from drivesim.report.viewer import write_page

    paths = []
    for rep in replay_many(directory, wanted, import_policy):
        out = Path(directory) / VIEWERS_DIR / viewer_name(rep.scenario_id, rep.policy_id)
        paths.append(write_page(render_replay(rep), out))
    return paths
