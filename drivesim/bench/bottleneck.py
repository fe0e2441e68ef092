"""Bottleneck verdict from per-batch phase timings (load, h2d, compute, d2h, write).

The pipeline is a chain of stages; its throughput is set by the stage that takes the most
time, so the verdict is the category with the largest share of the measured time:

- input-bound: ``load`` (reading / generating, padding, stacking scenarios), divided by the
  number of loader threads (they load batches in parallel)
- transfer-bound: ``h2d`` + ``d2h`` (host <-> device copies)
- compute-bound: ``compute`` (the devices; the healthy state)
- host-bound: ``write`` plus wall time no phase accounts for (dispatch, Python, locks)
- compile-bound: ``compile`` (first-of-shape XLA compilations; a warm persistent compilation
  cache or fewer size classes remove it)
"""

from __future__ import annotations

from dataclasses import dataclass

# The per-batch phases, in pipeline order: the ``<phase>_s`` fields of
# drivesim.pipeline.timing.PhaseTimes and columns of the ledger's ``phases`` table.
PHASES = ("load", "h2d", "compute", "d2h", "write", "compile")
CATEGORIES = {
    "input-bound": ("load",),
    "transfer-bound": ("h2d", "d2h"),
    "compute-bound": ("compute",),
    "host-bound": ("write", "other"),
    "compile-bound": ("compile",),
}


@dataclass(frozen=True)
class PhaseTotals:
    """Seconds summed over batches per phase, the wall span of the run (None if unknown),
    the number of batches and scenarios, and the loader threads that shared ``load``."""

    load: float = 0.0
    h2d: float = 0.0
    compute: float = 0.0
    d2h: float = 0.0
    write: float = 0.0
    compile: float = 0.0
    wall: float | None = None
    batches: int = 0
    scenarios: int = 0
    loader_threads: int = 1
    compiles: int = 0

    @property
    def other(self) -> float:
        """Wall time not covered by any phase (0 when phases overlap or wall is unknown)."""
        if self.wall is None:
            return 0.0
        return max(0.0, self.wall - sum(getattr(self, p) for p in PHASES))

    def as_dict(self) -> dict:
        return {p: getattr(self, p) for p in (*PHASES, "other")} | {"wall": self.wall}

    def stage_seconds(self) -> dict:
        """Per-phase stage time: ``load`` divided by the loader threads, the rest as is."""
        out = {p: getattr(self, p) for p in (*PHASES, "other")}
        out["load"] = self.load / max(1, self.loader_threads)
        return out


@dataclass(frozen=True)
class Verdict:
    """bottleneck: one of CATEGORIES; shares: {category: fraction of measured time};
    recommendation: what to change first."""

    bottleneck: str
    shares: dict
    recommendation: str


def totals_from_rows(rows: list[dict], loader_threads: int = 1) -> PhaseTotals:
    """Sum per-batch rows (dicts with load_s, h2d_s, compute_s, d2h_s, write_s, and
    optionally wall_start / wall_end epoch seconds, num_scenarios); NULLs count as 0."""
    sums = {p: sum(float(r.get(f"{p}_s") or 0.0) for r in rows) for p in PHASES}
    starts = [r["wall_start"] for r in rows if r.get("wall_start") is not None]
    ends = [r["wall_end"] for r in rows if r.get("wall_end") is not None]
    wall = (max(ends) - min(starts)) if starts and ends else None
    scenarios = sum(int(r.get("num_scenarios") or 0) for r in rows)
    compiles = sum(1 for r in rows if float(r.get("compile_s") or 0.0) > 0.0)
    return PhaseTotals(
        **sums,
        wall=wall,
        batches=len(rows),
        scenarios=scenarios,
        loader_threads=loader_threads,
        compiles=compiles,
    )


def shares(totals: PhaseTotals) -> dict:
    """Fraction of the measured time per category (sums to 1; all 0 when nothing measured)."""
    per_phase = totals.stage_seconds()
    amounts = {c: sum(per_phase[p] for p in ps) for c, ps in CATEGORIES.items()}
    total = sum(amounts.values())
    return {c: (v / total if total > 0 else 0.0) for c, v in amounts.items()}


def _recommend(kind: str, totals: PhaseTotals, share: float) -> str:
    pct = f"{100 * share:.0f}%"
    if kind == "compile-bound":
        return (
            f"compile-bound: {totals.compiles} shapes compiled in {totals.compile:.1f} s ({pct}); "
            "use the compilation cache (on by default, DRIVESIM_JAX_CACHE; a second run of the "
            "same shapes skips compiling) / fewer size classes (--agents N)"
        )
    if kind == "input-bound":
        return (
            f"loading takes {pct} of the time: add loader threads, raise the prefetch depth, "
            "or pre-generate scenarios into a Parquet store (drivesim scenarios generate)"
        )
    if kind == "transfer-bound":
        if totals.d2h > totals.h2d:
            return (
                f"device-to-host copies take {pct}: fetch per-scenario metrics only (no "
                "trajectories) and fetch asynchronously while the next batch computes"
            )
        return (
            f"host-to-device copies take {pct}: use a larger chunk to amortise each copy and "
            "a deeper device prefetch so copies overlap compute"
        )
    if kind == "host-bound":
        return (
            f"writing results and host overhead take {pct}: write shards on a background "
            "thread, use larger shards (larger chunk), or a faster disk"
        )
    return (
        f"compute is the largest share ({pct}; the healthy state): add devices, raise the chunk "
        "up to the memory knee (drivesim bench memory), and bucket by agent count to cut padding"
    )


def verdict(totals: PhaseTotals) -> Verdict:
    """The dominant category of ``totals`` and a concrete recommendation."""
    s = shares(totals)
    ranked = sorted(s, key=lambda k: s[k], reverse=True)
    kind = ranked[0]
    advice = _recommend(kind, totals, s[kind])
    runner_up = ranked[1]
    if s[runner_up] > 0.5 * s[kind]:  # a close second stage is the next limit
        advice += f"; then ({runner_up}) " + _recommend(runner_up, totals, s[runner_up])
    return Verdict(bottleneck=kind, shares=s, recommendation=advice)
