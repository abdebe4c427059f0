#===- test_set_timing.py - Tests of timing a plan's device sets -----------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os
import types

import pytest

from neuroshard import set_timing as st
from neuroshard import table_pool as tp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def pool():
    # Histograms of one batch of the tasks' batch size (1024 bags).
    return tp.generate_pool(seed=3, base_tables=30)


def test_device_sets_map_column_shards_to_pool_tables():
    dims = tp.POOL_DIMS
    # Pool table 13 is base 2 at dim 64 (index 1).
    task = {"name": "t", "devices": 2, "tables": [
        {"name": "a", "pool_id": 13, "dim": 64},
        {"name": "b", "pool_id": 0, "dim": 128}]}
    plan = {"shards": [
        {"table": "a", "col_begin": 0, "col_end": 32, "device": 0},
        {"table": "a", "col_begin": 32, "col_end": 64, "device": 1},
        {"table": "b", "col_begin": 0, "col_end": 128, "device": 1}]}
    assert st.device_sets(task, plan, dims) == [[14], [14, 0]]
    # A width no pool table has (pieces merged on one device) is a column
    # piece of the task's table; a row piece names its rows.
    merged = {"shards": [
        {"table": "a", "col_begin": 0, "col_end": 48, "device": 0},
        {"table": "a", "col_begin": 48, "col_end": 64, "device": 1},
        {"table": "b", "col_begin": 0, "col_end": 128, "device": 1,
         "row_begin": 0, "row_end": 10}]}
    sets = st.device_sets(task, merged, dims)
    assert sets == [[{"table": 13, "cols": [0, 48]}],
                    [15, {"table": 0, "rows": [0, 10]}]]
    assert st.set_key(sets[1]) == st.set_key(list(reversed(sets[1])))
    # A device's row pieces come after its whole tables and column pieces,
    # as its fused lookup runs them, whichever order the plan lists them in.
    rows_first = {"shards": [
        {"table": "b", "col_begin": 0, "col_end": 128, "device": 0,
         "row_begin": 0, "row_end": 10},
        {"table": "a", "col_begin": 0, "col_end": 64, "device": 0},
        {"table": "b", "col_begin": 0, "col_end": 128, "device": 1,
         "row_begin": 10, "row_end": 20}]}
    assert st.device_sets(task, rows_first, dims) == \
        [[13, {"table": 0, "rows": [0, 10]}], [{"table": 0, "rows": [10, 20]}]]
    assert st.set_key([{"table": 13, "cols": [0, 48]}]) != \
        st.set_key([{"table": 13, "cols": [16, 64]}])
    # Whole tables and column pieces run in the task's table order, not the
    # plan's nor the pool's: task table "b" (pool 0) after "a" (pool 13),
    # "c" (pool 7) last.
    three = dict(task, tables=task["tables"] + [
        {"name": "c", "pool_id": 7, "dim": 64}])
    listed = {"shards": [
        {"table": "c", "col_begin": 0, "col_end": 64, "device": 0},
        {"table": "b", "col_begin": 0, "col_end": 128, "device": 0},
        {"table": "a", "col_begin": 32, "col_end": 64, "device": 0},
        {"table": "a", "col_begin": 0, "col_end": 32, "device": 1}]}
    in_order = st.device_sets(three, listed, dims)
    assert in_order == [[14, 0, 7], [14]]
    # A measurement's distinct sets keep that order; the same set listed
    # otherwise later is the same set.
    keys, sets = {}, {}
    assert st.add_set(keys, sets, in_order[0]) == 0
    assert st.add_set(keys, sets, [7, 14, 0]) == 0
    assert st.add_set(keys, sets, [0]) == 1
    assert sets == {0: [14, 0, 7], 1: [0]}
    with pytest.raises(st.SetTimingError,
                       match=r"shard \[0, 6\) of table 'a' is not a range "
                             r"of its 64 columns whose width is a multiple "
                             r"of 4"):
        st.device_sets(task, {"shards": [
            {"table": "a", "col_begin": 0, "col_end": 6, "device": 0}]},
            dims)
    with pytest.raises(st.SetTimingError,
                       match="replicates table 'b'; the evaluation times"):
        st.device_sets(task, {"shards": [
            {"table": "b", "col_begin": 0, "col_end": 128, "device": 0,
             "replica": True}]}, dims)
    with pytest.raises(st.SetTimingError, match="unknown table 'z'"):
        st.device_sets(task, {"shards": [
            {"table": "z", "col_begin": 0, "col_end": 4, "device": 0}]}, dims)


