"""show / compare / export / summary --json on a real small campaign (a two-policy sweep:
IDM and a tailgating variant), and run sessions across a no-op resume."""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from drivesim.cli import app
from drivesim.parallel.programs import EXECUTOR_PROGRAMS
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import CampaignConfig
from drivesim.pipeline.defaults import DEMO_SWEEP
from drivesim.pipeline.sessions import read_sessions

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def sweep_campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("inspect") / "camp"
    config = CampaignConfig(
        sources=("synthetic:highway,merge",),
        count=32,
        agents=8,
        num_steps=30,
        batch_size=32,
        sweep=str(DEMO_SWEEP),
        out=str(out),
    )
    EXECUTOR_PROGRAMS.clear()  # compile_s > 0 below: the first campaign compiles its program
    run_campaign(config)
    run_campaign(config)  # a no-op resume: a second session, the first one kept
    return out


def _invoke(*args):
    result = CliRunner().invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_sessions_survive_a_resume(sweep_campaign):
    sessions = read_sessions(sweep_campaign)
    assert len(sessions) == 2
    assert sessions[0]["done_this_run"] == 32 and sessions[1]["done_this_run"] == 0
    assert all(s["backend"] == "sharding" and s["device_count"] >= 1 for s in sessions)
    con = sqlite3.connect(sweep_campaign / "ledger.sqlite")
    started = float(dict(con.execute("SELECT key, value FROM meta"))["started_at"])
    assert started == pytest.approx(sessions[0]["started"], abs=5.0)  # not the resume's start
    compile_s = [r[0] for r in con.execute("SELECT compile_s FROM phases")]
    assert compile_s and all(c is not None for c in compile_s)
    assert max(compile_s) > 0  # this shape (8 agents, 30 steps, 2 policies) compiled here first


def test_summary_json_is_strict_and_fits_80_columns(sweep_campaign):
    data = json.loads(
        _invoke("summary", sweep_campaign, "--json").stdout,
        parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"),
    )
    assert [p["policy_id"] for p in data["policies"]] == [0, 1]
    assert len(data["sessions"]) == 2
    text = _invoke("summary", sweep_campaign).stdout
    assert max(len(line) for line in text.splitlines()) <= 80


def test_query_json_has_null_for_infinite_ttc(sweep_campaign):
    out = _invoke("query", sweep_campaign, "SELECT 'inf'::FLOAT AS x, 'nan'::DOUBLE AS y", "--json").stdout
    assert json.loads(out) == {"x": None, "y": None}


def test_compare_one_sweep(sweep_campaign):
    data = json.loads(_invoke("compare", sweep_campaign, "--json").stdout)
    assert data["shared_scenarios"] == 32 and len(data["arms"]) == 2
    metrics = {d["metric"] for d in data["differences"]}
    assert {"collision rate", "progress [m]"} <= metrics
    text = _invoke("compare", sweep_campaign).stdout
    assert max(len(line) for line in text.splitlines()) <= 80


def test_export_formats(sweep_campaign, tmp_path):
    rows = list(csv.DictReader(io.StringIO(_invoke("export", sweep_campaign, "--format", "csv").stdout)))
    assert len(rows) == 64 and "scenario_id" in rows[0]
    lines = _invoke("export", sweep_campaign, "--format", "jsonl").stdout.splitlines()
    assert len(lines) == 64 and all(json.loads(line)["policy_id"] in (0, 1) for line in lines)
    out = tmp_path / "r.parquet"
    _invoke("export", sweep_campaign, "--format", "parquet", "--out", out)
    assert pq.read_table(out).num_rows == 64
    bad = CliRunner().invoke(app, ["export", str(sweep_campaign), "--format", "xls"])
    assert bad.exit_code == 2 and "xls" in bad.output


def test_show_replays_the_campaign_result(sweep_campaign, tmp_path):
    table = pq.read_table(sweep_campaign / "results").to_pylist()
    row = max(table, key=lambda r: (r["ego_collided"], -r["min_ttc_s"]))
    out = tmp_path / "view.html"
    result = _invoke(
        "show", sweep_campaign, "--scenario", row["scenario_id"], "--policy", row["policy_id"], "--out", out
    )
    assert result.stdout.strip() == str(out)
    html = out.read_text()
    assert f"scenario {row['scenario_id']}" in html and 'id="slider"' in html
    from drivesim.report.replay import replay

    rep = replay(sweep_campaign, row["scenario_id"], str(row["policy_id"]))
    assert rep.metrics["ego_collided"] == row["ego_collided"]
    assert rep.metrics["collision_step"] == row["collision_step"]
    assert rep.metrics["progress_m"] == pytest.approx(row["progress_m"], rel=1e-5)
    missing = CliRunner().invoke(app, ["show", str(sweep_campaign), "--scenario", "999999"])
    assert missing.exit_code == 2 and "999999" in missing.output


def test_dashboard_opens_on_worst_scenarios_with_viewers(sweep_campaign, tmp_path):
    from drivesim.report.dashboard import write_dashboard
    from drivesim.report.worst import worst_rows, write_worst_viewers

    pages = write_worst_viewers(sweep_campaign, limit=3)
    worst, _ = worst_rows(sweep_campaign, limit=3)
    assert len(pages) == 3 and all(p.is_file() for p in pages)
    html = write_dashboard(sweep_campaign).read_text(encoding="utf-8")
    assert html.index('<section id="worst">') < html.index('<section id="throughput">')
    first = worst[0]
    assert f'href="viewers/scenario-{first["scenario_id"]}-p{first["policy_id"]}.html"' in html
    assert '<section id="compare">' in html and '<section id="sessions">' in html
    assert write_worst_viewers(sweep_campaign, limit=3) == []  # already written
    elsewhere = write_dashboard(sweep_campaign, tmp_path / "shared" / "report.html")  # report --out
    href = re.search(r'<a href="([^"]+)">view</a>', elsewhere.read_text(encoding="utf-8")).group(1)
    assert href.endswith(".html") and (elsewhere.parent / href).resolve().is_file()
