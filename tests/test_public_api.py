"""The curated public API: every exported name resolves, importing the core stays free of IO
libraries, and the Python snippets of README.md and the docs import what exists: the README and
the API reference pages only from the package and its rooms, the guides from a room's module
where they say so."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest
from doc_pages import python_snippets

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = [
    "drivesim",
    "drivesim.core",
    "drivesim.scenarios",
    "drivesim.parallel",
    "drivesim.pipeline",
    "drivesim.bench",
    "drivesim.report",
    "drivesim.train",
    "drivesim.env",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves(name):
    package = importlib.import_module(name)
    assert package.__all__ and len(set(package.__all__)) == len(package.__all__)
    for attr in package.__all__:
        assert getattr(package, attr) is not None, f"{name}.{attr}"
    with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
        package.not_exported  # noqa: B018


def test_importing_the_core_pulls_in_no_io_libraries():
    code = (
        "import sys, drivesim, drivesim.core as core\n"
        "core.simulate, core.SimConfig, core.EgoPolicy, drivesim.simulate\n"
        "print(sorted(m for m in ('pyarrow', 'duckdb', 'typer', 'plotly') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_the_core_imports_no_higher_room():
    """drivesim.core is the bottom layer: no module of it imports (at any depth of its code)
    from another room; policies are objects there, their names are read by the pipeline."""
    for path in sorted((ROOT / "drivesim" / "core").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [a.name for a in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                if name.startswith("drivesim"):
                    assert name.startswith(("drivesim.core", "drivesim._")), f"{path.name} imports {name}"


# pages whose snippets import only from the package and its rooms: the README and the API reference
CURATED = ("README.md", "docs/reference/api/")


def _snippet_imports():
    """(page, module, names) of every ``from drivesim... import ...`` in a Python snippet."""
    for page, _, code in python_snippets():
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("drivesim"):
                yield page, node.module, [alias.name for alias in node.names]
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("drivesim") for a in node.names), (
                    f"{page}: use from ... import"
                )


def test_snippets_import_exported_names():
    found = list(_snippet_imports())
    assert {page for page, _, _ in found} >= {"README.md", "docs/reference/api/core.md"}
    for page, module, names in found:
        if module in PACKAGES:
            exported = importlib.import_module(module).__all__
            for attr in names:
                assert attr in exported, f"{page} imports {attr} from {module}, which does not export it"
            continue
        assert not page.startswith(CURATED), f"{page} imports from {module}; use drivesim or a room package"
        room = module.split(".")[:2]
        assert ".".join(room) in PACKAGES, f"{page} imports from {module}, outside the package's rooms"
        loaded = importlib.import_module(module)
        public = getattr(loaded, "__all__", None)
        for attr in names:
            assert hasattr(loaded, attr), f"{page} imports {attr} from {module}, which has no such name"
            assert public is None or attr in public, f"{page} imports {attr}, not in {module}.__all__"
