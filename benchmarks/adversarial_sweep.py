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
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from adversarial.campaign_files import family_cli, family_toml
from adversarial.harness import BASE_XML, COMMONROAD, VERDICTS, Case, Harness, build_fixtures
from adversarial.ledger_shards import family_ledger, family_shards
from adversarial.policies import family_policy, family_sweep
from adversarial.processes import family_outputs, family_serve, family_signals, family_sql
from adversarial.sources_paths import family_catalogue, family_missing
from adversarial.stores_xml import family_commonroad, family_store

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
