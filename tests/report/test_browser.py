"""The dashboard in a real headless chromium: no JS errors, every plot drawn with data."""

from __future__ import annotations

import shutil

import pytest
from report_browser import render, screenshot
from report_fixtures import HOSTILE

from drivesim.report.dashboard import write_dashboard
from drivesim.report.server import LiveDashboardServer

pytestmark = pytest.mark.slow


def _check_all_plots(rendered, expected: int) -> None:
    assert rendered.errors == "", f"JavaScript errors: {rendered.errors}"
    assert len(rendered.plots) == expected
    assert rendered.plots_done == str(expected)
    for plot_id, attrs in rendered.plots.items():
        assert attrs.get("data-rendered") == "ok", (plot_id, attrs)
        assert int(attrs["data-traces"]) >= 1, (plot_id, attrs)
        assert int(attrs["data-points"]) >= 1, (plot_id, attrs)
    assert rendered.svg_count >= expected


def test_full_dashboard_renders_every_plot(campaign_dir, chromium, artifacts_dir, tmp_path):
    page = write_dashboard(campaign_dir, tmp_path / "dashboard.html")
    expected = page.read_text(encoding="utf-8").count('<div class="plot"')
    assert expected >= 12
    rendered = render(chromium, page.as_uri())
    _check_all_plots(rendered, expected)
    assert HOSTILE not in rendered.dom and "<img src" not in rendered.dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered.dom
    shot = screenshot(chromium, page.as_uri(), artifacts_dir / "dashboard.png")
    assert shot.stat().st_size > 20_000
    shutil.copy(page, artifacts_dir / "dashboard.html")


def test_bench_only_dashboard_renders(bench_only_dir, chromium):
    page = write_dashboard(bench_only_dir)
    html = page.read_text(encoding="utf-8")
    expected = html.count('<div class="plot"')
    assert expected >= 4  # throughput, speed-up, efficiency, batch-size sweep
    _check_all_plots(render(chromium, page.as_uri()), expected)


def test_broken_plot_is_reported(campaign_dir, chromium, tmp_path):
    """The check can fail: a corrupted figure spec shows up as a JS error and an unrendered plot."""
    html = write_dashboard(campaign_dir, tmp_path / "good.html").read_text(encoding="utf-8")
    start = html.index('id="plot-0-spec">') + len('id="plot-0-spec">')
    broken = tmp_path / "broken.html"
    broken.write_text(html[:start] + "{not json" + html[html.index("</script>", start) :], encoding="utf-8")
    rendered = render(chromium, broken.as_uri())
    assert "plot-0" in rendered.errors
    assert rendered.plots["plot-0"]["data-rendered"] == "error"


def test_live_server_page_renders(fresh_campaign, chromium):
    with LiveDashboardServer(fresh_campaign) as server:
        rendered = render(chromium, server.url, budget_ms=8000)
    assert rendered.errors == ""
    assert len(rendered.plots) >= 12
    assert all(a.get("data-rendered") == "ok" for a in rendered.plots.values())


WORD_CHECK = """<script>
window.addEventListener('load', function () {
  var broken = [];
  document.querySelectorAll('table.data th, table.data td.num').forEach(function (cell) {
    var node = cell.firstChild;
    if (!node || node.nodeType !== 3) return;
    var text = node.textContent, re = /\\S+/g, m;
    while ((m = re.exec(text)) !== null) {
      var range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      if (range.getClientRects().length > 1) broken.push(cell.tagName + ':' + m[0]);
    }
  });
  var out = document.createElement('pre');
  out.id = 'broken-words';
  out.textContent = broken.join('|');
  document.body.appendChild(out);
});
</script>"""


def test_tables_never_break_a_number_or_a_word(campaign_dir, chromium, tmp_path):
    """In the 800-pixel default window the wide family table still keeps every number and
    every header word on one line ("400" never breaks into 4/0/0, "off-road" never at its
    hyphen); long text cells such as file paths may wrap."""
    import re

    html = write_dashboard(campaign_dir, tmp_path / "dashboard.html").read_text(encoding="utf-8")
    page = tmp_path / "checked.html"
    page.write_text(html.replace("</body>", WORD_CHECK + "</body>"), encoding="utf-8")
    dom = render(chromium, page.as_uri()).dom
    found = re.search(r'<pre id="broken-words">(.*?)</pre>', dom, re.S)
    assert found is not None, "the check did not run"
    assert found.group(1) == "", f"words broken across lines: {found.group(1)[:500]}"
    assert '<td class="num">' in dom and "collision %" in dom
