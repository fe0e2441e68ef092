"""Collision boundary of a catalogue campaign: per group of parameters, where along one swept
parameter the ego collides (a markdown table on stdout).

    python benchmarks/catalogue_boundary.py DIR --param gap --by decel,speed

Columns: the group's values, scenarios, collisions, the colliding range of ``--param``
[lowest, highest] and the smallest grid value above which every value is safe ("safe from").
"""

from __future__ import annotations

import argparse
import pathlib
from collections import defaultdict

from drivesim.pipeline.results import query
from drivesim.scenarios.catalogue import param_sql


def boundary(directory: pathlib.Path, param: str, by: list[str]) -> list[dict]:
    """One dict per group: group values, n, hits, hit_lo, hit_hi, safe_from (None: none)."""
    cols = ", ".join(f"{param_sql(p)} AS {p}" for p in [*by, param])
    rows = query(directory, f"SELECT {cols}, ego_collided FROM results WHERE status = 'ok'").to_pylist()
    groups: dict[tuple, list[tuple[float, bool]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[p] for p in by)].append((r[param], bool(r["ego_collided"])))
    out = []
    for key in sorted(groups):
        points = sorted(groups[key])
        hits = [v for v, hit in points if hit]
        above = [v for v, _ in points if not hits or v > max(hits)]
        out.append(
            dict(
                zip(by, key, strict=True),
                n=len(points),
                hits=len(hits),
                hit_lo=min(hits) if hits else None,
                hit_hi=max(hits) if hits else None,
                safe_from=min(above) if above else None,
            )
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=pathlib.Path)
    parser.add_argument("--param", required=True, help="the swept parameter (e.g. gap)")
    parser.add_argument("--by", default="", help="comma-separated grouping parameters")
    args = parser.parse_args()
    by = [b for b in args.by.split(",") if b]
    table = boundary(args.directory, args.param, by)
    fmt = lambda v: "-" if v is None else f"{v:g}"  # noqa: E731
    head = [*by, "n", "collisions", f"colliding {args.param}", "safe from"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for g in table:
        span = "-" if g["hit_lo"] is None else f"{fmt(g['hit_lo'])}..{fmt(g['hit_hi'])}"
        cells = [fmt(g[b]) for b in by] + [str(g["n"]), str(g["hits"]), span, fmt(g["safe_from"])]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
