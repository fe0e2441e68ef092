"""Where a campaign's trained ego policies come from: the training record of each ``mlp:FILE``.

A policy file written by ``drivesim train`` carries its training config in its meta (family,
agents, reward weights, seed) and the environment steps it was trained for. A campaign stores
these records in its ledger ``meta`` (``policy_training``) at every start, so the dashboard says
which policy was trained on what without reading the file again.
"""

from __future__ import annotations

import json


def training_records(policy: str) -> list[dict]:
    """One record per file of an ``mlp:FILE[,FILE...]`` policy (empty for any other policy):
    {file, family, agents, episode_steps, env_steps, seed, reward} from the file's meta, or
    {file, error} when the file's meta cannot be read (the campaign itself reports that)."""
    if not policy.startswith("mlp:"):
        return []
    from drivesim.train.policy_io import load_policy_meta

    records: list[dict] = []
    for path in policy.split(":", 1)[1].split(","):
        try:
            meta = load_policy_meta(path)
        except Exception as exc:  # noqa: BLE001 - provenance is informative; the loader names the error
            records.append({"file": path, "error": str(exc)})
            continue
        config = _dict(meta.get("config"))
        env = _dict(config.get("env"))
        records.append(
            {
                "file": path,
                "family": env.get("family"),
                "agents": env.get("num_agents"),
                "episode_steps": env.get("episode_steps"),
                "env_steps": meta.get("env_steps"),
                "seed": config.get("seed"),
                "reward": env.get("reward"),
            }
        )
    return records


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}


def describe(record: dict) -> str:
    """One line of a training record, e.g. ``policy.npz: highway, 16 agents, 9,830,400 env
    steps, seed 0; reward progress_weight=0.3, collision_penalty=100, ...``."""
    name = str(record.get("file", "?")).rsplit("/", 1)[-1]
    if "error" in record:
        return f"{name}: training record unreadable ({record['error']})"
    if record.get("family") is None:
        return f"{name}: no training record"
    parts = [str(record["family"])]
    if isinstance(record.get("agents"), int):
        parts.append(f"{record['agents']} agents")
    if isinstance(record.get("env_steps"), int):
        parts.append(f"{record['env_steps']:,} env steps")
    if record.get("seed") is not None:
        parts.append(f"seed {record['seed']}")
    text = f"{name}: " + ", ".join(parts)
    reward = record.get("reward")
    if isinstance(reward, dict) and reward:
        text += "; reward " + ", ".join(
            f"{k}={v:g}" if isinstance(v, float | int) else f"{k}={v}" for k, v in reward.items()
        )
    return text


def meta_json(meta: dict[str, str], key: str, kind: type):
    """The JSON entry ``key`` of a ledger ``meta`` when it is a ``kind`` (list or dict), else an
    empty one (absent, unreadable or of another type)."""
    try:
        value = json.loads(meta.get(key) or "null")
    except json.JSONDecodeError:
        return kind()
    return value if isinstance(value, kind) else kind()


def describe_meta(meta: dict[str, str]) -> str:
    """The ``policy_training`` entry of a ledger ``meta`` as text ("" when absent or unreadable)."""
    records = meta_json(meta, "policy_training", list)
    return " | ".join(describe(r) for r in records if isinstance(r, dict))
