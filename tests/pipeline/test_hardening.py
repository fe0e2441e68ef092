"""Regression suite of the adversarial sweep: damaged shards, changed inputs, bad configs,
busy directories (real campaigns, real Parquet / SQLite / DuckDB, real processes)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from pipeline_helpers import small_config

from drivesim.pipeline import results
from drivesim.pipeline.campaign import run_campaign
from drivesim.pipeline.config import read_config
from drivesim.pipeline.fingerprint import InputChangedError
from drivesim.pipeline.lock import CampaignBusyError, remove_dead_temporaries
from drivesim.pipeline.validation import ConfigError, validate_config
from drivesim.pipeline.verify import check_campaign

COUNT = 40  # 5 batches of 8


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A finished campaign of COUNT scenarios and its results table."""
    out = tmp_path_factory.mktemp("reference")
    run_campaign(small_config(out, count=COUNT))
    return out, results.results_table(out)


@pytest.fixture
def copy(reference, tmp_path):
    """A private copy of the reference campaign directory."""
    out = tmp_path / "c"
    shutil.copytree(reference[0], out)
    return out


def _rerun(out):
    return run_campaign(dataclasses.replace(read_config(out), out=str(out)))


def _same(a, b) -> bool:
    """Tables equal column by column (NaN equal to NaN)."""
    assert a.column_names == b.column_names and a.num_rows == b.num_rows
    for name in a.column_names:
        x, y = (t.column(name).to_numpy(zero_copy_only=False) for t in (a, b))
        np.testing.assert_array_equal(x, y, err_msg=name)
    return True


def _shard(out, index=2):
    return sorted((out / "results").glob("part-*.parquet"))[index]


def test_deleted_shard_is_detected_and_redone(reference, copy):
    victim = _shard(copy)
    victim.unlink()
    report = check_campaign(copy)
    assert not report.clean and [s for _, s in report.missing] == [f"results/{victim.name}"]
    result = _rerun(copy)
    assert result.done == COUNT
    assert check_campaign(copy).clean
    assert _same(results.results_table(copy), reference[1])


def test_truncated_shard_is_detected_and_redone(reference, copy):
    victim = _shard(copy)
    os.truncate(victim, 1000)
    report = check_campaign(copy)
    assert [s for _, s, _ in report.damaged] == [f"results/{victim.name}"]
    assert "checksum" in report.damaged[0][2]
    _rerun(copy)
    assert _same(results.results_table(copy), reference[1])


def test_rewritten_shard_with_other_rows_is_damage(copy):
    import pyarrow.parquet as pq

    victim = _shard(copy)
    table = pq.read_table(victim)
    pq.write_table(table.slice(0, 3), victim)  # a valid Parquet file, but not the one recorded
    report = check_campaign(copy)
    assert len(report.damaged) == 1


def test_stray_copy_is_ignored_and_reported(reference, copy):
    shutil.copy(_shard(copy), copy / "results" / "part-00000007 (copy).parquet")
    shutil.copy(_shard(copy), copy / "results" / "part-99999999.parquet")
    assert results.query(copy, "SELECT count(*) AS n FROM results").column("n")[0].as_py() == COUNT
    report = check_campaign(copy)
    assert report.clean and sorted(report.stray) == ["part-00000007 (copy).parquet", "part-99999999.parquet"]
    from drivesim.report.data import result_shards

    assert len(result_shards(copy)) == 5


def test_changed_store_refuses_resume(tmp_path):
    from drivesim.scenarios.store import write_store
    from drivesim.scenarios.synthetic import FamilyConfig, generate

    store = tmp_path / "s.parquet"
    write_store(store, [generate("highway", i, FamilyConfig(num_agents=8, steps=10)) for i in range(16)])
    config = small_config(tmp_path / "c", sources=(f"store:{store}",), agents=None, count=16)
    run_campaign(config)
    again = run_campaign(config)  # unchanged: resumes
    assert again.skipped == 16
    write_store(
        store, [generate("highway", i, FamilyConfig(num_agents=8, steps=10, seed=7)) for i in range(16)]
    )
    with pytest.raises(InputChangedError, match=r"store:.*s\.parquet.*content changed"):
        run_campaign(config)


def test_campaign_of_an_older_generator_refuses_resume(copy):
    """A synthetic campaign started by another version of the generators is not resumed (its
    scenarios may differ for the same ids)."""
    import json

    from drivesim.pipeline.ledger import Ledger

    with Ledger(copy) as ledger:
        inputs = json.loads(ledger.meta()["inputs"])
        (key,) = [k for k in inputs if k.startswith("source synthetic:")]
        ledger.set_meta(inputs=json.dumps({key: {**inputs[key], "generator": 1}}))
    with pytest.raises(InputChangedError, match=r"source synthetic:highway: generator 1 -> 2;"):
        _rerun(copy)


def test_resume_with_another_program_goes_on_with_a_note(reference, copy):
    """A campaign resumed by another engine or on another processor is not refused (results
    stay within float32 rounding) but the run's notes name what changed; the same program
    resumes without a note."""
    import json

    from drivesim.pipeline.ledger import Ledger

    assert not [n for n in _rerun(copy).notes if "another program" in n]
    with Ledger(copy) as ledger:
        program = json.loads(ledger.meta()["program"])
        assert set(program) == {"engine", "jax", "platform", "device", "fma_free"}
        ledger.set_meta(program=json.dumps({**program, "engine": "0" * 16, "device": "AMD EPYC 7B13"}))
    _shard(copy).unlink()  # one batch is redone by this program
    result = _rerun(copy)
    (note,) = [n for n in result.notes if "another program" in n]
    assert "engine '0000000000000000' -> " in note and "device 'AMD EPYC 7B13' -> " in note
    assert "jax" not in note and result.done == COUNT
    assert _same(results.results_table(copy), reference[1])
    with Ledger(copy) as ledger:  # the record keeps the program the campaign started with
        assert json.loads(ledger.meta()["program"])["device"] == "AMD EPYC 7B13"


