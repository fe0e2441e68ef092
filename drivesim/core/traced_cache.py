"""Programs traced once per machine: the executor's programs and ``simulate``'s fast pass kept
as serialized StableHLO.

JAX's persistent compilation cache saves the XLA compile of a program, but every process
still traces and lowers it (a second or two for an engine program on the CPU, in every
``drivesim run`` and every process that calls ``simulate``). Here the program is exported
(``jax.export``) the first time its key is seen, written beside the compilation cache
(``JAX_COMPILATION_CACHE_DIR/traced``), and compiled from that StableHLO; a later process
reads it back and compiles it without tracing (the compile then loads from the persistent
cache). The program is compiled from the deserialized StableHLO in both cases, so the first
and every later process compile one module, the same code bit for bit
(tests/parallel/test_traced_cache.py).

The key is a SHA-256 over: the source of the packages whose code is traced (drivesim.core,
drivesim.scenarios, drivesim.parallel), JAX's and jaxlib's versions and the settings that
change a trace (x64, default matmul precision), the caller's description of the program
(backend, sweep, devices, determinism mode, fixed search switches), the SimConfig (its ego
policy by name) and the arguments' shapes, dtypes (weak or not) and shardings. A SimConfig
whose ego policy is not one of drivesim.core.policies' built-in policies is never kept: a
user's policy code is not in the digest; neither is the state of a running process, so one
that patches what the engine reads while tracing (a test's monkeypatch of a module constant)
sets ``DRIVESIM_TRACED_CACHE=off``. The folder keeps at most KEPT_BYTES, the least recently
used programs removed first. A file that cannot be read is ignored and written again;
nothing is kept where the compilation cache is off or jax.export's serialization library
(flatbuffers) is missing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pathlib
import tempfile
from collections.abc import Callable, Sequence

import jax

from drivesim._source import digest
from drivesim.core import policies
from drivesim.core.types import SimConfig

log = logging.getLogger(__name__)

TRACED_PACKAGES = ("core", "scenarios", "parallel")  # under drivesim/: code a trace runs
ENV = "DRIVESIM_TRACED_CACHE"  # "off": trace every program (a process that patches engine state)
OFF = ("0", "off", "none", "false")
# bytes of traced programs kept per folder (about 140 KB to 1 MB each); each new source
# version writes its own, so the least recently used are removed past this
KEPT_BYTES = 256 * 1024**2


def _setting(name: str):
    """The value of JAX's setting ``name`` (read as an attribute of jax.config)."""
    config: object = jax.config
    return getattr(config, name)


def trace_settings() -> tuple[str, str]:
    """JAX's settings that change a trace: x64 and the default matmul precision."""
    return str(_setting("jax_enable_x64")), str(_setting("jax_default_matmul_precision"))


def folder() -> pathlib.Path | None:
    """Where traced programs are kept: ``traced`` in JAX's compilation cache folder, or None
    (the cache off, or jax.export's serialization unavailable)."""
    base = _setting("jax_compilation_cache_dir")
    if not base or os.environ.get(ENV, "").strip().lower() in OFF:
        return None
    try:
        import flatbuffers  # noqa: F401  (jax.export's serialization needs it)
    except ImportError:
        return None
    return pathlib.Path(base) / "traced"


def keepable(sim: SimConfig) -> bool:
    """Whether programs of ``sim`` may be kept: its ego policy's code is in the digest."""
    return sim.policy is None or any(sim.policy is p for p in policies.BUILT_IN)


