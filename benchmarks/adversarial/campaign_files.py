"""Case families on a finished campaign's files: CLI options, campaign.toml, the ledger and
the result shards."""

from __future__ import annotations

import json
from pathlib import Path

from adversarial.harness import Harness, check_kept, done_rows, run_args, snapshot

# ---------------------------------------------------------------- family: CLI options

RUN_USAGE: tuple[tuple[str, dict, tuple[str, ...]], ...] = (
    ("steps 0", {"steps": "0"}, ("--steps",)),
    ("steps negative", {"steps": "-5"}, ("--steps",)),
    ("steps 10001", {"steps": "10001"}, ("--steps",)),
    ("steps nan", {"steps": "nan"}, ("--steps",)),
    ("count 0", {"count": "0"}, ("--count",)),
    ("count -1", {"count": "-1"}, ("--count",)),
    ("count 10**12", {"count": str(10**12)}, ("--count",)),
    ("count nan", {"count": "nan"}, ("--count",)),
    ("agents 0", {"agents": "0"}, ("--agents",)),
    ("agents 129", {"agents": "129"}, ("--agents",)),
    ("batch-size 0", {"batch_size": "0"}, ("batch",)),
    ("batch-size -1", {"batch_size": "-1"}, ("batch",)),
    ("batch-size 65537", {"batch_size": "65537"}, ("batch",)),
    ("batch-size nan", {"batch_size": "nan"}, ("batch",)),
    ("batch-size 1e3", {"batch_size": "1e3"}, ("batch",)),
    ("chunk 0", {"chunk": "0"}, ("chunk",)),
    ("chunk -3", {"chunk": "-3"}, ("chunk",)),
    ("chunk autox", {"chunk": "autox"}, ("chunk",)),
    ("devices 0", {"devices": "0"}, ("--devices",)),
    ("devices 999", {"devices": "999"}, ("devices",)),
    ("seed -1", {"seed": "-1"}, ("--seed",)),
    ("seed 2**31", {"seed": str(2**31)}, ("--seed",)),
    ("loader-threads 0", {"loader_threads": "0"}, ("--loader-threads",)),
    ("loader-threads 65", {"loader_threads": "65"}, ("--loader-threads",)),
    ("stall-timeout -1", {"stall_timeout": "-1"}, ("--stall-timeout",)),
    ("stall-timeout nan", {"stall_timeout": "nan"}, ("stall",)),
    ("backend bogus", {"backend": "bogus"}, ("bogus",)),
    ("policy bogus", {"policy": "bogus"}, ("bogus",)),
    ("policy module without name", {"policy": "os.path:"}, ("os.path",)),
    ("source kind bogus", {"source": "bogus:x"}, ("bogus",)),
    ("source family unknown", {"source": "synthetic:nosuch"}, ("nosuch",)),
    ("source empty", {"source": ""}, ("source",)),
    ("policy constant with --sweep", {"policy": "constant", "sweep": "{sweep}"}, ("sweep",)),
    ("workers without --cluster", {"workers": "2"}, ("--cluster",)),
    ("workers 0", {"workers": "0", "cluster": "ray"}, ("--workers",)),
    ("cluster bogus", {"cluster": "spark"}, ("spark",)),
    ("process-id 5 of 2", {"num_processes": "2", "process_id": "5"}, ("process",)),
    ("num-processes -1", {"num_processes": "-1"}, ("process",)),
    ("grid without catalogue source", {"grid": "gap=5:40:8"}, ("grid",)),
    ("out empty string", {"out": ""}, ("out",)),
)

