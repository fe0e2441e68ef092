"""The worst scenarios of a campaign (collisions, lowest time-to-collision, off-road, failures)
with links to their viewer pages, and the writing of those pages (one re-simulation per
scenario, see :mod:`drivesim.report.replay`)."""

from __future__ import annotations

import math
from pathlib import Path

from drivesim.report.blocks import Html, Section, esc, fmt, note

WORST_LIMIT = 8
WORST_SQL = """
SELECT scenario_id, policy_id, policy, family, name, ego_collided, collision_step, offroad,
       min_ttc_s, progress_m
FROM results WHERE status = 'ok'
ORDER BY ego_collided DESC, offroad DESC,
         CASE WHEN isfinite(min_ttc_s) THEN min_ttc_s ELSE 1e9 END ASC, scenario_id, policy_id
LIMIT {limit}
"""
FAILED_SQL = """
SELECT scenario_id, family, source, name, error FROM results WHERE status = 'failed'
ORDER BY scenario_id LIMIT {limit}
"""


def worst_rows(directory, limit: int = WORST_LIMIT) -> tuple[list[dict], list[dict]]:
    """(the ``limit`` worst ok rows, up to ``limit`` failed rows) of a campaign's results."""
    from drivesim.pipeline import results

    worst = results.query(directory, WORST_SQL.format(limit=int(limit))).to_pylist()
    failed = results.query(directory, FAILED_SQL.format(limit=int(limit))).to_pylist()
    return worst, failed


def write_worst_viewers(directory, limit: int = WORST_LIMIT, import_policy: bool = False) -> list[Path]:
    """Write the viewer pages of the worst scenarios that lack one (DIR/viewers/...);
    import_policy as for drivesim.report.replay.replay_many."""
    from drivesim.report.replay import VIEWERS_DIR, viewer_name, write_viewers

    worst, _ = worst_rows(directory, limit)
    missing = [
        (r["scenario_id"], str(r["policy_id"]))
        for r in worst
        if not (Path(directory) / VIEWERS_DIR / viewer_name(r["scenario_id"], r["policy_id"])).is_file()
    ]
    return write_viewers(directory, missing, import_policy) if missing else []


def viewer_link(data, scenario_id: int, policy_id: int) -> Html:
    """Markup linking a scenario's viewer page from the dashboard (``data.link_base``), or the
    ``drivesim show`` command that writes it when the campaign has none yet."""
    from drivesim.report.replay import VIEWERS_DIR, viewer_name

    page = Path(VIEWERS_DIR) / viewer_name(scenario_id, policy_id)
    if (data.root / page).is_file():
        return Html(f'<a href="{esc(data.link_base + page.as_posix())}">view</a>')
    cmd = f"drivesim show {data.root} --scenario {scenario_id} --policy {policy_id}"
    return Html(f"<code>{esc(cmd)}</code>")


def worst_section(data) -> Section:
    """Dashboard section: the worst scenarios, each linked to its viewer (or the command
    that writes it)."""
    section = Section(
        "Worst scenarios",
        "worst",
        empty_note="no results yet: run `drivesim run` to fill this",
    )
    if data.outcomes is None or not data.outcomes.total:
        return section
    try:
        worst, failed = worst_rows(data.root)
    except Exception as exc:  # noqa: BLE001 - the rest of the dashboard still renders
        section.blocks.append(note(f"worst scenarios unavailable: {type(exc).__name__}: {exc}"))
        return section
    rows = []
    for r in worst:
        view = viewer_link(data, r["scenario_id"], r["policy_id"])
        outcome = (
            f"collision at step {r['collision_step']}"
            if r["ego_collided"]
            else ("off-road" if r["offroad"] else "no collision")
        )
        ttc = r["min_ttc_s"]
        cells = [
            r["scenario_id"],
            r["name"],
            r["family"],
            r["policy"],
            outcome,
            ttc if ttc is not None and math.isfinite(ttc) else None,
            r["progress_m"],
        ]
        rows.append("".join(f"<td>{esc(fmt(c))}</td>" for c in cells) + f"<td>{view}</td>")
    heads = ("scenario", "name", "family", "policy", "outcome", "min TTC s", "progress m", "viewer")
    head = "".join(f"<th>{esc(h)}</th>" for h in heads)
    body = "".join(f"<tr>{r}</tr>" for r in rows)
    section.blocks.append(
        note("Collisions first (earliest step), then off-road, then the lowest time-to-collision.")
    )
    section.blocks.append(
        Html(f'<table class="data"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>')
    )
    if failed:
        items = "".join(
            f"<li>{esc(r['scenario_id'])} {esc(r['name'] or r['source'])}: "
            f"{esc((r['error'] or '')[:200])}</li>"
            for r in failed
        )
        section.blocks.append(
            Html(f'<p class="note">Failed scenarios (first {len(failed)}):</p><ul>{items}</ul>')
        )
    return section
