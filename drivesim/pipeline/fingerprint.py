"""Campaign identity by content: fingerprints of every input, checked on resume.

At the first start the ledger's ``meta`` gets ``inputs`` (one fingerprint per input: a
scenario store or CommonRoad file's size, mtime and content hash; a synthetic spec, or any
kind that reads no files, with its seed and count (and a synthetic spec with the generator's
version, families.GENERATOR_VERSION); the policy and sweep files' hashes),
``identity`` (the result-deciding config fields) and ``config_sha256`` (the hash of
``campaign.toml``). Every later start recomputes them and refuses to go on when an input's
content changed (naming the input) or ``campaign.toml`` was edited (naming the field), so a
resume never mixes results of different inputs. A file whose size and mtime are unchanged is
trusted without rehashing; a changed mtime with the same content hash is accepted.
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import stat

from drivesim.pipeline.config import CONFIG_NAME, IDENTITY_FIELDS, CampaignConfig
from drivesim.pipeline.ledger import Ledger
from drivesim.scenarios.families import GENERATOR_VERSION
from drivesim.scenarios.registry import parse_spec, source_inputs

FULL_HASH_BYTES = 64 * 2**20  # files up to this size are hashed whole
EDGE_BYTES = 8 * 2**20  # larger files: the first and last 8 MiB (Parquet footer, row-group index)


class InputChangedError(ValueError):
    """A resumed campaign's input or config differs from the one it started with."""


def file_digest(path) -> str:
    """SHA-256 of a file's content (whole up to 64 MiB; else its size, head and tail, which
    hold a Parquet file's metadata and row-group index)."""
    path = pathlib.Path(path)
    size = path.stat().st_size
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if size <= FULL_HASH_BYTES:
            while block := fh.read(1 << 20):
                digest.update(block)
        else:
            digest.update(str(size).encode())
            digest.update(fh.read(EDGE_BYTES))
            fh.seek(size - EDGE_BYTES)
            digest.update(fh.read(EDGE_BYTES))
    return digest.hexdigest()


def _files(path: pathlib.Path, pattern: str) -> list[pathlib.Path]:
    if path.is_dir():
        return sorted(p for p in path.rglob(pattern) if p.is_file())
    return [path] if path.exists() else []


def _file_prints(label: str, path: pathlib.Path, pattern: str, known: dict) -> dict:
    """{label#file: {size, mtime_ns, sha256}} for a file or every matching file of a folder."""
    out: dict[str, dict] = {}
    files = _files(path, pattern)
    if not files:
        out[label] = {"missing": True}
    for f in files:
        key = f"{label}#{f.relative_to(path)}" if path.is_dir() else label
        st = f.stat()
        if not stat.S_ISREG(st.st_mode):  # a pipe or device: its content cannot be read twice
            out[key] = {"special": stat.S_IFMT(st.st_mode)}
            continue
        old = known.get(key, {})
        if old.get("size") == st.st_size and old.get("mtime_ns") == st.st_mtime_ns and old.get("sha256"):
            digest = old["sha256"]  # unchanged size and mtime: trusted without rehashing
        else:
            digest = file_digest(f)
        out[key] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    return out


def input_fingerprints(config: CampaignConfig, known: dict | None = None) -> dict[str, dict]:
    """Fingerprint of every input of ``config``, keyed by the input's name."""
    known = known or {}
    out: dict[str, dict] = {}
    for spec in config.sources:
        parsed = parse_spec(spec)
        inputs = source_inputs(parsed)
        if not inputs:  # generated: its inputs are the campaign's numbers (and the generator)
            numbers = {"seed": config.seed, "count": config.count, "agents": config.agents}
            version = {"generator": GENERATOR_VERSION} if parsed.kind == "synthetic" else {}
            out[f"source {spec}"] = numbers | version
        for path, pattern in inputs:
            out |= _file_prints(f"source {parsed.kind}:{path}", pathlib.Path(path), pattern, known)
    if config.policy.startswith("mlp:"):
        path = config.policy.split(":", 1)[1]
        out |= _file_prints(f"policy {config.policy}", pathlib.Path(path), "*", known)
    if config.sweep:
        out |= _file_prints(f"sweep {config.sweep}", pathlib.Path(config.sweep), "*", known)
    return out


def _changes(before: dict, now: dict) -> list[str]:
    lines = []
    for key in sorted(set(before) | set(now)):
        a, b = before.get(key), now.get(key)
        if a is None or b is None:
            lines.append(f"{key} {'appeared' if a is None else 'disappeared'}")
        elif a.get("sha256", a) != b.get("sha256", b) or a.get("size") != b.get("size"):
            what = "content changed" if "sha256" in a else _fields_changed(a, b)
            if a.get("size") != b.get("size"):
                what += f" (size {a.get('size')} -> {b.get('size')} bytes)"
            lines.append(f"{key}: {what}")
    return lines


def _fields_changed(before: dict, now: dict) -> str:
    """'seed 0 -> 1, generator 1 -> 2': the fields of a generated input that differ."""
    keys = [k for k in dict.fromkeys([*before, *now]) if before.get(k) != now.get(k)]
    return ", ".join(f"{k} {before.get(k)!r} -> {now.get(k)!r}" for k in keys)


def config_sha256(directory) -> str | None:
    path = pathlib.Path(directory) / CONFIG_NAME
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def check_and_record(directory, config: CampaignConfig) -> None:
    """Compare ``config``'s inputs and ``campaign.toml`` with what the campaign started with
    (InputChangedError naming the input or field); record them on the first start."""
    directory = pathlib.Path(directory)
    with Ledger(directory) as ledger:
        meta = ledger.meta()
        now = _check(directory, config, meta)
        ledger.set_meta(
            inputs=json.dumps(now, sort_keys=True),
            identity=json.dumps(meta.get("identity") and json.loads(meta["identity"]) or config.identity()),
            config_sha256=config_sha256(directory) or "",
        )


def check_inputs(directory, config: CampaignConfig) -> None:
    """The checks of :func:`check_and_record` without recording anything, on a read-only
    connection (for the command line, before it prints); nothing when the campaign has no
    readable ledger yet (the run itself says what is wrong)."""
    import sqlite3

    from drivesim.pipeline.ledger import LEDGER_NAME

    path = pathlib.Path(directory) / LEDGER_NAME
    if not path.is_file():
        return
    try:
        con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        finally:
            con.close()
    except sqlite3.Error:
        return
    _check(pathlib.Path(directory), config, meta)


def _check(directory: pathlib.Path, config: CampaignConfig, meta: dict) -> dict:
    """Raise InputChangedError if an input or campaign.toml's identity changed since the
    start recorded in ``meta``; the inputs' fingerprints now."""
    stored_inputs = json.loads(meta["inputs"]) if "inputs" in meta else None
    now = input_fingerprints(config, stored_inputs)
    if stored_inputs is not None:
        changes = _changes(stored_inputs, now)
        if changes:
            raise InputChangedError(
                f"{directory}: an input changed since the campaign started: {'; '.join(changes)}; "
                "resuming would mix results. Restore the input or use another --out"
            )
    toml_hash = config_sha256(directory)
    if meta.get("config_sha256") not in (None, toml_hash) and "identity" in meta:
        # campaign.toml was edited: fine for how-fields (threads, backend), refused for the
        # fields that decide the results
        before, after = json.loads(meta["identity"]), _identity_of_file(directory)
        changed = [k for k in IDENTITY_FIELDS if before.get(k) != after.get(k)]
        diff = [f"{k}: {before.get(k)!r} -> {after.get(k)!r}" for k in changed]
        if diff:
            raise InputChangedError(
                f"{directory / CONFIG_NAME} was edited since the campaign started ({', '.join(diff)}); "
                "resuming would mix results. Restore it or start a new campaign with another --out"
            )
    return now


def _identity_of_file(directory: pathlib.Path) -> dict:
    from drivesim.pipeline.config import read_config

    return read_config(directory).identity()
