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
    # Histograms of one batch of the tasks' batch size (1024 bags).
    return tp.generate_pool(seed=3, base_tables=30)


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
    with pytest.raises(ev.EvaluationError, match="batches of 64 bags"):
        ev.make_tasks(dict(pool, sample_bags=64), "4dev", 1, 0)


def test_task_json_is_what_neuroshard_plan_reads(pool):
    task = ev.make_tasks(pool, "4dev", 1, 0)[0]
    data = ev.task_json(task)
    assert data["batch_size"] == 1024
    assert set(data["tables"][0]) == {"name", "rows", "dim",
                                      "pooling_factor", "access_hist"}


def test_tasks_at_a_larger_batch_need_a_pool_of_that_batch(pool):
    with pytest.raises(ev.EvaluationError, match="describe batches of 1024 "
                       "bags, the tasks' batch is 4096 bags"):
        ev.make_tasks(pool, "4dev", 1, 0, 4096)
    big = tp.generate_pool(seed=3, base_tables=30, sample_bags=4096)
    task = ev.make_tasks(big, "4dev", 1, 0, 4096)[0]
    assert ev.task_json(task)["batch_size"] == 4096
    # The same held-out base tables as at batch 1024, with the histograms of
    # 4096-bag batches.
    small = ev.make_tasks(pool, "4dev", 1, 0)[0]
    assert [t["pool_id"] for t in task["tables"]] == \
        [t["pool_id"] for t in small["tables"]]
    assert task["tables"][0]["access_hist"] != \
        small["tables"][0]["access_hist"]


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
    assert "| size-greedy | 2 / 3 | 10.0000 | 10.0000 | – | – | – | 1.0 |" \
        in table
    assert "**30.0% below** the best baseline's (size-greedy)" in table
    assert ev._relative(-4.5) == "4.5% above"
    assert summary["ablation_improvement_cost_ms"] == pytest.approx(12.5)
    assert "Against table-greedy-grid (the same cost model" in table


def test_lower_bound_is_perfect_balance_of_the_tables_alone():
    assert ev.lower_bound([1.0, 2.0, 3.0, 6.0], 4) == pytest.approx(3.0)
    assert ev.lower_bound([0.5], 2) == pytest.approx(0.25)
    with pytest.raises(ev.EvaluationError, match="at least 1 device"):
        ev.lower_bound([1.0], 0)


def test_prediction_errors_are_relative_to_the_measurement():
    # (9 - 10) / 10 = -10%, (6 - 5) / 5 = +20%, (3 - 4) / 4 = -25%.
    mape, signed = ev.prediction_errors([9.0, 6.0, 3.0], [10.0, 5.0, 4.0])
    assert mape == pytest.approx(55.0 / 3)
    assert signed == pytest.approx(-15.0 / 3)
    assert ev.prediction_errors([2.0], [2.0]) == (0.0, 0.0)
    with pytest.raises(ev.EvaluationError, match="as many predictions"):
        ev.prediction_errors([1.0], [])


def test_repeats_alternate_the_order_and_take_the_median():
    sets = {0: [4], 1: [5, 6], 2: []}
    orders = []
    times = {0: [1.0, 5.0, 2.0, 3.0], 1: [7.0, 4.0, 6.0, 5.0],
             2: [0.0, 0.0, 0.0, 0.0]}

    def measure(ordered):
        orders.append(list(ordered))
        assert all(ordered[k] == sets[k] for k in ordered)
        r = len(orders) - 1
        return {k: times[k][r] for k in ordered}

    costs = ev.measure_repeated(sets, 3, measure)
    assert orders == [[0, 1, 2], [2, 1, 0], [0, 1, 2]]
    assert costs == {0: 2.0, 1: 6.0, 2: 0.0}
    orders.clear()
    assert ev.measure_repeated(sets, 4, measure) == {0: 2.5, 1: 5.5, 2: 0.0}
    assert orders[3] == [2, 1, 0]
    with pytest.raises(ev.EvaluationError, match="at least 1, got 0"):
        ev.measure_repeated(sets, 0, measure)


