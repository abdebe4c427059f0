#===- test_evaluate.py - Tests of the evaluation against baselines --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os

import pytest

from neuroshard import evaluate as ev
from neuroshard import table_pool as tp

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def pool():
    return tp.generate_pool(seed=3, base_tables=30, sample_bags=64)


def test_tasks_are_seeded_sized_and_held_out(pool):
    test_ids = {t["id"] for t in pool["tables"] if t["split"] == "test"}
    by_id = {t["id"]: t for t in pool["tables"]}
    tasks = ev.make_tasks(pool, "4dev", 12, seed=5)
    assert tasks == ev.make_tasks(pool, "4dev", 12, seed=5)
    assert tasks != ev.make_tasks(pool, "4dev", 12, seed=6)
    assert len({len(t["tables"]) for t in tasks}) > 3
    for task in tasks:
        assert task["devices"] == 4 and task["batch_size"] == 1024
        assert 10 <= len(task["tables"]) <= 60
        assert len({t["name"] for t in task["tables"]}) == len(task["tables"])
        for t in task["tables"]:
            assert t["pool_id"] in test_ids
            source = by_id[t["pool_id"]]
            assert (t["rows"], t["dim"], t["pooling_factor"],
                    t["access_hist"]) == (source["rows"], source["dim"],
                                          source["pooling_factor"],
                                          source["access_hist"])
        total = sum(tp.table_bytes(t) for t in task["tables"])
        per_device = total / 4 / 2**30
        assert ev.MIN_SLACK * per_device <= task["memory_gb"] <= \
            ev.MAX_SLACK * per_device + 1 / 1024


def test_scale_tasks_draw_with_replacement(pool):
    (task,) = ev.make_tasks(pool, "scale", 1, seed=0)
    assert task["devices"] == 64 and len(task["tables"]) == 1000


def test_task_generation_rejects_bad_requests(pool):
    with pytest.raises(ev.EvaluationError, match="unknown setting '3dev'"):
        ev.make_tasks(pool, "3dev", 1, 0)
    with pytest.raises(ev.EvaluationError, match="at least 1 task, got 0"):
        ev.make_tasks(pool, "4dev", 0, 0)
    train_only = dict(pool, tables=[t for t in pool["tables"]
                                    if t["split"] == "train"])
    with pytest.raises(ev.EvaluationError, match="no test tables"):
        ev.make_tasks(train_only, "4dev", 1, 0)


def test_task_json_is_what_neuroshard_plan_reads(pool):
    task = ev.make_tasks(pool, "4dev", 1, 0)[0]
    data = ev.task_json(task)
    assert data["batch_size"] == 1024
    assert set(data["tables"][0]) == {"name", "rows", "dim",
                                      "pooling_factor", "access_hist"}


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
    assert ev.device_sets(task, plan, dims) == [[14], [14, 0]]
    with pytest.raises(ev.EvaluationError, match="is 24 wide"):
        ev.device_sets(task, {"shards": [
            {"table": "a", "col_begin": 0, "col_end": 24, "device": 0}]},
            dims)
    with pytest.raises(ev.EvaluationError, match="unknown table 'z'"):
        ev.device_sets(task, {"shards": [
            {"table": "z", "col_begin": 0, "col_end": 4, "device": 0}]}, dims)


def result(cost, search=1.0, measured=None):
    r = {"valid": True, "cost_ms": cost, "search_ms": search}
    if measured is not None:
        r["measured_ms"] = measured
    return r


FAILED = {"valid": False, "error": "no room"}


