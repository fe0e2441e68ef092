"""Which campaign wrote a result shard: a key in every shard's footer.

A shard's footer carries ``drivesim.campaign``: 16 hex digits of the SHA-256 of the
campaign's identity (``CampaignConfig.identity()``, the result-deciding fields of
``campaign.toml``). The ledger proves which shards belong to a campaign; without a ledger
(deleted, or shards copied on their own) the readers keep only the shards whose key is the
campaign's, so a shard of another campaign copied into ``results/`` is not read as this one's
(drivesim.pipeline.verify).
"""

from __future__ import annotations

import functools
import hashlib
import json
import pathlib

CAMPAIGN_KEY = b"drivesim.campaign"  # in every shard's footer metadata


def campaign_key(directory) -> str | None:
    """The key of the campaign in ``directory`` (from its ``campaign.toml``); None when the
    file is absent or unreadable."""
    from drivesim.pipeline.config import CONFIG_NAME

    path = pathlib.Path(directory) / CONFIG_NAME
    try:
        st = path.stat()
    except OSError:
        return None
    return _key_of(str(path.resolve()), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=64)
def _key_of(path: str, mtime_ns: int, size: int) -> str | None:
    from drivesim.pipeline.config import read_config

    try:
        identity = read_config(pathlib.Path(path).parent).identity()
    except Exception:  # noqa: BLE001 - an unreadable campaign.toml: no key (the run names it)
        return None
    text = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
