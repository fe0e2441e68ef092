"""BENCHMARKS.md's table of current figures is the rendering of benchmarks/figures.json.

No JAX: benchmarks/figures.py is standard library only.
"""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _figures_module():
    spec = importlib.util.spec_from_file_location("figures", ROOT / "benchmarks" / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


figures = _figures_module()


def test_table_in_benchmarks_md_is_the_rendering_of_the_results_file():
    diff = figures.stale(figures.load(), figures.BENCHMARKS_MD.read_text(encoding="utf-8"))
    assert not diff, "run `python benchmarks/figures.py`:\n" + "\n".join(diff)


def test_every_record_has_every_field_and_a_machine_of_the_machine_table():
    text = figures.BENCHMARKS_MD.read_text(encoding="utf-8")
    machines = figures.machine_names(text)
    assert {"vm2", "vm3"} <= machines
    records = figures.load()
    assert records
    assert figures.problems(records, machines) == []
    for r in records:
        assert list(r) == list(figures.FIELDS), r["id"]


def test_every_record_names_a_section_of_benchmarks_md():
    text = figures.BENCHMARKS_MD.read_text(encoding="utf-8")
    headings = {line.lstrip("#").strip() for line in text.splitlines() if line.startswith(("## ", "### "))}
    for r in figures.load():
        assert r["section"] in headings, f"{r['id']}: no section {r['section']!r}"
        # ASCII headings get the same anchor on GitHub and in the docs site
        assert r["section"].isascii() and "--" not in figures.anchor(r["section"])


def test_benchmarks_md_opens_with_the_table_and_stays_short():
    text = figures.BENCHMARKS_MD.read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## Current figures", "## Machine"]
    assert text.index(figures.BEGIN) < text.index("## Machine")
    assert len(text.splitlines()) <= 600


@pytest.fixture
def copies(tmp_path):
    """The results file and BENCHMARKS.md copied to tmp_path."""
    fig, md = tmp_path / "figures.json", tmp_path / "BENCHMARKS.md"
    shutil.copy(figures.FIGURES, fig)
    shutil.copy(figures.BENCHMARKS_MD, md)
    return fig, md


def test_record_replaces_a_figure_and_renders_the_table_again(copies):
    fig, md = copies
    before = {r["id"]: r for r in figures.load(fig)}["engine-w32"]
    new = figures.record(
        "engine-w32", value=12345, spread="12,000 – 12,500", machine="vm3", path=fig, table=md
    )
    assert new["value"] == 12345 and new["machine"] == "vm3" and new["note"] == ""
    assert new["command"] == before["command"] and len(new["date"]) == 10
    records = figures.load(fig)
    assert figures.stale(records, md.read_text(encoding="utf-8")) == []
    assert "**12,345 scenarios/s**" in md.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="Machine table"):
        figures.record("engine-w32", value=1, spread="x", machine="nowhere", path=fig, table=md)
    assert {r["id"]: r for r in figures.load(fig)}["engine-w32"]["value"] == 12345  # unchanged


def test_a_new_measure_needs_its_fields(copies):
    fig, md = copies
    with pytest.raises(ValueError, match="missing"):
        figures.record("new-measure", value=1.5, spread="one run", path=fig, table=md)
    fields = dict(what="A new measure", unit="×", goal="", section="Engine throughput", command="make x")
    fields |= dict(machine="vm2", conditions="quiet")
    figures.record("new-measure", value=1.5, spread="one run", path=fig, table=md, **fields)
    assert figures.load(fig)[-1]["id"] == "new-measure"
    assert "**1.50×**" in md.read_text(encoding="utf-8")


def test_check_says_what_differs(copies, monkeypatch, capsys):
    fig, md = copies
    monkeypatch.setattr(figures, "FIGURES", fig)
    monkeypatch.setattr(figures, "BENCHMARKS_MD", md)
    assert figures.main(["--check"]) == 0
    records = json.loads(fig.read_text(encoding="utf-8"))
    records[0]["value"] = 1
    fig.write_text(json.dumps(records), encoding="utf-8")
    assert figures.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "not the rendering" in err and "+| [" in err
    assert figures.main([]) == 0  # writes the table
    assert figures.main(["--check"]) == 0


def test_set_command_line(copies, monkeypatch):
    fig, md = copies
    monkeypatch.setattr(figures, "FIGURES", fig)
    monkeypatch.setattr(figures, "BENCHMARKS_MD", md)
    argv = ["set", "suite-warm", "--value", "700", "--spread", "one run", "--date", "2026-12-03"]
    argv += ["--goal-met", "no"]
    assert figures.main(argv) == 0
    r = {r["id"]: r for r in figures.load(fig)}["suite-warm"]
    assert (r["value"], r["date"], r["goal_met"]) == (700, "2026-12-03", False)
    assert "**11:40**" in md.read_text(encoding="utf-8")
