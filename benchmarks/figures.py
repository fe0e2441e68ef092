"""The current figure of every measure: benchmarks/figures.json, rendered into BENCHMARKS.md.

    python benchmarks/figures.py              # write the table between the markers of BENCHMARKS.md
    python benchmarks/figures.py --check      # exit 1 (and say what differs) if the file's table is stale
    python benchmarks/figures.py --print      # print the table
    python benchmarks/figures.py set engine-w32 --value N --spread "P5 – P95 (p5–p95 of 5)" \
        --machine vm2 --conditions idle     # the other fields stay; the date becomes today's

benchmarks/figures.json holds one record per measure (fields: FIELDS below). A record is the
latest measurement of its measure; a benchmark script that measured one again calls
``record(figure_id, value=..., spread=..., ...)`` (or the ``set`` command above), which
replaces the record's figure, dates it today unless told otherwise, and renders the table
again. tests/bench/test_figures_table.py fails when the table in BENCHMARKS.md is not the
rendering of the file, or when a record lacks a field or names a machine that the Machine
table of BENCHMARKS.md does not list. Standard library only: no JAX.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import difflib
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIGURES = ROOT / "benchmarks" / "figures.json"
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
BEGIN = "<!-- figures:begin (benchmarks/figures.py renders this table from benchmarks/figures.json) -->"
END = "<!-- figures:end -->"

# Every record has every field. value: a number in unit; spread: text (p5-p95, a range, or
# "one run"); machine: a name of the Machine table; conditions: idle, quiet or loaded (what
# else ran); date: YYYY-MM-DD of the measurement; command: what reproduces it; goal: text,
# empty when the measure has none; goal_met: true/false, null when there is no goal; section:
# the BENCHMARKS.md heading with the method; note: empty, or what the figure predates.
FIELDS = (
    "id",
    "what",
    "value",
    "unit",
    "spread",
    "machine",
    "conditions",
    "date",
    "command",
    "goal",
    "goal_met",
    "section",
    "note",
)
COLUMNS = ("what", "value", "spread", "machine", "date", "command", "goal")


def load(path: Path | None = None) -> list[dict]:
    """The records of ``path`` (default FIGURES), in file order."""
    path = path or FIGURES
    records = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a list of records")
    return records


def dump(records: list[dict], path: Path | None = None) -> None:
    """Write ``records`` to ``path`` (default FIGURES): one indented JSON list, fields in FIELDS order."""
    path = path or FIGURES
    ordered = [{k: r[k] for k in FIELDS} | {k: v for k, v in r.items() if k not in FIELDS} for r in records]
    path.write_text(json.dumps(ordered, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def problems(records: list[dict], machines: set[str] | None = None) -> list[str]:
    """What is wrong with ``records`` (missing or extra fields, bad types, unknown machines)."""
    out: list[str] = []
    seen: set[str] = set()
    for i, r in enumerate(records):
        name = r.get("id", f"record {i}")
        missing = [k for k in FIELDS if k not in r]
        extra = [k for k in r if k not in FIELDS]
        if missing:
            out.append(f"{name}: missing {', '.join(missing)}")
        if extra:
            out.append(f"{name}: unknown field(s) {', '.join(extra)}")
        if missing:
            continue
        if name in seen:
            out.append(f"{name}: id used twice")
        seen.add(name)
        if not isinstance(r["value"], int | float) or isinstance(r["value"], bool):
            out.append(f"{name}: value is not a number")
        for k in ("what", "spread", "machine", "date", "command", "section"):
            if not isinstance(r[k], str) or not r[k].strip():
                out.append(f"{name}: {k} is empty")
        if not isinstance(r["unit"], str):
            out.append(f"{name}: unit is not text (empty for a pure number)")
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(r["date"])):
            out.append(f"{name}: date {r['date']!r} is not YYYY-MM-DD")
        if r["conditions"] not in ("idle", "quiet", "loaded"):
            out.append(f"{name}: conditions {r['conditions']!r} is not idle, quiet or loaded")
        if bool(str(r["goal"]).strip()) != (r["goal_met"] is not None):
            out.append(f"{name}: goal_met must be true/false with a goal and null without one")
        if r["goal_met"] is not None and not isinstance(r["goal_met"], bool):
            out.append(f"{name}: goal_met is not true, false or null")
        if machines is not None and r["machine"] not in machines:
            out.append(f"{name}: machine {r['machine']!r} is not in the Machine table")
    return out


def machine_names(text: str) -> set[str]:
    """First-column names of the table under the ``## Machine`` heading of BENCHMARKS.md."""
    lines = text.splitlines()
    try:
        start = lines.index("## Machine")
    except ValueError:
        return set()
    names: set[str] = set()
    for line in lines[start + 1 :]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not line.startswith("|---"):
            cell = line.strip("|").split("|")[0].strip()
            if cell and cell != "name":
                names.add(cell)
    return names


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def format_value(value: float, unit: str) -> str:
    """A value with its unit: thousands separated, "min:s" as m:ss, "x" glued to the number."""
    if unit == "min:s":
        minutes, seconds = divmod(round(value), 60)
        return f"{minutes}:{seconds:02d}"
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 1000:
        number = f"{int(value):,}"
    elif unit in ("", "×") and round(value, 2) == value:
        number = f"{value:,.2f}"  # ratios keep two decimals: 0.80, not 0.8
    else:
        number = f"{value:,}"
    if unit in ("", "×", "%"):
        return f"{number}{unit}"
    return f"{number} {unit}"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(records: list[dict]) -> str:
    """The table of current figures (Markdown) with the notes below it, markers excluded."""
    lines = [
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    notes: dict[str, list[str]] = {}  # note -> ids, in order of first use
    for r in records:
        what = f"[{_cell(r['what'])}](#{anchor(r['section'])})"
        value = f"**{format_value(r['value'], r['unit'])}**"
        if r["note"]:
            notes.setdefault(r["note"], []).append(r["id"])
            value += f" ({list(notes).index(r['note']) + 1})"
        machine = r["machine"] + ("" if r["conditions"] == "idle" else f", {r['conditions']}")
        command = f"`{_cell(r['command'])}`"
        if r["goal_met"] is None:
            goal = "–"
        else:
            goal = f"{_cell(r['goal'])}: **{'met' if r['goal_met'] else 'not met'}**"
        cells = (what, value, _cell(r["spread"]), machine, r["date"], command, goal)
        lines.append("| " + " | ".join(cells) + " |")
    if notes:
        lines += ["", "Notes:", ""]
        for i, (note, ids) in enumerate(notes.items(), 1):
            lines.append(f"{i}. {', '.join(f'`{x}`' for x in ids)}: {_cell(note)}")
    return "\n".join(lines)


def _split(text: str) -> tuple[str, str, str]:
    """(before, table, after) of BENCHMARKS.md around the markers."""
    if text.count(BEGIN) != 1 or text.count(END) != 1 or text.index(BEGIN) > text.index(END):
        raise ValueError(f"{BENCHMARKS_MD.name}: expected one {BEGIN!r} before one {END!r}")
    head, rest = text.split(BEGIN)
    table, tail = rest.split(END)
    return head, table.strip("\n"), tail


def stale(records: list[dict], text: str) -> list[str]:
    """A unified diff of the file's table against the rendering; empty when they agree."""
    _, table, _ = _split(text)
    want = render(records)
    if table == want:
        return []
    return list(
        difflib.unified_diff(
            table.splitlines(), want.splitlines(), "BENCHMARKS.md", "rendering of figures.json", lineterm=""
        )
    )


def write_table(records: list[dict], path: Path | None = None) -> bool:
    """Put the rendering between the markers of ``path`` (default BENCHMARKS_MD); True when the
    file changed."""
    path = path or BENCHMARKS_MD
    text = path.read_text(encoding="utf-8")
    head, table, tail = _split(text)
    new = f"{head}{BEGIN}\n{render(records)}\n{END}{tail}"
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


def record(
    figure_id: str,
    *,
    value: float,
    spread: str,
    command: str | None = None,
    machine: str | None = None,
    conditions: str | None = None,
    date: str | None = None,
    goal_met: bool | None = None,
    note: str = "",
    path: Path | None = None,
    table: Path | None = None,
    render_table: bool = True,
    **new_fields,
) -> dict:
    """Replace the figure of measure ``figure_id`` with a new measurement, and render the table.

    value and spread are the new figure; command, machine and conditions default to the
    record's; date defaults to today; note (what the figure predates) is cleared unless given.
    goal_met stays as it was unless given. A measure not yet in the file needs the remaining
    fields as keywords (what, unit, goal, section). path and table default to FIGURES and
    BENCHMARKS_MD; ``render_table=False`` leaves the table as it is (its machine names are
    still checked).
    """
    table = table or BENCHMARKS_MD
    records = load(path)
    old = next((r for r in records if r["id"] == figure_id), None)
    if old is None:
        old = {"id": figure_id, "goal_met": None, **new_fields}
        records.append(old)
    else:
        old.update(new_fields)
    old["value"] = value
    old["spread"] = spread
    old["date"] = date or _dt.date.today().isoformat()
    old["note"] = note
    for key, given in (("command", command), ("machine", machine), ("conditions", conditions)):
        if given is not None:
            old[key] = given
    if goal_met is not None:
        old["goal_met"] = goal_met
    bad = problems(records, machine_names(table.read_text(encoding="utf-8")))
    if bad:
        raise ValueError("; ".join(bad))
    dump(records, path)
    if render_table:
        write_table(records, table)
    return old


def _number(text: str) -> float:
    value = float(text.replace(",", ""))
    return int(value) if value.is_integer() and "." not in text else value


def _set(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="figures.py set", description="replace one measure's figure")
    p.add_argument("id")
    p.add_argument("--value", required=True, type=_number)
    p.add_argument("--spread", required=True)
    p.add_argument("--command")
    p.add_argument("--machine")
    p.add_argument("--conditions", choices=("idle", "quiet", "loaded"))
    p.add_argument("--date", help="YYYY-MM-DD (default: today)")
    p.add_argument("--goal-met", choices=("yes", "no"))
    p.add_argument("--note", default="")
    a = p.parse_args(argv)
    met = None if a.goal_met is None else a.goal_met == "yes"
    r = record(
        a.id,
        value=a.value,
        spread=a.spread,
        command=a.command,
        machine=a.machine,
        conditions=a.conditions,
        date=a.date,
        goal_met=met,
        note=a.note,
    )
    print(f"{r['id']}: {format_value(r['value'], r['unit'])} ({r['spread']}), {r['machine']}, {r['date']}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["set"]:
        return _set(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if BENCHMARKS.md's table is stale")
    p.add_argument("--print", action="store_true", help="print the table instead of writing it")
    a = p.parse_args(argv)
    records = load()
    bad = problems(records, machine_names(BENCHMARKS_MD.read_text(encoding="utf-8")))
    if bad:
        print("\n".join(bad), file=sys.stderr)
        return 1
    if a.print:
        print(render(records))
        return 0
    if a.check:
        diff = stale(records, BENCHMARKS_MD.read_text(encoding="utf-8"))
        if diff:
            print("BENCHMARKS.md's table is not the rendering of benchmarks/figures.json:", file=sys.stderr)
            print("\n".join(diff), file=sys.stderr)
            print("run: python benchmarks/figures.py", file=sys.stderr)
            return 1
        return 0
    changed = write_table(records)
    print("BENCHMARKS.md: table " + ("written" if changed else "unchanged"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
