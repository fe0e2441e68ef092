"""Per-worker throughput of a campaign run on a Ray cluster, read from the ledger.

Each done batch records the worker that wrote it (``batches.worker``) and its phases; a
worker's rate is its scenarios over the span from its first batch's start to its last batch's
end (wall clock, so a worker that joined late or died early is measured over its own span).
"""

from __future__ import annotations

import pathlib

from drivesim.pipeline.ledger import LEDGER_NAME, read_only

_SQL = """
SELECT b.worker, COUNT(*), SUM(p.num_scenarios), MIN(p.wall_start), MAX(p.wall_end),
       SUM(COALESCE(p.compute_s, 0)), SUM(COALESCE(p.compile_s, 0))
FROM batches b JOIN phases p ON p.batch_id = b.batch_id
WHERE b.status = 'done' AND b.worker IS NOT NULL
GROUP BY b.worker ORDER BY b.worker
"""


def worker_throughput(directory) -> list[dict]:
    """One dict per worker: worker, batches, scenarios, span_s, scenarios_per_s, compute_s,
    compile_s (empty for a campaign run embedded, or a ledger older than the column)."""
    path = pathlib.Path(directory) / LEDGER_NAME
    if not path.is_file():
        return []
    con = read_only(directory)
    try:
        if "worker" not in {row[1] for row in con.execute("PRAGMA table_info(batches)")}:
            return []
        rows = con.execute(_SQL).fetchall()
    finally:
        con.close()
    out = []
    for worker, batches, scenarios, start, end, compute, compile_s in rows:
        span = (end - start) if start is not None and end is not None else None
        rate = scenarios / span if span else None
        out.append(
            dict(
                worker=worker,
                batches=batches,
                scenarios=scenarios,
                span_s=span,
                scenarios_per_s=rate,
                compute_s=compute,
                compile_s=compile_s,
            )
        )
    return out


def workers_table(rows: list[dict]):
    """A rich Table of :func:`worker_throughput`."""
    from rich.table import Table

    table = Table(title="Ray workers")
    for header in ("worker", "batches", "scenarios", "span s", "scen/s", "compute s"):
        table.add_column(header, justify="right")
    for r in rows:
        table.add_row(
            r["worker"],
            str(r["batches"]),
            str(r["scenarios"]),
            _fmt(r["span_s"]),
            _fmt(r["scenarios_per_s"]),
            _fmt(r["compute_s"]),
        )
    return table


def _fmt(value) -> str:
    return "-" if value is None else f"{value:,.1f}"
