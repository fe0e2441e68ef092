"""Case families on what a process touches: SQL, --out targets, ports, signals, catalogue
sources and missing paths."""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import sqlite3
import stat
import subprocess
import time
from pathlib import Path

from adversarial.harness import PASSWD, Harness, check_kept, done_rows, run_args, snapshot

# ---------------------------------------------------------------- family: SQL in query


def family_sql(h: Harness) -> None:
    """User SQL: empty, syntax errors, file access and configuration changes, JSON types."""
    target = h.outside / "copied.csv"
    attach = h.outside / "attached.db"
    export = h.outside / "exported"
    other = h.refb / "results" / "part-00000000.parquet"
    refused = (
        ("empty", "", ("empty",)),
        ("whitespace only", "   \n ", ("empty",)),
        ("a comment only", "/* nothing */", ("SQL",)),
        ("syntax error", "SELEKT 1", ("SELEKT",)),
        ("COPY results TO a file outside", f"COPY results TO '{target}'", ("permission",)),
        ("read_csv('/etc/passwd')", "SELECT * FROM read_csv('/etc/passwd')", ("permission",)),
        ("read_text('/etc/passwd')", "SELECT * FROM read_text('/etc/passwd')", ("permission",)),
        ("FROM '/etc/passwd' (replacement scan)", "SELECT * FROM '/etc/passwd'", ("/etc/passwd",)),
        ("glob('/etc/*')", "SELECT * FROM glob('/etc/*')", ("permission",)),
        (
            "read_parquet of another campaign",
            f"SELECT count(*) FROM read_parquet('{other}')",
            ("permission",),
        ),
        ("ATTACH a file outside", f"ATTACH '{attach}' AS x", ("permission",)),
        ("EXPORT DATABASE outside", f"EXPORT DATABASE '{export}'", ("permission",)),
        ("INSTALL httpfs", "INSTALL httpfs", ("permission",)),
        ("LOAD httpfs", "LOAD httpfs", ("permission",)),
        ("SET enable_external_access=true", "SET enable_external_access=true", ("lock",)),
        ("SET lock_configuration=false", "SET lock_configuration=false", ("lock",)),
        ("SET allowed_paths", "SET allowed_paths=['/etc/passwd']", ("lock",)),
        ("second statement reads a file", "SELECT 1; SELECT * FROM read_csv('/etc/passwd')", ("permission",)),
    )
    for name, statement, names in refused:
        # DuckDB's refusals: the docs give no exit status (1 and 2 both accepted)
        rc = (1, 2) if names[0] in ("permission", "lock") else 2
        with h.case(
            "sql", f"query {name}", f"exit {rc}, one line ({names[0]!r}); no file read or written"
        ) as c:
            before = snapshot(h.ref)
            p = c.ds("query", h.ref, statement)
            c.judge(p, rc, names, absent=(PASSWD, "/etc/hostname", "/etc/shadow"), one_line=True)
            for made in (target, attach, export):
                if made.exists():
                    c.fail("escape", f"the SQL wrote {made}")
                    shutil.rmtree(made) if made.is_dir() else made.unlink()
            if name.startswith("read_parquet") and "16" in p.out:
                c.fail("escape", "another campaign's shard was read")
            check_kept(c, h.ref, before)
    json_cases = (
        (
            "NaN and inf as null",
            "SELECT 'nan'::DOUBLE AS a, 'inf'::DOUBLE AS b, '-inf'::FLOAT AS c",
            {"a": None, "b": None, "c": None},
        ),
        ("DECIMAL", "SELECT 1.25::DECIMAL(10, 2) AS d", None),
        ("DATE and TIMESTAMP", "SELECT DATE '2026-12-02' AS d, TIMESTAMP '2026-12-02 10:00:00' AS t", None),
        ("BLOB", "SELECT 'abc'::BLOB AS b", None),
        ("INTERVAL", "SELECT INTERVAL 1 DAY AS i", None),
        ("UUID", "SELECT '00000000-0000-0000-0000-000000000001'::UUID AS u", None),
        ("HUGEINT", "SELECT 170141183460469231731687303715884105727::HUGEINT AS h", None),
        ("a LIST of doubles with NaN", "SELECT [1.0, 'nan'::DOUBLE] AS l", {"l": [1.0, None]}),
        ("a STRUCT", "SELECT {'a': 1, 'b': 'inf'::DOUBLE} AS s", {"s": {"a": 1, "b": None}}),
        ("min_ttc_s (+inf) column", "SELECT min_ttc_s FROM results ORDER BY scenario_id LIMIT 1", None),
    )
    for name, statement, want in json_cases:
        with h.case(
            "sql", f"query --json {name}", "exit 0, strict JSON (NaN/Inf -> null), or a one-line exit 2"
        ) as c:
            p = c.ds("query", h.ref, statement, "--json")
            if c.judge(p, (0, 2), one_line=True) and p.rc == 0:
                try:
                    row = json.loads(p.out.strip().splitlines()[-1], parse_constant=_refuse_constant)
                except (ValueError, IndexError) as exc:
                    c.fail("wrong", f"not strict JSON: {exc}: {p.out.strip()[:80]}")
                else:
                    if want is not None and row != want:
                        c.fail("wrong", f"got {row}, expected {want}")
    with h.case(
        "sql", "query --unsafe read_csv('/etc/passwd') (control)", "exit 0; --unsafe lets it read"
    ) as c:
        c.judge(
            c.ds("query", h.ref, "SELECT count(*) FROM read_csv('/etc/passwd', header=false)", "--unsafe"), 0
        )