def test_summary_reports_gap_to_bound_and_prediction_error():
    def measured(cost, predicted, measured_ms, bound):
        r = result(cost, 1.0, measured_ms)
        r["predicted_compute_ms"] = predicted
        r["lower_bound_ms"] = bound
        return r

    results = {
        "neuroshard": [measured(1.0, 0.9, 1.2, 1.0),
                       measured(2.0, 1.8, 2.0, 1.6), result(3.0)],
        "size-greedy": [measured(1.5, 1.6, 1.5, 1.0),
                        measured(2.5, 2.2, 2.2, 1.6), result(3.5)],
    }
    summary = ev.summarise([{}, {}, {}], results, list(results))
    assert summary["measured_common"] == 2
    assert summary["lower_bound_ms"] == pytest.approx(1.3)
    ns, sg = summary["rows"]["neuroshard"], summary["rows"]["size-greedy"]
    assert ns["measured_ms"] == pytest.approx(1.6)
    assert ns["gap_percent"] == pytest.approx((20.0 + 25.0) / 2)
    assert sg["gap_percent"] == pytest.approx((50.0 + 37.5) / 2)
    # neuroshard: (0.9 - 1.2) / 1.2 = -25%, (1.8 - 2) / 2 = -10%.
    assert ns["mape_percent"] == pytest.approx(17.5)
    assert ns["signed_error_percent"] == pytest.approx(-17.5)
    # size-greedy: (1.6 - 1.5) / 1.5 = +6.67%, 0%.
    assert sg["mape_percent"] == pytest.approx(100 / 30)
    assert sg["signed_error_percent"] == pytest.approx(100 / 30)
    table = ev.markdown_table("4dev", summary, list(results))
    assert "| neuroshard | 3 / 3 | 2.0000 | 1.6000 | +22.5% | 17.5% | " \
        "-17.5% | 1.0 |" in table
    assert "Lower bound = the sum of the task's tables timed alone" in table
    assert "(mean 1.3000 ms)" in table


def test_quiet_check_warns_with_the_load(tmp_path, capsys):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("3.50 2.00 1.00 3/200 1234\n")
    err = __import__("io").StringIO()
    assert ev.check_quiet(err, str(loadavg), cores=4) == pytest.approx(3.5)
    assert "load average is 3.50 on 4 cores" in err.getvalue()
    err = __import__("io").StringIO()
    assert ev.check_quiet(err, str(loadavg), cores=8) == pytest.approx(3.5)
    assert err.getvalue() == ""
    assert ev.check_quiet(err, str(tmp_path / "missing")) is None


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


def test_regenerated_results_keep_doctest_annotations(tmp_path):
    """The doc test's annotations on a results block's command survive a
    regeneration of the block, by both evaluation scripts."""
    note = "<!-- doctest: replace '--tasks 6' '--tasks 1' -->"
    path = str(tmp_path / "results.md")
    ev.write_results(path, "Generated by:\n\n```sh\nrun --tasks 6\n```\n")
    text = open(path).read().replace("```sh", note + "\n```sh")
    open(path, "w").write(text)
    ev.write_results(path, "Generated by:\n\n```sh\nrun --tasks 6 -v\n```\n")
    text = open(path).read()
    assert note + "\n```sh\nrun --tasks 6 -v" in text
    assert text.count(note) == 1

    from neuroshard import evaluate_distributed as evd
    other = tmp_path / "distributed.md"
    other.write_text("%s\nGenerated by:\n\n%s\n```sh\nold\n```\n%s\n"
                     % (evd.RESULTS_BEGIN, note, evd.RESULTS_END))
    evd.write_block(str(other), "%s\nGenerated by:\n\n```sh\nnew\n```\n%s"
                    % (evd.RESULTS_BEGIN, evd.RESULTS_END))
    assert note + "\n```sh\nnew" in other.read_text()


