"""The pages the docs tests read: README.md and every page of the docs site (docs/), less the
journal and the page that includes BENCHMARKS.md, with their code blocks."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# the journal keeps lessons from history, and docs/benchmarks.md only includes BENCHMARKS.md
SKIPPED = ("journal/", "benchmarks.md", "hooks/")
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```", re.S | re.M)


def pages() -> list[Path]:
    """README.md, then the docs pages in path order."""
    docs = [p for p in sorted(DOCS.rglob("*.md")) if not p.relative_to(DOCS).as_posix().startswith(SKIPPED)]
    return [ROOT / "README.md", *docs]


def name(page: Path) -> str:
    """The page's path from the repository root, e.g. ``docs/guides/sweep.md``."""
    return page.relative_to(ROOT).as_posix()


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block."""
    return [(m.group(1), m.group(2)) for m in FENCE.finditer(text)]


def python_snippets() -> list[tuple[str, int, str]]:
    """(page name, index on the page, code) of every ```python block."""
    out = []
    for page in pages():
        blocks = [body for lang, body in code_blocks(page.read_text(encoding="utf-8")) if lang == "python"]
        out += [(name(page), i, body) for i, body in enumerate(blocks)]
    return out
