"""Showing: the HTML dashboard, the live terminal view and the live dashboard server."""

from __future__ import annotations

from drivesim._exports import lazy_exports

_EXPORTS = {
    "write_dashboard": "drivesim.report.dashboard",
    "LiveView": "drivesim.report.live",
    "LiveDashboardServer": "drivesim.report.server",
    "render": "drivesim.report.viewer",
    "write_page": "drivesim.report.viewer",
    "write_viewers": "drivesim.report.replay",
    "compare_dirs": "drivesim.report.compare",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