def test_edited_campaign_toml_refuses_resume(copy):
    toml = copy / "campaign.toml"
    toml.write_text(toml.read_text().replace("num_steps = 10", "num_steps = 40"))
    with pytest.raises(InputChangedError, match=r"num_steps: 10 -> 40"):
        _rerun(copy)


def test_edited_how_field_is_accepted(copy):
    toml = copy / "campaign.toml"
    toml.write_text(toml.read_text().replace("loader_threads = 2", "loader_threads = 1"))
    assert _rerun(copy).done == COUNT


@pytest.mark.parametrize(
    "changes, field",
    [
        (dict(num_steps=0), "num_steps"),
        (dict(count=10**12), "count"),
        (dict(devices=999), "devices"),
        (dict(chunk=0), "chunk"),
        (dict(agents=0), "agents"),
        (dict(backend="warp"), "backend"),
        (dict(sources=("synthetic:nope",)), "nope"),
    ],
)
def test_rejected_config_writes_nothing(tmp_path, changes, field):
    out = tmp_path / "c"
    with pytest.raises(ConfigError, match=field):
        run_campaign(small_config(out, **changes))
    assert not out.exists()


def test_wrong_size_mlp_policy_is_refused_up_front(tmp_path):
    from drivesim.core.policies import init_mlp
    from drivesim.train.policy_io import PolicyFileError, save_policy

    policy = save_policy(tmp_path / "p.npz", init_mlp(0, (7, 8, 2)))
    out = tmp_path / "c"
    with pytest.raises(PolicyFileError, match="w0 takes 7 inputs"):
        run_campaign(small_config(out, policy=f"mlp:{policy}"))
    assert not out.exists()


def test_second_run_on_a_busy_directory_is_refused(tmp_path):
    out = tmp_path / "c"
    out.mkdir()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from drivesim.pipeline.lock import CampaignLock
                with CampaignLock({str(out)!r}):
                    print("locked", flush=True)
                    time.sleep(60)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        tmp = out / "results" / f".part-00000000.parquet.{holder.pid}.tmp"
        tmp.parent.mkdir()
        tmp.write_bytes(b"in flight")
        with pytest.raises(CampaignBusyError, match=f"pid {holder.pid}"):
            run_campaign(small_config(out, count=8))
        assert tmp.exists()  # the live run's temporary shard is untouched
    finally:
        holder.kill()
        holder.wait()
    assert remove_dead_temporaries(out) == [tmp]  # its writer is dead now


def test_config_validation_bounds():
    validate_config(small_config("x"))
    with pytest.raises(ConfigError, match=r"num_steps: 20000 is outside \[1, 10000\]"):
        validate_config(small_config("x", num_steps=20000))
    with pytest.raises(ConfigError, match="expected an integer"):
        validate_config(small_config("x", seed=True))


def _ledger_shard(out, name: str, shard: str) -> None:
    """Point the ledger entry of the batch whose shard is ``results/NAME`` at ``shard``."""
    import sqlite3

    con = sqlite3.connect(out / "ledger.sqlite")
    assert con.execute("UPDATE batches SET shard=? WHERE shard=?", (shard, f"results/{name}")).rowcount == 1
    con.commit()
    con.close()


def test_readers_leave_out_and_name_missing_and_foreign_shards(reference, copy, caplog):
    """query and the dashboard read only sound shards: a deleted shard, another campaign's
    shard copied over one, and a ledger entry pointing outside the campaign are left out and
    named in one warning line that says run repairs them."""
    other = copy.parent / "other"
    run_campaign(small_config(other, count=COUNT, seed=7))
    shards = sorted((copy / "results").glob("part-*.parquet"))
    shards[0].unlink()
    shutil.copy(sorted((other / "results").glob("part-*.parquet"))[1], shards[1])
    _ledger_shard(copy, shards[2].name, str(sorted((other / "results").glob("part-*.parquet"))[2]))
    _ledger_shard(copy, shards[3].name, f"../{other.name}/results/{shards[3].name}")
    with caplog.at_level("WARNING", logger="drivesim.results"):
        n = results.query(copy, "SELECT count(*) AS n FROM results").column("n")[0].as_py()
    assert n == COUNT // 5  # one batch of five is sound
    lines = [r.getMessage() for r in caplog.records if r.name == "drivesim.results"]
    assert len(lines) == 1 and "4 done batches left out" in lines[0] and "run --resume" in lines[0]
    assert "outside the campaign's results/" in lines[0] and "missing" in lines[0]
    report = check_campaign(copy)
    assert len(report.missing) + len(report.damaged) == 4


def test_a_shard_two_done_batches_name_is_read_once(reference, copy):
    import sqlite3

    con = sqlite3.connect(copy / "ledger.sqlite")
    first, second = con.execute("SELECT batch_id, shard FROM batches ORDER BY batch_id LIMIT 2").fetchall()
    con.execute("UPDATE batches SET shard=? WHERE batch_id=?", (first[1], second[0]))
    con.commit()
    con.close()
    n = results.query(copy, "SELECT count(*) AS n FROM results").column("n")[0].as_py()
    assert n == COUNT - 8  # the first batch's rows once, the second batch's left out
