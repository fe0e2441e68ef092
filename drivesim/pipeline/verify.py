"""The files are the truth: reconcile a campaign's ledger with its result shards.

Every done batch of the ledger names its shard, the shard's row count and its SHA-256
(recorded after the shard is durable). :func:`check_campaign` checks each named shard
exists, matches its checksum, opens as Parquet and holds the recorded rows; files in
``results/`` that no done batch names (copies, leftovers of a batch redone later) are
*stray*: never read, only reported. :func:`reconcile` (run at every start and resume) turns
every missing or damaged batch back to pending so the run redoes it. ``drivesim verify DIR``
prints the same check and exits non-zero on damage. Readers (query, summary, report) use
:func:`named_shards`, so a stray file never adds rows.
"""

from __future__ import annotations

import collections
import hashlib
import pathlib
import sqlite3
from dataclasses import dataclass, field
from typing import NamedTuple

from drivesim.pipeline.ledger import LEDGER_NAME, Ledger, ShardCheck, damaged

RESULTS_DIR = "results"


@dataclass
class VerifyReport:
    """Outcome of a check: ok / missing / damaged batches (id, shard, reason), stray files,
    and done batches without a recorded checksum (ledgers older than the check)."""

    directory: pathlib.Path
    ok: list[int] = field(default_factory=list)
    missing: list[tuple[int, str]] = field(default_factory=list)
    damaged: list[tuple[int, str, str]] = field(default_factory=list)
    stray: list[str] = field(default_factory=list)
    unchecked: list[int] = field(default_factory=list)
    pending: int = 0

    @property
    def clean(self) -> bool:
        """No missing or damaged shard (stray files are not damage)."""
        return not self.missing and not self.damaged

    def lines(self) -> list[str]:
        """Human-readable findings, one per line."""
        out = [f"{len(self.ok)} done batches verified, {self.pending} not done yet"]
        out += [f"missing shard: {shard} (batch {b})" for b, shard in self.missing]
        out += [f"damaged shard: {shard} (batch {b}): {why}" for b, shard, why in self.damaged]
        out += [f"stray file ignored (no ledger entry names it): {name}" for name in self.stray]
        if self.unchecked:
            n = len(self.unchecked)
            out.append(f"{n} batches have no recorded checksum (Parquet footer checked)")
        return out


