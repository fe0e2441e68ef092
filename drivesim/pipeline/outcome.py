"""What went wrong in a campaign, for the end-of-run summary (read from the ledger)."""

from __future__ import annotations

import collections
import pathlib
import re

from drivesim.pipeline.ledger import LEDGER_NAME, Ledger

_SCENARIO = re.compile(r"(scenario|file) [^,:]+")


def failure_reasons(directory, top: int = 5) -> list[tuple[str, int]]:
    """The ``top`` most common reasons of failed scenarios, with their counts (scenario ids
    and file names folded so similar failures group together)."""
    if not (pathlib.Path(directory) / LEDGER_NAME).is_file():
        return []
    with Ledger(directory) as ledger:
        reasons = [r for (r,) in ledger.conn.execute("SELECT reason FROM failures")]
    counts = collections.Counter(_SCENARIO.sub(r"\1 *", (r or "").splitlines()[0])[:160] for r in reasons)
    return counts.most_common(top)
