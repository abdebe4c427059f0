#===- test_selection_noise.py - Tests of the host's selection noise -------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import argparse
import json
import math
import os

import pytest

from neuroshard import _core
from neuroshard import selection_noise as sn
from neuroshard import set_timing as st
from neuroshard import table_pool as tp

import built_tools


def _comparison(d, round_var=0.0, view_var=0.0):
    return {"d": d, "round_var": round_var, "view_var": view_var}


def test_noise_is_what_the_spreads_do_not_explain():
    found = [_comparison(0.2, 0.01, 0.0), _comparison(-0.2, 0.0, 0.01),
             _comparison(0.1, 0.0, 0.0), _comparison(-0.1, 0.0, 0.0)]
    figures = sn.noise_figures(found)
    raw = math.sqrt((0.04 + 0.04 + 0.01 + 0.01) / 4)
    assert figures["raw_log_sd"] == pytest.approx(raw)
    assert figures["log_sd"] == pytest.approx(
        math.sqrt((0.03 + 0.03 + 0.01 + 0.01) / 4))
    assert figures["mean_log_difference"] == pytest.approx(0.0)
    assert figures["comparisons"] == 4
    # Where the spreads explain more than the differences, no noise is left.
    assert sn.noise_figures([_comparison(0.05, 0.01)])["log_sd"] == 0.0
    with pytest.raises(sn.SelectionNoiseError, match="nothing to compare"):
        sn.noise_figures([])


def _plan():
    """A verified plan of 2 devices: candidate 0 (the model's best), 1 (the
    incumbent), 2 (dropped after its first round), 3 (timed in no
    round)."""
    def shards(devices):
        return [{"table": name, "col_begin": 0, "col_end": 8,
                 "device": d} for name, d in devices]
    return {"verification": {
        "incumbent": 1, "round_spread": 0.1,
        "candidates": [
            {"origin": "neuroshard", "rounds": 4, "mean_ratio": 0.8,
             "shards": shards([("a", 0), ("b", 1), ("c", 1)])},
            {"origin": "table-greedy-grid", "rounds": 4, "mean_ratio": 1.0,
             "shards": shards([("a", 0), ("b", 0), ("c", 1)])},
            {"origin": "size-greedy", "rounds": 1, "mean_ratio": 1.4,
             "shards": shards([("a", 1), ("b", 0), ("c", 0)])},
            {"origin": "lookup-greedy", "rounds": 0, "mean_ratio": 1.0,
             "shards": shards([("a", 1), ("b", 0), ("c", 0)])}]}}


TASK = {"name": "t", "devices": 2,
        "tables": [{"name": n, "dim": 8, "pool_id": i}
                   for i, n in enumerate("abc")]}


def test_candidates_are_compared_with_the_same_plans_timed_apart():
    plan = _plan()
    dims = [8]
    sets = sn.candidate_sets(TASK, plan, dims)
    assert sets == [[[0], [1, 2]], [[0, 1], [2]], [[1, 2], [0]],
                    [[1, 2], [0]]]
    keys = {}
    numbered = {}
    for candidate in sets:
        for ids in candidate:
            st.add_set(keys, numbered, ids)
    ms = {(0,): 1.0, (1, 2): 1.6, (0, 1): 2.0, (2,): 0.5}
    view = {keys[st.set_key(ids)]: ms[tuple(ids)] for ids in numbered.values()}
    slow = dict(view)
    slow[keys[st.set_key([0, 1])]] = 2.5
    found = sn.comparisons(plan, sets, [view, slow], keys)
    # Only the candidate that raced on in the planning, against the
    # incumbent.
    assert [c["origin"] for c in found] == ["neuroshard"]
    c = found[0]
    assert c["views"] == pytest.approx([1.6 / 2.0, 1.6 / 2.5])
    mean = (math.log(0.8) + math.log(0.64)) / 2
    assert c["d"] == pytest.approx(math.log(0.8) - mean)
    assert c["round_var"] == pytest.approx(0.01 / 4)
    assert c["view_var"] == pytest.approx(
        ((math.log(0.8) - mean) ** 2 + (math.log(0.64) - mean) ** 2) / 2)


