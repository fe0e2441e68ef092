#!/usr/bin/env bash
# GPU figures for BENCHMARKS.md: engine, synthetic families, the exact fallback's cost and the
# end-to-end campaign on one accelerator. Each step has its own time limit, so a slow step costs
# its figure, not the others'; the default steps fit a 10-minute call.
# Usage (on a machine with a CUDA jax; wheels for missing packages may be put in .whl/, which
# benchmarks/gpu_wheels.sh fills beforehand on a machine with network access):
#   [STEPS="engine base families variants platforms campaign demo"] bash benchmarks/gpu.sh [OUTDIR]
# STEPS picks the steps (default: all but variants and platforms, which fit a call of their own:
# STEPS=variants; VARIANT_FAMILIES, VARIANTS and VARIANTS_LIMIT pick its families, variants
# and time limit, see benchmarks/engine_variants.py; STEPS=platforms compares the device's
# metrics with the CPU's, benchmarks/cross_platform.py). ENGINE_AGENTS: the engine step's agent
# counts (8 32 128 by default). base runs only where BASE_TREE names another checkout's root
# (its engine, right after this one's); demo reads the CommonRoad files from $DRIVESIM_DATA/commonroad where
# ../shared/data is not there.
# Writes OUTDIR/engine.jsonl, base.jsonl, families.jsonl, campaign.jsonl, variants.txt, platforms.txt and
# demo.log, and prints a short table.
set -uo pipefail
out=${1:-runs/gpu}
mkdir -p "$out"
out=$(realpath "$out")
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl >/dev/null 2>&1
  site=/tmp/site
else
  site=
fi
export PYTHONPATH=$site${site:+:}$PWD
ds=(python3 -m drivesim.cli)
step() {  # step SECONDS NAME COMMAND...: run COMMAND with a limit, report its wall time
  local limit=$1 name=$2 t0 rc
  shift 2
  t0=$(date +%s%N)
  timeout "$limit" "$@"
  rc=$?
  echo "== $name: exit $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$out/steps.txt"
}
nvidia-smi -L 2>/dev/null
python3 -c "import jax; print('jax', jax.__version__, jax.devices())"
want() { [[ " ${STEPS:-engine base families campaign demo} " == *" $1 "* ]]; }
agents=()
for n in ${ENGINE_AGENTS:-8 32 128}; do agents+=(--agents "$n"); done
want engine && step 110 engine "${ds[@]}" bench engine "${agents[@]}" --scenarios 4096 --repeats 5 --json \
  --out "$out/b" > "$out/engine.jsonl"
if want base && [ -n "${BASE_TREE:-}" ]; then
  step 100 base env -C "$BASE_TREE" PYTHONPATH="$site${site:+:}$BASE_TREE" "${ds[@]}" bench engine --agents 32 --agents 128 \
    --scenarios 4096 --repeats 5 --json --out "$out/base" > "$out/base.jsonl"
fi
if want variants; then
  step "${VARIANTS_LIMIT:-420}" variants python3 benchmarks/engine_variants.py --scenarios 4096 --rounds 5 \
    --families ${VARIANT_FAMILIES:-highway highway:128 intersection_turns merge} \
    --variants ${VARIANTS:-window all_pairs_own_route} > "$out/variants.txt"
  cat "$out/variants.txt"
fi
if want platforms; then
  step "${PLATFORMS_LIMIT:-480}" platforms python3 benchmarks/cross_platform.py --scenarios 512 > "$out/platforms.txt"
  cat "$out/platforms.txt"
fi
want families && step 150 families "${ds[@]}" bench engine --agents 32 --scenarios 4096 --repeats 5 --json --out "$out/b" \
  --family intersection_turns --family merge --family intersection > "$out/families.jsonl"
want campaign && step 90 campaign "${ds[@]}" bench campaign --source synthetic --batch-size 16384 --small-batches 1 --large-batches 4 \
  --repeats 2 --json --out "$out/b" > "$out/campaign.jsonl"
if want demo; then
  step 100 demo "${ds[@]}" run --out "$out/demo" > "$out/demo.log" 2>&1
  tail -12 "$out/demo.log"
fi
python3 - "$out" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")):
    for line in f.read_text().splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue
        rate = (r.get("scenarios_per_s") or {}).get("median")
        print(f"{f.name:18s} {r.get('workload','')!s:34s} batch={r.get('batch_size')} "
              f"scen/s={rate and round(rate):>10} extra={json.dumps(r.get('extra'))[:300]}")
PY