OTHER_USAGE: tuple[tuple[str, tuple[str, ...], int | tuple[int, ...], tuple[str, ...]], ...] = (
    ("compare ref ref", ("compare", "{ref}", "{ref}"), 2, ("same",)),
    ("compare ref ref/", ("compare", "{ref}", "{ref}/"), 2, ("same",)),
    ("run REF --out OTHER", ("run", "{ref}", "--out", "{scratch}/other"), 2, ("two",)),
    ("report --port 99999", ("report", "{ref}", "--serve", "--port", "99999"), 2, ("--port",)),
    ("report --port -1", ("report", "{ref}", "--serve", "--port", "-1"), 2, ("--port",)),
    ("export --format xml", ("export", "{ref}", "--format", "xml"), 2, ("xml",)),
    ("show --scenario 99999", ("show", "{ref}", "--scenario", "99999"), (1, 2), ("99999",)),
    ("show --scenario -1", ("show", "{ref}", "--scenario", "-1"), (1, 2), ("-1",)),
    ("show --scenario abc", ("show", "{ref}", "--scenario", "abc"), 2, ("--scenario",)),
    ("show --policy nosuch", ("show", "{ref}", "--scenario", "0", "--policy", "nosuch"), 2, ("nosuch",)),
    ("refine --rounds 0", ("refine", "{ref}", "--rounds", "0"), 2, ("rounds",)),
    ("refine on a synthetic campaign", ("refine", "{ref}"), 2, ("catalogue",)),
    (
        "import --dt 0",
        ("import", "commonroad", "{xml}", "--out", "{scratch}/dt0.parquet", "--dt", "0"),
        2,
        ("dt",),
    ),
    (
        "import --dt nan",
        ("import", "commonroad", "{xml}", "--out", "{scratch}/dtn.parquet", "--dt", "nan"),
        2,
        ("dt",),
    ),
    (
        "import --dt -1",
        ("import", "commonroad", "{xml}", "--out", "{scratch}/dtm.parquet", "--dt", "-1"),
        2,
        ("dt",),
    ),
    (
        "generate --count 0",
        ("scenarios", "generate", "highway", "--count", "0", "--out", "{scratch}/g0.parquet"),
        2,
        ("--count",),
    ),
    (
        "generate --seed -1",
        ("scenarios", "generate", "highway", "--count", "2", "--seed", "-1", "--out", "{scratch}/gs.parquet"),
        2,
        ("seed",),
    ),
    (
        "generate --first-id 2**31-1 (ids past int32)",
        (
            "scenarios",
            "generate",
            "highway",
            "--count",
            "4",
            "--first-id",
            str(2**31 - 1),
            "--out",
            "{scratch}/gf.parquet",
        ),
        2,
        ("first",),
    ),
    (
        "generate family bogus",
        ("scenarios", "generate", "bogus", "--count", "2", "--out", "{scratch}/gb.parquet"),
        2,
        ("bogus",),
    ),
)


def family_cli(h: Harness) -> None:
    """Option values out of range, of the wrong type, unknown enums and conflicting options."""
    for name, opts, names in RUN_USAGE:
        with h.case("cli", f"run {name}", "exit 2, one 'error' line naming the option; nothing written") as c:
            out, cwd = h.fresh(f"cli-{len(h.cases)}"), h.fresh(f"cwd-{len(h.cases)}")
            cwd.mkdir()
            opts = {k: v.format(sweep=h.fix / "sweep.toml") for k, v in opts.items()}
            empty_out = opts.pop("out", None) == ""
            args = run_args(out, **opts)
            if empty_out:
                args[-1] = ""
            c.judge(c.ds(*args, cwd=cwd), 2, names, one_line=True)
            if out.exists() or any(cwd.iterdir()):
                c.fail("wrong", "a campaign directory was created")
    xml = h.fix / "cr" / "base.xml"
    for name, args, rc, names in OTHER_USAGE:
        with h.case("cli", name, f"exit {rc}, one 'error' line naming {names[0]!r}; nothing written") as c:
            before = snapshot(h.ref)
            fmt = {"ref": h.ref, "scratch": h.scratch, "xml": xml}
            argv = [a.format(**fmt) for a in args]
            p = c.ds(*argv)
            c.judge(p, rc, names, one_line=True)
            check_kept(c, h.ref, before)
            for a in argv:
                if a.startswith(str(h.scratch)) and Path(a).exists():
                    c.fail("wrong", f"{a} was written")
    with h.case("cli", "--debug shows the traceback", "exit 2 with the error line and a traceback") as c:
        p = c.ds("--debug", *run_args(h.fresh("dbg"), policy="bogus"))
        c.judge(p, 2, ("bogus",), debug=True)
    with h.case(
        "cli", "DRIVESIM_DEBUG=1 shows the traceback", "exit 2 with the error line and a traceback"
    ) as c:
        p = c.ds(*run_args(h.fresh("dbg2"), policy="bogus"), env={"DRIVESIM_DEBUG": "1"})
        c.judge(p, 2, ("bogus",), debug=True)


# ---------------------------------------------------------------- family: campaign.toml


def edit_toml(d: Path, key: str, value: str | None) -> None:
    """Set (or with None delete) top-level ``key = value`` (value as TOML text) in campaign.toml."""
    import tomllib

    path = d / "campaign.toml"
    config = tomllib.loads(path.read_text())
    lines = [] if value is None else [f"{key} = {value}"]
    lines += [f"{k} = {_toml(v)}" for k, v in config.items() if k != key]
    path.write_text("\n".join(lines) + "\n")


