"""Outputs never overwrite a campaign's own files.

A command that writes a file the user names (``export --out``, ``report --out``, ``show
--out``) calls :func:`refuse_campaign_file` first: a target that is the campaign's config,
ledger (and its WAL files), session log or anything under ``results/`` is refused with a
one-line usage error (exit status 2), naming the file, before anything is written.
"""

from __future__ import annotations

import pathlib

from drivesim.pipeline.validation import ConfigError

OWN_FILES = (
    "campaign.toml",
    "ledger.sqlite",
    "ledger.sqlite-wal",
    "ledger.sqlite-shm",
    "sessions.jsonl",
    ".drivesim.lock",
)
OWN_DIRS = ("results",)


def refuse_campaign_file(directory, target, option: str = "--out") -> None:
    """ConfigError if ``target`` (a path) is one of campaign ``directory``'s own files, or an
    existing file that is not a regular file (a device such as /dev/full, a FIFO, a socket:
    an atomic write would rename the output over it)."""
    if target is None:
        return
    existing = pathlib.Path(target)
    if existing.exists() and not existing.is_file() and not existing.is_dir():
        raise ConfigError(f"{option} {target}: not a regular file (a device, pipe or socket); choose a file")
    root = pathlib.Path(directory).resolve()
    path = pathlib.Path(target).resolve()
    own = {root / name for name in OWN_FILES}
    inside = any(path == root / d or root / d in path.parents for d in OWN_DIRS)
    linked = path.exists() and any(_same(path, f) for f in _campaign_files(root))  # a hard link
    if path in own or inside or path == root or linked:
        what = (
            "directory"
            if path == root
            else (str(path.relative_to(root)) if root in path.parents else "file (a link to it)")
        )
        raise ConfigError(
            f"{option} {target}: that is the campaign's own {what} in {directory}; writing it would "
            "destroy the campaign. Choose another file"
        )


def _campaign_files(root: pathlib.Path):
    yield from (root / name for name in OWN_FILES)
    for d in OWN_DIRS:
        if (root / d).is_dir():
            yield from (root / d).iterdir()


def _same(a: pathlib.Path, b: pathlib.Path) -> bool:
    try:
        return b.exists() and a.samefile(b)
    except OSError:
        return False
