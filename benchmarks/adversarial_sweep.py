"""Adversarial sweep: hostile-user inputs to the ``drivesim`` command line, each case judged
against an explicit expectation (docs/reference/errors.md).

    .venv/bin/python benchmarks/adversarial_sweep.py [--out DIR] [--only FAMILY,...] [--timeout 120]

Everything is made under a temporary directory (or ``--out DIR``): a small finished reference
campaign (``drivesim run``), a second one of another seed, a scenario store, CommonRoad XML
files derived from the real ones in /work/shared/data/commonroad (read there, never copied
into the repository), sweep files, MLP policy files, and per-case copies that get tampered
with. Each case runs real ``drivesim`` subprocesses (a timeout is verdict ``hang``; each
process is held to 8 GiB of address space, so an unbounded read dies instead of taking the
machine's memory) and ends in one verdict:

* ``ok``: the expected outcome;
* ``wrong``: a wrong result or a misleading message, a raw traceback, a wrong exit status;
* ``loss``: data of a campaign destroyed or overwritten;
* ``escape``: code ran, or a file outside the campaign was read or written;
* ``hang``: no end within the timeout;
* ``noise``: the right outcome with warnings or other noise on stderr.

The script prints a line per case, writes ``OUT/adversarial.json`` (the list of cases) and
prints a markdown summary: counts per verdict and per family and a table of the non-ok cases.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
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
import sys
import tempfile
import threading
import time
import traceback
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

COMMONROAD = Path("/work/shared/data/commonroad")
BASE_XML = "FRA_Anglet-1_1_T-1.xml"
VERDICTS = ("ok", "wrong", "loss", "escape", "hang", "noise")
SEVERITY = {"ok": 0, "noise": 1, "wrong": 2, "loss": 3, "escape": 4, "hang": 5}
MEMORY_LIMIT = 8 * 2**30
SMALL = {
    "--source": "synthetic:highway",
    "--count": "8",
    "--agents": "8",
    "--steps": "10",
    "--batch-size": "8",
}
NOISE = re.compile(r"RuntimeWarning|UserWarning|DeprecationWarning|FutureWarning|warnings\.warn|\bWARNING\b")
PASSWD = "root:x:0:0"


@dataclass
class Proc:
    """One finished drivesim process."""

    argv: list[str]
    rc: int | None
    out: str
    err: str
    wall: float
    timed_out: bool

    @property
    def command(self) -> str:
        """The command as a shell line (``drivesim ARGS``)."""
        return "drivesim " + shlex.join(self.argv)

    @property
    def line(self) -> str:
        """The relevant stderr line: the error line if any, else the first non-empty line."""
        lines = [x.strip() for x in self.err.splitlines() if x.strip()]
        for x in lines:
            if "error" in x.lower() or "traceback" in x.lower():
                return x[:300]
        for x in lines:
            if NOISE.search(x) or "warning" in x.lower():
                return x[:300]
        return (lines[0] if lines else "")[:300]


@dataclass
class Case:
    """One case: what ran, what was expected and the verdict."""

    family: str
    name: str
    expect: str
    commands: list[str] = field(default_factory=list)
    exit_codes: list[int | None] = field(default_factory=list)
    verdict: str = "ok"
    why: str = ""
    stderr: str = ""
    command: str = ""
    exit_code: int | None = None
    seconds: float = 0.0


class Check:
    """Accumulates the processes of one case and keeps its worst verdict."""

    def __init__(self, h: Harness, case: Case):
        """A check of ``case`` run through harness ``h``."""
        self.h = h
        self.case = case
        self.last: Proc | None = None

    def ds(self, *args: str, **kw) -> Proc:
        """Run ``drivesim ARGS`` and note it in the case."""
        p = self.h.ds(*args, **kw)
        self.case.commands.append(p.command)
        self.case.exit_codes.append(p.rc)
        self.last = p
        return p

    def note(self, p: Proc | None) -> None:
        """Remember ``p`` as the deciding process while the case is still ok."""
        if self.case.verdict == "ok" and p is not None:
            self.case.command, self.case.exit_code, self.case.stderr = p.command, p.rc, p.line

    def fail(self, verdict: str, why: str, p: Proc | None = None) -> None:
        """Fold in a verdict (the worst one wins; the first of equal ones keeps its note)."""
        if SEVERITY[verdict] > SEVERITY[self.case.verdict]:
            self.case.verdict, self.case.why = verdict, why
            p = p or self.last
            if p is not None:
                self.case.command, self.case.exit_code, self.case.stderr = p.command, p.rc, p.line

    def judge(
        self,
        p: Proc,
        rc: int | tuple[int, ...],
        names: tuple[str, ...] = (),
        line: bool = True,
        absent: tuple[str, ...] = (),
        debug: bool = False,
        one_line: bool = False,
    ) -> bool:
        """Judge ``p`` against the expected exit status(es) ``rc``; an error (rc != 0) wants a
        line with ``error`` on stderr (``line``) and every string of ``names`` in its output;
        ``one_line``: a usage error (exit 2) is the only stderr line (else noise). True while
        the case is ok."""
        self.note(p)
        rcs = (rc,) if isinstance(rc, int) else rc
        text = (p.out + "\n" + p.err).lower()
        if p.timed_out:
            self.fail("hang", f"no end within {self.h.timeout:.0f} s", p)
        elif "Traceback (most recent call last)" in p.err and not debug:
            self.fail("wrong", "raw Python traceback on stderr", p)
        elif debug and "Traceback (most recent call last)" not in p.err:
            self.fail("wrong", "--debug did not show the traceback", p)
        elif p.rc not in rcs:
            self.fail("wrong", f"exit {p.rc}, expected {' or '.join(map(str, rcs))}", p)
        elif line and p.rc != 0 and "error" not in p.err.lower():
            self.fail("wrong", "no 'error' line on stderr", p)
        elif missing := [n for n in names if n.lower() not in text]:
            self.fail("wrong", f"output does not name {missing[0]!r}", p)
        elif found := [a for a in absent if a.lower() in text]:
            self.fail("escape" if found[0] == PASSWD else "wrong", f"output contains {found[0]!r}", p)
        elif NOISE.search(p.err):
            bad = next(x for x in p.err.splitlines() if NOISE.search(x))
            self.fail("noise", f"warning on stderr: {bad.strip()[:160]}", p)
        elif one_line and p.rc == 2 and len([x for x in p.err.splitlines() if x.strip()]) > 1:
            first = next(x for x in p.err.splitlines() if x.strip()).strip()[:80]
            self.fail(
                "noise", f"{len(p.err.splitlines())} stderr lines for a one-line error (first: {first})", p
            )
        return self.case.verdict == "ok"


class Harness:
    """Runs drivesim processes and records the cases (the fixtures live under ``root``)."""

    def __init__(self, root: Path, timeout: float):
        """Work under ``root``; each drivesim process gets ``timeout`` seconds."""
        self.root = root
        self.timeout = timeout
        self.cases: list[Case] = []
        script = Path(sys.executable).parent / "drivesim"
        limit = f'ulimit -v {MEMORY_LIMIT // 1024} && exec "$@"'
        self.prefix = ["sh", "-c", limit, "drivesim"] + (
            [str(script)]
            if script.exists()
            else [sys.executable, "-c", "from drivesim.cli import main; main()"]
        )
        self.fix = root / "fix"
        self.mods = root / "mods"
        self.escape = root / "escape"
        self.outside = root / "outside"
        self.scratch = root / "cases"
        for d in (self.fix, self.mods, self.escape, self.outside, self.scratch):
            d.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if k != "DRIVESIM_DEBUG"}
        env["PYTHONPATH"] = os.pathsep.join([str(root / "tree"), str(self.mods)])
        env["ADV_ESCAPE_DIR"] = str(self.escape)
        self.env = env
        self.ref = self.fix / "ref"
        self.refb = self.fix / "refb"

    def ds(
        self,
        *args: str,
        cwd: Path | None = None,
        timeout: float | None = None,
        env: dict | None = None,
    ) -> Proc:
        """Run ``drivesim ARGS`` in its own process group; killed (the group) at the timeout."""
        argv = [str(a) for a in args]
        start = time.monotonic()
        proc = subprocess.Popen(
            self.prefix + argv,
            cwd=cwd or self.scratch,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout or self.timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            timed_out = True
        return Proc(
            argv, None if timed_out else proc.returncode, out, err, time.monotonic() - start, timed_out
        )

    def spawn(self, tag: str, *args: str) -> tuple[subprocess.Popen, Path, Path]:
        """Start ``drivesim ARGS`` in the background (stdout/stderr to files)."""
        out, err = self.scratch / f"{tag}.out", self.scratch / f"{tag}.err"
        proc = subprocess.Popen(
            self.prefix + [str(a) for a in args],
            cwd=self.scratch,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=out.open("w"),
            stderr=err.open("w"),
            start_new_session=True,
        )
        return proc, out, err

    def finish(self, tag: str, proc: subprocess.Popen, argv: list[str], start: float, timeout=None) -> Proc:
        """Wait for a spawned process (killing its group at the timeout) and read its output."""
        timed_out = False
        try:
            proc.wait(timeout=timeout or self.timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            timed_out = True
        out = (self.scratch / f"{tag}.out").read_text(errors="replace")
        err = (self.scratch / f"{tag}.err").read_text(errors="replace")
        rc = None if timed_out else proc.returncode
        return Proc([str(a) for a in argv], rc, out, err, time.monotonic() - start, timed_out)

    def fresh(self, name: str) -> Path:
        """A scratch path for a case that does not exist yet."""
        path = self.scratch / name
        if path.exists() or path.is_symlink():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        return path

    def clone(self, name: str, src: Path | None = None) -> Path:
        """A copy of the reference campaign (or ``src``) to tamper with."""
        dst = self.fresh(name)
        shutil.copytree(src or self.ref, dst, symlinks=True)
        return dst

    def markers(self) -> list[str]:
        """Files the planted module or payload wrote when run (clears them)."""
        found = sorted(p.name for p in self.escape.iterdir())
        for p in self.escape.iterdir():
            p.unlink()
        return found

    @contextlib.contextmanager
    def case(self, family: str, name: str, expect: str) -> Iterator[Check]:
        """Record one case; a harness exception is recorded too (verdict wrong, why 'harness')."""
        case = Case(family, name, expect)
        check = Check(self, case)
        start = time.monotonic()
        self.markers()
        try:
            yield check
        except Exception as exc:  # a harness failure must not end the sweep
            traceback.print_exc()
            check.fail("wrong", f"harness error: {type(exc).__name__}: {exc}")
        if found := self.markers():
            check.fail("escape", f"planted code ran: {found[0]}")
        case.seconds = round(time.monotonic() - start, 2)
        if not case.command and check.last is not None:
            case.command, case.exit_code, case.stderr = check.last.command, check.last.rc, check.last.line
        self.cases.append(case)
        tail = f"  <- {case.why}" if case.verdict != "ok" else ""
        print(
            f"[{len(self.cases):3d}] {case.verdict:6s} {family:11s} {name} ({case.seconds:.1f} s){tail}",
            flush=True,
        )


# ---------------------------------------------------------------- helpers on campaign files


def sha(path: Path) -> str:
    """SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def ledger_digest(d: Path) -> str:
    """Digest of the ledger's batches and failures tables (the content, not the file bytes)."""
    try:
        con = sqlite3.connect(f"file:{d / 'ledger.sqlite'}?mode=ro", uri=True)
        try:
            rows = con.execute(
                "SELECT batch_id, scenario_ids, status, shard, shard_rows, shard_sha256"
                " FROM batches ORDER BY 1"
            ).fetchall()
            rows += con.execute("SELECT * FROM failures ORDER BY 1").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def snapshot(d: Path) -> dict[str, str]:
    """What a reader must leave alone: campaign.toml, sessions.jsonl, the shards, the ledger."""
    snap = {"ledger": ledger_digest(d)}
    for name in ("campaign.toml", "sessions.jsonl"):
        if (d / name).is_file():
            snap[name] = sha(d / name)
    for p in sorted((d / "results").glob("*.parquet")):
        if p.is_file() and not p.is_symlink():
            snap[f"results/{p.name}"] = sha(p)
    return snap