def file_sha256(path, chunk: int = 1 << 20) -> str:
    """SHA-256 hex digest of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def shard_check(path) -> ShardCheck:
    """Row count, SHA-256, size and modification time of a freshly written shard, for
    ``Ledger.mark_done(check=...)``."""
    import pyarrow.parquet as pq

    stat = pathlib.Path(path).stat()
    rows = pq.ParquetFile(path).metadata.num_rows
    return ShardCheck(rows, file_sha256(path), stat.st_size, stat.st_mtime_ns)


def _connect(directory: pathlib.Path, readonly: bool = False) -> sqlite3.Connection:
    path = directory / LEDGER_NAME
    if not path.is_file():
        raise FileNotFoundError(f"{directory}: no {LEDGER_NAME} (is it a campaign directory?)")
    if readonly:
        try:
            con = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
            con.execute("SELECT 1 FROM sqlite_master LIMIT 1")
            return con
        except sqlite3.Error:
            pass
    return sqlite3.connect(path, timeout=30.0, isolation_level=None)


def _done_rows(con: sqlite3.Connection, stat: bool = False) -> list[tuple]:
    """(batch_id, shard, rows, sha256) of every done batch, with (bytes, mtime_ns) after
    them where ``stat``; NULL where the ledger predates a column."""
    cols = {row[1] for row in con.execute("PRAGMA table_info(batches)")}
    names = ["shard_rows", "shard_sha256"] + (["shard_bytes", "shard_mtime_ns"] if stat else [])
    extra = ", ".join(n if n in cols else "NULL" for n in names)
    sql = f"SELECT batch_id, shard, {extra} FROM batches WHERE status='done' ORDER BY batch_id"
    return list(con.execute(sql))


def inside_results(directory: pathlib.Path, shard: str) -> pathlib.Path | None:
    """The path of a ledger's shard entry when it is a file name inside the campaign's
    ``results/`` (no absolute path, no ``..``, no link out of it); None otherwise."""
    results = (directory / RESULTS_DIR).resolve()
    path = (directory / shard).resolve()
    return directory / RESULTS_DIR / path.name if path.parent == results else None


def _check_one(path: pathlib.Path, rows: int | None, digest: str | None) -> str | None:
    """Why the shard at ``path`` is damaged, or None when it is sound."""
    import pyarrow.parquet as pq

    if digest is not None:
        try:
            actual = file_sha256(path)
        except OSError as exc:
            return f"cannot read ({exc.strerror or exc})"
        if actual != digest:
            return f"checksum {actual[:12]}... differs from the recorded {digest[:12]}..."
    try:
        num_rows = pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - any failure to open is damage
        return f"not a readable Parquet file ({type(exc).__name__}: {exc})"
    if rows is not None and num_rows != rows:
        return f"{num_rows} rows, the ledger recorded {rows}"
    return None


def check_campaign(directory) -> VerifyReport:
    """Check every done batch's shard and list stray files (reads only)."""
    directory = pathlib.Path(directory)
    report = VerifyReport(directory)
    con = _connect(directory, readonly=True)
    try:
        done = _done_rows(con)
        report.pending = con.execute("SELECT COUNT(*) FROM batches WHERE status!='done'").fetchone()[0]
    finally:
        con.close()
    named = set()
    for batch_id, shard, rows, digest in done:
        if not shard:
            report.missing.append((batch_id, "(no shard recorded)"))
            continue
        named.add(pathlib.PurePath(shard).name)
        inside = inside_results(directory, shard)
        if inside is None:
            report.damaged.append((batch_id, shard, f"outside the campaign's {RESULTS_DIR}/ (never read)"))
            continue
        path = inside
        if not path.is_file():
            report.missing.append((batch_id, shard))
            continue
        why = _check_one(path, rows, digest)
        if why is not None:
            report.damaged.append((batch_id, shard, why))
            continue
        report.ok.append(batch_id)
        if digest is None:
            report.unchecked.append(batch_id)
    results = directory / RESULTS_DIR
    if results.is_dir():
        for path in sorted(results.iterdir()):
            if path.name not in named and not (path.name.startswith(".part-") and path.name.endswith(".tmp")):
                report.stray.append(path.name)
    return report


def reconcile(directory) -> VerifyReport:
    """Check the campaign and mark every missing or damaged batch pending (it is redone)."""
    directory = pathlib.Path(directory)
    if not (directory / LEDGER_NAME).is_file():
        return VerifyReport(directory)
    Ledger(directory).close()  # adds the checksum columns to an older ledger
    report = check_campaign(directory)
    bad = [b for b, _ in report.missing] + [b for b, _, _ in report.damaged]
    if bad:
        con = _connect(directory)
        try:
            con.execute("BEGIN IMMEDIATE")
            con.executemany(
                "UPDATE batches SET status='pending', shard=NULL, shard_rows=NULL, shard_sha256=NULL,"
                " shard_bytes=NULL, shard_mtime_ns=NULL WHERE batch_id=?",
                [(b,) for b in bad],
            )
            con.executemany("DELETE FROM failures WHERE batch_id=?", [(b,) for b in bad])
            con.execute("COMMIT")
        finally:
            con.close()
    return report


def named_shards(directory) -> list[pathlib.Path]:
    """The sound shards the ledger names for done batches, by batch id.

    Each is checked cheaply: inside ``results/``, present, and of the size and modification
    time the ledger recorded (a shard whose stat differs is hashed; ledgers without the stat
    columns are checked by row count). The batches left out are named in one warning line
    (logger ``drivesim.results``), once per process and campaign state: ``drivesim run
    --resume DIR`` redoes them. A directory without a ledger (shards copied on their own)
    falls back to every ``results/part-*.parquet`` whose footer marks it a drivesim results
    shard, with a warning that no ledger checked them.
    """
    directory = pathlib.Path(directory)
    found = sound_shards(directory)
    if found.problems:
        _warn_once(directory, found.problems, ledger=found.ledgered)
    return found.paths


class SoundShards(NamedTuple):
    """What :func:`sound_shards` found: the shards to read, one line per batch (or file)
    left out, and whether a ledger checked them."""

    paths: list[pathlib.Path]
    problems: list[str]
    ledgered: bool


