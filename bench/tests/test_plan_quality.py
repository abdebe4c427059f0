#===- test_plan_quality.py - Tests of the two-build plan comparison -------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import os

from built_tools import tool
from neuroshard_bench import plan_quality


def test_join_pieces_gives_each_device_one_contiguous_range():
    plan = {"devices": 2, "shards": [
        {"table": "t", "col_begin": 0, "col_end": 32, "device": 0},
        {"table": "t", "col_begin": 32, "col_end": 64, "device": 1},
        {"table": "t", "col_begin": 64, "col_end": 128, "device": 0},
        {"table": "r", "col_begin": 0, "col_end": 16, "row_begin": 0,
         "row_end": 10, "device": 1},
        {"table": "r", "col_begin": 0, "col_end": 16, "row_begin": 10,
         "row_end": 20, "device": 1},
        {"table": "c", "col_begin": 0, "col_end": 8, "replica": True,
         "device": 0},
        {"table": "c", "col_begin": 0, "col_end": 8, "replica": True,
         "device": 1}]}
    joined = plan_quality.join_pieces(plan)
    pieces = sorted((s["table"], s["device"], s.get("col_begin"),
                     s.get("col_end"), s.get("row_begin"), s.get("row_end"))
                    for s in joined["shards"] if not s.get("replica"))
    assert pieces == [("r", 1, 0, 16, 0, 20), ("t", 0, 0, 96, None, None),
                      ("t", 1, 96, 128, None, None)]
    assert sum(1 for s in joined["shards"] if s.get("replica")) == 2


def test_join_pieces_leaves_a_clean_plan_alone():
    plan = {"devices": 2, "shards": [
        {"table": "t", "col_begin": 0, "col_end": 32, "device": 0},
        {"table": "t", "col_begin": 32, "col_end": 64, "device": 1}]}
    assert plan_quality.join_pieces(plan) is None


def test_a_build_against_itself_is_the_same_everywhere(capsys, monkeypatch):
    tools = os.path.dirname(tool("neuroshard-plan"))
    monkeypatch.setattr("sys.argv", [
        "plan_quality", "--baseline", tools, "--current", tools,
        "--devices", "2", "--cost-models", "analytical", "--generated", "8"])
    assert plan_quality.main() == 0
    out = capsys.readouterr().out
    assert "generated-8" in out and "four-tables" in out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("0 better, ")
    assert summary.endswith(" the same, 0 worse, 0 planned by one build only")
