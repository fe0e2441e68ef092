"""A campaign directory on a file system that fills up: a real tmpfs of a few hundred KiB
(mounted by the test; skipped where this process may not mount one). The run ends with one
error naming the directory and how to go on, the batches written before are kept, and once
there is room the same campaign resumes to exactly the rows of an undisturbed run."""

from __future__ import annotations

import sqlite3
import subprocess

import numpy as np
import pytest
from pipeline_helpers import small_config

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.verify import check_campaign

# 20 batches of 8. On tmpfs the start takes up to ~150 KB for a moment (the ledger's first
# pages and its write-ahead log), then ~45 KB, and the finished campaign ~290 KB without its
# log: a 200 KB disk holds the start and a first batch, never the whole campaign, however
# the log's growth and checkpoints fall.
COUNT = 160


@pytest.fixture
def small_disk(tmp_path):
    """A mounted tmpfs (``remount(size)`` changes its size); unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()

    def remount(size: str, first: bool = False) -> None:
        options = f"size={size}" if first else f"remount,size={size}"
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], check=True)

    try:
        remount("200k", first=True)
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"cannot mount a tmpfs here: {err}")
    try:
        yield mount, remount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _rows(directory) -> dict[str, np.ndarray]:
    table = results.results_table(directory).sort_by("scenario_id")
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def test_full_disk_ends_in_one_line_and_resumes_to_the_same_rows(small_disk, tmp_path):
    mount, remount = small_disk
    out = mount / "c"
    with pytest.raises(RuntimeError) as failed:
        run_campaign(small_config(out, count=COUNT))
    message = str(failed.value)
    assert "\n" not in message and str(out) in message
    assert "no space left on the device" in message and "rerun the same command to resume" in message
    before = check_campaign(out)  # every batch the ledger calls done has its sound shard
    assert before.clean and 0 < len(before.ok) < COUNT // 8
    # a shard written when the ledger could no longer record it is a stray file, redone later

    remount("4m")
    resumed = run_campaign(small_config(out, count=COUNT))
    assert resumed.done == COUNT and resumed.skipped == 8 * len(before.ok)
    after = check_campaign(out)
    assert after.clean and len(after.ok) == COUNT // 8 and not after.stray
    reference = tmp_path / "reference"
    run_campaign(small_config(reference, count=COUNT))
    got, want = _rows(out), _rows(reference)
    assert len(got["scenario_id"]) == COUNT and len(set(got["scenario_id"])) == COUNT
    for name in ("scenario_id", "ego_collided", "progress_m", "min_ttc_s", "max_jerk", "status"):
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_no_room_to_start_is_one_line(small_disk):
    mount, remount = small_disk
    remount("24k")  # room for campaign.toml and the lock, not for the ledger's first pages
    with pytest.raises(RuntimeError, match=r"campaign start failed in .*: no space left on the device"):
        run_campaign(small_config(mount / "c", count=COUNT))


def test_a_disk_io_error_with_room_left_is_not_called_full(small_disk, tmp_path):
    mount, remount = small_disk
    error = sqlite3.OperationalError("disk I/O error")
    assert "no space left" not in results.write_failure(tmp_path, error, "campaign start")
    (mount / "filler").write_bytes(b"\0" * (200 * 1024 - 8192))  # leaves less than 64 KiB
    assert "no space left on the device" in results.write_failure(mount / "c", error, "campaign start")
