#===- test_collect.py - Tests of the cost-data collection driver ----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import re

import pytest

from neuroshard import collect
from neuroshard import table_pool as tp

from conftest import fake_set_ms


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def test_sample_sets_are_seeded_and_follow_the_rules(small_pool_path):
    pool = tp.load_pool(small_pool_path)
    by_id = {t["id"]: t for t in pool["tables"]}
    cap = 2**30
    sets = [collect.sample_set(pool, 3, k, cap) for k in range(200)]
    assert sets == [collect.sample_set(pool, 3, k, cap) for k in range(200)]
    assert sets != [collect.sample_set(pool, 4, k, cap) for k in range(200)]
    sizes = set()
    for tables in sets:
        assert 1 <= len(tables) <= 15
        assert all(by_id[t]["split"] == "train" for t in tables)
        assert len({by_id[t]["base"] for t in tables}) == len(tables)
        assert sum(tp.table_bytes(by_id[t]) for t in tables) <= cap
        sizes.add(len(tables))
    assert len(sizes) >= 10  # the table count varies over 1..15
    dims = {by_id[t]["dim"] for tables in sets for t in tables}
    assert dims == set(tp.POOL_DIMS)


def test_sample_sets_with_row_pieces(small_pool_path):
    pool = tp.load_pool(small_pool_path)
    by_id = {t["id"]: t for t in pool["tables"]}
    cap = 2**30
    whole = [collect.sample_set(pool, 3, k, cap) for k in range(200)]
    cut = [collect.sample_set(pool, 3, k, cap, row_pieces=0.3)
           for k in range(200)]
    assert cut == [collect.sample_set(pool, 3, k, cap, row_pieces=0.3)
                   for k in range(200)]
    assert [collect.sample_set(pool, 3, k, cap, row_pieces=0.0)
            for k in range(200)] == whole
    pieces = counts = 0
    shares = set()
    for tables, entries in zip(whole, cut):
        # The same tables as without pieces, some of them cut.
        assert [collect.entry_table(e) for e in entries] == tables
        for entry in entries:
            counts += 1
            if not collect.is_row_piece(entry):
                continue
            pieces += 1
            table = by_id[entry["table"]]
            assert collect.row_piece_problem(entry, table) is None
            first, end = entry["rows"]
            # One of 2..8 equal blocks of the rows, as the planner cuts.
            k = next(k for k in range(2, collect.MAX_ROW_PIECES + 1)
                     if any(first == table["rows"] * p // k and
                            end == table["rows"] * (p + 1) // k
                            for p in range(k)))
            shares.add(k)
            stats = collect.entry_stats(entry, table)
            assert stats["rows"] == end - first
            assert stats["dim"] == table["dim"]
            assert stats["access_hist"] == table["access_hist"]
            assert stats["pooling_factor"] == pytest.approx(
                table["pooling_factor"] * (end - first) / table["rows"])
    assert 0.2 < pieces / counts < 0.4
    assert len(shares) >= 5


@pytest.mark.parametrize("entry, table, message", [
    ({"table": 1}, None, 'entry {"table": 1} is not a pool table id or a '
     'row piece'),
    ({"table": 1, "rows": [0, 2], "dim": 4}, None, "is not a pool table id"),
    ("3", None, 'entry "3" is not'),
    (True, None, "entry true is not"),
    ({"table": 1, "rows": [5, 5]}, None, r"rows \[5, 5\) are not a range "
     r"of rows \(0 <= first < end\)"),
    ({"table": 1, "rows": [0, 11]}, {"rows": 10}, r"rows \[0, 11\) are not a "
     "range of its 10 rows"),
])
def test_row_piece_problems_are_named(entry, table, message):
    why = collect.row_piece_problem(entry, table)
    assert why is not None and re.search(message, why), why


def test_collect_samples_row_pieces(tmp_path, small_pool_path, fake_tool,
                                   collect_args):
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 30,
                                     "--row-pieces", "0.5")) == 0
    pool = tp.load_pool(small_pool_path)
    samples = collect.load_samples(out)
    assert any(collect.is_row_piece(e) for s in samples for e in s["tables"])
    tables = {t["id"]: t for t in pool["tables"]}
    for s in samples:
        assert s["tables"] == collect.sample_set(pool, 0, s["id"], 2 * 2**30,
                                                 row_pieces=0.5)
        # The tool was asked for the pieces and timed them as pieces.
        assert s["cost_ms"] == pytest.approx(
            fake_set_ms(tables, s["id"], s["tables"], 2048))
    with pytest.raises(SystemExit):
        collect.main(collect_args(small_pool_path, out, fake_tool, 30,
                                  "--row-pieces", "1.5"))


