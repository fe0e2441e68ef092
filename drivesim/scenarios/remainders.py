"""A window's remainders: the buckets that fill no batch, padded to one shape (one program)."""

from __future__ import annotations

from collections.abc import Collection

from drivesim.scenarios.batching import BucketKey


def merged_key(keys) -> BucketKey:
    """The smallest BucketKey that holds every one of ``keys``: each class at its largest
    (scenarios with and without logs are not merged: see :func:`merge_partial`)."""
    keys = list(keys)
    logs = [k.log_steps for k in keys if k.log_steps is not None]
    return BucketKey(
        max(k.agents for k in keys),
        max(k.lanes for k in keys),
        max(k.points for k in keys),
        max(logs) if logs else None,
    )


def merge_partial(
    groups: list[tuple[BucketKey, list[int]]], size: int, full: Collection[BucketKey] = ()
) -> list[tuple[BucketKey, list[int]]]:
    """The partial buckets of a window, ``groups`` of (key, positions ascending) in the order
    of their first positions, with as few new programs as padding allows.

    A group whose key also made a full batch in the window (``full``) keeps its batch: its
    program is compiled anyway. The others, apart for scenarios with and without logs, are
    padded to one key (:func:`merged_key`) and cut in position order into batches of at most
    ``size``: one program for the window's rare buckets instead of one per bucket. Each
    batch's positions are ascending (its id is its first). Returned by batch id.

    A scenario's metrics do not depend on its padding class (bit for bit: sums over agents
    use core.padded_sum; padded lanes, points and log steps are never read as real), so only
    time changes: a merged row costs the compute of the larger class. Rows merged per
    window: fewer than ``size`` per rare bucket."""
    kept = [(key, list(positions)) for key, positions in groups if key in full]
    merged = []
    for rare in _alike_in_logs([(k, ps) for k, ps in groups if k not in full], lambda item: item[0]):
        if rare:
            common = merged_key(k for k, _ in rare)
            positions = sorted(p for _, ps in rare for p in ps)
            merged += [(common, positions[i : i + size]) for i in range(0, len(positions), size)]
    return sorted(kept + merged, key=lambda kv: kv[1][0])


def shared_keys(keys: Collection[BucketKey]) -> dict[BucketKey, BucketKey]:
    """Each of ``keys`` mapped to the key its scenarios are padded to when a small campaign is
    planned whole: :func:`merged_key` of the keys alike in having logs or not, so such a
    campaign compiles one program for its scenarios with logs and one for those without (the
    demo: its synthetic families of 8 to 32 agents, straight and bent lanes, in one; its
    CommonRoad files in another). Metrics do not depend on the padding class (see
    :func:`merge_partial`); a padded row costs the compute of the larger classes."""
    merged = {}
    for alike in _alike_in_logs(list(keys), lambda key: key):
        merged.update({k: merged_key(alike) for k in alike})
    return merged


def _alike_in_logs(items: list, key_of) -> tuple[list, list]:
    """``items`` split, in order, into those whose BucketKey (``key_of(item)``) has no log
    steps and those whose key has: they never share a padded shape."""
    return (
        [item for item in items if key_of(item).log_steps is None],
        [item for item in items if key_of(item).log_steps is not None],
    )