def check_kept(c: Check, d: Path, before: dict[str, str], keys: tuple[str, ...] | None = None) -> None:
    """Verdict loss when a file of ``before`` changed or went missing."""
    after = snapshot(d)
    for key, value in before.items():
        if keys is not None and key not in keys:
            continue
        if after.get(key) != value:
            state = "missing" if key not in after else "changed"
            c.fail("loss", f"campaign file {key} {state}")
            return


def sql(db: Path, statement: str, params: tuple = ()) -> None:
    """Execute one statement on a ledger (the tampering)."""
    con = sqlite3.connect(db)
    try:
        con.execute(statement, params)
        con.commit()
    finally:
        con.close()


def done_rows(d: Path) -> tuple[int, int]:
    """(rows, distinct scenario ids) of the shards the ledger's done batches name, read here."""
    import pyarrow.parquet as pq

    con = sqlite3.connect(f"file:{d / 'ledger.sqlite'}?mode=ro", uri=True)
    try:
        shards = [r[0] for r in con.execute("SELECT shard FROM batches WHERE status='done'")]
    finally:
        con.close()
    ids: list[int] = []
    for shard in shards:
        ids += pq.read_table(d / shard, columns=["scenario_id"]).column(0).to_pylist()
    return len(ids), len(set(ids))


