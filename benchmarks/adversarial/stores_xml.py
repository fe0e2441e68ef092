"""Case families on scenario inputs: scenario stores and CommonRoad XML."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
from pathlib import Path

from adversarial.harness import (
    BASE_XML,
    COMMONROAD,
    PASSWD,
    Harness,
    check_kept,
    done_rows,
    failed_rows,
    run_args,
    sha,
    snapshot,
    write_base_store,
)

# ---------------------------------------------------------------- family: scenario stores


def tamper_store(src: Path, dst: Path, column: str, row: int, value, type_=None) -> Path:
    """Copy of store ``src`` with ``column``'s row ``row`` set (a function of the old value);
    ``type_`` gives the column another Arrow type (the column is then rebuilt whole)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(src)
    idx = table.schema.get_field_index(column)
    values = table.column(column).to_pylist()
    values[row] = value(values[row]) if callable(value) else value
    fld = table.schema.field(idx)
    if type_ is not None:
        values = [str(v) for v in values]
        fld = pa.field(column, type_)
    table = table.set_column(idx, fld, pa.array(values, type=fld.type))
    pq.write_table(table.replace_schema_metadata(pq.read_schema(src).metadata), dst)
    return dst


STORE_ROWS: tuple[tuple[str, str, object, tuple[str, ...]], ...] = (
    ("idm_v0 NaN", "idm_v0", lambda v: [float("nan")] * len(v), ("v0",)),
    ("idm_T negative", "idm_T", lambda v: [-1.0] * len(v), ("T",)),
    ("agents_x 1e30", "agents_x", lambda v: [1e30] + v[1:], ("x",)),
    ("agents_speed -50", "agents_speed", lambda v: [-50.0] + v[1:], ("speed",)),
    ("agents_length 0", "agents_length", lambda v: [0.0] + v[1:], ("length",)),
    ("agents_width NaN", "agents_width", lambda v: [float("nan")] + v[1:], ("width",)),
    ("road_widths -1", "road_widths", lambda v: [-1.0] * len(v), ("width",)),
    ("road_widths NaN", "road_widths", lambda v: [float("nan")] * len(v), ("width",)),
    ("road_centers 1e30", "road_centers", lambda v: [1e30] * len(v), ("road",)),
    ("num_agents 10**9", "num_agents", 10**9, ("num_agents",)),
    ("num_agents -5", "num_agents", -5, ("num_agents",)),
    ("ego_index 99", "ego_index", 99, ("ego",)),
    ("episode_length -1", "episode_length", -1, ("episode_length",)),
    ("agents_x list too short", "agents_x", lambda v: v[:3], ("agents_x",)),
    ("class_agents 7 (no such class)", "class_agents", 7, ("size",)),
)


