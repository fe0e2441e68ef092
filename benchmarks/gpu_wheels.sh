#!/usr/bin/env bash
# Download the wheels benchmarks/gpu.sh needs on a lent GPU machine whose image has JAX, NumPy
# and pyarrow but not drivesim's other runtime packages (CPython 3.12, manylinux x86-64), at
# the versions constraints.txt pins, into .whl/ (gpu.sh installs them from there).
# Usage, here (with network access), in the repository root:  bash benchmarks/gpu_wheels.sh
set -euo pipefail
names=(duckdb plotly narwhals defusedxml tomli_w typer rich click shellingham annotated-doc markdown-it-py
  mdurl Pygments pydantic pydantic_core annotated-types typing-inspection typing_extensions)
mkdir -p .whl
for name in "${names[@]}"; do
  pin=$(grep -i -E "^${name//[-_]/[-_]}==" constraints.txt) || { echo "not pinned in constraints.txt: $name" >&2; exit 1; }
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl "$pin"
done
du -sh .whl