def failed_rows(d: Path) -> list[tuple[int, str, str]]:
    """(scenario_id, status, error) of every failed row of a campaign, read here."""
    import pyarrow.parquet as pq

    rows = []
    for p in sorted((d / "results").glob("part-*.parquet")):
        t = pq.read_table(p, columns=["scenario_id", "status", "error"]).to_pylist()
        rows += [(r["scenario_id"], r["status"], r["error"] or "") for r in t if r["status"] != "ok"]
    return rows


def count_rows(c: Check, d: Path) -> int | None:
    """``drivesim query D 'SELECT count(*)'`` (the reader under test); None when it failed."""
    p = c.ds("query", d, "SELECT count(*) AS n FROM results", "--json")
    try:
        return int(json.loads(p.out.strip().splitlines()[-1])["n"])
    except (ValueError, IndexError, KeyError, TypeError):
        return None


def run_args(out: Path, **opts: str | None) -> list[str]:
    """``run`` arguments of a small campaign at ``out``; ``opts`` override the SMALL options
    (``count=None`` drops --count; ``source=[..]`` gives several sources)."""
    merged: dict[str, object] = dict(SMALL)
    for key, value in opts.items():
        merged["--" + key.replace("_", "-")] = value
    args = ["run"]
    for key, value in merged.items():
        if value is None:
            continue
        for v in value if isinstance(value, list) else [value]:
            args += [key, str(v)]
    return args + ["--out", str(out)]


