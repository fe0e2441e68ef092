"""The campaign ledger: SQLite in WAL mode (tables in docs/CAMPAIGN_FORMAT.md).

Durability: WAL with ``synchronous=NORMAL``. A committed transaction survives the process
being killed (``kill -9``, a crash): the WAL is in the OS page cache and SQLite replays it on
the next open. What NORMAL gives up is the last transactions on a power loss or OS crash;
a batch lost that way is simply redone on resume (its shard is fsync'ed before the batch is
marked done, so no ledger entry ever points at a missing shard). This saves one fsync per
batch on the writer thread.

``batches`` holds every planned batch (its scenario ids and status), ``phases`` the per-batch
timings, ``meta`` key/values, ``windows`` which planning windows have a recorded plan,
``window_starts`` the stop and batch size each window was begun with (a window begun and not
planned is planned again with them on resume, whatever the batch size of the resuming run) and
``failures`` one row per scenario that failed to load or validate. A batch is marked done only
after its Parquet shard is durable. Each thread opens its own :class:`Ledger` (sqlite3
connections are not shared between threads).
"""

from __future__ import annotations

import json
import pathlib
import sqlite3
import time
from dataclasses import dataclass

LEDGER_NAME = "ledger.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS batches(
    batch_id INTEGER PRIMARY KEY, scenario_ids TEXT, status TEXT, error TEXT,
    attempts INTEGER DEFAULT 0, shard TEXT, updated_at REAL, size_class INTEGER, window_id INTEGER);
CREATE TABLE IF NOT EXISTS phases(
    batch_id INTEGER PRIMARY KEY, num_scenarios INTEGER, size_class INTEGER, wall_start REAL,
    wall_end REAL, load_s REAL, h2d_s REAL, compute_s REAL, d2h_s REAL, write_s REAL,
    compiled_bytes INTEGER, device_bytes_in_use INTEGER, device_peak_bytes INTEGER,
    host_rss_bytes INTEGER, compile_s REAL);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS windows(window_id INTEGER PRIMARY KEY, start INTEGER, stop INTEGER,
    num_batches INTEGER);
CREATE TABLE IF NOT EXISTS window_starts(window_id INTEGER PRIMARY KEY, stop INTEGER,
    batch_size INTEGER);
CREATE TABLE IF NOT EXISTS failures(scenario_id INTEGER PRIMARY KEY, batch_id INTEGER, reason TEXT);
CREATE INDEX IF NOT EXISTS batches_window ON batches(window_id);
"""

# Added after the first ledgers were written: a done batch's shard row count and SHA-256
# (checked by drivesim.pipeline.verify), then its size and modification time (the readers'
# cheap check); older ledgers get the columns on open.
SHARD_CHECK_COLUMNS = (
    ("shard_rows", "INTEGER"),
    ("shard_sha256", "TEXT"),
    ("shard_bytes", "INTEGER"),
    ("shard_mtime_ns", "INTEGER"),
)


@dataclass(frozen=True)
class ShardCheck:
    """What the ledger records of a durable shard: rows, SHA-256 hex digest, and the file's
    size [bytes] and modification time [ns] when it was recorded (None: not known)."""

    rows: int
    sha256: str
    size: int | None = None
    mtime_ns: int | None = None


# Added with campaigns on a Ray cluster: which worker wrote a done batch (NULL: the embedded run).
WORKER_COLUMN = ("worker", "TEXT")

PHASE_COLUMNS = (
    "num_scenarios",
    "size_class",
    "wall_start",
    "wall_end",
    "load_s",
    "h2d_s",
    "compute_s",
    "d2h_s",
    "write_s",
    "compiled_bytes",
    "device_bytes_in_use",
    "device_peak_bytes",
    "host_rss_bytes",
    "compile_s",
)


@dataclass(frozen=True)
class PlannedBatch:
    """One batch of a window plan: its id (= its smallest position), positions in order
    and the agent size class it runs in (0 for a batch of failed scenarios only)."""

    batch_id: int
    positions: tuple[int, ...]
    size_class: int


def read_only(directory) -> sqlite3.Connection:
    """A read-only connection to ``directory``'s ledger (waits up to 30 s on a writer's lock);
    the caller closes it."""
    path = pathlib.Path(directory) / LEDGER_NAME
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0)
    try:
        conn.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as err:
        conn.close()
        raise damaged(path, err) from None
    return conn


class LedgerDamaged(RuntimeError):
    """The ledger file is not an SQLite database (overwritten, truncated)."""


def damaged(path: pathlib.Path, err: BaseException) -> BaseException:
    """The error for a ledger that SQLite cannot read: LedgerDamaged naming the file, or ``err``
    itself when it is not about the file's content (a lock, a full disk)."""
    if isinstance(err, sqlite3.OperationalError) and "malformed" not in str(err):
        return err
    return LedgerDamaged(
        f"{path}: the campaign ledger is damaged ({err}); its shards in results/ are intact, but "
        "the record of what is done is lost: restore the file, or run the campaign again in a new directory"
    )


