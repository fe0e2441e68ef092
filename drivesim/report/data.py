"""Loading a campaign directory (or a bench/scale output directory) for the report.

Reads the contract in docs/CAMPAIGN_FORMAT.md: ``results/part-*.parquet`` through DuckDB
(aggregated in SQL, so a million-row campaign never comes to Python row by row),
``ledger.sqlite`` (tables ``batches``, ``phases``, ``meta``) read-only, ``bench/*.jsonl`` and
``scale/*.jsonl`` JSON lines and ``profile/busy.json``. Every part is optional: a missing or
unreadable part becomes empty data plus a warning naming the file, never an exception.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeGuard
from urllib.parse import quote

from drivesim.report.outcomes import Outcomes, load_outcomes


@dataclass
class CampaignData:
    """Everything the dashboard draws, loaded from one directory.

    phases: ledger ``phases`` rows (dicts), sorted by ``wall_end``.
    batches: ledger ``batches`` rows (dicts), sorted by ``batch_id``.
    bench / scale: JSON-line records (dicts) from ``bench/*.jsonl`` / ``scale/*.jsonl``.
    busy: the parsed ``profile/busy.json`` or None.
    loader_threads: the campaign's loader threads (``campaign.toml``; 1 when unknown), which
    share the ``load`` phase in the bottleneck verdict.
    outcomes: aggregates over the ``results`` view, or None without result shards.
    warnings: human-readable problems met while loading (file names included, unescaped).
    link_base: the path from the page being written to ``root`` ("" when the page is in it),
    put before links to files of the campaign (viewer pages).
    """

    root: Path
    meta: dict[str, str] = field(default_factory=dict)
    phases: list[dict] = field(default_factory=list)
    batches: list[dict] = field(default_factory=list)
    bench: list[dict] = field(default_factory=list)
    scale: list[dict] = field(default_factory=list)
    busy: dict | None = None
    outcomes: Outcomes | None = None
    loader_threads: int = 1
    warnings: list[str] = field(default_factory=list)
    link_base: str = ""

    @property
    def is_empty(self) -> bool:
        """True when the directory held nothing the report can draw."""
        return not (
            self.meta or self.phases or self.batches or self.bench or self.scale or self.busy or self.outcomes
        )


def load_campaign(root: str | Path) -> CampaignData:
    """Load every part of the campaign directory ``root`` that exists."""
    root = Path(root)
    data = CampaignData(root=root)
    ledger = root / "ledger.sqlite"
    if ledger.is_file():
        _load_ledger(ledger, data)
    data.loader_threads = _loader_threads(root / "campaign.toml", data.warnings)
    data.bench = _load_jsonl_dir(root / "bench", data.warnings)
    data.scale = _load_jsonl_dir(root / "scale", data.warnings)
    data.busy = _load_busy(root / "profile" / "busy.json", data.warnings)
    shards = result_shards(root, data.warnings)
    if shards:
        try:
            data.outcomes = load_outcomes(shards)
        except Exception as exc:  # a corrupt shard must not stop the report
            data.warnings.append(f"results in {root / 'results'} could not be read: {exc}")
    return data


def _loader_threads(path: Path, warnings: list[str]) -> int:
    """``loader_threads`` of the campaign's config (1 when the file or the key is missing)."""
    if not path.is_file():
        return 1
    try:
        import tomllib

        value = tomllib.loads(path.read_text()).get("loader_threads", 1)
        return max(1, int(value))
    except (OSError, ValueError, TypeError) as exc:  # tomllib.TOMLDecodeError is a ValueError
        warnings.append(f"{path} could not be read: {exc}")
        return 1


def result_shards(root: Path, warnings: list[str] | None = None) -> list[Path]:
    """The sound result shards the ledger names (stray files in ``results/`` excluded; see
    drivesim.pipeline.verify.named_shards); each batch left out is a line in ``warnings``."""
    from drivesim.pipeline.verify import sound_shards

    try:
        found = sound_shards(Path(root))
        if warnings is not None and found.ledgered:
            warnings += [f"left out (drivesim run --resume {root} redoes it): {p}" for p in found.problems]
        elif warnings is not None:
            warnings += [f"read without a ledger: {p}" for p in found.problems]
        return found.paths
    except Exception:  # noqa: BLE001 - an unreadable ledger: the report warns about it elsewhere
        folder = Path(root) / "results"
        return sorted(p for p in folder.glob("part-*.parquet") if p.is_file()) if folder.is_dir() else []


def _connect_readonly(path: Path) -> sqlite3.Connection:
    """Open an SQLite file read-only (falls back to a normal open if the URI form fails)."""
    try:
        con = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=5)
        con.execute("SELECT 1 FROM sqlite_master LIMIT 1")
        return con
    except sqlite3.Error:
        return sqlite3.connect(str(path), timeout=5)


def _load_ledger(path: Path, data: CampaignData) -> None:
    try:
        con = _connect_readonly(path)
    except sqlite3.Error as exc:
        data.warnings.append(f"ledger {path} could not be opened: {exc}")
        return
    try:
        con.row_factory = sqlite3.Row
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if "meta" in tables:
            data.meta = {str(r["key"]): str(r["value"]) for r in con.execute("SELECT key, value FROM meta")}
        if "phases" in tables:
            rows = [dict(r) for r in con.execute("SELECT * FROM phases")]
            data.phases = sorted(rows, key=lambda r: (_num(r.get("wall_end")), r.get("batch_id") or 0))
        if "batches" in tables:
            data.batches = [dict(r) for r in con.execute("SELECT * FROM batches ORDER BY batch_id")]
    except sqlite3.Error as exc:
        data.warnings.append(f"ledger {path} could not be read: {exc}")
    finally:
        con.close()


def _load_jsonl_dir(folder: Path, warnings: list[str]) -> list[dict]:
    """All JSON objects from ``folder/*.jsonl``; bad lines are skipped with a warning."""
    records: list[dict] = []
    if not folder.is_dir():
        return records
    for path in sorted(folder.glob("*.jsonl")):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as exc:
            warnings.append(f"{path} could not be read: {exc}")
            continue
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                warnings.append(f"{path}:{number}: not JSON ({exc.msg}); line skipped")
                continue
            if isinstance(record, dict):
                record.setdefault("_file", path.name)
                records.append(record)
            else:
                warnings.append(f"{path}:{number}: not a JSON object; line skipped")
    return records


def _load_busy(path: Path, warnings: list[str]) -> dict | None:
    if not path.is_file():
        return None
    try:
        busy = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        warnings.append(f"{path} could not be read: {exc}")
        return None
    if not isinstance(busy, dict):
        warnings.append(f"{path}: expected a JSON object")
        return None
    return busy


@dataclass(frozen=True)
class DeviceBusy:
    """Per-device busy fractions in [0, 1] and GPU utilisation percent per GPU (may be empty)."""

    names: tuple[str, ...] = ()
    fractions: tuple[float, ...] = ()
    gpu_util: dict[str, float] = field(default_factory=dict)


def device_busy(busy: dict | None) -> DeviceBusy:
    """Parse a busy.json (or a profile record's ``busy``/``gpu_util`` fields).

    Accepts ``{"devices": [{"device"|"name": str, "busy_fraction": x, "gpu_utilization": u}]}``,
    ``{"busy": {name: x}, "gpu_util": {name: percent}}``, ``{"busy_fraction": {name: x}}`` or a
    flat ``{name: x}`` mapping.
    """
    if not busy:
        return DeviceBusy()
    gpu = busy.get("gpu_util")
    gpu_util = {str(k): float(v) for k, v in gpu.items() if _is_number(v)} if isinstance(gpu, dict) else {}
    entries = busy.get("devices")
    if isinstance(entries, list):
        names, fracs = [], []
        for i, entry in enumerate(entries):
            frac = entry.get("busy_fraction", entry.get("busy")) if isinstance(entry, dict) else None
            if not _is_number(frac):
                continue
            names.append(str(entry.get("device", entry.get("name", f"device {i}"))))
            fracs.append(float(frac))
            util = entry.get("gpu_utilization", entry.get("gpu_util"))
            if _is_number(util):
                gpu_util[names[-1]] = float(util)
        return DeviceBusy(tuple(names), tuple(fracs), gpu_util)
    mapping = busy.get("busy", busy.get("busy_fraction", busy))
    if not isinstance(mapping, dict):
        return DeviceBusy(gpu_util=gpu_util)
    items = [(str(k), float(v)) for k, v in mapping.items() if _is_number(v)]
    return DeviceBusy(tuple(k for k, _ in items), tuple(v for _, v in items), gpu_util)


def stat(value: object, key: str = "median") -> float | None:
    """A number from a record field that is either a number or a stats dict {median, p5, ...}."""
    if isinstance(value, dict):
        value = value.get(key)
    return float(value) if _is_number(value) else None


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _num(value: object) -> float:
    return float(value) if _is_number(value) else math.inf