# ---------------------------------------------------------------- fixtures


def build_fixtures(h: Harness) -> None:
    """The reference campaigns, the store, the policy, the planted module and the sweep."""
    print("fixtures: reference campaigns (drivesim run), store, policy, CommonRoad base", flush=True)
    for d, seed in ((h.ref, "0"), (h.refb, "1")):
        p = h.ds(*run_args(d, source="synthetic:highway,merge", count="16", seed=seed), timeout=600)
        if p.rc != 0:
            raise SystemExit(f"reference campaign failed: {p.command}\n{p.err[-2000:]}")
    (h.mods / "advmod_evil.py").write_text(
        "import os, pathlib\n"
        "pathlib.Path(os.environ['ADV_ESCAPE_DIR'], f'imported-{os.getpid()}').write_text('ran')\n"
        "POLICY = None\n"
    )
    (h.outside / "sentinel.txt").write_text("outside the campaign\n")
    (h.fix / "sweep.toml").write_text("[[policy]]\nT = 1.0\n\n[[policy]]\nT = 2.0\n")
    write_base_store(h.fix / "store.parquet", first_id=0)
    write_base_store(h.fix / "store-1000.parquet", first_id=1000)
    write_policy(h.fix / "mlp.npz")


def write_base_store(path: Path, first_id: int) -> None:
    """Eight highway scenarios of 8 agents and 10 steps (ids from ``first_id``)."""
    from drivesim.scenarios.families.common import FamilyConfig
    from drivesim.scenarios.store import write_store
    from drivesim.scenarios.synthetic import generate_many

    cfg = FamilyConfig(num_agents=8, steps=10)
    write_store(path, generate_many("highway", range(first_id, first_id + 8), cfg))