def key(description: str, sim: SimConfig, args: tuple, shardings: Sequence) -> str:
    """The file name of a program of the pytrees ``args``: see the module."""
    leaves, tree = jax.tree_util.tree_flatten(args)
    named = tuple(
        (name, policies.policy_of(sim).name if name == "policy" else getattr(sim, name))
        for name in sim.__dataclass_fields__
    )
    parts = [
        digest(TRACED_PACKAGES),
        jax.__version__,
        jax.lib.__version__,
        *trace_settings(),
        description,
        repr(named),
        str(tree),  # with the static fields of the arguments (an IdBatch's families and sizes)
        *(
            f"{leaf.shape}{leaf.dtype}{getattr(leaf, 'weak_type', False)}{sharding}"
            for leaf, sharding in zip(leaves, shardings, strict=True)
        ),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def one_device(leaves: Sequence):
    """The single-device sharding that every leaf (a jax.Array) sits on, or None (a leaf that
    is not a device array, or leaves on other or several devices)."""
    shardings = {getattr(leaf, "sharding", None) for leaf in leaves}
    sharding = shardings.pop() if len(shardings) == 1 else None
    return sharding if isinstance(sharding, jax.sharding.SingleDeviceSharding) else None


def compile_flat(
    fn: Callable,
    args: tuple,
    *,
    in_shardings: Sequence,
    out_shardings: Sequence,
    donate: tuple[int, ...],
    description: str,
    sim: SimConfig,
    out_tree,
):
    """``fn`` (a function of the pytrees ``args``) compiled for their shapes: a
    :class:`FlatProgram` called with ``args``, returning the pytree ``out_tree`` (a PyTreeDef).
    in_shardings: one per leaf of ``args``; out_shardings: one per output leaf; donate: the
    positions of the donated arguments. Kept in and read from :func:`folder` (see the module)."""
    leaves, in_tree = jax.tree_util.tree_flatten(args)
    owners = [i for i, arg in enumerate(args) for _ in jax.tree_util.tree_leaves(arg)]
    donated = tuple(k for k, owner in enumerate(owners) if owner in donate)
    shardings, outs = tuple(in_shardings), tuple(out_shardings)

    def flat(*flat_leaves):
        return tuple(jax.tree_util.tree_leaves(fn(*jax.tree_util.tree_unflatten(in_tree, flat_leaves))))

    where = folder()
    path = None if where is None or not keepable(sim) else where / key(description, sim, args, shardings)
    exported = _read(path)
    if exported is None:
        blob = jax.export.export(jax.jit(flat, in_shardings=shardings, out_shardings=outs))(
            *leaves
        ).serialize()
        _write(path, blob)
        exported = jax.export.deserialize(blob)
    program = jax.jit(exported.call, in_shardings=shardings, out_shardings=outs, donate_argnums=donated)
    return FlatProgram(program.lower(*leaves).compile(), out_tree)


def _read(path: pathlib.Path | None):
    if path is None or not path.is_file():
        return None
    try:
        exported = jax.export.deserialize(bytearray(path.read_bytes()))
        os.utime(path)  # used now: the last to go when the folder is trimmed (_trim)
        return exported
    except Exception as err:  # noqa: BLE001 - a damaged or foreign file: trace again
        log.warning("traced program %s unreadable (%s); tracing it again", path.name, err)
        return None


def _write(path: pathlib.Path | None, blob: bytes | bytearray) -> None:
    """Write ``blob`` to ``path`` atomically (a whole file or none); a failure is logged."""
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
            tmp.write(blob)
        os.replace(tmp.name, path)
        _trim(path.parent)
    except OSError as err:
        log.warning("traced program not kept (%s)", err)


def _trim(where: pathlib.Path, most: int | None = None) -> None:
    """Remove the least recently used programs of ``where`` until it holds at most ``most``
    bytes (default KEPT_BYTES): programs of source versions no longer run go first."""
    most = KEPT_BYTES if most is None else most
    files = []
    for entry in where.iterdir():
        try:
            info = entry.stat()
        except OSError:  # removed by another process meanwhile
            continue
        files.append((info.st_mtime, info.st_size, entry))
    total = sum(size for _, size, _ in files)
    for _, size, entry in sorted(files):
        if total <= most:
            break
        entry.unlink(missing_ok=True)
        total -= size


class FlatProgram:
    """A compiled flat program, called with the pytrees it was compiled for."""

    def __init__(self, compiled, out_tree):
        self.compiled, self.out_tree = compiled, out_tree

    def __call__(self, *args):
        return jax.tree_util.tree_unflatten(self.out_tree, self.compiled(*jax.tree_util.tree_leaves(args)))

    def memory_analysis(self):
        return self.compiled.memory_analysis()
