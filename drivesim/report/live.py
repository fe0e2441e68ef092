"""The live terminal view of a running campaign (rich): progress bar with ETA, throughput now and
mean, per-phase times of the last batch, device and host memory, failed count, and the
scenarios each Ray worker ran (campaigns on a cluster).

``LiveView.update(event)`` takes the campaign's per-batch event
(:class:`drivesim.pipeline.timing.BatchEvent`) or any object or dict with the same field names
(``done``/``scenarios_done``, ``total``/``scenarios_total``, ``failed``, ``phases``,
``scenarios_per_s``, optional ``device_bytes``), so it can be passed as ``progress=view.update``.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from drivesim.parallel.memory import host_rss
from drivesim.report.analysis import PHASES
from drivesim.report.plain_progress import PlainProgress
from drivesim.report.rates import rate

RATE_WINDOW = 8


@dataclass
class LiveState:
    """What the view shows, updated from events (rates in scenarios/s, memory in bytes)."""

    done: int = 0
    total: int = 0
    failed: int = 0
    skipped: int = 0
    rate_now: float = 0.0
    rate_mean: float = 0.0
    phases: dict | None = None
    device_bytes: int | None = None
    host_rss_bytes: int | None = None
    batches: int = 0
    last_error: str | None = None
    workers: dict[str, int] = field(default_factory=dict)  # scenarios per Ray worker this run


def field_of(event: object, *names: str, default: Any = None) -> Any:
    """The first present field among ``names`` of an event object or dict."""
    for name in names:
        value = event.get(name) if isinstance(event, dict) else getattr(event, name, None)
        if value is not None:
            return value
    return default


class LiveView:
    """Live progress of a campaign in the terminal; use as a context manager or start()/stop()."""

    def __init__(self, total: int = 0, console: Console | None = None, title: str = "campaign"):
        self.console = console or Console(file=sys.stderr)
        self.state = LiveState(total=total)
        self._recent: deque[tuple[float, int]] = deque(maxlen=RATE_WINDOW)
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("scenarios"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._task = self._progress.add_task(title, total=total or None)
        self._live = Live(self.renderable(), console=self.console, refresh_per_second=4, transient=False)
        # off a terminal (a log file, a pipe) the frames are not drawn: plain lines instead
        plain = not self.console.is_terminal
        self._plain = PlainProgress(self.state, self.console.file, title) if plain else None

    def __enter__(self) -> LiveView:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        if self._plain is not None:
            self._plain.start()
            return
        self._live.start()

    def stop(self) -> None:
        if self._plain is not None:  # the plain lines, then the whole view once
            self._plain.stop()
            self.console.print(self.renderable())
            return
        self._live.update(self.renderable(), refresh=True)
        self._live.stop()

    def update(self, event: object) -> None:
        """Take one progress event (see module docstring) and redraw."""
        s = self.state
        s.done = int(field_of(event, "done", "scenarios_done", default=s.done))
        s.total = int(field_of(event, "total", "scenarios_total", default=s.total))
        s.failed = int(field_of(event, "failed", default=s.failed))
        s.skipped = int(field_of(event, "skipped", default=s.skipped))
        s.rate_mean = float(field_of(event, "scenarios_per_s", "rate_mean", default=s.rate_mean))
        phases = field_of(event, "phases")
        if phases is not None:
            s.phases = phases if isinstance(phases, dict) else phases.as_dict()
            s.batches += 1
        s.device_bytes = field_of(event, "device_bytes", "device_bytes_in_use") or _device_bytes()
        s.host_rss_bytes = field_of(event, "host_rss_bytes") or host_rss()
        s.last_error = field_of(event, "error", default=s.last_error)
        worker = field_of(event, "worker")
        if worker is not None and phases is not None:
            name = str(worker)
            s.workers[name] = s.workers.get(name, 0) + int(field_of(event, "num_scenarios", default=0))
        self._recent.append((time.perf_counter(), s.done))
        s.rate_now = _rate(self._recent) if len(self._recent) > 1 else s.rate_mean
        self._progress.update(self._task, completed=s.done, total=s.total or None)
        if self._plain is not None:
            self._plain.updated()
            return
        self._live.update(self.renderable())

    def renderable(self) -> Group:
        """The progress bar and the statistics table."""
        return Group(self._progress, stats_table(self.state))


def stats_table(s: LiveState) -> Table:
    """A compact table of throughput, phase times, memory and failures."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="dim")
    table.add_column()
    table.add_row("scenarios/s", f"now {rate(s.rate_now)}   mean {rate(s.rate_mean)}")
    if s.phases:
        parts = [f"{label} {_seconds(s.phases.get(key))}" for key, label in PHASES]
        table.add_row("last batch", "   ".join(parts))
    memory = []
    if s.device_bytes:
        memory.append(f"device {_mib(s.device_bytes)}")
    if s.host_rss_bytes:
        memory.append(f"host RSS {_mib(s.host_rss_bytes)}")
    if memory:
        table.add_row("memory", "   ".join(memory))
    if s.workers:
        shares = [f"{_escape(name)} {count:,}" for name, count in sorted(s.workers.items())]
        table.add_row(f"workers ({len(s.workers)})", "   ".join(shares) + "   scenarios this run")
    failed = f"[red]{s.failed:,}[/red]" if s.failed else "0"
    resumed = f"   (skipped {s.skipped:,} done earlier)" if s.skipped else ""
    table.add_row("failed", failed + resumed)
    if s.last_error:
        table.add_row("last error", _escape(str(s.last_error))[:200])
    return table


def _rate(recent: deque) -> float:
    (t0, n0), (t1, n1) = recent[0], recent[-1]
    return (n1 - n0) / (t1 - t0) if t1 > t0 else 0.0


def _seconds(value: object) -> str:
    if not isinstance(value, int | float):
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB"


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _device_bytes() -> int | None:
    """Bytes in use over local devices (memory_stats; None on CPU or before JAX starts)."""
    jax = sys.modules.get("jax")
    if jax is None:
        return None
    total, seen = 0, False
    try:
        for device in jax.local_devices():
            stats = device.memory_stats()
            if stats:
                total += int(stats.get("bytes_in_use", 0))
                seen = True
    except Exception:  # noqa: BLE001 - a backend without memory stats must not break the view
        return None
    return total if seen else None
