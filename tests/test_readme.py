"""README.md and the docs site are true: every `drivesim` command line in their code blocks
names a real command and only its real options, every option a command's section mentions
exists, every command has an example or a mention in a guide, and every Python snippet runs
as written (each in a fresh process, in an empty project directory beside a link to the real
../shared data). The CLI reference itself is generated from the commands (docs/reference/cli.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import typer
from doc_pages import DOCS, ROOT, code_blocks, name, pages, python_snippets

from drivesim.cli import app

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
HEADING = re.compile(r"^(#{1,6}) (.*?)(?:\s*\{[^}]*\})?\s*$")
SHELL = ("", "bash", "sh", "console", "shell")
GROUP = typer.main.get_command(app)
PAGES = pages()


def _resolve(words: list[str]):
    """The click command reached by following ``words`` (subcommands) from the root, and the
    words used."""
    cmd, used = GROUP, []
    for word in words:
        sub = getattr(cmd, "commands", {}).get(word)
        if sub is None:
            break
        cmd, used = sub, [*used, word]
    return cmd, used


def _options(cmd) -> set[str]:
    return {o for p in cmd.params for o in (*p.opts, *p.secondary_opts)} | {"--help"}


def _all_commands(cmd=GROUP, path=()):
    """(path, command) of every command and subcommand."""
    for word, sub in getattr(cmd, "commands", {}).items():
        yield (*path, word), sub
        yield from _all_commands(sub, (*path, word))


def _heading_commands(heading: str) -> list:
    """Commands named in a heading: `drivesim bench engine|pipeline|memory` gives three."""
    out = []
    for match in re.finditer(r"drivesim ((?:[a-z][a-z0-9|]*(?: |`|$))+)", heading):
        words = match.group(1).replace("`", " ").split()
        alternatives: list[list[str]] = [[]]
        for word in words:
            alternatives = [[*a, w] for a in alternatives for w in word.split("|")]
        for words in alternatives:
            cmd, used = _resolve(words)
            if used:
                out.append(cmd)
    return out


def _command_lines(text: str) -> list[str]:
    """Lines of shell code blocks that run drivesim (``drivesim ...`` or ``.venv/bin/drivesim ...``)."""
    lines = []
    for lang, body in code_blocks(text):
        if lang in SHELL:
            for line in body.splitlines():
                line = line.strip().removeprefix(".venv/bin/")
                if line.startswith("drivesim "):
                    lines.append(line)
    return lines


def _sections(text: str) -> list[tuple[str, str]]:
    """(heading, body) of every section (any level; code blocks are not split at ``#`` lines)."""
    sections, heading, body, fenced = [], "", [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        match = None if fenced else HEADING.match(line)
        if match:
            sections.append((heading, "\n".join(body)))
            heading, body = match.group(2), []
        else:
            body.append(line)
    sections.append((heading, "\n".join(body)))
    return sections


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_command_lines_use_real_commands_and_options(page):
    for line in _command_lines(page.read_text(encoding="utf-8")):
        words = line.split()[1:]
        root_options = words[: next((i for i, w in enumerate(words) if not w.startswith("-")), 0)]
        assert set(root_options) <= _options(GROUP), f"{name(page)}: {line!r}: unknown {root_options}"
        cmd, used = _resolve(words[len(root_options) :])
        assert used, f"{name(page)}: example uses an unknown command: {line}"
        code = line.split(" #", 1)[0]
        missing = set(OPTION.findall(code)) - _options(cmd) - _options(GROUP)
        assert not missing, (
            f"{name(page)}: example {line!r}: {sorted(missing)} not in `drivesim {' '.join(used)} --help`"
        )


@pytest.mark.parametrize("page", PAGES, ids=name)
def test_options_a_command_section_mentions_exist(page):
    for heading, body in _sections(page.read_text(encoding="utf-8")):
        commands = _heading_commands(heading)
        if not commands:
            continue
        known = set().union(*(_options(c) for c in commands))
        prose = "\n".join(ln for ln in body.splitlines() if not ln.strip().startswith("drivesim "))
        missing = set(OPTION.findall(heading + prose)) - known
        assert not missing, f"{name(page)}, {heading}: documented options {sorted(missing)} are not in --help"


def test_the_cli_reference_is_generated_from_the_app():
    from drivesim import cli_reference

    reference = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    assert ":module: drivesim.cli_reference" in reference and ":command: command" in reference
    assert cli_reference.command.commands.keys() == GROUP.commands.keys()


def test_every_command_has_an_example_or_a_mention_in_a_guide():
    guides = [DOCS / "getting-started.md", *sorted((DOCS / "guides").glob("*.md"))]
    text = " ".join(re.sub(r"\s+", " ", p.read_text(encoding="utf-8")) for p in guides)
    for path, _ in _all_commands():
        words = " ".join(path)
        mentioned = f"drivesim {words}" in text or (len(path) > 1 and f"{words} " in text)
        assert mentioned, f"`drivesim {words}` has no example or mention in a guide"


def test_readme_links_and_images_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    assert targets
    for target in targets:
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).is_file(), f"README links to {target}, which does not exist"


def test_readme_figures_are_the_current_ones_of_benchmarks():
    """Each value of the README's "Current figures" table is a value of BENCHMARKS.md's
    current-figures table (rendered from benchmarks/figures.json), so the two cannot drift."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Current figures", 1)[1].split("\n## ", 1)[0]
    rows = [ln.split("|")[1:-1] for ln in table.splitlines() if ln.startswith("|")][2:]
    assert 3 <= len(rows) <= 5
    benchmarks = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    for _, value, _ in rows:
        headline = value.split("(")[0].strip()
        assert f"**{headline}**" in benchmarks, f"README figure {headline!r} is not in BENCHMARKS.md's table"


SNIPPETS = python_snippets()


@pytest.mark.slow
@pytest.mark.parametrize("page,index,code", SNIPPETS, ids=[f"{p}:{i}" for p, i, _ in SNIPPETS])
def test_python_snippet_runs(page, index, code, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    shared = ROOT.parent / "shared"
    if not shared.is_dir():
        pytest.skip(f"no ../shared beside the project ({shared})")
    (tmp_path / "shared").symlink_to(shared)
    (project / "runs").mkdir()
    env = dict(os.environ, DRIVESIM_JAX_CACHE=str(tmp_path / "jax-cache"))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, f"{page} snippet {index} failed:\n{code}\n{proc.stderr[-3000:]}"