def test_cli_plans_tiny_tasks_with_the_real_planner(tmp_path, pool):
    pool_path = tmp_path / "pool.json"
    pool_path.write_text(json.dumps(pool))
    results = tmp_path / "results.md"
    plot = tmp_path / "plot.png"
    out = tmp_path / "all.json"
    assert ev.main(["--work", str(tmp_path / "work"),
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


def test_cli_measures_a_tiny_task_with_the_real_tools(tmp_path, pool,
                                                     capsys):
    tools = os.environ.get("NEUROSHARD_TOOLS_DIR",
                           os.path.join(REPO, "build", "bin"))
    if not os.access(os.path.join(tools, "neuroshard-collect"), os.X_OK):
        pytest.skip("neuroshard-collect is not built in %s" % tools)
    # Only the pool's small tables (at most 100k rows), so that the timed
    # sets are quick to allocate; ids are kept, as device_sets reads them.
    small = dict(pool, tables=[t for t in pool["tables"]
                               if t["rows"] <= 100000])
    assert sum(t["split"] == "test" for t in small["tables"]) >= 5
    pool_path = tmp_path / "pool.json"
    pool_path.write_text(json.dumps(small))
    results = tmp_path / "results.md"
    out = tmp_path / "all.json"
    assert ev.main(["--tools-dir", tools, "--work", str(tmp_path / "work"),
                    "--pool", str(pool_path), "--settings", "2dev",
                    "--tasks", "1", "--cost-model", "analytical",
                    "--algorithms", "neuroshard,size-greedy",
                    "--measure-tasks", "1", "--measure-repeats", "2",
                    "--warmup", "1", "--iters", "3",
                    "--results", str(results), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "measured task 1 of 1 (2dev-0: " in err and "ETA 0 s" in err
    data = json.loads(out.read_text())["2dev"]
    summary = data["summary"]
    assert summary["measured_common"] == 1
    assert summary["lower_bound_ms"] > 0
    assert summary["measurement"]["repeats"] == 2
    for a in ("neuroshard", "size-greedy"):
        row = summary["rows"][a]
        assert row["measured_ms"] > 0 and row["mape_percent"] > 0
        assert row["gap_percent"] is not None
        assert row["signed_error_percent"] is not None
        (r,) = data["results"][a]
        assert r["measured_ms"] > 0 and r["predicted_compute_ms"] > 0
        assert r["lower_bound_ms"] == pytest.approx(summary["lower_bound_ms"])
    (m,) = data["measurements"]
    assert m["task"] == "2dev-0" and m["lower_bound_ms"] > 0
    assert len(m["table_costs_ms"]) == m["tables"]
    assert all(c > 0 for c in m["table_costs_ms"])
    text = results.read_text()
    assert "gap to lower bound | prediction MAPE |" in text
    assert "--measure-repeats 2" in text and "2 runs per task" in text


def test_cli_names_a_missing_tool(tmp_path, capsys):
    assert ev.main(["--tools-dir", str(tmp_path), "--work",
                    str(tmp_path / "w"), "--settings", "4dev",
                    "--measure-tasks", "1"]) == 1
    assert "neuroshard-collect not found in --tools-dir" in \
        capsys.readouterr().err


def test_plans_come_from_the_planner_with_its_options(pool):
    task = ev.make_tasks(pool, "4dev", 1, 0)[0]
    result = ev.run_plan(task, "size-greedy", "analytical")
    assert result["valid"], result
    plan = result["plan"]
    assert plan["algorithm"] == "size-greedy" and plan["devices"] == 4
    assert result["cost_ms"] == plan["cost_ms"]
    assert {s["table"] for s in plan["shards"]} == \
        {t["name"] for t in task["tables"]}
    # The risk margin reaches the planner (the analytical model has no
    # uncertainty, so only its check shows).
    assert ev.run_plan(task, "size-greedy", "analytical", 0.0)["valid"]
    refused = ev.run_plan(task, "size-greedy", "analytical", -1.0)
    assert not refused["valid"]
    assert refused["error"].startswith("cost_risk: the risk margin must be")


def test_a_task_without_a_plan_is_invalid_with_the_reason(pool):
    task = dict(ev.make_tasks(pool, "4dev", 1, 0)[0], memory_gb=1e-6)
    result = ev.run_plan(task, "size-greedy", "analytical")
    assert not result["valid"]
    assert "size-greedy" in result["error"] or "GB" in result["error"], \
        result["error"]
