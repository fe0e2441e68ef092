"""The static dashboard: one self-contained HTML file (plotly.js embedded, works offline).

``write_dashboard(DIR)`` loads a campaign directory (or a bench/scale output directory) and
writes ``DIR/dashboard.html`` atomically. Each plot is stored as JSON in a
``<script type="application/json">`` element and drawn by ``Plotly.newPlot``; when it resolves,
the plot's div gets ``data-rendered="ok"``, ``data-traces`` and ``data-points`` (and the body
``data-plots-done``) so a headless browser can check the page. JavaScript errors are recorded in
``<pre id="js-errors">``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.offline

from drivesim.pipeline import policy_provenance
from drivesim.report import analysis, assets
from drivesim.report.blocks import Html, Section, esc
from drivesim.report.data import CampaignData, load_campaign
from drivesim.report.figures_catalogue import catalogue_section
from drivesim.report.figures_compare import comparison_section, sessions_section
from drivesim.report.figures_outcomes import failures_section, outcomes_section
from drivesim.report.figures_perf import devices_section, memory_section, phases_section, throughput_section
from drivesim.report.figures_realism import realism_section
from drivesim.report.figures_scale import scaling_section
from drivesim.report.figures_workers import workers_section
from drivesim.report.rates import rate
from drivesim.report.worst import worst_section

# each builds a Section from CampaignData; None leaves its section out of the page
SECTIONS = (
    worst_section,
    throughput_section,
    phases_section,
    scaling_section,
    memory_section,
    devices_section,
    workers_section,
    outcomes_section,
    realism_section,
    catalogue_section,
    comparison_section,
    failures_section,
    sessions_section,
)


@dataclass(frozen=True)
class DashboardOptions:
    """How to render: ``live_poll_s`` adds a script that polls ``/version`` (live server) and
    reloads when ``version`` changes; ``title`` overrides the page title."""

    title: str | None = None
    live_poll_s: float | None = None
    version: str = ""


def write_dashboard(
    campaign_dir: str | Path, out_path: str | Path | None = None, options: DashboardOptions | None = None
) -> Path:
    """Render the dashboard of ``campaign_dir`` to ``out_path`` (default DIR/dashboard.html)."""
    campaign_dir = Path(campaign_dir)
    if not campaign_dir.is_dir():
        raise FileNotFoundError(f"campaign directory {campaign_dir} does not exist")
    out = Path(out_path) if out_path is not None else campaign_dir / "dashboard.html"
    data = load_campaign(campaign_dir)
    base = Path(os.path.relpath(campaign_dir.resolve(), out.resolve().parent)).as_posix()
    data.link_base = "" if base == "." else base + "/"  # links into the campaign from where the page is
    page = render_dashboard(data, options or DashboardOptions())
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".dashboard-", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(page)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a report is meant to be shared
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def render_dashboard(data: CampaignData, options: DashboardOptions | None = None) -> str:
    """The complete HTML page for ``data``."""
    options = options or DashboardOptions()
    sections = [s for s in (build(data) for build in SECTIONS) if s is not None]
    title = options.title or f"drivesim: {data.root.resolve().name}"
    counter = iter(range(1_000_000))
    body = "\n".join(_section_html(s, counter) for s in sections)
    nav = " · ".join(f'<a href="#{s.anchor}">{esc(s.title)}</a>' for s in sections)
    live = _live_script(options) if options.live_poll_s else ""
    return assets.fill(
        assets.PAGE,
        {
            "TITLE": esc(title),
            "STYLE": assets.STYLE,
            "ERRORS": assets.ERRORS_JS,
            "HEADER": _header(data, title),
            "NAV": nav,
            "BODY": body,
            "PLOTLY": _plotly_js(),
            "RENDER": assets.RENDER_JS,
            "LIVE": live,
        },
    )


def _section_html(section: Section, counter) -> str:
    parts = []
    for block in section.blocks:
        if isinstance(block, go.Figure):
            parts.append(_figure_html(block, f"plot-{next(counter)}"))
        elif isinstance(block, Html):
            parts.append(str(block))
        else:
            parts.append(f'<p class="note">{esc(block)}</p>')
    if not section.figures and not any(isinstance(b, Html) for b in section.blocks):
        parts = [f'<p class="empty">{esc(section.empty_note)}</p>']
    return (
        f'<section id="{esc(section.anchor)}"><h2>{esc(section.title)}</h2>\n'
        + "\n".join(parts)
        + "\n</section>"
    )


def _figure_html(fig: go.Figure, plot_id: str) -> str:
    spec = script_safe_json(fig.to_json())
    return (
        f'<div class="plot" id="{plot_id}" data-rendered="pending"></div>\n'
        f'<script type="application/json" id="{plot_id}-spec">{spec}</script>'
    )


def script_safe_json(text: str) -> str:
    """JSON text that cannot close or open markup inside a <script> element."""
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _header(data: CampaignData, title: str) -> str:
    """Machine, devices, JAX version, workload and dates, from the ledger meta or the records."""
    info = header_fields(data)
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in info.items() if v)
    tp = analysis.throughput(data.phases)
    key = []
    if data.outcomes is not None:
        key.append(f"{data.outcomes.total:,} results, {data.outcomes.failed:,} failed")
    if tp is not None:
        key.append(f"{rate(tp.mean)} scenarios/s mean")
    summary = f'<p class="summary">{esc(" · ".join(key))}</p>' if key else ""
    return f'<h1>{esc(title)}</h1>{summary}<table class="header">{rows}</table>'


def header_fields(data: CampaignData) -> dict[str, str]:
    """Ordered header values (plain text; escaped when rendered)."""
    meta = data.meta
    first = (data.bench + data.scale)[:1]
    rec = first[0] if first else {}
    devices = meta.get("devices") or rec.get("device_kind") or ""
    try:
        parsed = json.loads(devices) if isinstance(devices, str) and devices.startswith("[") else devices
        if isinstance(parsed, list):
            devices = ", ".join(f"{n}× {k}" for k, n in _counts(parsed))
    except json.JSONDecodeError:
        pass
    program = json.loads(meta["program"]) if meta.get("program") else {}
    return {
        "policy": _policy(meta),
        "model options": _model_options(meta),
        "trained": policy_provenance.describe_meta(meta),
        "directory": str(data.root.resolve()),
        "machine": meta.get("machine") or rec.get("machine", ""),
        "processor": program.get("device", ""),
        "engine": program.get("engine", ""),
        "devices": str(devices),
        "device count": meta.get("device_count") or str(rec.get("device_count", "")),
        "backend": meta.get("backend") or rec.get("backend", ""),
        "batch size": meta.get("batch_size") or str(rec.get("batch_size") or ""),
        "JAX version": meta.get("jax_version") or rec.get("jax_version", ""),
        "workload": meta.get("workload") or rec.get("workload", ""),
        "started": _date(meta.get("started_at") or rec.get("timestamp")),
        "finished": _date(meta.get("finished_at")),
        "generated": _date(dt.datetime.now(dt.UTC).timestamp()),
    }


def _model_options(meta: dict[str, str]) -> str:
    """The campaign's model switches that are on (from the ledger's ``identity``), "" for none."""
    identity = policy_provenance.meta_json(meta, "identity", dict)
    options = [
        "ballistic position update" if identity.get("position_update") == "ballistic" else "",
        "MOBIL lane changes" if identity.get("lane_changes") else "",
        "occlusion" if identity.get("occlusion") else "",
    ]
    return ", ".join(o for o in options if o)


def _policy(meta: dict[str, str]) -> str:
    """The campaign's ego policy (or its sweep file) from the ledger's ``identity``."""
    identity = policy_provenance.meta_json(meta, "identity", dict)
    if identity.get("sweep"):
        return f"sweep {identity['sweep']}"
    return str(identity.get("policy") or "")


def _counts(items: list) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for item in items:
        counts[str(item)] = counts.get(str(item), 0) + 1
    return list(counts.items())


def _date(value: Any) -> str:
    """An epoch (number or numeric string) as an ISO UTC date; other strings as they are."""
    if value in (None, ""):
        return ""
    try:
        stamp = float(value)
    except (TypeError, ValueError):
        return str(value)
    return dt.datetime.fromtimestamp(stamp, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _live_script(options: DashboardOptions) -> str:
    ms = int(max(0.2, float(options.live_poll_s or 0.0)) * 1000)
    version = json.dumps(options.version)
    return (
        f"<script>(function(){{var v={script_safe_json(version)};setInterval(function(){{"
        f"fetch('/version',{{cache:'no-store'}}).then(function(r){{return r.text();}})"
        f".then(function(t){{if(t.trim()!==v){{location.reload();}}}}).catch(function(){{}});"
        f"}},{ms});}})();</script>"
    )


@lru_cache(maxsize=1)
def _plotly_js() -> str:
    """The full plotly.js bundle shipped with the plotly package (no CDN)."""
    return plotly.offline.get_plotlyjs()
