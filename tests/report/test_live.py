"""The live terminal view and the loopback live-dashboard server."""

from __future__ import annotations

import io
import re
import socket
import sqlite3
import urllib.error
import urllib.request

import pytest
from report_fixtures import write_shard
from rich.console import Console

from drivesim.pipeline.timing import BatchEvent, PhaseTimes
from drivesim.report.live import LiveView
from drivesim.report.server import LiveDashboardServer, is_loopback


def _console() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=140, force_terminal=False, color_system=None), buf


def test_live_view_shows_progress_from_batch_events():
    console, buf = _console()
    phases = PhaseTimes(load_s=0.01, h2d_s=0.002, compute_s=0.5, d2h_s=0.001, write_s=0.02, wall_start=0.0)
    with LiveView(total=100, console=console) as view:
        view.update(
            BatchEvent(
                kind="start",
                done=0,
                failed=0,
                total=100,
                skipped=0,
                elapsed_s=0.0,
                scenarios_per_s=0.0,
                device_count=8,
            )
        )
        view.update(
            BatchEvent(
                kind="batch",
                done=32,
                failed=3,
                total=100,
                skipped=0,
                elapsed_s=2.0,
                scenarios_per_s=16.0,
                device_count=8,
                batch_id=0,
                num_scenarios=32,
                phases=phases,
                error="bad <file> [red]",
            )
        )
    text = buf.getvalue()
    assert "32/100" in text
    assert "compute 500 ms" in text and "load 10 ms" in text
    assert re.search(r"mean 16\b", text)  # three significant digits below 100
    assert "failed" in text and "3" in text
    assert "bad <file> [red]" in text  # rich markup in error text is shown, not interpreted
    assert view.state.done == 32 and view.state.failed == 3 and view.state.batches == 1


def test_live_view_counts_scenarios_per_ray_worker():
    console, buf = _console()
    phases = PhaseTimes(load_s=0.01, h2d_s=0.0, compute_s=0.1, d2h_s=0.0, write_s=0.01, wall_start=0.0)
    common = dict(kind="batch", failed=0, total=40, skipped=0, elapsed_s=1.0, device_count=2, phases=phases)
    with LiveView(total=40, console=console) as view:
        for batch_id, (worker, done) in enumerate((("node-a:11", 8), ("node-b:22", 16), ("node-a:11", 24))):
            event = BatchEvent(
                done=done, scenarios_per_s=8.0, batch_id=batch_id, num_scenarios=8, worker=worker, **common
            )
            view.update(event)
    assert view.state.workers == {"node-a:11": 16, "node-b:22": 8}
    text = buf.getvalue()
    assert "workers (2)" in text and "node-a:11 16" in text and "node-b:22 8" in text


def test_live_view_accepts_plain_dicts():
    console, buf = _console()
    view = LiveView(total=10, console=console)
    view.update(
        {
            "scenarios_done": 4,
            "scenarios_total": 10,
            "failed": 0,
            "scenarios_per_s": 2.5,
            "phases": {"compute_s": 1.5},
            "device_bytes": 3 * 2**20,
        }
    )
    console.print(view.renderable())
    text = buf.getvalue()
    assert "4/10" in text and "compute 1.50 s" in text and "device 3 MiB" in text


def _get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as resp:
        return resp.status, resp.read().decode("utf-8")


def test_server_answers_on_loopback_and_refreshes(fresh_campaign):
    with LiveDashboardServer(fresh_campaign) as server:
        assert server.url.startswith("http://127.0.0.1:")
        status, page = _get(server.url)
        assert status == 200 and "160 results" in page and "fetch('/version'" in page
        _, version = _get(server.url + "version")
        assert _get(server.url + "version")[1] == version  # stable while nothing changes
        write_shard(fresh_campaign, 2)  # a new shard lands, then the ledger names it
        with sqlite3.connect(fresh_campaign / "ledger.sqlite") as con:
            con.execute(
                "UPDATE batches SET status='done', shard='results/part-00000002.parquet' WHERE batch_id=2"
            )
        _, new_version = _get(server.url + "version")
        assert new_version != version
        _, page = _get(server.url)
        assert "192 results" in page and new_version in page
        with pytest.raises(urllib.error.HTTPError) as err:
            _get(server.url + "etc/passwd")
        assert err.value.code == 404


def test_server_binds_loopback_only(tmp_path):
    for host in ("0.0.0.0", "192.168.1.10", "::", "example.com"):
        with pytest.raises(ValueError, match="loopback"):
            LiveDashboardServer(tmp_path, host=host)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    server = LiveDashboardServer(tmp_path)
    try:
        host, port = server._httpd.socket.getsockname()[:2]
        assert host == "127.0.0.1" and port > 0
        with pytest.raises(OSError):  # the port is not reachable on another interface address
            other = socket.gethostbyname(socket.gethostname())
            if other.startswith("127."):
                raise OSError("no non-loopback address to test")
            socket.create_connection((other, port), timeout=2).close()
    finally:
        server.stop()


def test_off_a_terminal_progress_comes_as_plain_lines_while_it_runs(monkeypatch):
    import time

    from drivesim.report import plain_progress
    from drivesim.report.plain_progress import PlainProgress

    monkeypatch.setattr(plain_progress, "PLAIN_EVERY_S", 0.05)
    console, buf = _console()  # not a terminal: a log file, a pipe
    common = dict(kind="batch", failed=0, total=1000, skipped=0, device_count=8, num_scenarios=100)
    with LiveView(total=1000, console=console, title="scenarios") as view:
        assert isinstance(view._plain, PlainProgress)
        view.update(BatchEvent(done=100, elapsed_s=1.0, scenarios_per_s=100.0, batch_id=0, **common))
        time.sleep(0.3)  # no batch for a while (compiling): the lines go on
    lines = [line for line in buf.getvalue().splitlines() if line.startswith("scenarios: ")]
    assert lines[0].startswith("scenarios: 0/1,000 (0.0%)")
    assert any("100/1,000 (10.0%)" in line and "ETA 0:00:09" in line for line in lines)
    assert any("no batch finished for" in line for line in lines)
    assert len(lines) >= 3
