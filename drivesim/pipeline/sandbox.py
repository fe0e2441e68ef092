"""Locking a DuckDB connection down once the ``results`` view exists.

``drivesim query`` runs user SQL: after the view is defined, :func:`lock_down` allows file
access only to the campaign's ledger-named shards (``allowed_paths``), turns external access
off (no reads or writes elsewhere, no COPY TO, no ATTACH, no INSTALL or LOAD of extensions)
and locks the configuration so the SQL cannot turn it back on. ``--unsafe`` skips it.
"""

from __future__ import annotations

import pathlib

from drivesim.pipeline.ledger import LEDGER_NAME


def require_campaign(directory) -> None:
    """FileNotFoundError when ``directory`` is not a campaign directory (no silent 0 rows)."""
    directory = pathlib.Path(directory)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no such campaign directory")
    if not (directory / LEDGER_NAME).is_file() and not (directory / "results").is_dir():
        raise FileNotFoundError(f"{directory}: not a campaign directory (no {LEDGER_NAME}, no results/)")


def _quoted(paths) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def lock_down(con, directory) -> None:
    """Restrict ``con`` to reading the campaign's named shards; the config is then locked."""
    from drivesim.pipeline.verify import named_shards

    named = named_shards(directory)
    shards = sorted({str(p) for p in named} | {str(p.resolve()) for p in named})
    if shards:
        con.execute(f"SET allowed_paths = {_quoted(shards)}")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
