"""The one registry of scenario source kinds and the one parser of source specs.

A source spec is ``KIND:ARG`` (``synthetic:highway,merge``, ``commonroad:PATH[,PATH...]``,
``commonroad:replay:PATH``, ``store:PATH``). Each kind is registered once with an *opener*
``opener(arg, context) -> ScenarioSource``; the CLI, the campaign runner, config validation
and the input fingerprints all go through :func:`parse_spec` and the registered kinds, so a
user kind works everywhere a built-in one does::

    register_source("ring", lambda arg, ctx: MySource(arg, ctx.count, ctx.seed))
    run_campaign(CampaignConfig(sources=("ring:radius=40",), ...))

Registration is per process: a kind registered by an imported module is known to that
process only.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from drivesim.scenarios.families.common import FamilyConfig
    from drivesim.scenarios.sources import ScenarioSource

__all__ = [
    "SourceContext",
    "SourceKind",
    "SourceSpec",
    "SourceSpecError",
    "check_spec",
    "open_spec",
    "open_specs",
    "parse_spec",
    "register_source",
    "registered_sources",
    "source_inputs",
]

_KIND_NAME = re.compile(r"[a-z][a-z0-9_]*\Z")


class SourceSpecError(ValueError):
    """A spec that does not parse or fails its kind's checks; ``reason`` without the spec."""

    def __init__(self, spec, reason: str):
        super().__init__(f"source spec {str(spec)!r}: {reason}")
        self.spec, self.reason = str(spec), reason


@dataclass(frozen=True)
class SourceSpec:
    """A parsed spec: ``kind`` (a registered name) and ``arg`` (the text after the first
    colon, passed to the opener as is). ``str(spec)`` gives the spec text back."""

    kind: str
    arg: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.arg}"


@dataclass(frozen=True)
class SourceContext:
    """What an opener may use besides its argument.

    count: scenarios to draw for generated kinds (``synthetic:``); file kinds ignore it.
    seed: the campaign's seed.
    family: the synthetic FamilyConfig (agent count, steps, seed); None for the default of
        ``seed``.
    """

    count: int = 0
    seed: int = 0
    family: FamilyConfig | None = None