def test_summary_compares_on_common_tasks():
    tasks = [{}, {}, {}]
    results = {
        "neuroshard": [result(8.0, 10.0, 9.0), result(6.0, 20.0, 7.0),
                       result(5.0, 30.0)],
        "size-greedy": [result(10.0, 1.0, 10.0), result(10.0, 1.0, 10.0),
                        FAILED],
        "dim-greedy": [result(12.0, 2.0, 9.5), result(9.0, 2.0, 8.5),
                       result(1.0, 2.0)],
    }
    results["table-greedy-grid"] = [result(8.0, 1.0, 9.2),
                                    result(8.0, 1.0, 8.8), result(5.0)]
    algorithms = list(results)
    summary = ev.summarise(tasks, results, algorithms)
    assert summary["common"] == 2 and summary["measured_common"] == 2
    rows = summary["rows"]
    assert rows["size-greedy"]["valid"] == 2
    assert rows["neuroshard"]["cost_ms"] == pytest.approx(7.0)
    assert rows["neuroshard"]["search_ms"] == pytest.approx(20.0)
    assert rows["dim-greedy"]["cost_ms"] == pytest.approx(10.5)
    assert summary["best_baseline_cost_ms"] == "size-greedy"
    assert summary["improvement_cost_ms"] == pytest.approx(30.0)
    assert summary["best_baseline_measured_ms"] == "dim-greedy"
    assert summary["improvement_measured_ms"] == pytest.approx(
        100 * (1 - 8.0 / 9.0))
    table = ev.markdown_table("4dev", summary, algorithms)
    assert "| size-greedy | 2 / 3 | 10.0000 | 10.0000 | 1.0 |" in table
    assert "**30.0% below** the best baseline's (size-greedy)" in table
    assert ev._relative(-4.5) == "4.5% above"
    assert summary["ablation_improvement_cost_ms"] == pytest.approx(12.5)
    assert "Against table-greedy-grid (the same cost model" in table


def test_results_file_keeps_hand_written_text(tmp_path):
    path = str(tmp_path / "results.md")
    ev.write_results(path, "first\n")
    with open(path) as f:
        assert f.read() == "# Evaluation results\n\n%s\nfirst\n%s\n" % (
            ev.RESULTS_BEGIN, ev.RESULTS_END)
    with open(path, "a") as f:
        f.write("\nHand-written analysis.\n")
    ev.write_results(path, "second\n")
    with open(path) as f:
        text = f.read()
    assert "first" not in text and "second" in text
    assert text.endswith("Hand-written analysis.\n")
    broken = tmp_path / "broken.md"
    broken.write_text(ev.RESULTS_BEGIN + "\n")
    with pytest.raises(ev.EvaluationError, match="only one of the markers"):
        ev.write_results(str(broken), "x")


def test_cli_plans_tiny_tasks_with_the_real_planner(tmp_path, pool):
    tools = os.environ.get("NEUROSHARD_TOOLS_DIR",
                           os.path.join(REPO, "build", "bin"))
    if not os.access(os.path.join(tools, "neuroshard-plan"), os.X_OK):
        pytest.skip("neuroshard-plan is not built in %s" % tools)
    pool_path = tmp_path / "pool.json"
    pool_path.write_text(json.dumps(pool))
    results = tmp_path / "results.md"
    plot = tmp_path / "plot.png"
    out = tmp_path / "all.json"
    assert ev.main(["--tools-dir", tools, "--work", str(tmp_path / "work"),
                    "--pool", str(pool_path), "--settings", "4dev",
                    "--tasks", "2", "--cost-model", "analytical",
                    "--algorithms", "neuroshard,size-greedy,dim-greedy",
                    "--results", str(results), "--plot", str(plot),
                    "--json", str(out)]) == 0
    text = results.read_text()
    assert "--cost-model analytical" in text
    assert "| neuroshard | " in text and "| dim-greedy | " in text
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(out.read_text())
    assert len(data["4dev"]["results"]["neuroshard"]) == 2


def test_cli_names_a_missing_tool(tmp_path, capsys):
    assert ev.main(["--tools-dir", str(tmp_path), "--work",
                    str(tmp_path / "w"), "--settings", "4dev"]) == 1
    assert "neuroshard-plan not found in --tools-dir" in \
        capsys.readouterr().err
