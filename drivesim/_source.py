"""A digest of the package's own source, for what must change when the code changes."""

from __future__ import annotations

import functools
import hashlib
import pathlib


@functools.cache
def digest(packages: tuple[str, ...]) -> str:
    """SHA-256 (hex) of the .py files under drivesim/PACKAGE for each of ``packages``, by
    relative path; read once per process (the code it has imported)."""
    root = pathlib.Path(__file__).resolve().parent
    found = hashlib.sha256()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            found.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return found.hexdigest()
