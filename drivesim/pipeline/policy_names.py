"""Ego policies by name: what ``--policy``, ``CampaignConfig.policy`` and a campaign's files say.

The core takes policies as objects (``SimConfig.policy``, drivesim.core.policies); names
are read here, at the edge. Known names: ``idm``, ``constant``, ``open_loop``, ``mlp`` and
those added with :func:`register_policy`. A spec is ``NAME``, ``NAME:A[,B...]`` (a policy
with a reader of parameter files, one parameter set per argument: ``mlp:FILE``) or
``package.module:NAME`` (NAME an EgoPolicy, or a function of no arguments returning one,
imported on first use unless the caller refuses code).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from drivesim.core import policies
from drivesim.core.policies import EgoPolicy

# reader of a parameter file: (argument, SimConfig) -> params
Reader = Callable[[str, Any], Any]


@dataclass(frozen=True)
class _Entry:
    policy: EgoPolicy
    reader: str | None  # ``module:function`` of a Reader, imported when a spec has arguments


READERS = {"mlp": "drivesim.train.policy_io:read_params"}  # built-in policies' file readers
_KNOWN: dict[str, _Entry] = {p.name: _Entry(p, READERS.get(p.name)) for p in policies.BUILT_IN}


class PolicyImportRefused(ValueError):
    """A ``package.module:NAME`` policy that the caller did not allow to be imported."""


def register_policy(policy: EgoPolicy, *, reader: str | None = None, overwrite: bool = False) -> EgoPolicy:
    """Make ``policy`` known as ``policy.name`` (``reader``: optional ``module:function``
    reading ``NAME:ARG`` parameter files, ``(arg, config) -> params``); returns it."""
    if not isinstance(policy, EgoPolicy):
        raise TypeError(f"register_policy: expected an EgoPolicy, got {type(policy).__name__}")
    known = _KNOWN.get(policy.name)
    if known is not None and known.policy != policy and not overwrite:
        raise ValueError(f"ego policy {policy.name!r} is already registered")
    _KNOWN[policy.name] = _Entry(policy, reader)
    return policy


def registered_policies() -> tuple[str, ...]:
    """Names known without an import, in registration order."""
    return tuple(_KNOWN)


def policy_named(name: str, allow_import: bool = True) -> EgoPolicy:
    """The policy called ``name``; ``module:NAME`` is imported (and known under that string
    afterwards) on first use, or refused with :class:`PolicyImportRefused` where
    ``allow_import`` is False (a name read from a file is data, not code). Raises ValueError
    naming the policy."""
    if name in _KNOWN:
        return _KNOWN[name].policy
    module_name, attr = module_spec(name)
    if not allow_import:
        raise PolicyImportRefused(f"ego policy {name!r} is code (module {module_name}); not imported")
    try:
        value = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"ego policy {name!r}: cannot import {attr!r} from {module_name!r} ({err})") from err
    policy = value if isinstance(value, EgoPolicy) else value() if callable(value) else value
    if not isinstance(policy, EgoPolicy):
        raise ValueError(f"ego policy {name!r}: {attr} is not an EgoPolicy (nor returns one)")
    _KNOWN[name] = _Entry(policy, None)
    return policy


def reader_of(name: str) -> Reader | None:
    """The parameter-file reader of the known policy ``name`` (imported), or None."""
    entry = _KNOWN.get(name)
    if entry is None or entry.reader is None:
        return None
    module, _, function = entry.reader.partition(":")
    return getattr(importlib.import_module(module), function)


def module_spec(name: str) -> tuple[str, str]:
    """(module, attribute) of a ``package.module:NAME`` policy name, checked for form only
    (nothing is imported); ValueError naming the policy otherwise."""
    module_name, _, attr = name.partition(":")
    dotted = module_name.split(".")
    if not attr or not attr.isidentifier() or not all(part.isidentifier() for part in dotted):
        known = ", ".join(_KNOWN)
        raise ValueError(f"unknown ego policy {name!r}; known: {known}; or package.module:NAME")
    return module_name, attr


def split_policy(spec: str, allow_import: bool = True) -> tuple[EgoPolicy | None, tuple[str, ...]]:
    """``spec`` -> (EgoPolicy, args): ``NAME`` (known, no args), ``NAME:A[,B...]`` (a known
    policy with a reader, one parameter set per argument) or ``package.module:NAME`` (a user
    policy, imported; where ``allow_import`` is False it is checked for form only and
    returned as (None, ())). Raises ValueError naming the spec."""
    head, _, rest = spec.partition(":")
    if head not in _KNOWN or not rest:
        if not allow_import and spec not in _KNOWN:
            module_spec(spec)
            return None, ()
        return policy_named(spec), ()
    args = tuple(a for a in rest.split(",") if a)
    if _KNOWN[head].reader is None or not args:
        raise ValueError(f"policy {spec!r}: {head} takes no argument (known: {', '.join(_KNOWN)})")
    return _KNOWN[head].policy, args


def is_user_code(spec: str) -> bool:
    """True where a policy spec names a module to import (``package.module:NAME``)."""
    head, _, rest = spec.partition(":")
    return spec not in _KNOWN and not (head in _KNOWN and rest)