def test_sample_set_rejects_a_cap_nothing_fits_under(small_pool_path):
    pool = tp.load_pool(small_pool_path)
    with pytest.raises(collect.CollectError, match="memory cap"):
        collect.sample_set(pool, 0, 0, 100)


def test_collect_writes_documented_samples(tmp_path, small_pool_path,
                                           fake_tool, collect_args,
                                           monkeypatch):
    log = tmp_path / "tool.log"
    monkeypatch.setenv("FAKE_TOOL_LOG", str(log))
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 12,
                                     "--sets-per-run", "5", "--seed", "9",
                                     "--max-rows", "1000")) == 0
    samples = read_lines(out)
    assert [s["id"] for s in samples] == list(range(12))
    pool = tp.load_pool(small_pool_path)
    fingerprint = tp.pool_fingerprint(pool)
    for s in samples:
        assert set(s) == set(collect.SAMPLE_FIELDS)
        assert s["tables"] == collect.sample_set(pool, 9, s["id"], 2 * 2**30)
        assert (s["device"], s["hardware"], s["batch_size"], s["runs"],
                s["warmup"], s["seed"], s["pool"]) == (
                    "cpu", "Test CPU 9000", 2048, 10, 3, 9, fingerprint)
        assert s["min_ms"] < s["cost_ms"] < s["max_ms"]
    runs = read_lines(log)
    assert [r["ids"] for r in runs] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9],
                                        [10, 11]]
    argv = runs[0]["argv"]
    assert argv[argv.index("--device") + 1] == "cpu"
    assert argv[argv.index("--iters") + 1] == "10"
    assert argv[argv.index("--max-rows") + 1] == "1000"
    assert not os.path.exists(out + ".sets.jsonl")


def test_collect_resumes_after_a_failure(tmp_path, small_pool_path,
                                         fake_tool, collect_args, monkeypatch,
                                         capsys):
    log = tmp_path / "tool.log"
    monkeypatch.setenv("FAKE_TOOL_LOG", str(log))
    out = str(tmp_path / "samples.jsonl")
    args = collect_args(small_pool_path, out, fake_tool, 20,
                        "--sets-per-run", "5")
    monkeypatch.setenv("FAKE_TOOL_FAIL_ID", "12")
    assert collect.main(args) == 1
    err = capsys.readouterr().err
    assert "failed (exit status 3) after 2 of 5 sets: neuroshard-collect: " \
        "error: cannot allocate set 12" in err
    # Everything the tool printed before it failed is kept.
    assert [s["id"] for s in read_lines(out)] == list(range(12))

    monkeypatch.delenv("FAKE_TOOL_FAIL_ID")
    assert collect.main(args) == 0
    assert "12 of 20 samples already in" in capsys.readouterr().err
    resumed = read_lines(out)
    assert [s["id"] for s in resumed] == list(range(20))
    # Only the missing ids were measured again.
    assert [r["ids"] for r in read_lines(log)][-2:] == [[12, 13, 14, 15, 16],
                                                        [17, 18, 19]]
    # The same ids map to the same sets as in one uninterrupted run.
    monkeypatch.delenv("FAKE_TOOL_LOG")
    fresh = str(tmp_path / "fresh.jsonl")
    assert collect.main(collect_args(small_pool_path, fresh, fake_tool, 20,
                                     "--sets-per-run", "7")) == 0
    assert read_lines(fresh) == resumed
    # Nothing left to do.
    assert collect.main(args) == 0
    assert "added 0 samples" in capsys.readouterr().err
    assert len(read_lines(out)) == 20


def test_collect_reports_progress(tmp_path, small_pool_path, fake_tool,
                                  collect_args, capsys):
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 6,
                                     "--sets-per-run", "3")) == 0
    err = capsys.readouterr().err
    assert "collect: 3/6 samples (50.0%)" in err
    assert "collect: 6/6 samples (100.0%)" in err
    assert "samples/s" in err


def test_resume_refuses_other_settings(tmp_path, small_pool_path, fake_tool,
                                       collect_args, capsys):
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 3)) == 0
    args = collect_args(small_pool_path, out, fake_tool, 5)
    args[args.index("--batch-size") + 1] = "4096"
    assert collect.main(args) == 1
    assert "holds sample 0 with batch_size 2048, but this run asks for " \
        "4096" in capsys.readouterr().err


def test_resume_refuses_other_hardware(tmp_path, small_pool_path, fake_tool,
                                       collect_args, monkeypatch, capsys):
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 3)) == 0
    monkeypatch.setenv("FAKE_TOOL_HARDWARE", "Other CPU")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 5)) == 1
    assert "measured set 3 on 'Other CPU', but the dataset was measured on " \
        "'Test CPU 9000'" in capsys.readouterr().err


def test_tool_output_that_is_not_json(tmp_path, small_pool_path, fake_tool,
                                      collect_args, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_TOOL_GARBAGE", "1")
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out, fake_tool, 3)) == 1
    assert "printed a line that is not JSON" in capsys.readouterr().err


