"""Case families on sweep files and MLP policy files."""

from __future__ import annotations

import json
import os
import shlex
import zipfile
from collections.abc import Callable
from pathlib import Path

from adversarial.harness import Harness, done_rows, obs_size, run_args, write_policy

# ---------------------------------------------------------------- family: sweeps

SWEEPS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("T = nan", "toml", "[[policy]]\nT = nan\n", ("T",)),
    ("T = inf", "toml", "[[policy]]\nT = inf\n", ("T",)),
    ("T = -1", "toml", "[[policy]]\nT = -1.0\n", ("T",)),
    ("a = b = 0", "toml", "[[policy]]\na = 0.0\nb = 0.0\n", ("a",)),
    ("T = true", "toml", "[[policy]]\nT = true\n", ("T",)),
    ("T = '1.0' (a string)", "toml", "[[policy]]\nT = '1.0'\n", ("T",)),
    ("v0 = 71", "toml", "[[policy]]\nv0 = 71.0\n", ("v0",)),
    ("T as a table", "toml", "[[policy]]\nT = {x = 1}\n", ("T",)),
    ("unknown parameter", "toml", "[[policy]]\nfoo = 1.0\n", ("foo",)),
    ("no variants (empty file)", "toml", "", ("sweep",)),
    ("TOML syntax error", "toml", "[[policy]\nT = 1\n", ("sweep",)),
    ("TOML duplicate key", "toml", "[[policy]]\nT = 1.0\nT = 2.0\n", ("T",)),
    ("10,000 variants", "toml", "[[policy]]\nT = 1.0\n" * 10000, ("1024",)),
    ("1,025 variants", "toml", "[[policy]]\nT = 1.0\n" * 1025, ("1024",)),
    ("arrays nested 50,000 deep", "toml", "x = " + "[" * 50000 + "]" * 50000 + "\n", ("sweep",)),
    ("JSON duplicate key", "json", '[{"T": 1.0, "T": 2.0}]', ("T",)),
    ("JSON NaN literal", "json", '[{"T": NaN}]', ("T",)),
    ("JSON Infinity literal", "json", '[{"v0": Infinity}]', ("v0",)),
    ("JSON top-level object", "json", '{"T": 1.0}', ("sweep",)),
    ("JSON list of numbers", "json", "[1, 2, 3]", ("sweep",)),
    ("JSON 1e400", "json", '[{"T": 1e400}]', ("T",)),
    ("JSON nested 100,000 deep", "json", "[" * 100000 + "]" * 100000, ("sweep",)),
    ("JSON not UTF-8", "json", "\udcff", ("sweep",)),
)


def family_sweep(h: Harness) -> None:
    """Sweep files (TOML and JSON) with bad values, duplicates, too many variants, odd files."""
    for name, ext, text, names in SWEEPS:
        with h.case("sweep", f"sweep {name}", f"exit 2, one line naming the file and {names[0]!r}") as c:
            path = h.fresh(f"sweep-{len(h.cases)}.{ext}")
            path.write_bytes(text.encode("utf-8", "surrogateescape"))
            out = h.fresh(f"sweep-run-{len(h.cases)}")
            c.judge(c.ds(*run_args(out, sweep=str(path))), 2, (path.name, *names), one_line=True)
            if out.exists():
                c.fail("wrong", "the campaign directory was created")
    for name, path in (
        ("missing file", h.scratch / "no-such-sweep.toml"),
        ("a directory", h.fix),
        ("/dev/zero", Path("/dev/zero")),
        ("a FIFO nobody writes", None),
    ):
        with h.case("sweep", f"sweep is {name}", "exit 2 within seconds, one line naming the file") as c:
            if path is None:
                path = h.fresh("sweep-fifo.toml")
                os.mkfifo(path)
            c.judge(
                c.ds(*run_args(h.fresh(f"sweep-run-{len(h.cases)}"), sweep=str(path)), timeout=60),
                2,
                (path.name,),
                one_line=True,
            )
    with h.case(
        "sweep", "valid two-variant sweep (control)", "exit 0, 16 rows (8 scenarios x 2 policies)"
    ) as c:
        d = h.fresh("sweep-ok")
        if c.judge(c.ds(*run_args(d, sweep=str(h.fix / "sweep.toml"))), 0) and done_rows(d)[0] != 16:
            c.fail("wrong", f"rows {done_rows(d)}")


# ---------------------------------------------------------------- family: MLP policy files


class _Payload:
    """Pickled into an object array: unpickling it would run a shell command."""

    def __init__(self, marker: Path):
        """The payload touches ``marker`` when unpickled."""
        self.marker = marker

    def __reduce__(self):
        """Pickle as a call of os.system (what a loader with allow_pickle would run)."""
        return (os.system, (f"touch {shlex.quote(str(self.marker))}",))


def _npz(path: Path, **arrays) -> Path:
    """Write an .npz of ``arrays`` as given (no checks)."""
    import numpy as np

    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return path