def _refuse_constant(name: str):
    """json.loads hook: NaN/Infinity are not strict JSON."""
    raise ValueError(f"non-standard JSON constant {name}")


# ---------------------------------------------------------------- family: --out targets


def family_outputs(h: Harness) -> None:
    """report/show/export --out at the campaign's own files, through links, at odd places."""
    d = h.clone("outputs")
    own = (
        ("export --out DIR/ledger.sqlite", ("export", d, "--out", d / "ledger.sqlite")),
        ("export --out DIR/ledger.sqlite-wal", ("export", d, "--out", d / "ledger.sqlite-wal")),
        ("export --out DIR/campaign.toml", ("export", d, "--out", d / "campaign.toml")),
        ("export --out DIR/sessions.jsonl", ("export", d, "--out", d / "sessions.jsonl")),
        ("export --out DIR/.drivesim.lock", ("export", d, "--out", d / ".drivesim.lock")),
        ("export --out DIR/results/x.csv", ("export", d, "--out", d / "results" / "x.csv")),
        (
            "export parquet --out a shard",
            ("export", d, "--format", "parquet", "--out", d / "results/part-00000000.parquet"),
        ),
        ("report --out DIR/campaign.toml", ("report", d, "--no-viewers", "--out", d / "campaign.toml")),
        ("report --out DIR/results/", ("report", d, "--no-viewers", "--out", d / "results")),
        ("show --out DIR/sessions.jsonl", ("show", d, "--scenario", "0", "--out", d / "sessions.jsonl")),
        ("show --out DIR/ledger.sqlite", ("show", d, "--scenario", "0", "--out", d / "ledger.sqlite")),
        ("export --out ./DIR/../DIR/campaign.toml", ("export", d, "--out", f"{d}/../{d.name}/campaign.toml")),
    )
    for name, args in own:
        with h.case("outputs", name, "exit 2 'the campaign's own ...'; the file unchanged") as c:
            before = snapshot(d)
            lock = (d / ".drivesim.lock").read_bytes() if (d / ".drivesim.lock").exists() else None
            c.judge(c.ds(*args), 2, ("own",), one_line=True)
            check_kept(c, d, before)
            if lock is not None and (d / ".drivesim.lock").read_bytes() != lock:
                c.fail("wrong", ".drivesim.lock (the campaign's own file) overwritten with the export")
            stray = d / "results" / "x.csv"
            if stray.exists():
                c.fail("wrong", "wrote a file into results/")
                stray.unlink()
    for name, link in (("symlink", "sym"), ("hard link", "hard")):
        with h.case(
            "outputs",
            f"export --out OUTSIDE/{link} ({name} to DIR/campaign.toml)",
            "refused, or the link replaced; campaign.toml unchanged",
        ) as c:
            path = h.fresh(f"out-{link}.csv")
            if link == "sym":
                path.symlink_to(d / "campaign.toml")
            else:
                os.link(d / "campaign.toml", path)
            before = snapshot(d)
            c.judge(c.ds("export", d, "--out", path), (0, 2))
            check_kept(c, d, before)
    for name, args, rc in (
        (
            "export --out a missing folder",
            ("export", h.ref, "--out", h.scratch / "no/such/dir/x.csv"),
            (0, 1, 2),
        ),
        ("export --out an existing directory", ("export", h.ref, "--out", h.scratch), (1, 2)),
    ):
        with h.case("outputs", name, f"exit {rc} with one line, no traceback") as c:
            c.judge(c.ds(*args), rc, one_line=True)
    for tool in ("report", "export"):
        with h.case(
            "outputs",
            f"{tool} --out a device node (a private copy of /dev/full)",
            "exit 1 (no space left) or 2 (refused: not a regular file), one line; the device "
            "node left a device",
        ) as c:
            node = _device(h.fresh(f"full-{tool}"))
            extra = ("--no-viewers",) if tool == "report" else ()
            c.judge(c.ds(tool, h.ref, *extra, "--out", node), (1, 2), one_line=True)
            if not (node.is_char_device() or node.is_fifo()):
                c.fail("wrong", "the device node was replaced by a regular file")