def obs_size() -> int:
    """The MLP's input size under the default SimConfig."""
    from drivesim.core.observation import observation_size
    from drivesim.core.types import SimConfig

    return observation_size(SimConfig().obs_neighbours)


def write_policy(path: Path, sizes: tuple[int, ...] | None = None) -> Path:
    """A valid MLP policy file (``save_policy`` of ``init_mlp``)."""
    from drivesim.core.policies import init_mlp
    from drivesim.train.policy_io import save_policy

    return save_policy(path, init_mlp(0, sizes or (obs_size(), 16, 2)))


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


# ---------------------------------------------------------------- family: sweeps

SWEEPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("T = nan", "toml", "[[policy]]\nT = nan\n", ("T",)),
    ("T = inf", "toml", "[[policy]]\nT = inf\n", ("T",)),
    ("T = -1", "toml", "[[policy]]\nT = -1.0\n", ("T",)),
    ("a = b = 0", "toml", "[[policy]]\na = 0.0\nb = 0.0\n", ("a",)),
    ("T = true", "toml", "[[policy]]\nT = true\n", ("T",)),
    ("T = '1.0' (a string)", "toml", "[[policy]]\nT = '1.0'\n", ("T",)),
    ("v0 = 71", "toml", "[[policy]]\nv0 = 71.0\n", ("v0",)),
    ("T as a table", "toml", "[[policy]]\nT = {x = 1}\n", ("T",)),
    ("unknown parameter", "toml", "[[policy]]\nfoo = 1.0\n", ("foo",)),
    ("no variants (empty file)", "toml", "", ("sweep",)),
    ("TOML syntax error", "toml", "[[policy]\nT = 1\n", ("sweep",)),
    ("TOML duplicate key", "toml", "[[policy]]\nT = 1.0\nT = 2.0\n", ("T",)),
    ("10,000 variants", "toml", "[[policy]]\nT = 1.0\n" * 10000, ("1024",)),
    ("1,025 variants", "toml", "[[policy]]\nT = 1.0\n" * 1025, ("1024",)),
    ("arrays nested 50,000 deep", "toml", "x = " + "[" * 50000 + "]" * 50000 + "\n", ("sweep",)),
    ("JSON duplicate key", "json", '[{"T": 1.0, "T": 2.0}]', ("T",)),
    ("JSON NaN literal", "json", '[{"T": NaN}]', ("T",)),
    ("JSON Infinity literal", "json", '[{"v0": Infinity}]', ("v0",)),
    ("JSON top-level object", "json", '{"T": 1.0}', ("sweep",)),
    ("JSON list of numbers", "json", "[1, 2, 3]", ("sweep",)),
    ("JSON 1e400", "json", '[{"T": 1e400}]', ("T",)),
    ("JSON nested 100,000 deep", "json", "[" * 100000 + "]" * 100000, ("sweep",)),
    ("JSON not UTF-8", "json", "\udcff", ("sweep",)),
)


