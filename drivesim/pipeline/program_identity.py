"""What computed a campaign's results: the engine's code, JAX, the processor, the determinism mode.

Per-scenario results are bitwise reproducible for one program on one kind of processor
(drivesim.parallel.determinism). They are not across processor models: XLA:CPU compiles for
the host, and an Intel Xeon can give other last bits than an AMD EPYC for the same program.
Neither are they across
engine changes. So the first start of a campaign records its program in the ledger's ``meta``
(``program``), and a resume whose program differs goes on (its results stay within float32
rounding of the earlier ones) with a note naming what changed, since the rows written before
and after may then differ in the last bits. On a Ray cluster the driver computes nothing: the
workers report their program when they start, the first one's is recorded, and each worker
whose program differs gets such a note.

``engine`` is a SHA-256 over the source of the packages that decide results (drivesim.core, and
drivesim.scenarios, which makes and reads the scenarios), so an edit there counts and a
reinstall of the same code does not.
"""

from __future__ import annotations

import json
import pathlib

import jax

from drivesim._source import digest
from drivesim.parallel import determinism, processor
from drivesim.pipeline.ledger import Ledger

RESULT_PACKAGES = ("core", "scenarios")  # under drivesim/: the code that decides results


def engine_digest() -> str:
    """SHA-256 (first 16 hex digits) of the .py files under RESULT_PACKAGES, by relative path;
    read once per process (the code it has imported)."""
    return digest(RESULT_PACKAGES)[:16]


def program() -> dict[str, str]:
    """{field: value} of the program this process runs campaigns with."""
    device = jax.devices()[0]
    return {
        "engine": engine_digest(),
        "jax": jax.__version__,
        "platform": device.platform,
        "device": device.device_kind if device.platform != "cpu" else processor.model(),
        "fma_free": str(determinism.active()),
    }


def differences(before: dict, now: dict) -> list[str]:
    """``"key 'old' -> 'new'"`` for each field of ``now`` that differs from ``before``."""
    return [f"{key} {before.get(key)!r} -> {now[key]!r}" for key in now if before.get(key) != now[key]]


def recorded(directory) -> dict:
    """The program a campaign started with (empty before its first start)."""
    with Ledger(pathlib.Path(directory)) as ledger:
        stored = ledger.meta().get("program")
    return json.loads(stored) if stored else {}


def resume_notes(ledger: Ledger) -> list[str]:
    """For a run that computes in this process: record its :func:`program` at the campaign's
    first start; on a resume, a note (or none) naming each field that differs from the
    recorded program. The record keeps the first program, so every resume is compared with
    the start."""
    return [
        "resumed with another program than the campaign started with "
        f"({changes}): rows written before and after may differ in the last bits"
        for changes in _changes(ledger, {"": program()}).values()
    ]


def worker_notes(ledger: Ledger, programs: dict[str, dict]) -> list[str]:
    """For a cluster campaign, whose driver computes nothing: the same for its workers'
    ``programs`` ({name: program}); the first worker's program is recorded at the first start,
    and each worker whose program differs gets a note."""
    return [
        f"worker {worker} computes with another program than the campaign started with "
        f"({changes}): its rows may differ from earlier ones in the last bits"
        for worker, changes in _changes(ledger, programs).items()
    ]


def _changes(ledger: Ledger, programs: dict[str, dict]) -> dict[str, str]:
    """{name: "field 'old' -> 'new'; ..."} of the ``programs`` that differ from the recorded
    one; the first of them is recorded when there is none yet."""
    if not programs:
        return {}
    stored = ledger.meta().get("program")
    if stored is None:
        before = next(iter(programs.values()))
        ledger.set_meta(program=json.dumps(before, sort_keys=True))
    else:
        before = json.loads(stored)
    changed = {name: differences(before, now) for name, now in programs.items()}
    return {name: "; ".join(lines) for name, lines in changed.items() if lines}