def _device(path: Path) -> Path:
    """A private character device like /dev/full (1, 7) at ``path`` (a FIFO where mknod is
    not allowed): never a system device, which a rename over it would destroy."""
    try:
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 7))
    except PermissionError:
        os.mkfifo(path)
    return path


# ---------------------------------------------------------------- family: ports / serve


def family_serve(h: Harness) -> None:
    """report --serve: a busy port, a foreign Host header, SIGTERM."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with h.case("serve", "report --serve on a busy port", "exit 1, one line naming the port") as c:
            c.judge(
                c.ds("report", h.ref, "--serve", "--no-viewers", "--port", port, timeout=40),
                (1, 2),
                (str(port),),
                one_line=True,
            )
    argv = ["report", str(h.ref), "--serve", "--no-viewers", "--port", "0"]
    proc, out, _ = h.spawn("serve", *argv)
    start = time.monotonic()
    url = None
    while time.monotonic() - start < 60 and url is None and proc.poll() is None:
        m = re.search(r"http://127\.0\.0\.1:(\d+)/", out.read_text())
        url = int(m.group(1)) if m else None
        time.sleep(0.2)
    for name, host, want in (
        ("Host 127.0.0.1", "127.0.0.1", 200),
        ("Host attacker.example (DNS rebinding)", "attacker.example", 403),
    ):
        with h.case("serve", f"GET / with {name}", f"HTTP {want}") as c:
            c.case.commands.append(shlex.join(["drivesim", *argv]))
            status = _get(url, host) if url else None
            if status != want:
                c.fail("wrong", f"HTTP {status}, expected {want}")
    with h.case("serve", "report --serve, then SIGTERM", "ends within seconds, no traceback") as c:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        p = h.finish("serve", proc, argv, start, timeout=30)
        c.case.commands.append(p.command)
        c.case.exit_codes.append(p.rc)
        c.judge(p, (0, 143, -15), line=False)


def _get(port: int, host: str) -> int | None:
    """HTTP status of GET / on 127.0.0.1:port with the given Host header."""
    try:
        con = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        con.request("GET", "/", headers={"Host": host})
        status = con.getresponse().status
        con.close()
        return status
    except OSError:
        return None


# ---------------------------------------------------------------- family: signals, busy dir


def wait_done(d: Path, batches: int, proc: subprocess.Popen, limit_s: float) -> bool:
    """Wait until the ledger records ``batches`` done batches (False: the process ended first)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end and proc.poll() is None:
        try:
            con = sqlite3.connect(f"file:{d / 'ledger.sqlite'}?mode=ro", uri=True, timeout=1)
            n = con.execute("SELECT count(*) FROM batches WHERE status='done'").fetchone()[0]
            con.close()
            if n >= batches:
                return True
        except sqlite3.Error:
            pass
        time.sleep(0.1)
    return False