def family_store(h: Harness) -> None:
    """Scenario stores with impossible values, wrong types, duplicates, wrong files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = h.fix / "store.parquet"
    for name, column, value, names in STORE_ROWS:
        with h.case("store", f"row 3 {name}", "exit 0; scenario 3 failed naming the field; 7 ok rows") as c:
            store = tamper_store(base, h.fresh(f"store-{len(h.cases)}.parquet"), column, 3, value)
            d = h.fresh(f"store-run-{len(h.cases)}")
            p = c.ds(*run_args(d, source=f"store:{store}", count=None, agents=None))
            if c.judge(p, 0):
                rows, failed = done_rows(d), failed_rows(d)
                if rows[0] != 8 or len(failed) != 1 or failed[0][0] != 3:
                    c.fail("wrong", f"rows {rows}, failed rows {[f[0] for f in failed]} (expected only id 3)")
                elif not any(n.lower() in failed[0][2].lower() for n in names):
                    c.fail("wrong", f"failure reason does not name {names[0]!r}: {failed[0][2][:120]}")
    with h.case(
        "store", "duplicate scenario ids (row 3 = id 2)", "the duplicate is reported, not two rows of id 2"
    ) as c:
        store = tamper_store(base, h.fresh("store-dup.parquet"), "scenario_id", 3, 2)
        d = h.fresh("store-dup-run")
        p = c.ds(*run_args(d, source=f"store:{store}", count=None, agents=None))
        if c.judge(p, (0, 1, 2)) and p.rc == 0:
            ids = [
                i
                for s in sorted((d / "results").glob("part-*.parquet"))
                for i in pq.read_table(s, columns=["scenario_id"]).column(0).to_pylist()
            ]
            failed = failed_rows(d)
            if ids.count(2) > 1 and not any(
                "id" in f[2].lower() or "duplicate" in f[2].lower() for f in failed
            ):
                c.fail(
                    "wrong",
                    f"two result rows carry scenario_id 2 ({ids.count(2)}), no failure names the duplicate",
                )
    with h.case("store", "column agents_x as strings", "exit 1, one line naming the store") as c:
        store = tamper_store(base, h.fresh("store-type.parquet"), "agents_x", 3, lambda v: v, pa.string())
        c.judge(
            c.ds(*run_args(h.fresh("store-type-run"), source=f"store:{store}", count=None, agents=None)),
            (1, 2),
            ("store-type",),
        )
    with h.case("store", "column idm_T dropped", "exit 1, one line naming the store and idm_T") as c:
        t = pq.read_table(base)
        store = h.fresh("store-drop.parquet")
        pq.write_table(t.drop_columns(["idm_T"]).replace_schema_metadata(t.schema.metadata), store)
        c.judge(
            c.ds(*run_args(h.fresh("store-drop-run"), source=f"store:{store}", count=None, agents=None)),
            (1, 2),
            ("idm_T",),
        )
    with h.case(
        "store", "empty store (0 rows)", "exit 1 'nothing was computed' or one line naming the store"
    ) as c:
        t = pq.read_table(base)
        store = h.fresh("store-empty.parquet")
        pq.write_table(t.slice(0, 0), store)
        c.judge(
            c.ds(*run_args(h.fresh("store-empty-run"), source=f"store:{store}", count=None, agents=None)),
            (1, 2),
            (),
        )
    for name, payload in (("non-Parquet bytes", b"PAR1 not really" * 100), ("a zero-byte file", b"")):
        with h.case("store", f"store is {name}", "exit 1, one line naming the store") as c:
            store = h.fresh(f"store-{len(h.cases)}.parquet")
            store.write_bytes(payload)
            c.judge(
                c.ds(
                    *run_args(
                        h.fresh(f"store-run-{len(h.cases)}"), source=f"store:{store}", count=None, agents=None
                    )
                ),
                1,
                (store.name,),
            )
    for name, meta in (
        ("schema version 1", {b"drivesim.schema_version": b"1"}),
        ("schema version 99", {b"drivesim.schema_version": b"99"}),
        ("no schema metadata", None),
        ("schema version 'x'", {b"drivesim.schema_version": b"x"}),
    ):
        with h.case(
            "store", f"store of {name}", "exit 1, one line naming the store (and convert for v1)"
        ) as c:
            t = pq.read_table(base)
            store = h.fresh(f"store-{len(h.cases)}.parquet")
            pq.write_table(t.replace_schema_metadata(meta), store)
            names = ("convert",) if "version 1" in name else (store.name,)
            c.judge(
                c.ds(
                    *run_args(
                        h.fresh(f"store-run-{len(h.cases)}"), source=f"store:{store}", count=None, agents=None
                    )
                ),
                1,
                names,
            )
    with h.case("store", "ids 1000..1007 kept in results", "exit 0; results carry 1000..1007") as c:
        d = h.fresh("store-ids")
        if c.judge(
            c.ds(*run_args(d, source=f"store:{h.fix / 'store-1000.parquet'}", count=None, agents=None)), 0
        ):
            p = c.ds(
                "query", d, "SELECT min(scenario_id) AS lo, max(scenario_id) AS hi FROM results", "--json"
            )
            if c.judge(p, 0) and json.loads(p.out.splitlines()[-1]) != {"lo": 1000, "hi": 1007}:
                c.fail("wrong", f"ids {p.out.strip()}, expected 1000..1007")
    with h.case("store", "store regenerated at the same path, run --resume", "exit 2 'content changed'") as c:
        store = h.fresh("store-regen.parquet")
        shutil.copy(base, store)
        d = h.fresh("store-regen-run")
        if c.judge(c.ds(*run_args(d, source=f"store:{store}", count=None, agents=None)), 0):
            write_base_store(store, first_id=100)
            before = snapshot(d)
            c.judge(c.ds("run", "--resume", d), 2, ("changed",), one_line=True)
            check_kept(c, d, before, tuple(k for k in before if k.startswith("results/")))
    with h.case("store", "scenarios info, num_agents 10**9 row", "exit 0; says it left one row out") as c:
        store = tamper_store(base, h.fresh("store-info.parquet"), "num_agents", 3, 10**9)
        c.judge(c.ds("scenarios", "info", store), 0, ("not counted",))
    with h.case("store", "scenarios info on junk bytes", "exit 1, one line naming the store") as c:
        store = h.fresh("store-info-junk.parquet")
        store.write_bytes(os.urandom(4096))
        c.judge(c.ds("scenarios", "info", store), 1, (store.name,), one_line=True)
    with h.case("store", "scenarios convert STORE --out STORE", "refused (exit 2) or the store intact") as c:
        store = h.fresh("store-conv.parquet")
        shutil.copy(base, store)
        digest = sha(store)
        p = c.ds("scenarios", "convert", store, "--out", store)
        c.judge(p, (0, 1, 2))
        if not store.exists() or (p.rc != 0 and sha(store) != digest):
            c.fail("loss", "the input store was destroyed")
        elif p.rc == 0:
            from drivesim.scenarios.store import ScenarioStore

            if len(ScenarioStore(store)) != 8:
                c.fail("loss", "converting a store onto itself lost rows")


# ---------------------------------------------------------------- family: CommonRoad XML


def obstacle_sub(text: str, pattern: str, repl: str, nth: int = 0) -> str:
    """Replace the first match of ``pattern`` inside the ``nth`` <dynamicObstacle> element."""
    starts = [m.start() for m in re.finditer("<dynamicObstacle", text)]
    start = starts[nth]
    end = text.index("</dynamicObstacle>", start)
    block = re.sub(pattern, repl, text[start:end], count=1, flags=re.S)
    return text[:start] + block + text[end:]


def xml_variants(base: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(name, XML text, names the failure must carry) of derived, broken CommonRoad files."""
    decl, rest = base.split("?>", 1)
    laughs = "".join(f'<!ENTITY l{i} "{("&l" + str(i - 1) + ";") * 10}">' for i in range(1, 10))
    bomb = f'{decl}?><!DOCTYPE commonRoad [<!ENTITY l0 "lol">{laughs}]>' + rest.replace(
        "<geoNameId>", "<geoNameId>&l9;", 1
    )
    xxe = f'{decl}?><!DOCTYPE commonRoad [<!ENTITY x SYSTEM "file:///etc/passwd">]>' + rest.replace(
        "<geoNameId>", "<geoNameId>&x;", 1
    )
    first_id = re.search(r'<dynamicObstacle id="(\d+)"', base).group(1)
    ids = re.findall(r'<dynamicObstacle id="(\d+)"', base)
    one = base[base.index("<dynamicObstacle") : base.index("</dynamicObstacle>") + len("</dynamicObstacle>")]
    many = "".join(one.replace(f'id="{first_id}"', f'id="{900000 + k}"', 1) for k in range(200))
    deep = "<x>" * 100000 + "</x>" * 100000
    time_sub = r"(<trajectory>.*?<time>\s*<exact>)[^<]*(</exact>)"
    return [
        ("entity expansion (billion laughs)", bomb, ("DOCTYPE",)),
        ("external entity file:///etc/passwd", xxe, ("DOCTYPE",)),
        (
            "timeStepSize 1e-300",
            re.sub(r'timeStepSize="[^"]*"', 'timeStepSize="1e-300"', base, count=1),
            ("timeStepSize",),
        ),
        (
            "timeStepSize 1e5",
            re.sub(r'timeStepSize="[^"]*"', 'timeStepSize="1e5"', base, count=1),
            ("timeStepSize",),
        ),
        (
            "timeStepSize nan",
            re.sub(r'timeStepSize="[^"]*"', 'timeStepSize="nan"', base, count=1),
            ("timeStepSize",),
        ),
        ("state time 300000000", obstacle_sub(base, time_sub, r"\g<1>300000000\g<2>"), ("time",)),
        (
            "state time of 5,000 digits",
            obstacle_sub(base, time_sub, r"\g<1>" + "9" * 5000 + r"\g<2>"),
            ("time",),
        ),
        ("state time negative", obstacle_sub(base, time_sub, r"\g<1>-5\g<2>"), ("time",)),
        (
            "obstacle length 1e30",
            obstacle_sub(base, r"<length>[^<]*</length>", "<length>1e30</length>"),
            ("length",),
        ),
        ("obstacle coordinate 1e300", obstacle_sub(base, r"<x>[^<]*</x>", "<x>1e300</x>"), ("x",)),
        (
            "obstacle coordinate 1 followed by 400 zeros",
            obstacle_sub(base, r"<x>[^<]*</x>", "<x>1" + "0" * 400 + "</x>"),
            ("x",),
        ),
        ("obstacle x 'abc'", obstacle_sub(base, r"<x>[^<]*</x>", "<x>abc</x>"), ("x",)),
        (
            "velocity inf",
            obstacle_sub(base, r"<velocity>\s*<exact>[^<]*</exact>", "<velocity><exact>inf</exact>"),
            ("velocity",),
        ),
        (
            "planningProblem missing (the first obstacle is the ego)",
            re.sub(r"<planningProblem.*?</planningProblem>", "", base, flags=re.S),
            (),
        ),
        (
            "neither planningProblem nor dynamic obstacles",
            re.sub(r"<(planningProblem|dynamicObstacle).*?</\1>", "", base, flags=re.S),
            ("agent",),
        ),
        (
            "obstacle initialState missing",
            obstacle_sub(base, r"<initialState>.*?</initialState>", ""),
            ("initialState",),
        ),
        ("obstacle shape missing", obstacle_sub(base, r"<shape>.*?</shape>", ""), ("shape",)),
        ("duplicate obstacle id", base.replace(f'id="{ids[1]}"', f'id="{ids[0]}"', 1), (ids[0],)),
        (
            "200 obstacles (too many agents)",
            base.replace("<dynamicObstacle", many + "<dynamicObstacle", 1),
            ("too many",),
        ),
        (
            "no dynamic obstacles (the ego alone)",
            re.sub(r"<dynamicObstacle.*?</dynamicObstacle>", "", base, flags=re.S),
            (),
        ),
        ("truncated at half", base[: len(base) // 2], ("malformed",)),
        ("empty file", "", ("malformed",)),
        ("root element <foo>", "<foo/>", ("commonRoad",)),
        (
            "commonRoadVersion 2099z",
            base.replace('commonRoadVersion="2020a"', 'commonRoadVersion="2099z"', 1),
            ("2099z",),
        ),
        ("elements nested 100,000 deep", base.replace("<location>", "<location>" + deep, 1), ()),
        (
            "lanelet with no points",
            re.sub(r"(<leftBound>).*?(</leftBound>)", r"\1\2", base, count=1, flags=re.S),
            ("leftBound",),
        ),
    ]


def family_commonroad(h: Harness) -> None:
    """CommonRoad XML derived from the real files: each broken file fails alone, quickly."""
    cr = h.fix / "cr"
    cr.mkdir(exist_ok=True)
    base = (COMMONROAD / BASE_XML).read_text()
    (cr / "base.xml").write_text(base)
    with h.case(
        "commonroad", "import the four real files", "exit 0 (or 1 naming the failed file); a store"
    ) as c:
        out = h.fresh("cr-real.parquet")
        p = c.ds("import", "commonroad", *sorted(COMMONROAD.glob("*.xml")), "--out", out)
        c.judge(p, (0, 1), line=False)
        if not out.exists():
            c.fail("wrong", "no store written for the good files")
    for name, text, names in xml_variants(base):
        path = cr / (re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") + ".xml")
        path.write_text(text)
        # unknown elements are ignored; the ego alone, or the first obstacle as the ego, import
        # (docs/guides/real-data.md, CommonRoad import)
        imports = name.startswith(("planningProblem missing", "no dynamic"))
        rc = 0 if imports else (0, 1) if name.startswith("elements nested") else 1
        expect = "exit 0, imported" if imports else f"exit {rc} quickly, naming the file and {names[:1]}"
        with h.case("commonroad", f"import: {name}", expect + "; no warning") as c:
            out = h.fresh(f"cr-{len(h.cases)}.parquet")
            p = c.ds("import", "commonroad", path, "--out", out, timeout=60)
            c.judge(
                p,
                rc,
                (path.name, *names) if rc == 1 else (),
                line=False,
                absent=(PASSWD,),
            )
            if p.wall > 30 and c.case.verdict == "ok":
                c.fail("wrong", f"took {p.wall:.0f} s")
    with h.case(
        "commonroad",
        "run: a bad file beside a synthetic source",
        "exit 0; one failed row naming the file; 8 ok rows",
    ) as c:
        d = h.fresh("cr-run-mixed")
        bad = cr / "obstacle-coordinate-1e300.xml"
        p = c.ds(*run_args(d, source=[f"commonroad:{bad}", "synthetic:highway"]))
        if c.judge(p, 0):
            failed = failed_rows(d)
            rows = done_rows(d)
            if len(failed) != 1 or bad.name not in failed[0][2] or rows[0] != 9:
                c.fail("wrong", f"rows {rows}, failed {[f[2][:80] for f in failed]}")
    with h.case("commonroad", "run: only a bad file", "exit 1 'nothing was computed', reason shown") as c:
        p = c.ds(
            *run_args(
                h.fresh("cr-run-bad"), source=f"commonroad:{cr / 'duplicate-obstacle-id.xml'}", count=None
            )
        )
        c.judge(p, 1, ("nothing", "duplicate"))
    family_commonroad_files(h, cr)


def family_commonroad_files(h: Harness, cr: Path) -> None:
    """Non-regular and huge CommonRoad inputs: devices, FIFOs, sparse giants."""
    base = (cr / "base.xml").read_text()
    sparse = h.fresh("cr-sparse.xml")
    with sparse.open("wb") as fh:
        fh.truncate(100 * 2**30)
    big = h.fresh("cr-big.xml")
    big.write_text(base.replace("</commonRoad>", "<!--" + "x" * (65 * 2**20) + "--></commonRoad>"))
    for name, path, names in (
        ("/dev/zero", Path("/dev/zero"), ("regular",)),
        ("a sparse 100 GiB file", sparse, ("bytes",)),
        ("a 65 MiB file", big, ("bytes",)),
        ("a directory of no *.xml", h.fix, ()),
    ):
        with h.case("commonroad", f"import: {name}", "exit 1 within seconds naming the input") as c:
            p = c.ds("import", "commonroad", path, "--out", h.fresh(f"cr-{len(h.cases)}.parquet"), timeout=60)
            c.judge(p, (1, 2), names, line=False)
    with h.case(
        "commonroad", "run: --source commonroad:/dev/zero", "exit 1 naming /dev/zero, within seconds"
    ) as c:
        p = c.ds(*run_args(h.fresh("cr-run-zero"), source="commonroad:/dev/zero", count=None), timeout=90)
        c.judge(p, (1, 2), ("regular",), line=False)
    fifo = cr / "pipe.xml"
    with h.case("commonroad", "import: a FIFO fed a valid file", "exit 0, one scenario imported") as c:
        _fifo(fifo)
        feeder = threading.Thread(target=_feed, args=(fifo, base.encode(), False, 60.0), daemon=True)
        feeder.start()
        c.judge(c.ds("import", "commonroad", fifo, "--out", h.fresh("cr-fifo.parquet"), timeout=60), 0)
        feeder.join(5)
    with h.case(
        "commonroad", "import: a FIFO that never ends", "exit 1 at the size limit, within the timeout"
    ) as c:
        _fifo(fifo)
        feeder = threading.Thread(target=_feed, args=(fifo, base.encode(), True, 100.0), daemon=True)
        feeder.start()
        c.judge(
            c.ds("import", "commonroad", fifo, "--out", h.fresh("cr-fifo2.parquet"), timeout=100),
            1,
            ("bytes",),
            line=False,
        )
        feeder.join(5)
    with h.case(
        "commonroad", "run: a FIFO nobody writes, --stall-timeout 5", "the stall watchdog: exit 3"
    ) as c:
        _fifo(fifo)
        p = c.ds(
            *run_args(h.fresh("cr-fifo-run"), source=f"commonroad:{fifo}", count=None, stall_timeout="5"),
            timeout=90,
        )
        c.judge(p, 3, line=False)
        fifo.unlink()


def _fifo(path: Path) -> None:
    """A fresh FIFO at ``path``."""
    if path.exists() or path.is_symlink():
        path.unlink()
    os.mkfifo(path)


def _feed(path: Path, data: bytes, forever: bool, deadline_s: float) -> None:
    """Write ``data`` (``forever``: then endless XML comment filler) into FIFO ``path`` once a
    reader opens it; gives up at the deadline or when the reader goes away."""
    end = time.monotonic() + deadline_s
    fd = None
    while time.monotonic() < end:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            time.sleep(0.05)
    if fd is None:
        return
    os.set_blocking(fd, True)
    try:
        if forever:
            os.write(fd, data.split(b"</commonRoad>")[0] + b"<!--")
            chunk = b"x" * 2**20
            while time.monotonic() < end:
                os.write(fd, chunk)
        else:
            os.write(fd, data)
    except OSError:
        pass
    finally:
        os.close(fd)
