"""Work per step counted in the compiled program: the elements that the time loop's
operations produce, by the drivesim function that wrote them.

A timing on a shared 2-core host needs alternating rounds over minutes and still drifts by
several percent; this count is the same on every run and takes one compilation. It counts
work, not time: an operation XLA runs one element at a time costs more per element than a
vectorised one, and fusion is not seen.

Counted: every instruction of the time loop's body (its op name starts with the loop of the
first pass, :data:`STEP_LOOP`), by the size of the array it produces: ``arith``, elementwise
arithmetic, comparisons and selects; ``moved``, copies, slices, concatenations, pads,
broadcasts, gathers and reductions (their input's size). The exact fallback's loops and the
work before and after the loop are left out. Each instruction is attributed to the innermost
frame of the Python stack that created it (``file.py:function``), read from the module's
stack-frame tables; ``"?"`` where the text has none.
"""

from __future__ import annotations

import collections
import dataclasses
import math
import re
from typing import Any, NamedTuple

import jax

from drivesim.bench.workloads import Workload, make_batch, place, sim_config
from drivesim.core import switches
from drivesim.core.policies import idm_policy
from drivesim.core.rollout import rollout_batch

ARITH = frozenset(
    "add subtract multiply divide maximum minimum select compare and or not xor negate abs "
    "sqrt rsqrt exponential log tanh sine cosine atan2 floor ceil clamp convert power "
    "remainder sign is-finite round-nearest-even round-nearest-afz".split()
)
MOVED = frozenset(
    "copy transpose gather scatter dynamic-slice dynamic-update-slice slice concatenate pad "
    "reverse sort iota broadcast reshape reduce".split()
)
# op names of the first pass's time loop: jit(rollout_batch)/vmap()/while/body/...
STEP_LOOP = re.compile(r"^jit\([^)]*\)/(?:vmap\([^)]*\)/)?while/body")  # the fast pass: a scan of vmaps
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = \w+\[([\d,]*)\][^ ]* ([\w\-]+)\(%?([\w.\-]*)")


@dataclasses.dataclass
class StepWork:
    """Elements produced per program run by the time loop's body, by attribution
    (``file.py:function``): arith and moved, each a Counter."""

    arith: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    moved: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def total(self) -> int:
        """Every counted element, arithmetic and moved."""
        return sum(self.arith.values()) + sum(self.moved.values())

    def top(self, count: int) -> list[tuple[str, int, int]]:
        """The ``count`` attributions with the most elements: (name, arith, moved)."""
        both = self.arith + self.moved
        return [(name, self.arith[name], self.moved[name]) for name, _ in both.most_common(count)]

    def by_file(self) -> StepWork:
        """The same elements attributed to files (``file.py``) instead of functions."""
        files = StepWork()
        for mine, theirs in ((self.arith, files.arith), (self.moved, files.moved)):
            for name, elements in mine.items():
                theirs[name.split(":", 1)[0]] += elements
        return files


def _size(dims: str) -> int:
    return math.prod(int(d) for d in dims.split(",") if d)


def frame_names(lines: list[str]) -> dict[int, str]:
    """stack_frame_id -> "file.py:function" of its innermost frame, from the module's
    FileNames, FunctionNames, FileLocations and StackFrames tables."""
    tables: dict[str, dict[int, str]] = {"FileNames": {}, "FunctionNames": {}, "FileLocations": {}}
    frames: dict[int, int] = {}
    section = None
    for line in lines:
        if line in ("FileNames", "FunctionNames", "FileLocations", "StackFrames"):
            section = line
            continue
        if section in ("FileNames", "FunctionNames"):
            found = re.match(r'(\d+) "(.*)"$', line)
            if found:
                tables[section][int(found.group(1))] = found.group(2)
        elif section == "FileLocations":
            found = re.match(r"(\d+) \{file_name_id=(\d+) function_name_id=(\d+)", line)
            if found:
                file_name = tables["FileNames"].get(int(found.group(2)), "?").rsplit("/", 1)[-1]
                function = tables["FunctionNames"].get(int(found.group(3)), "?")
                tables["FileLocations"][int(found.group(1))] = f"{file_name}:{function}"
        elif section == "StackFrames":
            found = re.match(r"(\d+) \{file_location_id=(\d+)", line)
            if found:
                frames[int(found.group(1))] = int(found.group(2))
    return {frame: tables["FileLocations"].get(loc, "?") for frame, loc in frames.items()}


def count(hlo_text: str, loop: re.Pattern = STEP_LOOP) -> StepWork:
    """The StepWork of a compiled program's text (``compiled.as_text()``): instructions
    whose op name matches ``loop``."""
    lines = hlo_text.split("\n")
    names = frame_names(lines)
    parsed = [(_INSTRUCTION.match(line), line) for line in lines]
    sizes = {found.group(1): _size(found.group(2)) for found, _ in parsed if found}  # names are unique
    work = StepWork()
    for instruction, line in parsed:
        op_name = re.search(r'op_name="([^"]*)"', line) if instruction else None
        if not instruction or not op_name or not loop.match(op_name.group(1)):
            continue
        _, dims, opcode, operand = instruction.groups()
        frame = re.search(r"stack_frame_id=(\d+)", line)
        name = names.get(int(frame.group(1)), "?") if frame else "?"
        if opcode in ARITH:
            work.arith[name] += _size(dims)
        elif opcode in MOVED:  # a reduction by its input's size
            work.moved[name] += sizes.get(operand, _size(dims)) if opcode == "reduce" else _size(dims)
    return work


class FamilyProgram(NamedTuple):
    """A family's batch, the IDM policy and their compiled program; ``devices`` the batch is
    sharded over."""

    workload: Workload
    batch: Any
    policy: Any
    compiled: Any
    devices: int

    def work(self) -> StepWork:
        """The StepWork of the program's run on one device (its :attr:`share` of the batch);
        parses the program's text, so call it once."""
        return count(self.compiled.as_text() or "")

    @property
    def share(self) -> float:
        """Scenarios one device simulates: divides a StepWork into elements per scenario-step."""
        return self.workload.scenarios / self.devices

    def run(self):
        """One call of the program (not waited for)."""
        return self.compiled(self.batch, self.policy)


def family_program(spec: str, scenarios: int, steps: int, devices: int = 1) -> FamilyProgram:
    """The FamilyProgram of ``spec`` (NAME[:AGENTS], 32 agents by default; the batch `drivesim
    bench engine` times, sharded over the first ``devices`` devices): ``rollout_batch``
    compiled with the batch's search switches fixed as ``simulate`` fixes them, in one cache
    block (blocks run groups of the batch one after another; the step is the same)."""
    family, _, agents = spec.partition(":")
    workload = Workload(scenarios=scenarios, agents=int(agents or 32), steps=steps, family=family)
    batch, placed = place(make_batch(workload), jax.devices()[:devices])
    workload = dataclasses.replace(workload, scenarios=placed)
    config = sim_config(workload).with_search(block_agents=None)
    searches = switches.of_batch(batch, config)
    program = jax.jit(lambda sc, pol: rollout_batch(sc, pol, config, devices, searches=searches))
    policy = idm_policy()
    return FamilyProgram(workload, batch, policy, program.lower(batch, policy).compile(), devices)
