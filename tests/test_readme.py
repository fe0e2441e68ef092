"""README.md is true: every option documented in its CLI reference exists, and every Python
snippet runs as written (each in a fresh process, in an empty project directory beside a link
to the real ../shared data)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

from drivesim.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _cli_reference() -> list[tuple[str, str]]:
    """(heading, body) of each ``###`` section of the CLI reference."""
    part = README.split("## CLI reference", 1)[1].split("\n## ", 1)[0]
    chunks = re.split(r"^### (.*)$", part, flags=re.M)
    return list(zip(chunks[1::2], chunks[2::2], strict=True))


def _resolve(words: list[str]):
    """The click command reached by following ``words`` (subcommands) from the root, and the
    words used."""
    cmd = typer.main.get_command(app)
    used = []
    for word in words:
        sub = getattr(cmd, "commands", {}).get(word)
        if sub is None:
            break
        cmd, used = sub, [*used, word]
    return cmd, used


def _options(cmd) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}


def _heading_commands(heading: str) -> list:
    """Commands named in a heading: `drivesim bench engine|pipeline|memory` gives three."""
    out = []
    for match in re.finditer(r"drivesim ((?:[a-z][a-z|]*(?: |`|$))+)", heading):
        words = match.group(1).replace("`", " ").split()
        alternatives = [[]]
        for word in words:
            alternatives = [[*a, w] for a in alternatives for w in word.split("|")]
        for words in alternatives:
            cmd, used = _resolve(words)
            if used:
                out.append(cmd)
    return out


SECTIONS = _cli_reference()


@pytest.mark.parametrize("heading,body", SECTIONS, ids=[h[:40] for h, _ in SECTIONS])
def test_documented_options_exist(heading, body):
    commands = _heading_commands(heading)
    assert commands, f"no drivesim command found in heading {heading!r}"
    known = set().union(*(_options(c) for c in commands))
    example_lines = [ln.strip() for ln in body.splitlines() if ln.strip().startswith("drivesim ")]
    for line in example_lines:
        cmd, used = _resolve(line.split()[1:])
        assert used, f"README example uses an unknown command: {line}"
        code = line.split("#", 1)[0]
        missing = set(OPTION.findall(code)) - _options(cmd)
        assert not missing, (
            f"README example {line!r}: {sorted(missing)} not in `drivesim {' '.join(used)} --help`"
        )
    prose = "\n".join(ln for ln in body.splitlines() if not ln.strip().startswith("drivesim "))
    missing = set(OPTION.findall(heading + prose)) - known
    assert not missing, f"{heading}: documented options {sorted(missing)} are not in --help"


def test_every_command_is_documented():
    group = typer.main.get_command(app)
    documented = " ".join(h for h, _ in SECTIONS)
    for name in group.commands:
        assert f"drivesim {name}" in documented, f"`drivesim {name}` has no section in the CLI reference"


SNIPPETS = re.findall(r"```python\n(.*?)```", README, flags=re.S)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(SNIPPETS)))
def test_python_snippet_runs(index, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shared = ROOT.parent / "shared"
    if not shared.is_dir():
        pytest.skip(f"no ../shared beside the project ({shared})")
    (tmp_path / "shared").symlink_to(shared)
    (project / "runs").mkdir()
    env = dict(os.environ, DRIVESIM_JAX_CACHE=str(tmp_path / "jax-cache"))
    proc = subprocess.run(
        [sys.executable, "-c", SNIPPETS[index]],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"README snippet {index} failed:\n{SNIPPETS[index]}\n{proc.stderr[-3000:]}"
