"""Headless chromium for the dashboard tests: dump the rendered DOM, take a screenshot.

The dashboard records JavaScript errors in ``<pre id="js-errors">`` and marks every plot div
with ``data-rendered`` / ``data-traces`` / ``data-points`` once ``Plotly.newPlot`` resolved, so
the dumped DOM carries both.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--mute-audio",
)
PLOT_DIV = re.compile(r'<div class="plot[^"]*" id="(plot-\d+)"([^>]*)>')
ATTR = re.compile(r'([\w-]+)="([^"]*)"')


@dataclass
class Rendered:
    """What a page looked like after rendering: its DOM, JS errors and per-plot attributes."""

    dom: str
    errors: str
    plots: dict[str, dict[str, str]]
    plots_done: str

    @property
    def svg_count(self) -> int:
        return self.dom.count('class="main-svg"')


def _run(chromium: str, args: list[str], timeout: float = 90) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="drivesim-chromium-") as profile:
        cmd = [chromium, *FLAGS, f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)


def render(chromium: str, url: str, budget_ms: int = 15000) -> Rendered:
    """Load ``url`` headless, let it run for ``budget_ms`` of virtual time, parse the DOM."""
    proc = _run(
        chromium,
        [f"--virtual-time-budget={budget_ms}", "--run-all-compositor-stages-before-draw", "--dump-dom", url],
    )
    dom = proc.stdout
    if "<html" not in dom:
        raise AssertionError(f"chromium dumped no DOM (rc={proc.returncode}): {proc.stderr[-2000:]}")
    errors = re.search(r'<pre id="js-errors">(.*?)</pre>', dom, re.S)
    plots = {m.group(1): dict(ATTR.findall(m.group(2))) for m in PLOT_DIV.finditer(dom)}
    done = re.search(r'<body[^>]*data-plots-done="([^"]*)"', dom)
    return Rendered(
        dom=dom,
        errors=errors.group(1).strip() if errors else "<no js-errors element>",
        plots=plots,
        plots_done=done.group(1) if done else "",
    )


def screenshot(chromium: str, url: str, out: Path, size: str = "1280,7000") -> Path:
    """Save a full-page-ish PNG of ``url`` to ``out``."""
    args = ["--virtual-time-budget=15000", f"--window-size={size}", f"--screenshot={out}", url]
    proc = _run(chromium, args)
    if not out.is_file():
        raise AssertionError(f"chromium wrote no screenshot (rc={proc.returncode}): {proc.stderr[-2000:]}")
    return out