class Ledger:
    """One connection to ``DIR/ledger.sqlite`` (WAL mode, 30 s busy timeout)."""

    def __init__(self, directory):
        self.path = pathlib.Path(directory) / LEDGER_NAME
        self.conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            self.conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as err:
            self.conn.close()
            raise damaged(self.path, err) from None
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.executescript(SCHEMA)
        _add_missing_columns(self.conn)
        have = {row[1] for row in self.conn.execute("PRAGMA table_info(batches)")}
        for name, kind in (*SHARD_CHECK_COLUMNS, WORKER_COLUMN):
            if name not in have:
                try:
                    self.conn.execute(f"ALTER TABLE batches ADD COLUMN {name} {kind}")
                except sqlite3.OperationalError:  # another process of the campaign added it first
                    pass

    def close(self) -> None:
        self.conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- meta ---------------------------------------------------------------------------
    def set_meta(self, **values) -> None:
        rows = [(k, v if isinstance(v, str) else json.dumps(v)) for k, v in values.items()]
        self.conn.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", rows)

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM meta"))

    # -- plan ---------------------------------------------------------------------------
    def window_planned(self, window_id: int) -> bool:
        row = self.conn.execute("SELECT 1 FROM windows WHERE window_id=?", (window_id,)).fetchone()
        return row is not None

    def planned_stop(self, window_id: int) -> int | None:
        """The stop position a planned window was planned up to (None: not planned)."""
        row = self.conn.execute("SELECT stop FROM windows WHERE window_id=?", (window_id,)).fetchone()
        return None if row is None else int(row[0])

    def begin_window(self, window_id: int, stop: int, batch_size: int) -> tuple[int, int]:
        """Record that window ``window_id`` (its first position) is planned up to ``stop`` in
        batches of ``batch_size``, unless it was begun before (then, or by a drivesim older than
        ``window_starts``: :meth:`_begun_by_older`, it keeps what it was begun with); returns the
        (stop, batch size) in force for it."""
        query = "SELECT stop, batch_size FROM window_starts WHERE window_id=?"
        row = self.conn.execute(query, (window_id,)).fetchone()
        if row is None:
            stop, batch_size = self._begun_by_older(window_id) or (stop, batch_size)
            begun = (window_id, stop, batch_size)
            self.conn.execute("INSERT OR IGNORE INTO window_starts VALUES (?,?,?)", begun)
            row = self.conn.execute(query, (window_id,)).fetchone()  # another process's, if it came first
        return int(row[0]), int(row[1])

    def _begun_by_older(self, window_id: int) -> tuple[int, int] | None:
        """(stop, batch size) of a window with batches recorded and no start row (an older
        drivesim began it and did not plan it): from the batch size and window of the
        campaign's first start (meta ``identity`` then held them); None otherwise."""
        known = self.conn.execute("SELECT 1 FROM batches WHERE window_id=? LIMIT 1", (window_id,)).fetchone()
        if known is None:
            return None
        identity = json.loads(self.meta().get("identity") or "{}")
        size, batches = identity.get("batch_size"), identity.get("window_batches", 8)
        if not isinstance(size, int) or not isinstance(batches, int):
            return None
        return window_id + size * batches, size

    def record_plan(self, window_id: int, start: int, stop: int, batches: list[PlannedBatch]) -> None:
        """Insert a window's batches as pending and mark the window planned (one transaction)."""
        now = time.time()
        rows = [
            (
                b.batch_id,
                json.dumps(list(b.positions)),
                "pending",
                None,
                0,
                None,
                now,
                b.size_class,
                window_id,
            )
            for b in batches
        ]
        with self._transaction():
            self.conn.executemany(
                "INSERT OR IGNORE INTO batches(batch_id, scenario_ids, status, error, attempts, shard,"
                " updated_at, size_class, window_id) VALUES (?,?,?,?,?,?,?,?,?)",
                rows,
            )
            self.conn.execute(
                "INSERT OR REPLACE INTO windows VALUES (?,?,?,?)", (window_id, start, stop, len(batches))
            )

    def record_batch(self, window_id: int, batch: PlannedBatch) -> None:
        """Insert one batch as pending (kept as it is if already known)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO batches(batch_id, scenario_ids, status, attempts, updated_at, size_class,"
            " window_id) VALUES (?,?,?,?,?,?,?)",
            (
                batch.batch_id,
                json.dumps(list(batch.positions)),
                "pending",
                0,
                time.time(),
                batch.size_class,
                window_id,
            ),
        )

    def done_ids(self, window_id: int) -> set[int]:
        """Ids of the window's batches already done."""
        rows = self.conn.execute(
            "SELECT batch_id FROM batches WHERE window_id=? AND status='done'", (window_id,)
        )
        return {b for (b,) in rows}

    def open_batches(self, window_id: int) -> list[PlannedBatch]:
        """Batches of a planned window that are not done, by batch id."""
        rows = self.conn.execute(
            "SELECT batch_id, scenario_ids, size_class FROM batches WHERE window_id=? AND status!='done'"
            " ORDER BY batch_id",
            (window_id,),
        )
        return [PlannedBatch(b, tuple(json.loads(ids)), sc) for b, ids, sc in rows]

    # -- outcome ------------------------------------------------------------------------
    def mark_done(
        self,
        batch_id: int,
        shard: str,
        phases: dict,
        failures: list[tuple[int, str]],
        check: ShardCheck | None = None,
        worker: str | None = None,
    ) -> None:
        """Mark a batch done (its shard is durable), store its phases and failed scenarios;
        ``check``: what drivesim.pipeline.verify checks the shard against;
        ``worker``: the cluster worker that wrote it (None in the embedded run)."""
        c = check if check is not None else ShardCheck(None, None)  # type: ignore[arg-type]
        cols = ", ".join(PHASE_COLUMNS)
        marks = ", ".join("?" for _ in PHASE_COLUMNS)
        with self._transaction():
            self.conn.execute(
                "UPDATE batches SET status='done', error=NULL, attempts=attempts+1, shard=?, updated_at=?,"
                " shard_rows=?, shard_sha256=?, shard_bytes=?, shard_mtime_ns=?, worker=? WHERE batch_id=?",
                (shard, time.time(), c.rows, c.sha256, c.size, c.mtime_ns, worker, batch_id),
            )
            self.conn.execute(
                f"INSERT OR REPLACE INTO phases(batch_id, {cols}) VALUES (?, {marks})",
                (batch_id, *[phases.get(c) for c in PHASE_COLUMNS]),
            )
            self.conn.executemany(
                "INSERT OR REPLACE INTO failures VALUES (?,?,?)",
                [(sid, batch_id, reason) for sid, reason in failures],
            )

    def mark_failed(self, batch_id: int, error: str) -> None:
        """Record a batch whose compute failed; a resume redoes it."""
        self.conn.execute(
            "UPDATE batches SET status='failed', error=?, attempts=attempts+1, updated_at=? WHERE batch_id=?",
            (error, time.time(), batch_id),
        )

    # -- reading ------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Number of batches per status."""
        return dict(self.conn.execute("SELECT status, COUNT(*) FROM batches GROUP BY status"))

    def done_scenarios(self) -> int:
        """Scenarios in done batches."""
        total = 0
        for (ids,) in self.conn.execute("SELECT scenario_ids FROM batches WHERE status='done'"):
            total += len(json.loads(ids))
        return total

    def failure_count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM failures").fetchone()[0]

    def phase_rows(self) -> list[dict]:
        cur = self.conn.execute("SELECT * FROM phases ORDER BY batch_id")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=False)) for row in cur]

    def _transaction(self):
        return _Transaction(self.conn)


def _add_missing_columns(conn) -> None:
    """Ledgers written before ``phases.compile_s`` existed gain the column (NULL = unknown)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(phases)")}
    if "compile_s" not in have:
        try:
            conn.execute("ALTER TABLE phases ADD COLUMN compile_s REAL")
        except sqlite3.OperationalError:  # another connection added it meanwhile
            pass


class _Transaction:
    def __init__(self, conn):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *_):
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
