"""Reading one input file safely: regular files and pipes only, at most a size limit, read
block by block (the limit holds while reading, whatever ``stat`` says; a device such as
/dev/zero is refused). Errors are ScenarioErrors naming the file."""

from __future__ import annotations

from pathlib import Path

from drivesim.core.validate import ScenarioError


def read_input(path: Path, max_bytes: int, block: int = 1 << 20) -> bytes:
    """The bytes of ``path``; ScenarioError when it is not a regular file or a pipe, cannot be
    read, or holds more than ``max_bytes``."""
    where = str(path)
    try:
        # a device (/dev/zero) passes a size check and never ends; a pipe (a FIFO, <(zcat ...))
        # is read like a file, within the limit (a pipe that never writes is the watchdog's)
        if not (path.is_file() or path.is_fifo()):
            raise ScenarioError("not a regular file or a pipe", path=where)
        size = path.stat().st_size
        if size > max_bytes:
            raise ScenarioError(f"file is {size} bytes, more than the {max_bytes} allowed", path=where)
        parts, total = [], 0
        with path.open("rb") as fh:
            while part := fh.read(min(block, max_bytes + 1 - total)):
                parts.append(part)
                total += len(part)
                if total > max_bytes:
                    raise ScenarioError(f"file is more than the {max_bytes} bytes allowed", path=where)
    except OSError as err:
        raise ScenarioError(f"cannot read: {err.strerror or err}", path=where) from None
    return b"".join(parts)


def expand_paths(paths, pattern: str) -> list[Path]:
    """Files of ``paths``: a directory expands to its ``pattern`` files, sorted; ScenarioError
    for a path that does not exist."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.glob(pattern))
        elif p.exists():
            files.append(p)
        else:
            raise ScenarioError("no such file or directory", path=str(p))
    return files
