"""Case families on catalogue sources and missing paths."""

from __future__ import annotations

import os
import shutil

from adversarial.harness import Harness, done_rows, run_args

# ---------------------------------------------------------------- family: catalogue sources

CATALOGUE: tuple[tuple[str, dict, tuple[str, ...]], ...] = (
    ("--count without a grid", {"source": "catalogue:cut_in", "count": "4000"}, ("count",)),
    ("grid count 0", {"source": "catalogue:cut_in?gap=5:40:0", "count": None}, ("gap",)),
    ("grid start nan", {"source": "catalogue:cut_in?gap=nan:40:8", "count": None}, ("gap",)),
    ("grid value 1e309", {"source": "catalogue:cut_in?gap=1e309", "count": None}, ("gap",)),
    (
        "grid outside the parameter's range",
        {"source": "catalogue:cut_in?gap=0:1000:4", "count": None},
        ("gap",),
    ),
    (
        "grid of 10**10 points",
        {"source": "catalogue:cut_in?gap=5:40:100000,dv=-10:0:100000", "count": None},
        ("points",),
    ),
    ("unknown parameter", {"source": "catalogue:cut_in?foo=1:2:3", "count": None}, ("foo",)),
    ("unknown family", {"source": "catalogue:nosuch?gap=1:2:2", "count": None}, ("nosuch",)),
    ("parameter twice", {"source": "catalogue:cut_in?gap=5:40:2,gap=1:2:2", "count": None}, ("gap",)),
    ("samples=-1", {"source": "catalogue:cut_in?gap=5:40&samples=-1", "count": None}, ("samples",)),
    ("samples=0", {"source": "catalogue:cut_in?gap=5:40&samples=0", "count": None}, ("samples",)),
    ("samples=nan", {"source": "catalogue:cut_in?gap=5:40&samples=nan", "count": None}, ("samples",)),
    (
        "samples=10**12",
        {"source": "catalogue:cut_in?gap=5:40&samples=1000000000000", "count": None},
        ("samples",),
    ),
    ("LO:HI without samples", {"source": "catalogue:cut_in?gap=5:40", "count": None}, ("gap",)),
    (
        "grid and samples mixed",
        {"source": "catalogue:cut_in?gap=5:40:8&samples=10", "count": None},
        ("samples",),
    ),
    ("malformed grid text", {"source": "catalogue:cut_in?gap", "count": None}, ("gap",)),
    ("--grid malformed", {"source": "catalogue:cut_in", "grid": "gap=5:40:8:9", "count": None}, ("gap",)),
)


def family_catalogue(h: Harness) -> None:
    """catalogue:FAMILY sources with bad grids and sample counts (refused up front)."""
    for name, opts, names in CATALOGUE:
        with h.case("catalogue", name, f"exit 2, one line naming {names[0]!r}; nothing written") as c:
            out = h.fresh(f"cat-{len(h.cases)}")
            c.judge(c.ds(*run_args(out, agents=None, **opts), timeout=90), 2, names, one_line=True)
            if out.exists():
                c.fail("wrong", "the campaign directory was created")

    with h.case("catalogue", "no grid, no --count (control)", "exit 0, one scenario at the defaults") as c:
        d = h.fresh("cat-defaults")
        p = c.ds(*run_args(d, agents=None, source="catalogue:cut_in", count=None))
        if c.judge(p, 0) and done_rows(d)[0] != 1:
            c.fail("wrong", f"rows {done_rows(d)}, expected 1")


# ---------------------------------------------------------------- family: missing directories


def family_missing(h: Harness) -> None:
    """Readers and run --resume on missing directories, empty ones, plain files."""
    gone = h.scratch / "no-such-campaign"
    empty = h.fresh("empty-dir")
    empty.mkdir()
    plain = h.fresh("plain-file")
    plain.write_text("x\n")
    for target, label, names in (
        (gone, "a missing directory", ("no such campaign",)),
        (empty, "an empty directory", ("not a campaign",)),
        (plain, "a plain file", ("plain-file",)),
    ):
        for args in (
            ("query", target, "SELECT 1"),
            ("summary", target),
            ("verify", target),
            ("report", target),
            ("export", target),
            ("show", target, "--scenario", "0"),
            ("compare", h.ref, target),
            ("refine", target),
            ("run", "--resume", target),
        ):
            # the docs give the words for query/summary/verify; the others must name the path
            want = names if args[0] in ("query", "summary", "verify") else (target.name,)
            with h.case(
                "missing",
                f"{args[0]} on {label}",
                f"exit 1 (or 2), one line naming {want[0]!r}; nothing created",
            ) as c:
                c.judge(c.ds(*args), (1, 2), want, one_line=True)
                if target == gone and gone.exists():
                    c.fail("wrong", "the missing directory was created")
                    shutil.rmtree(gone)
                if target == empty and any(empty.iterdir()):
                    c.fail(
                        "wrong", f"files written into the empty directory: {sorted(os.listdir(empty))[:3]}"
                    )
                    shutil.rmtree(empty)
                    empty.mkdir()
    for args, names in (
        (("scenarios", "info", h.scratch / "no.parquet"), ("no.parquet",)),
        (("import", "commonroad", h.scratch / "no.xml", "--out", h.scratch / "n.parquet"), ("no.xml",)),
        (
            ("run", "--source", f"store:{h.scratch / 'no.parquet'}", "--out", h.fresh("m-store")),
            ("no.parquet",),
        ),
        (("run", "--source", f"commonroad:{h.scratch / 'no.xml'}", "--out", h.fresh("m-cr")), ("no.xml",)),
    ):
        with h.case(
            "missing", f"{' '.join(map(str, args[:2]))} on a missing file", "exit 1 or 2, one line naming it"
        ) as c:
            c.judge(c.ds(*args), (1, 2), names)