def test_repeats_alternate_the_order_and_take_the_median():
    sets = {0: [4], 1: [5, 6], 2: []}
    orders = []
    times = {0: [1.0, 5.0, 2.0, 3.0], 1: [7.0, 4.0, 6.0, 5.0],
             2: [0.0, 0.0, 0.0, 0.0]}

    draws = []

    def measure(ordered, draw):
        orders.append(list(ordered))
        draws.append(draw)
        assert all(ordered[k] == sets[k] for k in ordered)
        r = len(orders) - 1
        return {k: times[k][r] for k in ordered}

    costs = st.measure_repeated(sets, 3, measure)
    assert orders == [[0, 1, 2], [2, 1, 0], [0, 1, 2]]
    assert costs == {0: 2.0, 1: 6.0, 2: 0.0}
    orders.clear()
    assert st.measure_repeated(sets, 4, measure) == {0: 2.5, 1: 5.5, 2: 0.0}
    assert orders[3] == [2, 1, 0]
    with pytest.raises(st.SetTimingError, match="at least 1, got 0"):
        st.measure_repeated(sets, 0, measure)
    # Each set's cost in every repeat, in repeat order.
    orders.clear()
    runs = {}
    st.measure_repeated(sets, 2, measure, runs)
    assert runs == {0: [1.0, 5.0], 1: [7.0, 4.0], 2: [0.0, 0.0]}
    # One draw of the inputs unless asked; repeat r on draw r mod draws.
    assert set(draws) == {0}
    orders.clear()
    draws.clear()
    st.measure_repeated(sets, 4, measure, draws=3)
    assert draws == [0, 1, 2, 0]
    with pytest.raises(st.SetTimingError, match="--draws must be at least "
                       "1, got 0"):
        st.measure_repeated(sets, 2, measure, draws=0)


def test_measure_sets_passes_more_options_to_the_tool(tmp_path):
    """`extra` options follow the timing options the evaluation passes
    (neuroshard_bench.race_agreement --mode alignment times both layouts)."""
    argv = tmp_path / "argv"
    tool = tmp_path / "tool"
    tool.write_text("#!/bin/sh\necho \"$@\" > '%s'\n"
                    "echo '{\"id\": 0, \"cost_ms\": 1.5}'\n" % argv)
    tool.chmod(0o755)
    args = types.SimpleNamespace(batch_size=8, warmup=0, iters=1, seed=0)
    costs = st.measure_sets(str(tool), "pool.json", {0: [1], 1: []}, args,
                            2, ["--table-alignment", "1"])
    assert costs == {0: 1.5, 1: 0.0}
    words = argv.read_text().split()
    assert words[-2:] == ["--table-alignment", "1"]
    assert words[words.index("--seed") + 1] == "2"


def test_real_tool_times_merged_column_pieces(tmp_path, pool):
    """A plan's merged column piece (48 of 64 columns) is timed by
    neuroshard-collect at its width, beside the pool tables."""
    tools = os.environ.get("NEUROSHARD_TOOLS_DIR",
                           os.path.join(REPO, "build", "bin"))
    tool = os.path.join(tools, "neuroshard-collect")
    if not os.access(tool, os.X_OK):
        pytest.skip("neuroshard-collect is not built in %s" % tools)
    small = next(t for t in pool["tables"]
                 if t["dim"] == 64 and t["rows"] <= 100000)
    pool_path = tmp_path / "pool.json"
    pool_path.write_text(json.dumps(pool))
    task = {"name": "t", "devices": 2, "tables": [
        {"name": "a", "pool_id": small["id"], "dim": 64}]}
    sets = st.device_sets(task, {"shards": [
        {"table": "a", "col_begin": 0, "col_end": 48, "device": 0},
        {"table": "a", "col_begin": 48, "col_end": 64, "device": 1}]},
        tp.POOL_DIMS)
    assert sets[0] == [{"table": small["id"], "cols": [0, 48]}]
    args = types.SimpleNamespace(batch_size=256, warmup=0, iters=2, seed=0)
    costs = st.measure_sets(tool, str(pool_path), dict(enumerate(sets)),
                            args)
    assert set(costs) == {0, 1} and all(c > 0 for c in costs.values())


def test_each_draw_is_another_seed_of_the_index_streams():
    args = types.SimpleNamespace(batch_size=1024, warmup=3, iters=10, seed=5)
    options = st.collect_options(args)
    assert options[options.index("--seed") + 1] == "5"
    options = st.collect_options(args, 2)
    assert options[options.index("--seed") + 1] == "7"