def policy_variants(h: Harness) -> list[tuple[str, Callable[[Path], Path], tuple[str, ...]]]:
    """(name, writer of a tampered policy file at a path, names the refusal must carry)."""
    import numpy as np

    n = obs_size()
    good = dict(np.load(h.fix / "mlp.npz"))
    meta = json.loads(str(good["meta"]))

    def with_(**changes):
        """Writer of the good file with some entries replaced."""
        return lambda p: _npz(p, **{**good, **changes})

    def without(key):
        """Writer of the good file without entry ``key``."""
        return lambda p: _npz(p, **{k: v for k, v in good.items() if k != key})

    def header_claim(p: Path) -> Path:
        """w0.npy's header claims a (1e6, 1e6) float32 array; the data is 64 bytes."""
        _npz(p, **{k: v for k, v in good.items() if k != "w0"})
        with zipfile.ZipFile(p, "a") as zf:
            header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000, 1000000), }"
            header = header.ljust(118) + "\n"
            data = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + b"\0" * 64
            zf.writestr("w0.npy", data)
        return p

    def three_outputs(p: Path) -> Path:
        """A well-formed file whose last layer has 3 outputs (save_policy refuses to write it)."""
        from drivesim.core.policies import init_mlp

        params = init_mlp(0, (n, 16, 3))
        arrays = {f"w{i}": np.asarray(w) for i, w in enumerate(params.weights)}
        arrays |= {f"b{i}": np.asarray(b) for i, b in enumerate(params.biases)}
        return _npz(p, meta=np.asarray(json.dumps({**meta, "sizes": [n, 16, 3]})), **arrays)

    nan = good["w0"].copy()
    nan[0, 0] = np.nan
    inf = good["w0"].copy()
    inf[1, 1] = np.inf
    return [
        ("w0 input size + 1", lambda p: write_policy(p, (n + 1, 16, 2)), ("w0",)),
        ("last layer 3 outputs", three_outputs, ("output",)),
        (
            "object array with a pickle payload",
            with_(w0=np.array([_Payload(h.escape / "unpickled")], object)),
            ("w0",),
        ),
        ("string arrays", with_(w0=np.array(["a", "b"])), ("w0",)),
        ("complex arrays", with_(w0=good["w0"].astype(np.complex64)), ("w0",)),
        ("meta a JSON list", with_(meta=np.asarray(json.dumps([1, 2]))), ("meta",)),
        ("meta not JSON", with_(meta=np.asarray("{{{")), ("meta",)),
        ("meta missing", without("meta"), ("meta",)),
        ("array w1 missing", without("w1"), ("w1",)),
        ("format version 1", with_(meta=np.asarray(json.dumps({**meta, "version": 1}))), ("version",)),
        ("format name wrong", with_(meta=np.asarray(json.dumps({**meta, "format": "x"}))), ("format",)),
        ("meta sizes not a list", with_(meta=np.asarray(json.dumps({**meta, "sizes": 5}))), ("sizes",)),
        ("w0 NaN", with_(w0=nan), ("w0",)),
        ("w0 inf", with_(w0=inf), ("w0",)),
        ("w0 one-dimensional", with_(w0=good["w0"][:, 0]), ("w0",)),
        ("w0.npy header claims 4 TB", header_claim, ("w0",)),
        ("junk bytes", lambda p: (p.write_bytes(b"junk\n"), p)[1], ("npz",)),
        ("a zip of nothing", lambda p: (zipfile.ZipFile(p, "w").close(), p)[1], ("meta",)),
    ]


def family_policy(h: Harness) -> None:
    """``--policy mlp:FILE`` with tampered files: one line naming the file and field, exit 2."""
    for name, writer, names in policy_variants(h):
        with h.case(
            "policy", f"mlp: {name}", f"exit 2, one line naming the file and {names[0]!r}; nothing written"
        ) as c:
            path = writer(h.fresh(f"policy-{len(h.cases)}.npz"))
            out = h.fresh(f"policy-run-{len(h.cases)}")
            c.judge(c.ds(*run_args(out, policy=f"mlp:{path}")), 2, (path.name, *names), one_line=True)
            if "allow_pickle" in c.last.err and "pickle" not in name:
                c.fail(
                    "wrong", "the message blames pickled data and suggests allow_pickle for a non-pickle file"
                )
            if out.exists():
                c.fail("wrong", "the campaign directory was created")
    for name, spec, names in (
        ("missing file", "mlp:{s}/nope.npz", ("nope.npz",)),
        ("a directory", "mlp:{s}", ("cases",)),
        ("empty path", "mlp:", ("mlp",)),
        ("second file of two bad", "mlp:{g},{s}/nope.npz", ("nope.npz",)),
        ("/dev/zero", "mlp:/dev/zero", ("/dev/zero",)),
    ):
        with h.case("policy", f"mlp: {name}", "exit 2, one line naming the file") as c:
            spec = spec.format(s=h.scratch, g=h.fix / "mlp.npz")
            c.judge(
                c.ds(*run_args(h.fresh(f"policy-run-{len(h.cases)}"), policy=spec), timeout=60),
                2,
                names,
                one_line=True,
            )
    with h.case("policy", "mlp: a valid file (control)", "exit 0, 8 rows") as c:
        d = h.fresh("policy-ok")
        if (
            c.judge(c.ds(*run_args(d, policy=f"mlp:{h.fix / 'mlp.npz'}"), timeout=300), 0)
            and done_rows(d)[0] != 8
        ):
            c.fail("wrong", f"rows {done_rows(d)}")
