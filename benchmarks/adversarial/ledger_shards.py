"""Case families on a finished campaign's ledger and result shards."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

from adversarial.harness import PASSWD, Harness, check_kept, count_rows, done_rows, snapshot, sql

# ---------------------------------------------------------------- family: ledger


def family_ledger(h: Harness) -> None:
    """ledger.sqlite overwritten, truncated, edited; shard paths pointing elsewhere."""
    for how in ("junk", "truncated"):
        for reader in ("summary", "query", "run --resume"):
            with h.case(
                "ledger", f"ledger {how}, {reader}", "exit 1, one line naming ledger.sqlite; shards kept"
            ) as c:
                d = h.clone(f"ledger-{len(h.cases)}")
                path = d / "ledger.sqlite"
                data = path.read_bytes()
                path.write_bytes(os.urandom(len(data)) if how == "junk" else data[: len(data) // 3])
                shards = {k: v for k, v in snapshot(d).items() if k.startswith("results/")}
                args = {
                    "summary": ("summary", d),
                    "query": ("query", d, "SELECT count(*) FROM results"),
                    "run --resume": ("run", "--resume", d),
                }[reader]
                c.judge(c.ds(*args), 1, ("ledger.sqlite",), one_line=reader != "run --resume")
                check_kept(c, d, shards, tuple(shards))
    for name, dir_ in (("deleted", False), ("replaced by a directory", True)):
        with h.case(
            "ledger", f"ledger {name}, query", "exit 1 naming the ledger, or exit 0 with the 16 rows"
        ) as c:
            d = h.clone(f"ledger-{len(h.cases)}")
            for p in d.glob("ledger.sqlite*"):
                p.unlink()
            if dir_:
                (d / "ledger.sqlite").mkdir()
            n = count_rows(c, d)
            if c.judge(c.last, (0, 1), ("ledger",) if c.last.rc == 1 else ()) and c.last.rc == 0 and n != 16:
                c.fail("wrong", f"query counted {n} rows, expected 16")
    with h.case(
        "ledger",
        "ledger deleted, another campaign's part-00000003.parquet dropped in, query",
        "exit 1 naming the ledger (as verify does), or the campaign's 16 rows only",
    ) as c:
        d = h.clone("ledger-gone-foreign")
        for p in d.glob("ledger.sqlite*"):
            p.unlink()
        shutil.copy(h.refb / "results" / "part-00000001.parquet", d / "results" / "part-00000003.parquet")
        n = count_rows(c, d)
        if c.judge(c.last, (0, 1)) and c.last.rc == 0 and n != 16:
            c.fail("wrong", f"query counted {n} rows, expected 16: a foreign shard is read without a ledger")
    with h.case(
        "ledger", "junk WAL file next to the ledger, query", "exit 0, 16 rows (SQLite skips bad frames)"
    ) as c:
        d = h.clone("ledger-wal")
        (d / "ledger.sqlite-wal").write_bytes(os.urandom(8192))
        n = count_rows(c, d)
        if c.judge(c.last, 0) and n != 16:
            c.fail("wrong", f"query counted {n} rows, expected 16")
    with h.case("ledger", "batch 0 set back to pending, run --resume", "exit 0, 16 rows, verify ok") as c:
        d = h.clone("ledger-pending")
        sql(d / "ledger.sqlite", "UPDATE batches SET status='pending' WHERE batch_id=0")
        if (
            c.judge(c.ds("run", "--resume", d), 0)
            and c.judge(c.ds("verify", d), 0)
            and done_rows(d) != (16, 16)
        ):
            c.fail("wrong", f"rows after resume {done_rows(d)}")
    with h.case("ledger", "shard_sha256 edited, verify", "exit 1 naming the shard") as c:
        d = h.clone("ledger-sha")
        sql(d / "ledger.sqlite", "UPDATE batches SET shard_sha256=? WHERE batch_id=0", ("0" * 64,))
        c.judge(c.ds("verify", d), 1, ("part-00000000",), line=False)
    with h.case("ledger", "shard_rows edited to 999, verify", "exit 1 naming the shard") as c:
        d = h.clone("ledger-rows")
        sql(d / "ledger.sqlite", "UPDATE batches SET shard_rows=999 WHERE batch_id=0")
        c.judge(c.ds("verify", d), 1, ("part-00000000",), line=False)
    with h.case(
        "ledger", "scenario_ids not JSON, run --resume", "exit 1 naming ledger.sqlite; shards kept"
    ) as c:
        d = h.clone("ledger-ids")
        sql(d / "ledger.sqlite", "UPDATE batches SET scenario_ids='[0, 2, oops' WHERE batch_id=0")
        shards = {k: v for k, v in snapshot(d).items() if k.startswith("results/")}
        c.judge(c.ds("run", "--resume", d), (1, 2), ("ledger",))
        check_kept(c, d, shards, tuple(shards))
    with h.case(
        "ledger", "a second done row naming the same shard, query", "16 rows, not 24 (no double count)"
    ) as c:
        d = h.clone("ledger-dup")
        sql(
            d / "ledger.sqlite",
            "INSERT INTO batches (batch_id, scenario_ids, status, shard, shard_rows, shard_sha256,"
            " attempts, updated_at, size_class, window_id) SELECT 99, scenario_ids, status, shard,"
            " shard_rows, shard_sha256, attempts, updated_at, size_class, window_id FROM batches"
            " WHERE batch_id=0",
        )
        n = count_rows(c, d)
        if c.judge(c.last, 0) and n != 16:
            c.fail("wrong", f"query counted {n} rows, expected 16 (one shard counted twice)")
    family_ledger_paths(h)
    with h.case(
        "ledger", "meta identity deleted, run --resume", "exit 1 or 2 naming the ledger/identity; kept"
    ) as c:
        d = h.clone("ledger-meta")
        sql(d / "ledger.sqlite", "DELETE FROM meta WHERE key IN ('identity', 'config_sha256', 'inputs')")
        shards = {k: v for k, v in snapshot(d).items() if k.startswith("results/")}
        c.judge(c.ds("run", "--resume", d), (0, 1, 2))
        check_kept(c, d, shards, tuple(shards))
        if c.last is not None and c.last.rc == 0 and done_rows(d) != (16, 16):
            c.fail("wrong", f"rows after resume {done_rows(d)}")


def family_ledger_paths(h: Harness) -> None:
    """Ledger ``shard`` values outside the campaign: readers leave them out, verify exits 1."""
    import pyarrow.parquet as pq

    outside = h.outside / "shard-copy.parquet"
    shutil.copy(h.ref / "results" / "part-00000000.parquet", outside)
    targets = (
        ("absolute path outside", str(outside)),
        ("../ path outside", "../../outside/shard-copy.parquet"),
        ("results/../../ traversal", "results/../../../outside/shard-copy.parquet"),
        ("/etc/passwd", "/etc/passwd"),
        ("the ledger itself", "ledger.sqlite"),
    )
    for name, target in targets:
        with h.case(
            "ledger", f"shard = {name}, query", "exit 0, 8 rows, one warning line naming --resume"
        ) as c:
            d = h.clone(f"ledger-path-{len(h.cases)}")
            (d / "results" / "part-00000000.parquet").unlink()
            sql(d / "ledger.sqlite", "UPDATE batches SET shard=? WHERE batch_id=0", (target,))
            n = count_rows(c, d)
            if c.judge(c.last, 0, ("--resume",), absent=(PASSWD,)) and n != 8:
                verdict = "escape" if n == 16 else "wrong"
                c.fail(verdict, f"query counted {n} rows, expected 8 (the outside shard was read)")
        if name == "absolute path outside":
            with h.case("ledger", "shard = absolute path outside, verify", "exit 1 naming the batch") as c:
                c.judge(c.ds("verify", d), 1, ("outside",), line=False)
            with h.case(
                "ledger", "shard = absolute path outside, run --resume", "exit 0; redone inside; 16 rows"
            ) as c:
                if c.judge(c.ds("run", "--resume", d), 0):
                    rows = pq.read_table(outside).num_rows
                    if done_rows(d) != (16, 16) or rows != 8:
                        c.fail("wrong", f"rows after resume {done_rows(d)}")
                    con = sqlite3.connect(d / "ledger.sqlite")
                    shard = con.execute("SELECT shard FROM batches WHERE batch_id=0").fetchone()[0]
                    con.close()
                    if str(h.outside) in str(Path(d, shard).resolve()):
                        c.fail("escape", f"ledger still names the outside shard after resume: {shard}")

    with h.case(
        "ledger", "shard renamed to a name with a quote, query", "exit 0, 16 rows, no traceback"
    ) as c:
        d = h.clone("ledger-quote")
        target = "results/part-0000'0000.parquet"
        (d / "results" / "part-00000000.parquet").rename(d / target)
        sql(d / "ledger.sqlite", "UPDATE batches SET shard=? WHERE batch_id=0", (target,))
        n = count_rows(c, d)
        if c.judge(c.last, 0) and n != 16:
            c.fail("wrong", f"query counted {n} rows, expected 16")


# ---------------------------------------------------------------- family: result shards


def family_shards(h: Harness) -> None:
    """Result shards deleted, truncated, foreign, stray, replaced by other kinds of file."""
    part0 = "results/part-00000000.parquet"
    with h.case(
        "shards", "shard deleted: verify, query, run --resume", "verify 1; query 8 + warning; resume 16"
    ) as c:
        d = h.clone("shard-deleted")
        (d / part0).unlink()
        c.judge(c.ds("verify", d), 1, ("part-00000000",), line=False)
        n = count_rows(c, d)
        if c.judge(c.last, 0, ("--resume",)) and n != 8:
            c.fail("wrong", f"query counted {n} rows, expected 8")
        if c.judge(c.ds("run", "--resume", d), 0) and done_rows(d) != (16, 16):
            c.fail("wrong", f"rows after resume {done_rows(d)}")
        c.judge(c.ds("verify", d), 0)
    for how in ("truncated", "foreign (the other campaign's)", "bit flipped, size and mtime kept"):
        with h.case("shards", f"shard {how}, verify", "exit 1 naming part-00000000") as c:
            d = h.clone(f"shard-{len(h.cases)}")
            path = d / part0
            st = path.stat()
            data = path.read_bytes()
            if how == "truncated":
                path.write_bytes(data[: len(data) // 2])
            elif how.startswith("foreign"):
                shutil.copy(h.refb / part0, path)
            else:
                flipped = bytearray(data)
                flipped[len(data) // 3] ^= 0x01
                path.write_bytes(bytes(flipped))
                os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            c.judge(c.ds("verify", d), 1, ("part-00000000",), line=False)
        with h.case(
            "shards",
            f"shard {how}, query",
            "exit 0, 16 rows (size and mtime kept: not rehashed, as documented)"
            if how.startswith("bit")
            else "exit 0, 8 rows and a warning line naming --resume",
        ) as c:
            n = count_rows(c, d)
            quiet = how.startswith("bit")
            if c.judge(c.last, 0, () if quiet else ("--resume",)) and n != (16 if quiet else 8):
                c.fail("wrong", f"query counted {n} rows")
    for name, maker in (
        (
            "stray copy 'part-00000000 (copy).parquet'",
            lambda d: shutil.copy(d / part0, d / "results/part-00000000 (copy).parquet"),
        ),
        (
            "stray junk part-99999999.parquet",
            lambda d: (d / "results/part-99999999.parquet").write_bytes(b"junk"),
        ),
    ):
        with h.case(
            "shards", f"{name}: query and verify", "query 16 rows; verify exit 0 listing the stray"
        ) as c:
            d = h.clone(f"shard-{len(h.cases)}")
            maker(d)
            n = count_rows(c, d)
            if c.judge(c.last, 0) and n != 16:
                c.fail("wrong", f"query counted {n} rows, expected 16")
            c.judge(c.ds("verify", d), 0, ("stray",))
    with h.case(
        "shards", "results/ deleted, summary then run --resume", "summary exit 0 or 1; resume -> 16 rows"
    ) as c:
        d = h.clone("shard-nodir")
        shutil.rmtree(d / "results")
        c.judge(c.ds("summary", d), (0, 1), line=False)
        if c.judge(c.ds("run", "--resume", d), 0) and done_rows(d) != (16, 16):
            c.fail("wrong", f"rows after resume {done_rows(d)}")
    for name, maker in (
        ("a directory", lambda p: p.mkdir()),
        ("a FIFO", lambda p: os.mkfifo(p)),
        ("a symlink to /dev/zero", lambda p: p.symlink_to("/dev/zero")),
        ("a symlink to the other campaign's shard", None),
    ):
        for reader in ("verify", "query"):
            rc = 1 if reader == "verify" else 0
            with h.case(
                "shards", f"shard is {name}, {reader}", f"exit {rc} within the timeout, batch left out"
            ) as c:
                d = h.clone(f"shard-{len(h.cases)}")
                path = d / part0
                path.unlink()
                if maker is None:
                    path.symlink_to(h.refb / part0)
                else:
                    maker(path)
                if reader == "verify":
                    c.judge(c.ds("verify", d, timeout=60), 1, ("part-00000000",), line=False)
                else:
                    n = count_rows(c, d)
                    if c.judge(c.last, 0, ("--resume",)) and n != 8:
                        c.fail(
                            "escape" if maker is None and n == 16 else "wrong",
                            f"query counted {n} rows, expected 8",
                        )
    with h.case("shards", "only the mtime of a shard changed, query", "exit 0, 16 rows, no warning") as c:
        d = h.clone("shard-touch")
        os.utime(d / part0, None)
        n = count_rows(c, d)
        if c.judge(c.last, 0) and n != 16:
            c.fail("wrong", f"query counted {n} rows, expected 16")
    with h.case(
        "shards", "tmp shard of a live pid (1), run --resume", "exit 0; the live pid's tmp kept"
    ) as c:
        d = h.clone("shard-tmp")
        tmp = d / "results/.part-00000000.parquet.1.tmp"
        tmp.write_bytes(b"in progress")
        c.judge(c.ds("run", "--resume", d), 0)
        if not tmp.exists():
            c.fail("loss", "a live process's temporary shard was deleted")
