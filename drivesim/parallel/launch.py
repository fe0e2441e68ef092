"""Starting a group of local processes (multi-process runs and scaling measurements).

:func:`free_port` gives the coordinator a port on 127.0.0.1; :func:`run_group` starts one
process per :class:`Child` (optionally pinned to a CPU core with ``taskset``), waits for all
of them under one deadline, and kills every one still running if one fails or time runs out.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_cores() -> list[int]:
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


@dataclass(frozen=True, kw_only=True)
class Child:
    """One process of a group: its command, its environment (None: this process's) and the
    CPU core to pin it to (None: not pinned; ignored where ``taskset`` is missing)."""

    cmd: list[str]
    env: dict[str, str] | None = field(default=None, compare=False)
    cpu: int | None = None


def run_group(children: list[Child], timeout_s: float, what: str = "process") -> list[str]:
    """Run ``children`` together and return each one's output (stdout and stderr joined).
    Raises RuntimeError naming the first failed child (``what`` and its index) with the tail
    of its output, or the one that ran past ``timeout_s``; every child is killed then."""
    pin = shutil.which("taskset") is not None
    procs: list[subprocess.Popen] = []
    try:
        for child in children:
            cmd = child.cmd if child.cpu is None or not pin else ["taskset", "-c", str(child.cpu), *child.cmd]
            procs.append(
                subprocess.Popen(cmd, env=child.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            )
        deadline = time.monotonic() + timeout_s
        outputs = []
        for index, proc in enumerate(procs):
            try:
                output, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise RuntimeError(f"{what} {index} timed out after {timeout_s} s") from None
            text = output.decode(errors="replace")
            if proc.returncode != 0:
                raise RuntimeError(f"{what} {index} exited with {proc.returncode}:\n{text[-3000:]}")
            outputs.append(text)
        return outputs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