def sound_shards(directory: pathlib.Path) -> SoundShards:
    """The sound shards of :func:`named_shards` and what was left out."""
    if not (directory / LEDGER_NAME).is_file():
        return SoundShards(*_unledgered_shards(directory / RESULTS_DIR), ledgered=False)
    con = _connect(directory, readonly=True)
    try:
        done = _done_rows(con, stat=True)
    except sqlite3.DatabaseError as err:
        raise damaged(directory / LEDGER_NAME, err) from None
    finally:
        con.close()
    paths, problems, seen = [], [], set()
    for batch_id, shard, rows, digest, size, mtime_ns in done:
        why = _reader_check(directory, shard, rows, digest, size, mtime_ns)
        path = directory / RESULTS_DIR / pathlib.PurePath(shard or "").name
        if why is None and path in seen:
            why = "names a shard another done batch names (read once)"
        if why is None:
            paths.append(path)
            seen.add(path)
        else:
            problems.append(f"batch {batch_id} ({shard}): {why}")
    return SoundShards(paths, problems, ledgered=True)


def _unledgered_shards(results: pathlib.Path) -> tuple[list[pathlib.Path], list[str]]:
    """Every ``results/part-*.parquet`` that is a drivesim results shard (its footer carries
    the results schema version) of this campaign (its footer's campaign key is the one of
    ``campaign.toml``; without that file, the key most shards carry), with one line per file
    left out and one saying that no ledger checked them."""
    import pyarrow.parquet as pq

    from drivesim.pipeline.campaign_key import CAMPAIGN_KEY, campaign_key
    from drivesim.pipeline.results import SCHEMA_KEY

    found = sorted(p for p in results.glob("part-*.parquet") if p.is_file()) if results.is_dir() else []
    shards, problems = [], []
    for path in found:
        try:
            metadata = pq.read_schema(path).metadata or {}
        except Exception as err:  # noqa: BLE001 - any unreadable footer: left out, named
            problems.append(f"{path.name}: unreadable ({type(err).__name__})")
            continue
        if SCHEMA_KEY in metadata:
            shards.append((path, metadata.get(CAMPAIGN_KEY, b"").decode(errors="replace")))
        else:
            problems.append(f"{path.name}: not a drivesim results shard")
    mine = campaign_key(results.parent)
    if mine is None and shards:
        mine = collections.Counter(key for _, key in shards).most_common(1)[0][0]
    paths = [path for path, key in shards if key in (mine, "")]  # "": written before keys
    problems += [f"{path.name}: written by another campaign" for path, key in shards if key not in (mine, "")]
    if paths:
        problems.append(f"no {LEDGER_NAME}: {len(paths)} shards read unchecked")
    return paths, problems


_CHECKED: dict[tuple, str | None] = {}  # (path, size, mtime_ns, digest) -> _check_one's finding
_WARNED: set[tuple] = set()


def _reader_check(directory, shard, rows, digest, size, mtime_ns) -> str | None:
    if not shard:
        return "no shard recorded"
    path = inside_results(directory, shard)
    if path is None:
        return f"outside the campaign's {RESULTS_DIR}/, not read"
    try:
        stat = path.stat()
    except OSError:
        return "missing"
    if size is not None and stat.st_size != size:
        return f"{stat.st_size} bytes, the ledger recorded {size}"
    if mtime_ns is not None and stat.st_mtime_ns == mtime_ns:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns, digest)
    if key not in _CHECKED:
        _CHECKED[key] = _check_one(path, rows, digest)
    return _CHECKED[key]


def _warn_once(directory: pathlib.Path, problems: list[str], ledger: bool = True) -> None:
    import logging

    key = (str(directory.resolve()), tuple(problems))
    if key in _WARNED:
        return
    _WARNED.add(key)
    shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
    if not ledger:
        logging.getLogger("drivesim.results").warning(
            "%s: results read without a ledger (%s)", directory, shown
        )
        return
    logging.getLogger("drivesim.results").warning(
        "%s: %d done batches left out, their shards missing or damaged (%s); "
        "drivesim run --resume %s redoes them",
        directory,
        len(problems),
        shown,
        directory,
    )