def family_signals(h: Harness) -> None:
    """SIGTERM, SIGINT and SIGKILL during a run (then resume and verify), SIGTERM while the
    run writes its dashboard, a second run on the busy directory."""
    big = {"count": "2048", "source": "synthetic:highway,merge"}
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        d = h.fresh(f"sig-{sig.name}")
        argv = run_args(d, **big)
        proc, _, _ = h.spawn(f"sig-{sig.name}", *argv)
        start = time.monotonic()
        started = wait_done(d, 2, proc, 300)
        if started:
            os.kill(proc.pid, sig)
        expect = {
            signal.SIGTERM: "exit 143, 'interrupted by SIGTERM', session line 'interrupted'",
            signal.SIGINT: "exit 130 (or 1/2) without a traceback",
            signal.SIGKILL: "killed (-9)",
        }[sig]
        with h.case("signals", f"{sig.name} during run (after 2 batches)", expect) as c:
            p = h.finish(f"sig-{sig.name}", proc, argv, start, timeout=90)
            c.case.commands.append(f"{p.command}  # then kill -{sig.name[3:]} PID")
            c.case.exit_codes.append(p.rc)
            if not started:
                c.fail("wrong", "the run ended before two batches were done; no signal sent", p)
            elif sig == signal.SIGTERM:
                if c.judge(p, 143, ("interrupted by SIGTERM",), line=False):
                    tail = (d / "sessions.jsonl").read_text().splitlines()[-1]
                    if '"interrupted": "SIGTERM"' not in tail:
                        c.fail("wrong", f"sessions.jsonl end line lacks interrupted: {tail[:100]}")
            elif sig == signal.SIGINT:
                c.judge(p, (130, 2, 1), line=False)
            else:
                c.judge(p, -9, line=False)
        with h.case(
            "signals", f"run --resume after {sig.name}, then verify", "exit 0; 2048 rows, each once; verify 0"
        ) as c:
            if c.judge(c.ds("run", "--resume", d, timeout=600), 0) and c.judge(
                c.ds("verify", d), 0, line=False
            ):
                rows = done_rows(d)
                if rows != (2048, 2048):
                    c.fail("wrong", f"rows after resume {rows}, expected (2048, 2048)")
    with h.case(
        "signals",
        "SIGTERM after the last batch (while run writes its dashboard and viewers)",
        "exit 143 with the 'interrupted by SIGTERM' line, or 0; not killed silently",
    ) as c:
        d = h.fresh("sig-late")
        argv = run_args(d, count="64")
        proc, out, _ = h.spawn("sig-late", *argv)
        start = time.monotonic()
        while time.monotonic() - start < 120 and proc.poll() is None and "done:" not in out.read_text():
            time.sleep(0.05)
        sent = proc.poll() is None
        if sent:
            os.kill(proc.pid, signal.SIGTERM)
        p = h.finish("sig-late", proc, argv, start, timeout=60)
        c.case.commands.append(f"{p.command}  # kill -TERM PID once 'done:' is printed")
        c.case.exit_codes.append(p.rc)
        if not sent:
            c.fail("wrong", "the run ended before the signal could be sent", p)
        elif c.judge(p, (0, 143), line=False) and p.rc == 143 and "interrupted by SIGTERM" not in p.err:
            c.fail("wrong", "exit 143 without the 'interrupted by SIGTERM' line", p)
        elif p.rc not in (0, 143) and "interrupted" not in p.err and c.case.verdict == "wrong":
            c.case.why += "; no 'interrupted' line on stderr"
    d = h.fresh("busy-run")
    argv = run_args(d, **big)
    proc, _, _ = h.spawn("busy-run", *argv)
    start = time.monotonic()
    started = wait_done(d, 2, proc, 300)
    with h.case(
        "busy",
        "second run on a busy directory",
        "exit 1 naming the holder's pid; the running campaign untouched (sessions.jsonl too)",
    ) as c:
        sessions = (d / "sessions.jsonl").read_text()
        p = c.ds(*argv, timeout=60)
        c.judge(p, 1, (str(proc.pid),), one_line=True)
        if not started or proc.poll() is not None:
            c.fail("wrong", "the first run was not running during the check")
        elif (d / "sessions.jsonl").read_text() != sessions:
            c.fail("wrong", "the refused run appended to the running campaign's sessions.jsonl", p)
    with h.case("busy", "query while a run is writing", "exit 0, a row count, no traceback") as c:
        c.judge(c.ds("query", d, "SELECT count(*) FROM results"), 0)
    with h.case("busy", "the first run after the refused one", "exit 0, 2048 rows, verify 0") as c:
        p = h.finish("busy-run", proc, argv, start, timeout=300)
        c.case.commands.append(p.command)
        c.case.exit_codes.append(p.rc)
        if (
            c.judge(p, 0, line=False)
            and c.judge(c.ds("verify", d), 0, line=False)
            and done_rows(d)[0] != 2048
        ):
            c.fail("wrong", f"rows {done_rows(d)}")
    with h.case("busy", "run --out an existing folder of other files", "refused, or notes.txt kept") as c:
        d = h.fresh("busy-notes")
        d.mkdir()
        (d / "notes.txt").write_text("user data\n")
        c.judge(c.ds(*run_args(d)), (0, 2))
        if (d / "notes.txt").read_text() != "user data\n":
            c.fail("loss", "notes.txt was changed")
    with h.case("busy", "run --out an existing file", "exit 2 (or 1), one line; the file kept") as c:
        f = h.fresh("busy-file.txt")
        f.write_text("user data\n")
        c.judge(c.ds(*run_args(f)), (1, 2), (f.name,), one_line=True)
        if f.read_text() != "user data\n":
            c.fail("loss", "the file was overwritten")
    with h.case(
        "busy", "the reference command rerun with --seed 5 on its directory", "exit 2 naming seed; kept"
    ) as c:
        d = h.clone("busy-seed")
        before = snapshot(d)
        c.judge(
            c.ds(*run_args(d, source="synthetic:highway,merge", count="16", seed="5")),
            2,
            ("seed",),
            one_line=True,
        )
        check_kept(c, d, before)
    with h.case(
        "busy", "run --out FILE/camp (a parent is a plain file)", "exit 1 or 2, one line naming it"
    ) as c:
        parent = h.fresh("busy-parent")
        parent.write_text("user data\n")
        c.judge(c.ds(*run_args(parent / "camp")), (1, 2), ("busy-parent",), one_line=True)