def test_plans_without_candidates_compare_nothing():
    assert sn.candidate_sets(TASK, {}, [8]) is None
    plan = _plan()
    del plan["verification"]["candidates"][0]["shards"]
    assert sn.candidate_sets(TASK, plan, [8]) is None


def _task_json():
    return {"batch_size": 1024, "tables": [
        {"name": "t%d" % i, "rows": 1000 * (i + 1), "dim": 16,
         "pooling_factor": 4.0} for i in range(6)]}


def test_the_planner_reads_the_recorded_noise(foreign_cpu_bundle):
    entry = sn.record(foreign_cpu_bundle, {"log_sd": 0.15, "comparisons": 12},
                      {"views": 3})
    assert entry == {"log_sd": 0.15, "comparisons": 12, "views": 3}
    with open(os.path.join(foreign_cpu_bundle, "meta.json")) as f:
        meta = json.load(f)
    assert meta["selection_noise"] == entry
    assert meta["format"] == "neuroshard-cost-model-bundle"
    plan = _core.plan(_task_json(), devices=2, memory_gb=1.0,
                      cost_model=foreign_cpu_bundle, device_kind="cpu")
    assert plan["cost_ms"] > 0


def test_the_planner_refuses_a_noise_that_cannot_be_right(foreign_cpu_bundle):
    sn.record(foreign_cpu_bundle, {"log_sd": -0.5, "comparisons": 12}, {})
    with pytest.raises(_core.NeuroShardError,
                       match='"selection_noise": "log_sd" must be a number '
                       'from 0 to 2, got -0.5'):
        _core.plan(_task_json(), devices=2, memory_gb=1.0,
                   cost_model=foreign_cpu_bundle, device_kind="cpu")


def test_record_names_a_bundle_it_cannot_read(tmp_path):
    with pytest.raises(sn.SelectionNoiseError, match="cannot read"):
        sn.record(str(tmp_path / "none"), {"log_sd": 0.1,
                                           "comparisons": 4}, {})


def test_candidates_are_timed_apart_with_the_tool(small_pool_path):
    pool = tp.load_pool(small_pool_path)
    smallest = sorted(pool["tables"], key=lambda t: t["rows"])[:3]
    task = {"name": "t", "devices": 2,
            "tables": [{"name": "t%d" % i, "dim": t["dim"], "pool_id": t["id"]}
                       for i, t in enumerate(smallest)]}

    def shards(devices):
        return [{"table": "t%d" % i, "col_begin": 0,
                 "col_end": smallest[i]["dim"], "device": d}
                for i, d in enumerate(devices)]
    plan = {"verification": {"incumbent": 1, "round_spread": 0.05,
                             "candidates": [
                                 {"origin": "neuroshard", "rounds": 3,
                                  "mean_ratio": 0.9,
                                  "shards": shards([0, 1, 1])},
                                 {"origin": "table-greedy-grid", "rounds": 3,
                                  "mean_ratio": 1.0,
                                  "shards": shards([0, 0, 1])}]}}
    options = argparse.Namespace(batch_size=256, warmup=1, iters=2, seed=0,
                                 views=2)
    dims = pool.get("dims", list(tp.POOL_DIMS))
    found = sn.time_apart(task, plan, dims, small_pool_path,
                          built_tools.tool("neuroshard-collect"), options)
    assert len(found) == 1
    c = found[0]
    assert c["origin"] == "neuroshard" and len(c["views"]) == 2
    assert all(v > 0 for v in c["views"])
    mean = (math.log(c["views"][0]) + math.log(c["views"][1])) / 2
    assert c["d"] == pytest.approx(math.log(0.9) - mean)

    # Nothing raced on after its first round: nothing is timed (the tool
    # named does not exist).
    for candidate in plan["verification"]["candidates"]:
        candidate["rounds"] = 1
    assert sn.time_apart(task, plan, dims, small_pool_path, "/no/such/tool",
                         options) == []