def family_sweep(h: Harness) -> None:
    """Sweep files (TOML and JSON) with bad values, duplicates, too many variants, odd files."""
    for name, ext, text, names in SWEEPS:
        with h.case("sweep", f"sweep {name}", f"exit 2, one line naming the file and {names[0]!r}") as c:
            path = h.fresh(f"sweep-{len(h.cases)}.{ext}")
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
            out = h.fresh(f"sweep-run-{len(h.cases)}")
            c.judge(c.ds(*run_args(out, sweep=str(path))), 2, (path.name, *names), one_line=True)
            if out.exists():
                c.fail("wrong", "the campaign directory was created")
    for name, path in (
        ("missing file", h.scratch / "no-such-sweep.toml"),
        ("a directory", h.fix),
        ("/dev/zero", Path("/dev/zero")),
        ("a FIFO nobody writes", None),
    ):
        with h.case("sweep", f"sweep is {name}", "exit 2 within seconds, one line naming the file") as c:
            if path is None:
                path = h.fresh("sweep-fifo.toml")
                os.mkfifo(path)
            c.judge(
                c.ds(*run_args(h.fresh(f"sweep-run-{len(h.cases)}"), sweep=str(path)), timeout=60),
                2,
                (path.name,),
                one_line=True,
            )
    with h.case(
        "sweep", "valid two-variant sweep (control)", "exit 0, 16 rows (8 scenarios x 2 policies)"
    ) as c:
        d = h.fresh("sweep-ok")
        if c.judge(c.ds(*run_args(d, sweep=str(h.fix / "sweep.toml"))), 0) and done_rows(d)[0] != 16:
            c.fail("wrong", f"rows {done_rows(d)}")


# ---------------------------------------------------------------- family: MLP policy files


class _Payload:
    """Pickled into an object array: unpickling it would run a shell command."""

    def __init__(self, marker: Path):
        """The payload touches ``marker`` when unpickled."""
        self.marker = marker

    def __reduce__(self):
        """Pickle as a call of os.system (what a loader with allow_pickle would run)."""
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def _npz(path: Path, **arrays) -> Path:
    """Write an .npz of ``arrays`` as given (no checks)."""
    import numpy as np

    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def policy_variants(h: Harness) -> list[tuple[str, Callable[[Path], Path], tuple[str, ...]]]:
    """(name, writer of a tampered policy file at a path, names the refusal must carry)."""
    import numpy as np

    n = obs_size()
    good = dict(np.load(h.fix / "mlp.npz"))
    meta = json.loads(str(good["meta"]))

    def with_(**changes):
        """Writer of the good file with some entries replaced."""
        return lambda p: _npz(p, **{**good, **changes})

    def without(key):
        """Writer of the good file without entry ``key``."""
        return lambda p: _npz(p, **{k: v for k, v in good.items() if k != key})

    def header_claim(p: Path) -> Path:
        """w0.npy's header claims a (1e6, 1e6) float32 array; the data is 64 bytes."""
        _npz(p, **{k: v for k, v in good.items() if k != "w0"})
        with zipfile.ZipFile(p, "a") as zf:
            header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
            header = header.ljust(118) + "\n"
            data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 64
            zf.writestr("w0.npy", data)
        return p

    def three_outputs(p: Path) -> Path:
        """A well-formed file whose last layer has 3 outputs (save_policy refuses to write it)."""
        from drivesim.core.policies import init_mlp

        params = init_mlp(0, (n, 16, 3))
        arrays = {f"w{i}": np.asarray(w) for i, w in enumerate(params.weights)}
        arrays |= {f"b{i}": np.asarray(b) for i, b in enumerate(params.biases)}
        return _npz(p, meta=np.asarray(json.dumps({**meta, "sizes": [n, 16, 3]})), **arrays)

    nan = good["w0"].copy()
    nan[0, 0] = np.nan
    inf = good["w0"].copy()
    inf[1, 1] = np.inf
    return [
        ("w0 input size + 1", lambda p: write_policy(p, (n + 1, 16, 2)), ("w0",)),
        ("last layer 3 outputs", three_outputs, ("output",)),
        (
            "object array with a pickle payload",
            with_(w0=np.array([_Payload(h.escape / "unpickled")], object)),
            ("w0",),
        ),
        ("string arrays", with_(w0=np.array(["a", "b"])), ("w0",)),
        ("complex arrays", with_(w0=good["w0"].astype(np.complex64)), ("w0",)),
        ("meta a JSON list", with_(meta=np.asarray(json.dumps([1, 2]))), ("meta",)),
        ("meta not JSON", with_(meta=np.asarray("{{{")), ("meta",)),
        ("meta missing", without("meta"), ("meta",)),
        ("array w1 missing", without("w1"), ("w1",)),
        ("format version 1", with_(meta=np.asarray(json.dumps({**meta, "version": 1}))), ("version",)),
        ("format name wrong", with_(meta=np.asarray(json.dumps({**meta, "format": "x"}))), ("format",)),
        ("meta sizes not a list", with_(meta=np.asarray(json.dumps({**meta, "sizes": 5}))), ("sizes",)),
        ("w0 NaN", with_(w0=nan), ("w0",)),
        ("w0 inf", with_(w0=inf), ("w0",)),
        ("w0 one-dimensional", with_(w0=good["w0"][:, 0]), ("w0",)),
        ("w0.npy header claims 4 TB", header_claim, ("w0",)),
        ("junk bytes", lambda p: (p.write_bytes(b"junk\n"), p)[1], ("npz",)),
        ("a zip of nothing", lambda p: (zipfile.ZipFile(p, "w").close(), p)[1], ("meta",)),
    ]


