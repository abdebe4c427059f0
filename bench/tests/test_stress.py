#===- test_stress.py - Tests of the out-of-distribution stress set --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json

import pytest

from conftest import fake_set_ms
from neuroshard import _core
from neuroshard import cost_model as cm
from neuroshard_bench import stress


def test_stress_tables_cover_the_issue_ranges_and_are_possible():
    tables = stress.stress_tables(1024)
    assert tables == stress.stress_tables(1024)
    rows = [t["rows"] for t in tables]
    dims = [t["dim"] for t in tables]
    pooling = [t["pooling_factor"] for t in tables]
    assert min(rows) <= 10 and max(rows) == 10**8
    assert min(dims) == 4 and max(dims) == 256
    assert max(pooling) == 300
    for t in tables:
        assert _core.check_access_histogram_for_batch(
            t["access_hist"], t["rows"], t["pooling_factor"], 1024) is None
        assert sum(t["access_hist"]) == pytest.approx(1.0)
    # The tiny hot table is hot: every one of its rows is hit more than
    # 2^7 times by one batch.
    tiny = next(t for t in tables if t["name"] == "tiny_hot_r10_d128")
    assert sum(tiny["access_hist"][8:]) == pytest.approx(1.0)


def test_stress_run_times_every_set_and_compares(tmp_path, fake_tool,
                                                 capsys):
    bundle = str(tmp_path / "untrained")
    cm.export_untrained(bundle, seed=0, devices=None, batch_size=1024,
                        members=2)
    out = tmp_path / "stress.json"
    assert stress.main(["--bundle", bundle, "--tool", fake_tool,
                        "--iters", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    sets = stress.stress_sets()
    pool = stress.stress_pool(1024)
    tables = {t["id"]: t for t in pool["tables"]}
    assert len(result["rows"]) == len(sets)
    for k, (row, ids) in enumerate(zip(result["rows"], sets)):
        assert row["measured_ms"] == pytest.approx(
            fake_set_ms(tables, k, ids, 1024))
        assert row["ratio"][bundle] == pytest.approx(
            row["predicted_ms"][bundle] / row["measured_ms"])
    summary = result["summary"][bundle]
    assert summary["sets"] == len(sets)
    printed = capsys.readouterr().out
    assert "within 2x" in printed and "rows_1e8_d4" in printed
    # Reusing the measurements gives the same table without timing again.
    assert stress.main(["--bundle", bundle, "--measured", str(out),
                        "--tool", "/nonexistent"]) == 0
    assert capsys.readouterr().out == printed


def test_stress_refuses_a_bundle_of_another_batch(tmp_path, capsys):
    bundle = str(tmp_path / "b4096")
    cm.export_untrained(bundle, seed=0, devices=None, batch_size=4096)
    assert stress.main(["--bundle", bundle]) == 1
    assert "measured at batch size 4096, but the stress set is timed at " \
        "1024: pass --batch-size 4096" in capsys.readouterr().err
