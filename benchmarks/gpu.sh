#!/usr/bin/env bash
# GPU figures for BENCHMARKS.md: engine and end-to-end campaign rates on one accelerator.
# Usage (on a machine with a CUDA jax; wheels for missing packages may be put in .whl/):
#   bash benchmarks/gpu.sh [OUTDIR]
# Writes OUTDIR/engine.jsonl, OUTDIR/campaign-*.jsonl and a log; prints a short table.
set -uo pipefail
out=${1:-runs/gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
ds() { python3 -m drivesim.cli "$@"; }
nvidia-smi -L 2>/dev/null
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
ds bench engine --agents 8 --agents 32 --agents 128 --scenarios 4096 --repeats 5 --json --out "$out/b" \
  > "$out/engine.jsonl"
ds bench engine --agents 32 --scenarios 65536 --repeats 5 --json --out "$out/b" >> "$out/engine.jsonl"
for b in 4096 65536; do
  ds bench campaign --source synthetic --batch-size $b --small-batches 1 --large-batches 6 --repeats 3 \
    --json --out "$out/b" > "$out/campaign-synthetic-$b.jsonl"
done
ds bench campaign --source store --batch-size 16384 --small-batches 1 --large-batches 4 --repeats 2 \
  --json --out "$out/b" > "$out/campaign-store-16384.jsonl"
python3 - "$out" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")):
    for line in f.read_text().splitlines():
        r = json.loads(line)
        rate = (r.get("scenarios_per_s") or {}).get("median")
        print(f"{f.name:32s} {r.get('workload','')!s:28s} batch={r.get('batch_size')} "
              f"scen/s={rate and round(rate):>10} extra={json.dumps(r.get('extra'))[:160]}")
PY