def family_policy(h: Harness) -> None:
    """``--policy mlp:FILE`` with tampered files: one line naming the file and field, exit 2."""
    for name, writer, names in policy_variants(h):
        with h.case(
            "policy", f"mlp: {name}", f"exit 2, one line naming the file and {names[0]!r}; nothing written"
        ) as c:
            path = writer(h.fresh(f"policy-{len(h.cases)}.npz"))
            out = h.fresh(f"policy-run-{len(h.cases)}")
            c.judge(c.ds(*run_args(out, policy=f"mlp:{path}")), 2, (path.name, *names), one_line=True)
            if "allow_pickle" in c.last.err and "pickle" not in name:
                c.fail(
                    "wrong", "the message blames pickled data and suggests allow_pickle for a non-pickle file"
                )
            if out.exists():
                c.fail("wrong", "the campaign directory was created")
    for name, spec, names in (
        ("missing file", "mlp:{s}/nope.npz", ("nope.npz",)),
        ("a directory", "mlp:{s}", ("cases",)),
        ("empty path", "mlp:", ("mlp",)),
        ("second file of two bad", "mlp:{g},{s}/nope.npz", ("nope.npz",)),
        ("/dev/zero", "mlp:/dev/zero", ("/dev/zero",)),
    ):
        with h.case("policy", f"mlp: {name}", "exit 2, one line naming the file") as c:
            spec = spec.format(s=h.scratch, g=h.fix / "mlp.npz")
            c.judge(
                c.ds(*run_args(h.fresh(f"policy-run-{len(h.cases)}"), policy=spec), timeout=60),
                2,
                names,
                one_line=True,
            )
    with h.case("policy", "mlp: a valid file (control)", "exit 0, 8 rows") as c:
        d = h.fresh("policy-ok")
        if (
            c.judge(c.ds(*run_args(d, policy=f"mlp:{h.fix / 'mlp.npz'}"), timeout=300), 0)
            and done_rows(d)[0] != 8
        ):
            c.fail("wrong", f"rows {done_rows(d)}")


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


# ---------------------------------------------------------------- summary


def families() -> tuple[tuple[str, Callable[[Harness], None]], ...]:
    """The families in the order they run (name, function)."""
    return (
        ("cli", family_cli),
        ("toml", family_toml),
        ("ledger", family_ledger),
        ("shards", family_shards),
        ("store", family_store),
        ("commonroad", family_commonroad),
        ("sweep", family_sweep),
        ("policy", family_policy),
        ("sql", family_sql),
        ("outputs", family_outputs),
        ("serve", family_serve),
        ("signals", family_signals),
        ("catalogue", family_catalogue),
        ("missing", family_missing),
    )


def checkout() -> Path:
    """The checkout whose drivesim package is installed (found without importing it)."""
    import importlib.util

    spec = importlib.util.find_spec("drivesim")
    if spec is None or spec.origin is None:
        raise SystemExit("drivesim is not installed in this Python")
    return Path(spec.origin).resolve().parents[1]