Opener = Callable[[str, SourceContext], "ScenarioSource"]
Inputs = Callable[[str], tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class SourceKind:
    """A registered kind.

    opener: ``(arg, context) -> ScenarioSource``; may raise ValueError or ScenarioError.
    usage: the spec's form for messages, e.g. ``store:PATH``.
    inputs: ``arg -> ((path, glob), ...)``, the files the source reads (checked to exist
        before a campaign writes anything, and fingerprinted so a resume notices a change);
        None when it reads no files.
    check: ``arg -> ...``, cheap checks of the argument raising ValueError (one line; what it
        returns is ignored), run
        before a campaign writes anything; None for none.
    counted: the campaign's ``count`` sets how many scenarios it gives (generated kinds);
        False where its argument alone does (files, grids), so a count given to it alone is
        refused rather than ignored.
    """

    name: str
    opener: Opener
    usage: str
    inputs: Inputs | None = None
    check: Callable[[str], object] | None = None
    counted: bool = True


_KINDS: dict[str, SourceKind] = {}
_LOCK = threading.Lock()


def register_source(
    kind: str,
    opener: Opener,
    *,
    usage: str | None = None,
    inputs: Inputs | None = None,
    check: Callable[[str], object] | None = None,
    counted: bool = True,
) -> SourceKind:
    """Register source kind ``kind`` (lower-case letters, digits, ``_``); see
    :class:`SourceKind` for the fields. Registering the same opener again is a no-op; another
    opener under a taken name is a ValueError."""
    if not _KIND_NAME.match(kind):
        raise ValueError(f"source kind {kind!r}: expected lower-case letters, digits and _")
    entry = SourceKind(kind, opener, usage or f"{kind}:ARG", inputs, check, counted)
    with _LOCK:
        old = _KINDS.get(kind)
        if old is not None and old.opener is opener:
            return old
        if old is not None:
            raise ValueError(f"source kind {kind!r} is already registered (opener {old.opener!r})")
        _KINDS[kind] = entry
    return entry


def registered_sources() -> tuple[str, ...]:
    """Names of the registered kinds, sorted."""
    return tuple(sorted(_KINDS))


def _known() -> str:
    return ", ".join(_KINDS[k].usage for k in sorted(_KINDS))


def parse_spec(spec: str | SourceSpec) -> SourceSpec:
    """``"KIND:ARG"`` -> SourceSpec; SourceSpecError (a ValueError of one line, naming the spec
    and the registered kinds) when the form is wrong or the kind unknown."""
    if isinstance(spec, SourceSpec):
        return spec
    kind, colon, arg = str(spec).partition(":")
    if not colon or not arg:
        raise SourceSpecError(spec, f"expected KIND:ARG; registered kinds: {_known()}")
    if kind not in _KINDS:
        raise SourceSpecError(spec, f"unknown kind {kind!r}; registered kinds: {_known()}")
    return SourceSpec(kind, arg)


def kind_of(spec: str | SourceSpec) -> SourceKind:
    """The registered kind of ``spec`` (parsed)."""
    return _KINDS[parse_spec(spec).kind]


def source_inputs(spec: str | SourceSpec) -> tuple[tuple[str, str], ...]:
    """``((path, glob), ...)``: the files ``spec`` reads (empty for generated kinds)."""
    parsed = parse_spec(spec)
    entry = _KINDS[parsed.kind]
    return entry.inputs(parsed.arg) if entry.inputs else ()


def check_spec(spec: str | SourceSpec) -> SourceSpec:
    """Parse ``spec``, run its kind's checks and check its input files exist
    (SourceSpecError)."""
    parsed = parse_spec(spec)
    entry = _KINDS[parsed.kind]
    try:
        if entry.check:
            entry.check(parsed.arg)
    except ValueError as err:
        raise SourceSpecError(spec, str(err)) from None
    for path, _ in source_inputs(parsed):
        if not Path(path).exists():
            raise SourceSpecError(spec, f"{path} does not exist")
    return parsed


def open_spec(spec: str | SourceSpec, context: SourceContext) -> ScenarioSource:
    """The source of one spec, made by its kind's opener."""
    parsed = parse_spec(spec)
    return _KINDS[parsed.kind].opener(parsed.arg, context)


def open_specs(specs, context: SourceContext) -> ScenarioSource:
    """One source over several specs (a MixedSource when more than one, in order)."""
    from drivesim.scenarios.sources import MixedSource

    parts = [open_spec(s, context) for s in specs]
    if not parts:
        raise ValueError("no source specs given")
    return parts[0] if len(parts) == 1 else MixedSource(parts)


# --- the built-in kinds ---------------------------------------------------------------------


SYNTHETIC_OPTIONS = ("signals", "pedestrians")  # synthetic:FAMILY,...?OPTION: FamilyConfig flags set to True


def synthetic_options(arg: str) -> tuple[list[str], dict[str, bool]]:
    """Family names and FamilyConfig flags of a synthetic spec argument
    ``F1,F2[?signals,pedestrians]``."""
    names, _, query = arg.partition("?")
    options = [o.strip() for o in query.split(",") if o.strip()]
    unknown = [o for o in options if o not in SYNTHETIC_OPTIONS]
    if unknown:
        raise ValueError(f"unknown synthetic option {unknown}; known: {list(SYNTHETIC_OPTIONS)}")
    families = [f.strip() for f in names.split(",") if f.strip()]
    flags = {o: True for o in options}
    if flags:
        from drivesim.scenarios.families import FAMILIES, FamilyConfig, check_options

        for name in (f for f in families if f in FAMILIES):  # unknown names: check_synthetic
            try:
                check_options(name, FamilyConfig(**flags))
            except ValueError as err:
                raise ValueError(f"synthetic:{arg}: {err}") from None
    return families, flags


def _families(arg: str) -> list[str]:
    return synthetic_options(arg)[0]


def _open_synthetic(arg: str, context: SourceContext) -> ScenarioSource:
    import dataclasses

    from drivesim.scenarios.sources import SyntheticSource
    from drivesim.scenarios.synthetic import FamilyConfig

    names, options = synthetic_options(arg)
    config = context.family
    if options:
        config = dataclasses.replace(config or FamilyConfig(seed=context.seed), **options)
    return SyntheticSource(names, context.count, context.seed, config=config)


def check_synthetic(arg: str) -> None:
    from drivesim.scenarios.synthetic import FAMILIES

    names = _families(arg)
    unknown = [f for f in names if f not in FAMILIES]
    if not names or unknown:
        raise ValueError(f"unknown synthetic family {unknown}; known: {sorted(FAMILIES)}")


def _commonroad_paths(arg: str) -> tuple[bool, list[str]]:
    replay = arg.startswith("replay:")
    return replay, [p for p in arg.removeprefix("replay:").split(",") if p]


def _open_commonroad(arg: str, context: SourceContext) -> ScenarioSource:
    from drivesim.scenarios.sources import CommonRoadSource

    replay, paths = _commonroad_paths(arg)
    return CommonRoadSource([Path(p) for p in paths], replay=replay)


def _open_store(arg: str, context: SourceContext) -> ScenarioSource:
    from drivesim.scenarios.sources import StoreSource

    return StoreSource(Path(arg))


register_source(
    "synthetic",
    _open_synthetic,
    usage="synthetic:FAMILY[,FAMILY...][?signals,pedestrians]",
    check=check_synthetic,
)
register_source(
    "commonroad",
    _open_commonroad,
    usage="commonroad:[replay:]PATH[,PATH...]",
    inputs=lambda arg: tuple((p, "*.xml") for p in _commonroad_paths(arg)[1]),
    counted=False,
)
register_source("store", _open_store, usage="store:PATH", inputs=lambda arg: ((arg, "*"),), counted=False)


def _traffic_paths(arg: str) -> tuple[bool, list[str], str | None]:
    """``[idm:]PATH[,PATH...][?ego=ID]`` -> (IDM traffic instead of replay, paths, ego id or
    None); ValueError for an option other than ``ego`` or an empty id."""
    body, _, query = arg.partition("?")
    ego = None
    if query:
        key, eq, value = query.partition("=")
        if key != "ego" or not eq or not value:
            raise ValueError(f"unknown option {query!r}; the one option is ?ego=ID (a recorded agent's id)")
        if any(c in value for c in ",?&"):
            raise ValueError(f"ego id {value!r}: one id, after the paths (KIND:PATH[,PATH...]?ego=ID)")
        ego = value
    idm = body.startswith("idm:")
    return idm, [p for p in body.removeprefix("idm:").split(",") if p], ego


def _register_recorded(kind: str, source_class: str, glob: str) -> None:
    """Register ``KIND:[idm:]PATH[,PATH...][?ego=ID]`` for the RecordedFilesSource ``module:Class``."""

    def opener(arg: str, context: SourceContext) -> ScenarioSource:
        module, _, name = source_class.partition(":")
        idm, paths, ego = _traffic_paths(arg)
        source_type = getattr(importlib.import_module(module), name)
        return source_type([Path(p) for p in paths], replay=not idm, ego=ego)

    register_source(
        kind,
        opener,
        usage=f"{kind}:[idm:]PATH[,PATH...][?ego=ID]",
        check=_traffic_paths,
        inputs=lambda arg: tuple((p, glob) for p in _traffic_paths(arg)[1]),
        counted=False,
    )


_register_recorded("av2", "drivesim.scenarios.av2:Av2Source", "*")
_register_recorded("womd", "drivesim.scenarios.womd:WomdSource", "*.json")


def _open_catalogue(arg: str, context: SourceContext) -> ScenarioSource:
    from drivesim.scenarios.catalogue.source import open_catalogue

    return open_catalogue(arg, context)


def _check_catalogue(arg: str) -> None:
    from drivesim.scenarios.catalogue.source import check_catalogue

    check_catalogue(arg)


register_source(
    "catalogue",
    _open_catalogue,
    usage="catalogue:FAMILY[?NAME=START:STOP:COUNT,...] | catalogue:FAMILY?NAME=LO:HI,...&samples=N",
    check=_check_catalogue,
    counted=False,
)
