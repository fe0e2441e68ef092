"""Export a campaign's ``results`` view as CSV, Parquet or JSON lines (strict JSON: NaN and
Inf become null; CSV leaves them as ``nan`` / ``inf`` as DuckDB and pandas read them). The
view's ``params`` map is an object in JSON lines and a map in Parquet; CSV leaves it out
(``name`` holds the same values)."""

from __future__ import annotations

import io
from pathlib import Path

from drivesim.report.strict_json import dumps


def export_results(directory, fmt: str, out) -> int:
    """Write every result row of ``directory`` to ``out`` (a path, or a text stream for csv /
    jsonl); returns the number of rows."""
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from drivesim.pipeline.results import plain_rows, results_table, without_maps

    table = results_table(directory)
    if fmt == "parquet":
        if not isinstance(out, (str, Path)):
            raise ValueError("parquet export needs a file (--out FILE)")
        pq.write_table(table, out)
    elif fmt == "csv":
        buffer = io.BytesIO()
        pacsv.write_csv(without_maps(table), buffer)
        _write_text(out, buffer.getvalue().decode())
    elif fmt == "jsonl":
        lines = [dumps(row) for row in plain_rows(table)]
        _write_text(out, "".join(line + "\n" for line in lines))
    else:
        raise ValueError(f"unknown export format {fmt!r} (csv | parquet | jsonl)")
    return table.num_rows


def _write_text(out, text: str) -> None:
    if isinstance(out, (str, Path)):
        Path(out).write_text(text, encoding="utf-8")
    else:
        out.write(text)
        out.flush()
