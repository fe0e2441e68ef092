"""One running campaign per directory: an OS file lock, and clean-up of dead runs' temporaries.

``CampaignLock(DIR)`` takes an exclusive ``fcntl.flock`` on ``DIR/.drivesim.lock`` (one lock
file per process index of a multi-process campaign, ``.drivesim.lock.p1`` and so on) and
writes the holder's pid into it. The OS releases the lock when the process dies, however it
dies, so a killed run never leaves a stale lock behind. A second run on a busy directory is
refused with the holder's pid.

Temporaries (``.part-*.parquet.<pid>.tmp``, ``campaign.toml.tmp``) carry their writer's pid;
start-up removes only those whose writer is no longer alive.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import re

LOCK_NAME = ".drivesim.lock"
_TMP_PID = re.compile(r"\.(\d+)\.tmp$")


class CampaignBusyError(RuntimeError):
    """The campaign directory is locked by another live run."""


class CampaignLock:
    """Exclusive lock on a campaign directory for this process (context manager)."""

    def __init__(self, directory, process_index: int = 0):
        self.directory = pathlib.Path(directory)
        name = LOCK_NAME if process_index == 0 else f"{LOCK_NAME}.p{process_index}"
        self.path = self.directory / name
        self._fd: int | None = None

    def acquire(self) -> CampaignLock:
        """Take the lock; CampaignBusyError naming the holder's pid when it is taken."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise CampaignBusyError(
                f"{self.directory} is in use by another drivesim run (pid {holder}); "
                "wait for it to finish or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> CampaignLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (ours or another user's)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_temporaries(directory) -> list[pathlib.Path]:
    """Delete temporary shards whose writer pid is dead (or unknown); returns them.

    A live writer's temporaries (another process of a multi-process campaign) are kept.
    """
    results = pathlib.Path(directory) / "results"
    removed = []
    candidates = list(results.glob(".part-*.tmp")) if results.is_dir() else []
    for path in candidates:
        match = _TMP_PID.search(path.name)
        pid = int(match.group(1)) if match else -1
        if pid == os.getpid() or not pid_alive(pid):
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed
