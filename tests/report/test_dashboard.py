"""The static dashboard file: self-contained, escaped, every section filled or explained."""

from __future__ import annotations

import re

import pytest
from report_fixtures import HOSTILE, HOSTILE_DIR

from drivesim.report.dashboard import render_dashboard, script_safe_json, write_dashboard
from drivesim.report.data import load_campaign

SECTIONS = (
    "worst",
    "throughput",
    "phases",
    "scaling",
    "memory",
    "devices",
    "workers",
    "outcomes",
    "realism",
    "compare",
    "failures",
    "sessions",
)


@pytest.fixture(scope="module")
def full_html(campaign_dir, tmp_path_factory) -> str:
    path = write_dashboard(campaign_dir, tmp_path_factory.mktemp("out") / "d.html")
    return path.read_text(encoding="utf-8")


def test_default_path_and_atomic_write(fresh_campaign):
    path = write_dashboard(fresh_campaign)
    assert path == fresh_campaign / "dashboard.html"
    assert not list(fresh_campaign.glob(".dashboard-*"))
    assert path.stat().st_mode & 0o044 == 0o044  # readable by others, unlike mkstemp's default


def test_self_contained_offline(full_html):
    assert full_html.count("plotly.js v") == 1, "plotly.js embedded exactly once"
    assert not re.search(r"<script[^>]+src=", full_html), "no external scripts"
    ours = re.sub(r"<script>/\*\*\s*\* plotly\.js.*?</script>", "", full_html, flags=re.S)
    assert len(ours) < len(full_html) - 3_000_000
    assert "<link" not in ours and "cdn." not in ours.lower() and "https://" not in ours
    assert len(full_html) < 6 * 2**20


def test_input_text_is_escaped(full_html):
    assert HOSTILE not in full_html
    assert HOSTILE_DIR not in full_html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in full_html  # the failure table shows it as text
    assert "&lt;img src=x onerror=alert(2)&gt;" in full_html  # the directory name in the header


def test_header_names_the_program(full_html):
    """The processor and the engine's source hash the campaign started with (ledger meta
    ``program``), escaped."""
    assert "<th>engine</th><td>0123456789abcdef</td>" in full_html
    assert "<th>processor</th><td>Test &lt;script&gt;alert(1)&lt;/script&gt; CPU</td>" in full_html


def test_script_safe_json_cannot_close_script():
    text = script_safe_json('{"a": "</script><b>&"}')
    assert "<" not in text and ">" not in text and "&" not in text


def test_every_section_filled(full_html):
    for anchor in SECTIONS:
        assert f'<section id="{anchor}">' in full_html
    assert "no data yet" not in full_html
    assert full_html.count('<div class="plot"') >= 12


def test_words_for_verdicts(full_html):
    assert "Bottleneck: compute" in full_html
    assert "Amdahl fit: serial fraction 0.080" in full_html and "12.5×" in full_html
    assert "Knee at batch size 1024" in full_html
    assert "metric (sweep)" in full_html  # the policy × metric heatmap title
    assert "testhost x86_64" in full_html and "0.10.2" in full_html and "8× cpu" in full_html


def test_bench_only_directory(bench_only_dir):
    html = write_dashboard(bench_only_dir).read_text(encoding="utf-8")
    assert "Throughput against devices" in html
    assert "no data yet: run `drivesim run` to fill this (results/*.parquet)" in html
    assert "no data yet: run `drivesim profile`" in html


def test_empty_directory_has_notes_only(tmp_path):
    html = render_dashboard(load_campaign(tmp_path))
    assert '<div class="plot"' not in html
    assert html.count('class="empty"') == len(SECTIONS) - 1  # realism: only for a campaign with a log
    assert '<section id="realism">' not in html
    assert "no data yet: run `drivesim scale` to fill this" in html


def test_missing_directory_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        write_dashboard(tmp_path / "nope")


def test_live_options_add_polling(campaign_dir):
    from drivesim.report.dashboard import DashboardOptions

    html = render_dashboard(load_campaign(campaign_dir), DashboardOptions(live_poll_s=1.5, version="abc"))
    assert "fetch('/version'" in html and '"abc"' in html and ",1500)" in html
    assert "fetch('/version'" not in render_dashboard(load_campaign(campaign_dir))


def test_phase_bars_are_evenly_spaced_and_labelled_by_batch_id():
    from drivesim.report import figures_perf

    ids = [603, 0, 402, 1, 600]  # sources number their batches apart
    phases = [{"batch_id": i, "compute_s": 1.0 + i, "compile_s": 0.5} for i in ids]
    fig = figures_perf._phase_bars(phases)
    assert fig.layout.xaxis.type == "category"
    assert list(fig.data[0].x) == ["0", "1", "402", "600", "603"]
    compute = next(bar for bar in fig.data if bar.name == "compute")
    assert list(compute.y) == [1.0, 2.0, 403.0, 601.0, 604.0]

    many = [{"batch_id": 2 * i, "compute_s": 1.0} for i in range(2 * figures_perf.MAX_BARS)]
    binned = figures_perf._phase_bars(many)
    assert len(binned.data[0].x) == figures_perf.MAX_BARS
    assert (
        binned.data[0].x[0] == "0-2"
        and binned.data[0].x[-1] == f"{4 * figures_perf.MAX_BARS - 4}-{4 * figures_perf.MAX_BARS - 2}"
    )


def test_rates_keep_their_digits():
    from drivesim.report.rates import rate

    assert [rate(v) for v in (0.1428, 2.274, 15.33, 123.4, 45678.9)] == [
        "0.143",
        "2.27",
        "15.3",
        "123",
        "45,679",
    ]


def test_realism_section_shows_the_logged_family_only(full_html):
    section = full_html.split('<section id="realism">', 1)[1].split("</section>", 1)[0]
    assert "Displacement from the log by horizon" in section
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in section  # the recorded (file) family, escaped
    assert "highway" not in section and "merge" not in section  # synthetic: no log


def test_no_realism_section_without_a_log(tmp_path):
    from drivesim.report.data import CampaignData
    from drivesim.report.figures_realism import realism_section
    from drivesim.report.outcomes import Outcomes

    assert realism_section(CampaignData(root=tmp_path, outcomes=Outcomes(total=3, ok=3))) is None


def test_header_names_the_model_options_that_are_on(tmp_path):
    import json

    from drivesim.report.dashboard import header_fields
    from drivesim.report.data import CampaignData

    identity = {"policy": "idm", "position_update": "ballistic", "occlusion": True, "lane_changes": False}
    fields = header_fields(CampaignData(root=tmp_path, meta={"identity": json.dumps(identity)}))
    assert fields["model options"] == "ballistic position update, occlusion"
    assert (
        header_fields(CampaignData(root=tmp_path, meta={"identity": '{"policy": "idm"}'}))["model options"]
        == ""
    )
