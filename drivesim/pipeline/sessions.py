"""Run sessions of a campaign: every ``drivesim run`` (first run or resume) appends its start
and its end to ``DIR/sessions.jsonl``, so a resume never overwrites what an earlier run
recorded. One JSON object per line: ``{"session", "event": "start", "at", "backend",
"device_count", "devices", "process", "host", "jax_version"}`` then ``{"session", "event":
"end", "at", "done_this_run", "scenarios_per_s"}``, with ``"interrupted": REASON`` where
a signal (SIGTERM, SIGINT) stopped the run; no end line: the run was killed.
"""

from __future__ import annotations

import json
import os
import pathlib
import socket
import time
import uuid

SESSIONS_NAME = "sessions.jsonl"


def _append(directory, record: dict) -> None:
    path = pathlib.Path(directory) / SESSIONS_NAME
    line = json.dumps(record, allow_nan=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def record_start(directory, backend: str, devices: list[str], process: int = 0) -> str:
    """Append the start of a run session; returns its id."""
    import jax

    session = uuid.uuid4().hex[:12]
    _append(
        directory,
        dict(
            session=session,
            event="start",
            at=time.time(),
            backend=backend,
            device_count=len(devices),
            devices=devices,
            process=process,
            host=socket.gethostname(),
            jax_version=jax.__version__,
        ),
    )
    return session


def record_end(
    directory, session: str, done_this_run: int, scenarios_per_s: float, interrupted: str | None = None
) -> None:
    """Append the end of a run session; ``interrupted``: the signal that stopped it."""
    rate = scenarios_per_s if scenarios_per_s == scenarios_per_s else None
    record = dict(
        session=session, event="end", at=time.time(), done_this_run=done_this_run, scenarios_per_s=rate
    )
    _append(directory, record | ({"interrupted": interrupted} if interrupted else {}))


def read_sessions(directory) -> list[dict]:
    """Sessions in start order: the start record merged with its end (``ended`` None and
    ``interrupted`` True when the run never recorded one). Unreadable lines are skipped."""
    path = pathlib.Path(directory) / SESSIONS_NAME
    if not path.is_file():
        return []
    starts: dict[str, dict] = {}
    ends: dict[str, dict] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        target = starts if record.get("event") == "start" else ends
        target[str(record.get("session"))] = record
    out = []
    for key, start in sorted(starts.items(), key=lambda kv: kv[1].get("at") or 0):
        end = ends.get(key, {})
        row = {k: v for k, v in start.items() if k != "event"}
        row["started"] = row.pop("at", None)
        row["ended"] = end.get("at")
        row["done_this_run"] = end.get("done_this_run")
        row["scenarios_per_s"] = end.get("scenarios_per_s")
        row["interrupted"] = not end or bool(end.get("interrupted"))
        out.append(row)
    return out
