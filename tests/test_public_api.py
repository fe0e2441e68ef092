"""The curated public API: every exported name resolves, importing the core stays free of IO
libraries, and the README's Python examples import only from the package and its rooms."""

from __future__ import annotations

import ast
import importlib
import pathlib
import re
import subprocess
import sys

import pytest

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


def _readme_python_imports():
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python API") :]
    section = section[: section.index("\n## ", 1)]
    for block in re.findall(r"```python\n(.*?)```", section, flags=re.S):
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("drivesim"):
                yield node.module, [alias.name for alias in node.names]


def test_readme_python_api_imports_from_the_curated_packages():
    found = list(_readme_python_imports())
    assert found
    for module, names in found:
        assert module in PACKAGES, f"README imports from {module}; use drivesim or a room package"
        exported = importlib.import_module(module).__all__
        for name in names:
            assert name in exported, f"README imports {name} from {module}, which does not export it"
