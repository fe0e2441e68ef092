"""The two encodings of a scenario store's array columns, and their decoding to NumPy.

Schema version 4 (drivesim.scenarios.store.BINARY_SINCE) stores each row's padded array as
one ``large_binary`` value: its bytes in C order, little-endian (bool: one byte, 0 or 1).
Versions 1 to 3 stored the same values as Parquet list columns. A list column costs a
repetition level per element to decode; a binary column costs one length per row, and its
values reach NumPy without a copy, so a binary store reads several times faster. Both read
through ``array_column``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

BOOL = np.bool_


def binary_column(flat: np.ndarray, dtype) -> pa.Array:
    """(b, k) values as a ``large_binary`` array of b rows, each the row's k values of
    ``dtype``, little-endian."""
    flat = np.ascontiguousarray(flat, np.dtype(dtype).newbyteorder("<"))
    b = flat.shape[0]
    bounds = pa.py_buffer(np.arange(b + 1, dtype=np.int64) * (flat.nbytes // max(b, 1)))
    return pa.Array.from_buffers(pa.large_binary(), b, [None, bounds, pa.py_buffer(flat)])


def array_column(col: pa.Array, dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values, offsets, null) of one stored array column chunk of ``dtype`` (a binary column
    of version 4 or a list column of versions 1-3): values (V,) ``dtype``, the rows' values
    back to back (no copy for a binary float or int column); offsets (rows + 1,) int64 into
    values; null (rows,) bool, True also for a binary row that is no whole number of values."""
    null = col.is_null().to_numpy(zero_copy_only=False) if col.null_count else np.zeros(len(col), bool)
    if not pa.types.is_large_binary(col.type):
        offsets = col.offsets.to_numpy().astype(np.int64)  # of this slice, into col.values
        values = col.values.slice(offsets[0], offsets[-1] - offsets[0])
        return values.to_numpy(zero_copy_only=False).astype(dtype, copy=False), offsets - offsets[0], null
    size = np.dtype(dtype).itemsize
    bounds = np.frombuffer(col.buffers()[1], np.int64)[col.offset : col.offset + len(col) + 1]
    data = col.buffers()[2]
    raw = np.frombuffer(data, np.uint8)[bounds[0] : bounds[-1]] if data is not None else np.zeros(0, np.uint8)
    offsets = bounds - bounds[0]
    if np.any(offsets % size):  # a corrupt row: read as null (its decode names it), the rest kept
        lengths = np.diff(offsets)
        bad = lengths % size != 0
        null = null | bad
        good = [raw[offsets[i] : offsets[i + 1]] for i in np.flatnonzero(~bad)]
        raw = np.concatenate([np.zeros(0, np.uint8), *good])
        offsets = np.concatenate([[0], np.cumsum(np.where(bad, 0, lengths))])
    if np.dtype(dtype) == BOOL:  # any nonzero byte is True
        return raw != 0, offsets, null
    return raw.view(np.dtype(dtype).newbyteorder("<")), offsets // size, null


def zeros_like_column(like: pa.Array, like_dtype, dtype) -> pa.Array:
    """A column of ``dtype`` zeros with the row lengths of ``like`` (of ``like_dtype``), in
    its encoding (binary or list): a column absent from an older store."""
    values, offsets, _ = array_column(like, like_dtype)
    zeros = np.zeros(len(values), dtype)
    if pa.types.is_large_binary(like.type):
        bounds = pa.py_buffer(offsets * np.dtype(dtype).itemsize)
        return pa.Array.from_buffers(pa.large_binary(), len(like), [None, bounds, pa.py_buffer(zeros)])
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(zeros))