def _toml(value) -> str:
    """TOML text of a flat campaign.toml value (strings, numbers, booleans, lists of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def family_toml(h: Harness) -> None:
    """campaign.toml edited by hand, then --resume or a reader."""
    refused = (
        ("num_steps 10 -> 20", "num_steps", "20", ("num_steps",)),
        ("count = 'abc'", "count", '"abc"', ("count",)),
        ("num_steps = nan", "num_steps", "nan", ("num_steps",)),
        ("batch_size = 0", "batch_size", "0", ("batch_size",)),
        ("sources = commonroad:/etc/passwd", "sources", '["commonroad:/etc/passwd"]', ("source",)),
        ("sweep = /etc/passwd", "sweep", '"/etc/passwd"', ("sweep",)),
        ("seed = -1", "seed", "-1", ("seed",)),
    )
    for name, key, value, names in refused:
        with h.case("toml", f"{name}, run --resume", f"exit 2 naming {names[0]}; shards kept") as c:
            d = h.clone(f"toml-{len(h.cases)}")
            edit_toml(d, key, value)
            before = snapshot(d)
            c.judge(c.ds("run", "--resume", d), 2, names, one_line=True)
            check_kept(c, d, before)
    with h.case("toml", "loader_threads 2 -> 1, run --resume", "exit 0 (a how-field); 16 rows kept") as c:
        d = h.clone("toml-threads")
        edit_toml(d, "loader_threads", "1")
        if c.judge(c.ds("run", "--resume", d), 0) and done_rows(d) != (16, 16):
            c.fail("wrong", f"rows after resume {done_rows(d)}, expected (16, 16)")
    for name, text, names in (
        ("junk bytes", "\x00\x01 not = toml [[[\n", ("campaign.toml",)),
        ("empty file", "", ("campaign.toml",)),
        ("duplicate key", None, ("line",)),
        ("arrays nested 50,000 deep", "notes = " + "[" * 50000 + "]" * 50000 + "\n", ("campaign.toml",)),
    ):
        with h.case(
            "toml", f"campaign.toml {name}, run --resume", "exit 2 naming the file/key; shards kept"
        ) as c:
            d = h.clone(f"toml-{len(h.cases)}")
            path = d / "campaign.toml"
            path.write_text(path.read_text() + "count = 17\n" if text is None else text)
            before = snapshot(d)
            c.judge(c.ds("run", "--resume", d), 2, names, one_line=True)
            check_kept(c, d, before)
    with h.case(
        "toml", "campaign.toml deleted, run --resume", "exit 1 or 2 naming campaign.toml; shards kept"
    ) as c:
        d = h.clone("toml-deleted")
        (d / "campaign.toml").unlink()
        before = snapshot(d)
        c.judge(c.ds("run", "--resume", d), (1, 2), ("campaign.toml",), one_line=True)
        check_kept(c, d, before)
    with h.case(
        "toml", "unknown key added, run --resume", "exit 2 naming the key, or 0 (ignored); no traceback"
    ) as c:
        d = h.clone("toml-unknown")
        edit_toml(d, "evil_key", "1")
        p = c.ds("run", "--resume", d)
        c.judge(p, (0, 2), ("evil_key",) if p.rc == 2 else ())
    with h.case("toml", "out = OUTSIDE, run --resume DIR", "exit 0 or 2; nothing written to OUTSIDE") as c:
        d = h.clone("toml-out")
        target = h.outside / "moved-campaign"
        edit_toml(d, "out", json.dumps(str(target)))
        c.judge(c.ds("run", "--resume", d), (0, 2))
        if target.exists():
            c.fail("escape", f"resume wrote outside the campaign: {target}")
    family_policy_code(h)


def family_policy_code(h: Harness) -> None:
    """campaign.toml names code (``advmod_evil:POLICY``, importable): readers must not import it."""
    d = h.clone("toml-code")
    edit_toml(d, "policy", '"advmod_evil:POLICY"')
    readers = (
        ("summary", ("summary", d), 0, ()),
        ("query", ("query", d, "SELECT count(*) FROM results"), 0, ()),
        ("export", ("export", d, "--format", "jsonl"), 0, ()),
        ("verify", ("verify", d), 0, ()),
        ("compare", ("compare", d, h.ref), 0, ()),
        (
            "report (viewers on)",
            ("report", d, "--out", h.scratch / "code-report.html"),
            0,
            ("--import-policy",),
        ),
        (
            "show",
            ("show", d, "--scenario", "0", "--out", h.scratch / "code-show.html"),
            2,
            ("--import-policy",),
        ),
        ("run --resume", ("run", "--resume", d), 2, ("--import-policy",)),
    )
    for name, args, rc, names in readers:
        with h.case("toml", f"policy = module:NAME, {name}", f"exit {rc}; the module is never imported") as c:
            before = snapshot(d)
            c.judge(c.ds(*args), rc, names)
            check_kept(
                c, d, before, ("ledger", "campaign.toml") + tuple(k for k in before if "results/" in k)
            )
    with h.case("toml", "policy = os:abort, report", "exit 0, dashboard written, nothing imported/run") as c:
        d2 = h.clone("toml-abort")
        edit_toml(d2, "policy", '"os:abort"')
        c.judge(c.ds("report", d2), 0, ("--import-policy",))
