"""drivesim.pipeline.program_identity on a real ledger: what a campaign records of the program
that computes its rows, and the notes for a resume or a cluster worker that runs another one."""

from __future__ import annotations

import re

from drivesim.parallel import processor
from drivesim.pipeline import program_identity as pid
from drivesim.pipeline.ledger import Ledger


def test_program_names_this_process():
    now = pid.program()
    assert set(now) == {"engine", "jax", "platform", "device", "fma_free"}
    assert re.fullmatch(r"[0-9a-f]{16}", now["engine"]) and now["engine"] == pid.engine_digest()
    assert now["platform"] == "cpu" and now["device"] == processor.model() != ""
    assert now["fma_free"] == "True"  # the suite's XLA flags (tests/conftest.py)


def test_first_start_records_and_a_resume_compares(tmp_path):
    with Ledger(tmp_path) as ledger:
        assert pid.resume_notes(ledger) == []
        assert pid.recorded(tmp_path) == pid.program()
        assert pid.resume_notes(ledger) == []  # the same program: no note


def test_workers_first_one_recorded_others_compared(tmp_path):
    here = pid.program()
    other_cpu = {**here, "device": "AMD EPYC 7B13"}
    with Ledger(tmp_path) as ledger:
        assert pid.worker_notes(ledger, {}) == []  # nothing recorded without a worker
        assert pid.recorded(tmp_path) == {}
        assert pid.worker_notes(ledger, {"w0@a": here, "w1@a": here}) == []
        assert pid.recorded(tmp_path) == here
        (note,) = pid.worker_notes(ledger, {"w2@b": other_cpu, "w3@a": here})
    assert note.startswith("worker w2@b computes with another program")
    assert f"device {here['device']!r} -> 'AMD EPYC 7B13'" in note and "engine" not in note
    assert pid.recorded(tmp_path) == here  # the record keeps the start's program
