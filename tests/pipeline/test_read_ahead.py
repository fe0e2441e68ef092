"""The loader reads ahead: while the planner stacks batch k, the next run of positions is
already loading (also across windows), and no more than one run ahead."""

from __future__ import annotations

import threading
import time

from drivesim.pipeline.ledger import Ledger
from drivesim.pipeline.plan import Planner, PlanSettings
from drivesim.scenarios.sources import SyntheticSource
from drivesim.scenarios.synthetic import FamilyConfig


class RecordingSource(SyntheticSource):
    """Highway scenarios that record which positions were requested."""

    def __init__(self, count: int):
        super().__init__(["highway"], count, 0, config=FamilyConfig(num_agents=8, steps=5))
        self.requested: set[int] = set()
        self.lock = threading.Lock()

    def load(self, position: int):
        with self.lock:
            self.requested.add(position)
        return super().load(position)


def _wait_for(source: RecordingSource, positions: set[int], timeout: float = 10.0) -> set[int]:
    """The requested positions once they include ``positions`` (or at the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with source.lock:
            if positions <= source.requested:
                break
        time.sleep(0.01)
    with source.lock:
        return set(source.requested)


def _planner(tmp_path, source, batch_size=64, window_batches=1):
    Ledger(tmp_path).close()
    settings = PlanSettings(
        batch_size=batch_size,
        window=batch_size * window_batches,
        padded_batch=batch_size,
        loader_threads=2,
    )
    return Planner(source, tmp_path, settings, range(len(source)))


def test_next_run_loads_while_current_batch_is_handed_out(tmp_path):
    source = RecordingSource(4 * 64)
    seen = []
    for batch_id, work in _planner(tmp_path, source)(threading.Event()):
        seen.append((batch_id, len(work.infos)))
        if batch_id == 0:  # windows of one batch: the second window loads while we hold the first
            requested = _wait_for(source, set(range(64, 128)))
            assert set(range(64, 128)) <= requested, "the next window was not loading ahead"
            assert not requested & set(range(128, 256)), "read more than one run ahead"
    assert [b for b, _ in seen] == [0, 64, 128, 192] and all(n == 64 for _, n in seen)


def test_without_read_ahead_nothing_loads_early(tmp_path):
    source = RecordingSource(2 * 64)
    planner = _planner(tmp_path, source)
    planner.READ_AHEAD = 0
    for batch_id, _ in planner(threading.Event()):
        if batch_id == 0:
            time.sleep(0.2)  # time a read-ahead would have had to start
            assert source.requested == set(range(64))
