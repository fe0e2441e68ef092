"""Campaign configuration: the ``CampaignConfig`` dataclass, its TOML file, policy specs.

A campaign directory holds ``campaign.toml`` (written first). Rerunning a campaign compares
the fields that decide *what* is computed (``IDENTITY_FIELDS``); fields that only decide
*how* (backend, devices, chunk, threads) may change between a run and its resume.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import tomllib
from dataclasses import dataclass, field
from typing import Any

CONFIG_NAME = "campaign.toml"

# Fields whose change would change the results: a resume must match them. The batch size and
# window are not among them: a resume keeps the windows already begun (drivesim.pipeline.plan).
IDENTITY_FIELDS = (
    "sources",
    "count",
    "policy",
    "sweep",
    "seed",
    "num_steps",
    "agents",
    "max_agents",
    "lane_changes",
    "occlusion",
    "position_update",
)


@dataclass(frozen=True)
class CampaignConfig:
    """Everything one ``drivesim run`` needs.

    sources: source specs (``synthetic:highway,merge``, ``commonroad:PATH``, ``store:PATH``);
        empty means the demo (drivesim.pipeline.defaults: synthetic:highway,merge,intersection
        plus ../shared/data CommonRoad files, 600 scenarios, the demo's IDM sweep).
    count: scenarios in the campaign (synthetic sources; file sources have their own length);
        None: the default (drivesim.pipeline.defaults.resolve: 1000, or the demo's).
    policy: a registered ego policy (``idm``, ``constant``, ...), ``mlp:FILE[,FILE...]``
        (one policy per checkpoint) or ``package.module:NAME`` (a user EgoPolicy);
        sweep: TOML/JSON file of IDM variants.
    backend, devices, chunk: executor settings (chunk: int, "auto" or None).
    batch_size: scenarios per host batch (one ledger batch, one Parquet shard), or "auto":
        about a second of device time per batch (drivesim.pipeline.batch_size).
    window_batches: batches planned together; the plan (bucketing by agent count) is a pure
        function of the positions of a window, so a resumed run rebuilds identical batches.
    num_steps: simulation steps; agents: fixed agent count for synthetic families (None:
        the family's own distribution); max_agents: upper end of the drawn agent count
        (None: the family's default).
    lane_changes: MOBIL lane changes of the IDM agents (SimConfig.lane_changes with the
        LaneChangeConfig defaults; the default neighbour window, since the leaders come
        from all pairs in that mode).
    occlusion: the ego's observation leaves out agents hidden behind others
        (SimConfig.occlusion; it changes only policies that observe: MLP and user policies).
    position_update: "euler" (the default) or "ballistic" (SimConfig.position_update).
    out: the campaign directory; None: runs/demo for the demo, else runs/run-<hash of the identity>.
    loader_threads: host loader threads; prefetch: bounded host queue depth (batches).
    retries: extra attempts for a batch whose compute raised.
    stall_s: the stall watchdog's limit [s] (at least; it grows to 10x the median gap between
        batches); no batch moving for longer fails the run with thread stacks in the campaign
        directory (rerun to resume). <= 0 disables the watchdog.
    cluster: None for the embedded single-machine run, or a Ray cluster (drivesim.pipeline.cluster):
        ``ray`` (``ray.init()``'s own lookup: RAY_ADDRESS, a local ``ray start`` cluster, else a new one),
        ``ray:auto`` (a cluster started with ``ray start``), ``ray:HOST:PORT`` or
        ``ray://HOST:PORT`` (Ray Client). workers: Ray workers (None: one per GPU, else one
        per node). Both only decide how the campaign runs, so a resume may change them.
    """

    sources: tuple[str, ...] = ()
    count: int | None = None
    policy: str = "idm"
    sweep: str | None = None
    backend: str = "sharding"
    devices: int | None = None
    chunk: int | str | None = None
    batch_size: int | str = "auto"
    window_batches: int = 8
    num_steps: int = 80
    agents: int | None = None
    max_agents: int | None = None
    lane_changes: bool = False
    occlusion: bool = False
    position_update: str = "euler"
    seed: int = 0
    out: str | None = None
    loader_threads: int = 2
    prefetch: int = 4
    retries: int = 1
    stall_s: float = 300.0
    cluster: str | None = None
    workers: int | None = None
    notes: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self):
        self._check_types()
        auto = self.batch_size == "auto"
        if not auto and not (isinstance(self.batch_size, int) and not isinstance(self.batch_size, bool)):
            raise ValueError(f"CampaignConfig.batch_size: a number or 'auto', got {self.batch_size!r}")
        negative = self.count is not None and self.count < 0
        if negative or (not auto and int(self.batch_size) < 1) or self.window_batches < 1:
            raise ValueError("CampaignConfig: count >= 0, batch_size >= 1 and window_batches >= 1 required")
        if self.loader_threads < 1 or self.prefetch < 1:
            raise ValueError("CampaignConfig: loader_threads and prefetch must be >= 1")
        if not self.stall_s >= 0:  # NaN too
            raise ValueError(
                f"CampaignConfig.stall_s: seconds >= 0 (0 disables the watchdog), got {self.stall_s!r}"
            )
        if self.position_update not in ("euler", "ballistic"):
            from drivesim.pipeline.validation import ConfigError

            raise ConfigError(
                f"CampaignConfig.position_update: expected euler or ballistic, got {self.position_update!r}"
            )
        from drivesim.pipeline.policy_names import split_policy

        try:
            split_policy(self.policy, allow_import=False)  # a module is imported only where it runs
        except ValueError as err:
            from drivesim.pipeline.validation import ConfigError  # a usage error (exit status 2)

            raise ConfigError(f"CampaignConfig.policy: {err}") from None

    def _check_types(self) -> None:
        """ConfigError naming the field whose value has the wrong type (an edited campaign.toml)."""
        kinds = {
            int: ("count", "window_batches", "num_steps", "seed", "loader_threads", "prefetch", "retries"),
            bool: ("lane_changes", "occlusion"),
            str: ("policy", "backend", "out", "position_update"),
        }
        for kind, names in kinds.items():
            for name in names:
                value = getattr(self, name)
                if value is None and name in ("count", "out"):  # the default (pipeline.defaults)
                    continue
                if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                    from drivesim.pipeline.validation import ConfigError

                    wanted = {int: "an integer", bool: "true or false", str: "a string"}[kind]
                    raise ConfigError(f"CampaignConfig.{name}: expected {wanted}, got {value!r}")
        if not isinstance(self.sources, tuple) or not all(isinstance(x, str) for x in self.sources):
            from drivesim.pipeline.validation import ConfigError

            raise ConfigError(f"CampaignConfig.sources: expected source specs, got {self.sources!r}")

    @property
    def directory(self) -> pathlib.Path:
        """``out`` as a path; ValueError while unset (drivesim.pipeline.defaults.resolve sets it)."""
        if self.out is None:
            raise ValueError(
                "CampaignConfig.out unset: resolve the config first (drivesim.pipeline.defaults)"
            )
        return pathlib.Path(self.out)

    def identity(self) -> dict:
        """The fields a resume must match (JSON-comparable; max_agents only when set and
        lane_changes and occlusion only when on and position_update only when not "euler",
        so campaigns written before they existed keep their identity)."""
        out = {k: _plain(getattr(self, k)) for k in IDENTITY_FIELDS}
        if out["max_agents"] is None:
            del out["max_agents"]
        for flag in ("lane_changes", "occlusion"):
            if not out[flag]:
                del out[flag]
        if out["position_update"] == "euler":
            del out["position_update"]
        return out


def sim_config(config: CampaignConfig, policy):
    """The SimConfig a campaign simulates with, for the ego ``policy`` (an EgoPolicy)."""
    from drivesim.core.policies import IDM
    from drivesim.core.types import LaneChangeConfig, SimConfig

    base = SimConfig(
        num_steps=config.num_steps,
        policy=None if policy == IDM else policy,  # None is IDM: one program for both
        occlusion=config.occlusion,
        position_update=config.position_update,
    )
    if config.lane_changes:
        return dataclasses.replace(base, lane_changes=LaneChangeConfig())
    return base


def _plain(value):
    return list(value) if isinstance(value, tuple) else value


def to_dict(config: CampaignConfig) -> dict:
    """TOML-ready dict (None values dropped, tuples as lists)."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if value is not None:
            out[f.name] = _plain(value)
    return out


def from_dict(data: dict) -> CampaignConfig:
    """Inverse of :func:`to_dict`; unknown keys are an error naming the key."""
    names = {f.name for f in dataclasses.fields(CampaignConfig)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ValueError(f"{CONFIG_NAME}: unknown keys {unknown}")
    values = dict(data)
    for key in ("sources", "notes"):
        if key in values:
            values[key] = tuple(values[key])
    return CampaignConfig(**values)


def write_config(config: CampaignConfig, directory: pathlib.Path) -> pathlib.Path:
    """Write ``campaign.toml`` atomically into ``directory``."""
    import tomli_w

    path = directory / CONFIG_NAME
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text(tomli_w.dumps(to_dict(config)))
    tmp.replace(path)
    return path


def read_config(directory: pathlib.Path) -> CampaignConfig:
    """Read ``DIR/campaign.toml``."""
    path = pathlib.Path(directory) / CONFIG_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no campaign config (is {directory} a campaign directory?)")
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
        if "sources" not in data:  # every written config names them; defaults would be the demo
            raise ValueError("no sources: the file is empty or cut short")
        return from_dict(data)
    except (tomllib.TOMLDecodeError, TypeError, ValueError, RecursionError) as exc:
        from drivesim.pipeline.validation import ConfigError

        raise ConfigError(f"{path}: not a valid campaign config ({exc})") from None


def check_same_campaign(stored: CampaignConfig, new: CampaignConfig, directory) -> None:
    """Raise ConfigError (a usage error: exit status 2) naming the differing fields if ``new``
    is not a resume of ``stored``."""
    from drivesim.pipeline.validation import ConfigError

    a, b = stored.identity(), new.identity()
    diff = [k for k in IDENTITY_FIELDS if a.get(k) != b.get(k)]
    grown = len(a["sources"]) - len(b["sources"])
    if diff == ["sources"] and grown > 0 and a["sources"][: len(b["sources"])] == b["sources"]:
        raise ConfigError(
            f"{directory} holds this campaign grown by {grown} more sources (catalogue refinement rounds); "
            f"resume it with drivesim run --resume {directory} or drivesim refine {directory}"
        )
    if diff:
        detail = ", ".join(f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in diff)
        raise ConfigError(
            f"{directory} holds a different campaign ({detail}); use another --out, or --resume {directory}"
        )


@dataclass(frozen=True)
class PolicySpec:
    """Ego policies of a campaign: the policy (SimConfig.policy, an EgoPolicy), P parameter
    sets and their names."""

    policy: Any
    params: tuple
    names: tuple[str, ...]

    @property
    def is_sweep(self) -> bool:
        return len(self.params) > 1


def _describe_idm(values: dict) -> str:
    inner = ",".join(f"{k}={v:g}" for k, v in values.items())
    return f"idm[{inner}]" if inner else "idm"


def read_sweep(path: str) -> list[dict]:
    """IDM variants from a TOML (``[[policy]] T=1.2 v0=30``) or JSON (list or {"policy": [...]}) file;
    each checked by drivesim.pipeline.validation.check_idm_variant (finite, physical, numbers)."""
    from drivesim.pipeline.validation import MAX_SWEEP_VARIANTS, ConfigError, check_idm_variant

    p = pathlib.Path(path)
    if not p.is_file():
        raise ConfigError(f"sweep file {p} does not exist")
    try:
        if p.suffix == ".json":
            data = json.loads(p.read_text(), object_pairs_hook=_unique_keys)
        else:
            with p.open("rb") as fh:
                data = tomllib.load(fh)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:  # JSON/TOMLDecodeError: ValueErrors
        kind = "JSON" if p.suffix == ".json" else "TOML"
        raise ConfigError(f"sweep file {p}: not valid {kind} ({exc})") from None
    variants = data.get("policy", []) if isinstance(data, dict) else data
    if not variants or not isinstance(variants, list):
        raise ConfigError(f"{p}: no policies (expected [[policy]] tables or a JSON list)")
    if len(variants) > MAX_SWEEP_VARIANTS:
        raise ConfigError(f"{p}: {len(variants)} policies, more than the {MAX_SWEEP_VARIANTS} allowed")
    return [check_idm_variant(str(p), index, variant) for index, variant in enumerate(variants)]


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object that names no key twice (JSON itself keeps the last silently)."""
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} given twice in one object")
        out[key] = value
    return out


def policy_spec(config: CampaignConfig, allow_import: bool = True) -> PolicySpec:
    """Resolve ``config.policy`` / ``config.sweep`` into parameters for the executor:
    a known policy's default parameters, one set per ``NAME:ARG`` (read by the policy's
    reader, drivesim.pipeline.policy_names), or the IDM variants of the sweep file. A
    ``package.module:NAME`` policy is imported only where ``allow_import`` (readers of a
    campaign's files pass False: they are data; the refusal is a ConfigError naming the
    policy and the flag that allows it)."""
    from drivesim.core import policies
    from drivesim.pipeline.policy_names import is_user_code, reader_of, split_policy

    if not allow_import and not config.sweep and is_user_code(config.policy):
        from drivesim.pipeline.validation import ConfigError

        raise ConfigError(
            f"{config.out}: policy {config.policy!r} names code (a module to import); a campaign's "
            "files are data and are not run: pass --import-policy to import it"
        )

    if config.sweep:
        variants = read_sweep(config.sweep)
        params = tuple(policies.idm_policy(**v) for v in variants)
        return PolicySpec(policies.IDM, params, tuple(_describe_idm(v) for v in variants))
    policy, args = split_policy(config.policy)
    assert policy is not None  # imported: allow_import holds here
    sim = sim_config(config, policy)
    if not args:
        return PolicySpec(policy, (policy.init(sim, None),), (config.policy,))
    load = reader_of(policy.name)
    assert load is not None  # split_policy takes arguments only for a policy with a reader
    names = tuple(f"{policy.name}:{a}" for a in args)
    return PolicySpec(policy, tuple(load(a, sim) for a in args), names)