def tree_state(repo: Path) -> str:
    """The checkout's commit and whether drivesim/ has local edits."""
    try:
        head = subprocess.run(
            ["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "-C", repo, "status", "--porcelain", "drivesim"], capture_output=True, text=True
        )
    except OSError:
        return "unknown"
    return head.stdout.strip() + (" (drivesim/ edited)" if dirty.stdout.strip() else "")


def freeze(repo: Path, root: Path) -> Path:
    """Copy the checkout's drivesim/ package to ROOT/tree (first on every process's path, this
    one's too), so the whole sweep tests one version even while the checkout is edited."""
    tree = root / "tree"
    if tree.exists():
        shutil.rmtree(tree)
    shutil.copytree(repo / "drivesim", tree / "drivesim", ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(tree))
    return tree


def summary(cases: list[Case], wall_s: float, tree: str) -> str:
    """Markdown: counts per verdict, per family and verdict, and the non-ok cases."""
    per = Counter(c.verdict for c in cases)
    lines = [
        f"## Adversarial sweep: {len(cases)} cases in {wall_s / 60:.1f} min (drivesim {tree})",
        "",
        "| verdict | cases |",
        "|---|---:|",
    ]
    lines += [f"| {v} | {per.get(v, 0)} |" for v in VERDICTS]
    fams = list(dict.fromkeys(c.family for c in cases))
    lines += ["", "| family | " + " | ".join(VERDICTS) + " |", "|---|" + "---:|" * len(VERDICTS)]
    for f in fams:
        counts = Counter(c.verdict for c in cases if c.family == f)
        lines.append(f"| {f} | " + " | ".join(str(counts.get(v, 0)) for v in VERDICTS) + " |")
    bad = [c for c in cases if c.verdict != "ok"]
    lines += [
        "",
        f"### Non-ok cases ({len(bad)})",
        "",
        "| family | case | verdict | exit | why | stderr |",
        "|---|---|---|---:|---|---|",
    ]
    for c in bad:
        cells = [c.family, c.name, c.verdict, str(c.exit_code), c.why, c.stderr[:140]]
        lines.append("| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |")
    return "\n".join(lines)


def main() -> None:
    """Build the fixtures, run the families, write OUT/adversarial.json, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="work directory (default: a new temporary one)")
    parser.add_argument("--only", help="comma-separated families to run (default: all)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per drivesim process")
    args = parser.parse_args()
    # a sweep started in the background (nohup ... &) inherits SIGINT ignored, and so would
    # every drivesim process; a handler here gives the children the default disposition back
    signal.signal(signal.SIGINT, signal.default_int_handler)
    root = (args.out or Path(tempfile.mkdtemp(prefix="drivesim-adversarial-"))).resolve()
    root.mkdir(parents=True, exist_ok=True)
    print(f"work directory: {root}", flush=True)
    repo = checkout()
    tree = tree_state(repo)
    freeze(repo, root)
    print(f"drivesim: {repo} at {tree}, copied to {root / 'tree'} (the version under test)", flush=True)
    h = Harness(root, args.timeout)
    start = time.monotonic()
    build_fixtures(h)
    (h.fix / "cr").mkdir(exist_ok=True)
    (h.fix / "cr" / "base.xml").write_text((COMMONROAD / BASE_XML).read_text())
    wanted = set(args.only.split(",")) if args.only else None
    for name, run in families():
        if wanted is None or name in wanted:
            print(f"== family {name}", flush=True)
            run(h)
    wall = time.monotonic() - start
    if (after := tree_state(repo)) != tree:
        print(f"note: the checkout moved to {after} during the sweep; the copy taken at start was tested")
    (root / "adversarial.json").write_text(json.dumps([asdict(c) for c in h.cases], indent=1) + "\n")
    print(summary(h.cases, wall, tree))
    print(f"\nwritten: {root / 'adversarial.json'}")


if __name__ == "__main__":
    main()