def test_missing_tool_and_pool(tmp_path, small_pool_path, collect_args,
                               capsys):
    out = str(tmp_path / "samples.jsonl")
    assert collect.main(collect_args(small_pool_path, out,
                                     str(tmp_path / "nope"), 3)) == 1
    assert "timing tool '%s' is not an executable file" % (
        tmp_path / "nope") in capsys.readouterr().err
    assert collect.main(collect_args(str(tmp_path / "none.json"), out,
                                     str(tmp_path / "nope"), 3)) == 1
    assert "cannot read pool '%s'" % (tmp_path / "none.json") in \
        capsys.readouterr().err


def test_default_tool_is_found_on_path(tmp_path, fake_tool, monkeypatch):
    directory = tmp_path / "bin"
    directory.mkdir()
    os.symlink(fake_tool, directory / collect.TOOL_NAME)
    monkeypatch.setenv("PATH", str(directory))
    assert collect.find_tool(None) == str(directory / collect.TOOL_NAME)


def test_iters_below_ten_are_refused(tmp_path, small_pool_path, fake_tool,
                                     collect_args, capsys):
    with pytest.raises(SystemExit):
        collect.main(collect_args(small_pool_path, str(tmp_path / "s"),
                                  fake_tool, 3, "--iters", "5"))
    assert "--iters must be at least 10" in capsys.readouterr().err


@pytest.mark.parametrize("line, message", [
    ("{not json", "line 2 is not valid JSON"),
    ('{"id": 1}', "line 2 has no \"tables\""),
    ('{"id": 0, "tables": [1], "cost_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0,'
     ' "runs": 10, "device": "cpu", "hardware": "x", "batch_size": 1,'
     ' "warmup": 1, "seed": 0, "pool": "p"}', "sample id 0 appears twice"),
    ('{"id": 1, "tables": [], "cost_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0,'
     ' "runs": 10, "device": "cpu", "hardware": "x", "batch_size": 1,'
     ' "warmup": 1, "seed": 0, "pool": "p"}', "non-empty list"),
])
def test_malformed_dataset_lines_are_named(tmp_path, line, message):
    good = {"id": 0, "tables": [1], "cost_ms": 1.0, "min_ms": 1.0,
            "max_ms": 1.0, "runs": 10, "device": "cpu", "hardware": "x",
            "batch_size": 1, "warmup": 1, "seed": 0, "pool": "p"}
    path = tmp_path / "samples.jsonl"
    path.write_text(json.dumps(good) + "\n" + line + "\n")
    with pytest.raises(collect.CollectError, match=message) as info:
        collect.load_samples(str(path))
    assert str(path) in str(info.value)


def test_missing_dataset_is_an_error_unless_allowed(tmp_path):
    path = str(tmp_path / "none.jsonl")
    assert collect.load_samples(path, allow_missing=True) == []
    with pytest.raises(collect.CollectError, match="cannot read dataset"):
        collect.load_samples(path)


def test_large_sets_hold_row_pieces_that_share_the_cap():
    pool = tp.generate_pool(seed=2, base_tables=20, large_tables=6,
                            sample_bags=64)
    by_id = {t["id"]: t for t in pool["tables"]}
    cap = 8 * 2**30
    sets = [collect.sample_large_set(pool, 5, k, cap) for k in range(60)]
    assert sets == [collect.sample_large_set(pool, 5, k, cap)
                    for k in range(60)]
    others = 0
    for entries in sets:
        large = [e for e in entries if collect.is_row_piece(e)]
        assert 1 <= len(large) <= collect.MAX_LARGE_PER_SET
        bytes_total = 0
        for e in entries:
            table = by_id[collect.entry_table(e)]
            assert table["split"] == "train"
            row_bytes = tp.table_bytes(table) // table["rows"]
            if collect.is_row_piece(e):
                assert tp.is_large(table)
                first, end = e["rows"]
                assert 0 <= first < end <= table["rows"]
                # Each piece fits its share of the cap.
                assert (end - first) * row_bytes <= cap // len(large)
                bytes_total += (end - first) * row_bytes
            else:
                assert not tp.is_large(table)
                others += 1
                bytes_total += tp.table_bytes(table)
        assert bytes_total <= cap
        assert len({by_id[collect.entry_table(e)]["base"]
                    for e in entries}) == len(entries)
    assert others > 0
    # The regular sets never draw the large tier.
    for k in range(60):
        for e in collect.sample_set(pool, 5, k, cap):
            assert not tp.is_large(by_id[e])
    with pytest.raises(collect.CollectError, match="no train table of the "
                       "large tier"):
        collect.sample_large_set(tp.generate_pool(seed=2, base_tables=3),
                                 5, 0, cap)
