"""A tiny real campaign (drivesim.pipeline) with the live view as progress, then its dashboard."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from drivesim.report.dashboard import write_dashboard
from drivesim.report.data import load_campaign
from drivesim.report.live import LiveView

pytestmark = pytest.mark.slow


def test_campaign_to_dashboard(tmp_path):
    campaign = pytest.importorskip("drivesim.pipeline.campaign")
    from drivesim.pipeline.config import CampaignConfig

    out = tmp_path / "run"
    config = CampaignConfig(
        sources=("synthetic:highway",), count=24, batch_size=8, num_steps=10, agents=4, out=str(out)
    )
    buf = io.StringIO()
    with LiveView(total=24, console=Console(file=buf, width=140, color_system=None)) as view:
        result = campaign.run_campaign(config, progress=view.update)
    assert result.done == 24 and view.state.done == 24
    assert "24/24" in buf.getvalue()

    data = load_campaign(out)
    assert data.outcomes.total == 24 and data.outcomes.failed == 0
    assert len(data.phases) == 3 and data.meta["device_count"]
    html = write_dashboard(out).read_text(encoding="utf-8")
    assert html.count('<div class="plot"') >= 6
    assert "Bottleneck:" in html and "24 results" in html
