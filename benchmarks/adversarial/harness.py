"""The sweep's harness: drivesim processes, cases and verdicts, helpers on campaign files
and the shared fixtures."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
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
