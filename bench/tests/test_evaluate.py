#===- test_evaluate.py - Tests of the evaluation against baselines --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import json
import os

import numpy as np
import pytest

from neuroshard import _core
from neuroshard import table_pool as tp
from neuroshard_bench import evaluate as ev

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


def test_repeats_go_through_the_planners_draws():
    assert ev.DEFAULT_DRAWS == _core.DEFAULT_INPUT_DRAWS == 3


def test_ratios_pair_the_repeats():
    # Repeat 2 ran 50% slower for both plans: paired, it cancels, where the
    # medians' ratio does not.
    mine = {"measured_ms": 1.25, "measured_runs_ms": [1.0, 1.5]}
    other = {"measured_ms": 1.45, "measured_runs_ms": [1.2, 1.7]}
    assert ev.paired_ratio(mine, other) == pytest.approx(
        (1.0 / 1.2 + 1.5 / 1.7) / 2)
    # Without both repeats (or with another count): the medians' ratio.
    assert ev.paired_ratio({"measured_ms": 2.0}, other) == \
        pytest.approx(2.0 / 1.45)
    assert ev.paired_ratio(dict(mine, measured_runs_ms=[1.0]), other) == \
        pytest.approx(1.25 / 1.45)
    assert ev.paired_ratio(mine, {}) is None
    assert ev.paired_ratio({}, other) is None
    assert ev.paired_ratio(mine, {"measured_ms": 0.0}) is None


def test_a_level_far_from_1_is_called_drift():
    assert ev.level_drift([]) is None
    assert ev.level_drift([None, None]) is None
    assert ev.level_drift([0.91, 1.1, None]) is None
    drift = ev.level_drift([0.95, 0.762, None])
    assert drift.startswith("the machine measured the cost model's "
                            "reference sets at 0.762 to 0.950 of their "
                            "prediction, more than 10% from 1")
    assert ev.level_drift([1.183]).startswith(
        "the machine measured the cost model's reference sets at 1.183 of "
        "their prediction")


def test_the_machines_level_is_the_median_over_reference_sets():
    assert ev.machine_level([1.0, 2.0, 4.0], [1.5, 2.0, 6.0]) == \
        pytest.approx(1.5)
    assert ev.machine_level([], []) is None
    # A set the model prices at 0 says nothing.
    assert ev.machine_level([0.0, 1.0], [1.0, 1.2]) == pytest.approx(1.2)


def test_reference_sets_are_the_bundles_held_out_calibration_sets(pool):
    from neuroshard import collect, train
    shipped = os.path.join(REPO, "models", "cpu-zen5-b1024")
    with open(os.path.join(shipped, "meta.json")) as f:
        meta = json.load(f)
    sets = ev.reference_sets(pool, shipped)
    assert len(sets) == ev.REFERENCE_SETS
    cap = int(collect.DEFAULT_MEMORY_CAP_GB * 2**30)
    held = [k for k in range(ev.REFERENCE_SEARCH)
            if train.held_out(k, meta["seed"],
                              meta["training"]["validation_fraction"])]
    drawn = [collect.sample_set(pool, meta["seed"], k, cap) for k in held]
    assert sets == [ids for ids in drawn
                    if len(ids) >= ev.REFERENCE_MIN_TABLES][:len(sets)]
    # No bundle, no reference.
    assert ev.reference_sets(pool, "analytical") == []


def test_a_bundle_whose_metadata_is_not_json_is_named(tmp_path, pool):
    (tmp_path / "meta.json").write_text("{\"seed\": 3,")
    with pytest.raises(ev.EvaluationError,
                       match=r"cost-model bundle metadata '.*meta\.json' is "
                             r"not valid JSON"):
        ev.reference_sets(pool, str(tmp_path))


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


def test_the_prediction_is_the_expected_slowest_device():
    plan = {"per_device": [{"compute_ms": 1.0}, {"compute_ms": 2.0}]}
    assert ev.predicted_compute(plan) == 2.0
    plan["expected_slowest"] = {"compute_ms": 2.3, "predicted_ms": 1.9,
                                "log_error_mean": 0.0, "log_error_sd": 0.15}
    assert ev.predicted_compute(plan) == 2.3
    # The largest device compute stays the largest prediction (with the
    # risk margin), not expected_slowest's point prediction.
    assert ev.largest_compute(plan) == 2.0

    def measured(predicted, largest, measured_ms):
        r = result(1.0, 1.0, measured_ms)
        r.update(predicted_compute_ms=predicted, largest_compute_ms=largest)
        return r

    results = {"neuroshard": [measured(2.2, 2.0, 2.0), measured(1.1, 1.0,
                                                                1.25)]}
    summary = ev.summarise([{}, {}], results, list(results))
    row = summary["rows"]["neuroshard"]
    # Expected: +10% and -12%; largest: 0% and -20%.
    assert row["plans_mape_percent"] == pytest.approx(11.0)
    assert row["plans_signed_error_percent"] == pytest.approx(-1.0)
    assert row["plans_largest_mape_percent"] == pytest.approx(10.0)
    assert row["plans_largest_signed_error_percent"] == pytest.approx(-10.0)
    assert "| neuroshard | 2 | 11.0% | -1.0% | 10.0% | -10.0% |" in \
        ev.error_table(summary, list(results))


def chosen(cost, predicted, measured_ms, plan_s=0.5):
    r = result(cost, 1.0, measured_ms)
    r["predicted_compute_ms"] = predicted
    r["plan_s"] = plan_s
    return r


def fabricated_setting(verified_ms=(1.00, 2.10), verified_s=(3.0, 4.0),
                       devices=4, prefix="4dev",
                       verified_predicted=(0.95, 2.1)):
    """Three tasks, the first two measured; neuroshard-verified planned for
    those two only; the ablation without a plan on the second."""
    tasks = [{"name": "%s-%d" % (prefix, k), "devices": devices,
              "tables": [{}] * (10 * (k + 1))} for k in range(3)]
    skipped = ev.not_planned("planned only for the measured tasks")
    results = {
        "neuroshard": [chosen(1.0, 0.9, 1.10), chosen(2.0, 1.9, 2.00),
                       result(3.0)],
        ev.VERIFIED: [chosen(1.02, verified_predicted[0], verified_ms[0],
                             verified_s[0]),
                      chosen(2.05, verified_predicted[1], verified_ms[1],
                             verified_s[1]),
                      skipped],
        "table-greedy-grid": [chosen(1.0, 0.9, 1.05), FAILED, result(3.1)],
        "size-greedy": [chosen(1.5, 1.4, 1.25), chosen(2.5, 2.4, 2.2),
                        result(3.5)],
        "lookup-greedy": [chosen(1.4, 1.3, 1.30), chosen(2.4, 2.2, 2.4),
                          result(3.3)],
    }
    return tasks, results


def test_verified_plans_pair_with_the_ablation_and_best_baseline():
    tasks, results = fabricated_setting()
    results[ev.VERIFIED][0]["verification"] = {"chosen": 1, "candidates": [
        {"origin": "neuroshard"}, {"origin": "table-greedy-grid"},
        {"origin": "neuroshard"}]}
    algorithms = list(results)
    summary = ev.summarise(tasks, results, algorithms)
    # The verified variant, planned for 2 of 3 tasks, does not shrink the
    # common tasks (the ablation's failure does).
    assert summary["common"] == 2 and summary["measured_common"] == 1
    rows = summary["rows"]
    assert (rows[ev.VERIFIED]["planned"], rows[ev.VERIFIED]["valid"]) == \
        (2, 2)
    assert rows[ev.VERIFIED]["cost_ms"] is None
    assert rows["neuroshard"]["cost_ms"] == pytest.approx(2.0)
    assert summary["default"] == ev.VERIFIED
    first, second = summary["measured_tasks"]
    assert (first["task"], first["tables"]) == ("4dev-0", 10)
    assert (first["neuroshard_ms"], first["verified_ms"],
            first["ablation_ms"]) == (1.10, 1.00, 1.05)
    # The best baseline is the one that measured lowest on the task.
    assert (first["best_baseline"], first["best_baseline_ms"]) == \
        ("size-greedy", 1.25)
    assert first["ratio_ablation"] == pytest.approx(1.00 / 1.05)
    assert first["ratio_best_baseline"] == pytest.approx(0.8)
    assert second["ablation_ms"] is None and second["ratio_ablation"] is None
    assert second["ratio_best_baseline"] == pytest.approx(2.1 / 2.2)
    # Prediction error over each algorithm's own measured plans:
    # neuroshard (0.9 - 1.1) / 1.1 and (1.9 - 2) / 2; verified -5% and 0%.
    ns, ver = rows["neuroshard"], rows[ev.VERIFIED]
    assert ns["measured_plans"] == 2
    assert ns["plans_mape_percent"] == pytest.approx((200 / 11 + 5) / 2)
    assert ns["plans_signed_error_percent"] == \
        pytest.approx(-(200 / 11 + 5) / 2)
    assert ver["plans_mape_percent"] == pytest.approx(2.5)
    assert ver["plans_signed_error_percent"] == pytest.approx(-2.5)
    assert rows["table-greedy-grid"]["measured_plans"] == 1
    summary["verify"] = {"top": 4, "seconds": 2.0}
    table = ev.markdown_table("4dev", summary, algorithms)
    assert "| neuroshard-verified | 2 / 2 | – |" in table
    assert "verify_top=4, verify_seconds=2: " in table
    assert "planned only for the 2 measured tasks" in table
    # A spread factor is named where it is not the planner's default.
    summary["verify"].update(min_gain=0.02, spread_factor=2.0)
    assert "verify_top=4, verify_seconds=2, verify_min_gain=0.02: " in \
        ev.markdown_table("4dev", summary, algorithms)
    summary["verify"]["spread_factor"] = 0.5
    assert "verify_min_gain=0.02, verify_spread_factor=0.5: " in \
        ev.markdown_table("4dev", summary, algorithms)
    summary["verify"] = {"top": 4, "seconds": 2.0}
    assert "| task | tables | neuroshard (ms) | neuroshard-verified (ms) | " \
        "table-greedy-grid (ms) | best baseline (ms) | neuroshard-verified " \
        "/ table-greedy-grid | neuroshard-verified / best baseline | " \
        "planning time, neuroshard-verified (s) |" in table
    assert "| 4dev-0 | 10 | 1.1000 | 1.0000 | 1.0500 | 1.2500 (size-greedy) " \
        "| 0.952 | 0.800 | 3.00 | candidate 2 of 3 (table-greedy-grid) |" \
        in table
    # A plan the planner did not verify ("auto" on a model of another
    # machine) says so.
    assert "| 4dev-1 | 20 | 2.0000 | 2.1000 | – | 2.2000 (size-greedy) | – " \
        "| 0.955 | 4.00 | not verified |" in table
    assert first["verified_choice"] == {"chosen": 1, "candidates": 3,
                                        "origin": "table-greedy-grid"}
    # Where the budget ran out before a candidate could replace the
    # incumbent, the column says how many of the rounds needed were timed.
    results[ev.VERIFIED][0]["verification"].update(
        budget_cut=True, rounds=1, rounds_needed=3)
    cut = ev.summarise(tasks, results, algorithms)
    assert cut["measured_tasks"][0]["verified_choice"]["cut"] == (1, 3)
    cut["verify"] = summary["verify"]
    assert "| candidate 2 of 3 (table-greedy-grid); budget: 1 of 3 rounds |" \
        in ev.markdown_table("4dev", cut, algorithms)
    assert "| neuroshard | 2 | 11.6% | -11.6% |" in table
    assert "| neuroshard-verified | 2 | 2.5% | -2.5% |" in table
    assert "| table-greedy-grid | 1 | 14.3% | -14.3% |" in table


def test_paired_ratios_show_how_far_the_runs_moved():
    tasks, results = fabricated_setting()
    # Three runs: the verified plan measured 0.9, 1.1 and 1.0 times the
    # table-wise plan, and 0.8, 0.5 and 0.9 times size-greedy's.
    results[ev.VERIFIED][0]["measured_runs_ms"] = [0.9, 1.1, 1.0]
    results["table-greedy-grid"][0]["measured_runs_ms"] = [1.0, 1.0, 1.0]
    results["size-greedy"][0]["measured_runs_ms"] = [1.125, 2.2, 1.0 / 0.9]
    summary = ev.summarise(tasks, results, list(results))
    first, second = summary["measured_tasks"]
    assert first["ratio_ablation"] == pytest.approx(1.0)
    assert first["ratio_ablation_range"] == pytest.approx((0.9, 1.1))
    assert first["ratio_best_baseline"] == pytest.approx(0.8)
    assert first["ratio_best_baseline_range"] == pytest.approx((0.5, 0.9))
    # Without the runs of both plans there is no range.
    assert second["ratio_ablation_range"] is None
    assert second["ratio_best_baseline_range"] is None
    table = ev.markdown_table("4dev", summary, list(results))
    assert "| 1.000 (0.90-1.10) | 0.800 (0.50-0.90) |" in table
    assert "| – | 0.955 |" in table
    assert "in brackets, the lowest and highest of those per-run ratios" \
        in table
    # One run is no range either.
    results[ev.VERIFIED][0]["measured_runs_ms"] = [0.9]
    results["table-greedy-grid"][0]["measured_runs_ms"] = [1.0]
    assert ev.paired_ratio_range(results[ev.VERIFIED][0],
                                 results["table-greedy-grid"][0]) is None


def test_without_verification_the_plain_search_is_judged():
    tasks, results = fabricated_setting()
    del results[ev.VERIFIED]
    summary = ev.summarise(tasks, results, list(results))
    assert summary["default"] == "neuroshard"
    first = summary["measured_tasks"][0]
    assert first["verified_ms"] is None
    assert first["ratio_ablation"] == pytest.approx(1.10 / 1.05)
    table = ev.markdown_table("4dev", summary, list(results))
    assert "neuroshard-verified" not in table
    assert "| neuroshard / table-greedy-grid |" in table
    assert "| 4dev-0 | 10 | 1.1000 | 1.0500 | 1.2500 (size-greedy) | " \
        "1.048 | 0.880 | 0.50 |\n" in table
    assert "measured selection chose" not in table


def acceptance_of(**settings):
    data = {}
    for name, (tasks, results) in settings.items():
        data[name] = {"summary": ev.summarise(tasks, results, list(results))}
    return data


def test_acceptance_states_each_target_with_pass_or_fail():
    four = fabricated_setting()
    # On 8 devices the verified plans measure above the ablation (1.20 /
    # 1.05), 0.96 and 0.955 of the best baseline, and plan in 12 s, which
    # has no target there.
    eight = fabricated_setting(verified_ms=(1.20, 2.10),
                               verified_s=(12.0, 1.0), devices=8,
                               prefix="8dev", verified_predicted=(1.1, 2.0))
    acc = ev.acceptance(acceptance_of(**{"4dev": four, "8dev": eight}), 1024)
    f4, f8 = acc["settings"]["4dev"], acc["settings"]["8dev"]
    assert f4["ratio_ablation_mean"] == pytest.approx(1.00 / 1.05)
    assert f4["ratio_ablation_tasks"] == 1
    assert f4["ratio_best_baseline_mean"] == \
        pytest.approx((0.8 + 2.1 / 2.2) / 2)
    assert (f4["mape_percent"], f4["signed_error_percent"]) == \
        (pytest.approx(2.5), pytest.approx(-2.5))
    assert (f4["plan_seconds_max"], f4["plan_seconds_tables"]) == (4.0, 20)
    assert f8["ratio_ablation_max"] == pytest.approx(1.20 / 1.05)
    assert f8["ratio_best_baseline_mean"] == \
        pytest.approx((0.96 + 2.1 / 2.2) / 2)
    verdicts = {t["key"]: (t["verdicts"], t["met"]) for t in acc["targets"]}
    assert verdicts["ratio_ablation_mean"] == \
        ({"4dev": True, "8dev": False}, False)
    assert verdicts["ratio_ablation_max"] == \
        ({"4dev": True, "8dev": False}, False)
    assert verdicts["ratio_best_baseline_mean"] == \
        ({"4dev": True, "8dev": False}, False)
    # 8dev's (-8.3% - 4.8%) / 2 signed error is within ±10%.
    assert f8["signed_error_percent"] == \
        pytest.approx(-(100 / 12 + 100 / 21) / 2)
    assert verdicts["signed_error_percent"] == \
        ({"4dev": True, "8dev": True}, True)
    assert verdicts["plan_seconds_max"] == \
        ({"4dev": True, "8dev": None}, True)
    assert acc["default"] == [ev.VERIFIED]
    assert acc["not_covered"] == ["batch 4096"]
    text = ev.acceptance_markdown(acc)
    assert "### Acceptance (batch 1024)" in text
    assert "| figure | target | 10-60 tables on 4 devices | 20-120 tables " \
        "on 8 devices | met |" in text
    assert "| mean ratio to table-greedy-grid | <= 1.00 | 0.952 (1 task) " \
        "pass | 1.143 (1 task) **fail** | **no** |" in text
    # A mean over two tasks has an interval: of two values, the bootstrap's
    # means are each value alone or their mean.
    assert f4["ratio_best_baseline_interval"] == \
        pytest.approx((0.8, 2.1 / 2.2))
    assert f4["ratio_ablation_interval"] is None
    assert "| mean ratio to the best baseline | <= 0.95 | 0.877 (2 tasks; " \
        "0.800-0.955) pass | 0.957 (2 tasks; 0.955-0.960) **fail** | " \
        "**no** |" in text
    assert "the 2.5th and 97.5th percentiles of that mean over 10000 " \
        "resamplings of its tasks" in text
    assert "| planning time (largest task) | < 10 s | 4.0 s (20 tables) " \
        "pass | 12.0 s (10 tables), no target | **yes** |" in text
    assert "| mean absolute prediction error | <= 15% | 2.5% (2 plans) " \
        "pass |" in text
    assert "3 of the 6 targets judged here are met." in text
    assert "Not covered by this run: batch 4096." in text
    # No level was measured: no level rows.
    assert "level-adjusted" not in text

    # A machine 1.05x and 1.2x slower than the model in the two tasks: the
    # adjusted errors scale each prediction by its task's level, and the
    # rows have no target (the count of judged targets is unchanged).
    tasks, results = fabricated_setting()
    tasks[0]["level"], tasks[1]["level"] = 1.05, 1.2
    acc = ev.acceptance(acceptance_of(**{"4dev": (tasks, results)}), 1024)
    f4 = acc["settings"]["4dev"]
    assert (f4["level_mean"], f4["level_min"], f4["level_max"]) == \
        (pytest.approx(1.125), 1.05, 1.2)
    adjusted = [100 * (0.95 * 1.05 - 1.00) / 1.00,
                100 * (2.1 * 1.2 - 2.10) / 2.10]
    assert f4["adjusted_signed_error_percent"] == \
        pytest.approx(np.mean(adjusted))
    assert f4["adjusted_mape_percent"] == \
        pytest.approx(np.mean(np.abs(adjusted)))
    text = ev.acceptance_markdown(acc)
    assert "| machine's level (measured / predicted, reference sets) | – | " \
        "1.125 (1.050 to 1.200) | – |" in text
    assert "| mean signed prediction error, level-adjusted | – | +9.9% " \
        "(2 plans) | – |" in text
    # A task at 1.2 is more than 10% from 1: the table warns of the drift.
    assert "Warning: The machine measured the cost model's reference sets " \
        "at 1.050 to 1.200 of their prediction, more than 10% from 1" in text
    assert "recalibrate the bundle on this machine" in text
    assert len([t for t in acc["targets"] if t["met"] is not None]) == 6

    # A slow plan on 4 devices fails the planning target; at batch 4096 the
    # run lacks batch 1024 and, with 4 devices only, the 8-device setting.
    slow = fabricated_setting(verified_s=(3.0, 10.0))
    acc = ev.acceptance(acceptance_of(**{"4dev": slow}), 4096)
    assert [t["met"] for t in acc["targets"]
            if t["key"] == "plan_seconds_max"] == [False]
    assert acc["not_covered"] == ["batch 1024", "20-120 tables on 8 devices"]
    assert "10.0 s (20 tables) **fail**" in ev.acceptance_markdown(acc)


def test_mean_interval_is_a_seeded_bootstrap_of_the_mean():
    ratios = [1.040, 0.961, 0.887, 1.022, 0.897, 0.997, 0.982]
    low, high = ev.mean_interval(ratios)
    assert low < np.mean(ratios) < high
    # Within the values, and narrower than their range.
    assert min(ratios) < low and high < max(ratios)
    # The same values give the same interval; another seed another one.
    assert ev.mean_interval(ratios) == (low, high)
    assert ev.mean_interval(ratios, seed=1) != (low, high)
    # More tasks of the same spread: a narrower interval.
    wide = high - low
    low4, high4 = ev.mean_interval(ratios * 4)
    assert high4 - low4 < wide
    # Equal values: no spread; one value or none: no interval.
    assert ev.mean_interval([0.9, 0.9, 0.9]) == pytest.approx((0.9, 0.9))
    assert ev.mean_interval([0.9]) is None
    assert ev.mean_interval([]) is None


def test_targets_are_the_acceptance_figures():
    test = {key: check for key, _, _, check in ev.TARGETS}
    for key, passes, fails in (
            ("ratio_ablation_mean", [1.00, 0.7], [1.001]),
            ("ratio_best_baseline_mean", [0.95, 0.5], [0.951, 1.0]),
            ("ratio_ablation_max", [1.02, 0.9], [1.021]),
            ("mape_percent", [15.0, 0.0], [15.01]),
            ("signed_error_percent", [-10.0, 10.0, 0.0], [-10.01, 10.01]),
            ("plan_seconds_max", [9.99], [10.0, 60.0])):
        assert all(test[key](v) for v in passes), key
        assert not any(test[key](v) for v in fails), key


def test_acceptance_without_measurements_judges_nothing():
    tasks, results = fabricated_setting()
    for rs in results.values():
        for r in rs:
            r.pop("measured_ms", None)
    acc = ev.acceptance(acceptance_of(**{"4dev": (tasks, results)}), 1024)
    assert acc["settings"] == {}
    assert all(t["met"] is None for t in acc["targets"])
    assert "No task was measured" in ev.acceptance_markdown(acc)


def resolved(**options):
    args = __import__("argparse").Namespace(
        **dict({"algorithms": None, "verify_top": None,
                "verify_seconds": None, "measure_tasks": 2}, **options))
    return ev.resolve_algorithms(args), args


def test_verified_variant_joins_neuroshard_when_measuring():
    problem, args = resolved()
    assert problem is None
    assert args.algorithms[:3] == ["neuroshard", ev.VERIFIED,
                                   "table-greedy-grid"]
    assert (args.verify_top, args.verify_seconds, args.verify_min_gain) == \
        (4, 2.0, 0.02)
    assert args.verify_spread_factor == ev.DEFAULT_VERIFY_SPREAD_FACTOR == 2.0
    problem, args = resolved(verify_spread_factor=0.0)
    assert problem is None and args.verify_spread_factor == 0.0
    problem, args = resolved(algorithms="size-greedy,neuroshard",
                             verify_top="auto", verify_seconds=0.5,
                             verify_min_gain=0.1)
    assert problem is None
    assert args.algorithms == ["size-greedy", "neuroshard", ev.VERIFIED]
    assert (args.verify_top, args.verify_seconds, args.verify_min_gain) == \
        ("auto", 0.5, 0.1)
    # Not without measurements, nor with --verify-top 0.
    assert resolved(measure_tasks=0)[1].algorithms == list(ev.ALGORITHMS)
    assert ev.VERIFIED not in resolved(verify_top=0)[1].algorithms
    # --verify-top 0 asks for nothing, whatever the algorithms.
    assert resolved(algorithms="size-greedy", verify_top=0)[0] is None


def test_verified_sentence_names_what_a_switch_must_beat():
    summary = {"rows": {ev.VERIFIED: {"planned": 3}},
               "verify": {"top": 4, "seconds": 2.0, "min_gain": 0.02,
                          "spread_factor": 2.0}}
    sentence = ev._verified_sentence(summary)
    assert "verify_top=4, verify_seconds=2, verify_min_gain=0.02:" in sentence
    assert ("unless another measured at least 2% faster and faster by more "
            "than its rounds' spread allows)") in sentence
    assert "selection noise" not in sentence
    assert "only for the 3 measured tasks" in sentence
    # With a bundle that records the host's noise, the sentence names it.
    summary["verify"]["selection_noise"] = 0.027
    assert ("more than its rounds' spread and the host's selection noise "
            "(2.7%, recorded in the bundle) allow") in \
        ev._verified_sentence(summary)


def test_verification_requests_that_cannot_be_met_are_named(capsys):
    def error(*argv):
        with pytest.raises(SystemExit) as exit:
            ev.main(list(argv))
        assert exit.value.code == 2
        return capsys.readouterr().err

    assert "--verify-top: measured selection is the neuroshard search's, " \
        "and --algorithms size-greedy,dim-greedy has neither neuroshard " \
        "nor neuroshard-verified" in error(
            "--algorithms", "size-greedy,dim-greedy", "--verify-top", "4",
            "--measure-tasks", "1")
    assert "--verify-top and --verify-seconds: measured selection applies " \
        "to the measured tasks only; give --measure-tasks K" in error(
            "--verify-top", "2", "--verify-seconds", "1")
    assert "neuroshard-verified times its candidates on this machine and " \
        "is planned only for measured tasks" in error(
            "--algorithms", "neuroshard-verified")
    assert "--verify-top 0 turns measured selection off" in error(
        "--algorithms", "neuroshard,neuroshard-verified", "--verify-top", "0",
        "--measure-tasks", "1")
    assert "expected 'auto' or a count of candidates from 0 to 64, got " \
        "'65'" in error("--verify-top", "65")
    assert "--verify-seconds must be from 0 to 3600, got -1" in error(
        "--verify-seconds", "-1", "--measure-tasks", "1")
    assert "--draws must be at least 1, got 0" in error("--draws", "0")
    assert "--judge-repeats must be 0 or more, got -1" in error(
        "--judge-repeats", "-1")
    assert "--verify-min-gain must be a fraction from 0 to 0.5, got 0.6" \
        in error("--verify-min-gain", "0.6", "--measure-tasks", "1")
    assert "--verify-min-gain: measured selection applies to the measured " \
        "tasks only" in error("--verify-min-gain", "0.05")
    assert "--verify-spread-factor must be from 0 to 10 standard errors, " \
        "got 11" in error("--verify-spread-factor", "11", "--measure-tasks",
                          "1")
    assert "--verify-spread-factor must be from 0 to 10 standard errors, " \
        "got -0.5" in error("--verify-spread-factor", "-0.5",
                            "--measure-tasks", "1")
    assert "--verify-spread-factor: measured selection applies to the " \
        "measured tasks only" in error("--verify-spread-factor", "1")
    assert "--measure-tasks 1: no setting of --settings scale is measured " \
        "(the measured settings are 4dev, 8dev, 2dev)" in error(
            "--settings", "scale", "--measure-tasks", "1")
    assert "unknown algorithm 'greedy' (expected neuroshard, " in error(
        "--algorithms", "greedy")


def test_a_pool_at_another_batch_is_still_the_training_pool(tmp_path, pool):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "meta.json").write_text(json.dumps({
        "batch_size": 1024,
        "training": {"pool": tp.pool_fingerprint(pool)}}))
    log = __import__("io").StringIO()
    big = tp.generate_pool(seed=3, base_tables=30, sample_bags=4096)
    assert tp.pool_fingerprint(big) != tp.pool_fingerprint(pool)
    ev._check_held_out(big, "big.json", str(bundle), log)
    ev._check_held_out(pool, "pool.json", str(bundle), log)
    assert log.getvalue() == ""
    # Another seed, or the same pool with its split changed, is not.
    other = tp.generate_pool(seed=4, base_tables=30, sample_bags=4096)
    ev._check_held_out(other, "other.json", str(bundle), log)
    assert "pool 'other.json' (fingerprint %s) is not the pool the cost " \
        "model was trained on" % tp.pool_fingerprint(other) in log.getvalue()
    log = __import__("io").StringIO()
    moved = json.loads(json.dumps(big))
    moved["tables"][0]["split"] = "train" \
        if moved["tables"][0]["split"] == "test" else "test"
    ev._check_held_out(moved, "moved.json", str(bundle), log)
    assert "pool 'moved.json'" in log.getvalue()


FAKE_COLLECT = r"""#!/usr/bin/python3
import json, sys
argv = sys.argv[1:]
with open(%r, "a") as log:
    log.write(json.dumps(argv) + "\n")
sets = argv[argv.index("--sets") + 1]
for line in open(sets):
    s = json.loads(line)
    # 0.1 ms per table, plus a little per id: distinct, repeatable costs.
    cost = 0.1 * len(s["tables"]) + 1e-4 * (sum(s["tables"]) %% 97)
    print(json.dumps({"id": s["id"], "cost_ms": cost}))
"""


def test_eight_devices_at_batch_4096_are_measured(tmp_path):
    """8-device tasks are measured, at the batch of the tasks and of the
    pool's histograms (here with a stand-in for neuroshard-collect that
    logs its options; the planner is the real one)."""
    tools = tmp_path / "tools"
    tools.mkdir()
    calls = tmp_path / "calls.jsonl"
    collect = tools / "neuroshard-collect"
    collect.write_text(FAKE_COLLECT % str(calls))
    collect.chmod(0o755)
    work = tmp_path / "work"
    out = tmp_path / "all.json"
    results = tmp_path / "results.md"
    argv = ["--tools-dir", str(tools), "--work", str(work),
            "--pool-seed", "3", "--base-tables", "30", "--settings", "8dev",
            "--tasks", "2", "--cost-model", "analytical",
            "--batch-size", "4096", "--verify-top", "0",
            "--algorithms", "neuroshard,table-greedy-grid,size-greedy,"
            "lookup-greedy", "--measure-tasks", "1", "--measure-repeats", "1",
            "--results", str(results), "--json", str(out)]
    assert ev.main(argv) == 0
    # The generated pool describes 4096-bag batches, and every timing run
    # was at that batch.
    (pool_file,) = list(work.iterdir())
    assert tp.load_pool(str(pool_file))["sample_bags"] == 4096
    runs = [json.loads(line) for line in calls.read_text().splitlines()]
    assert runs and all(r[r.index("--batch-size") + 1] == "4096"
                        for r in runs)
    data = json.loads(out.read_text())
    summary = data["8dev"]["summary"]
    (pair,) = summary["measured_tasks"]
    assert pair["task"] == "8dev-0" and pair["devices"] == 8
    assert pair["default"] == "neuroshard" and pair["default_ms"] > 0
    assert ev.VERIFIED not in data["8dev"]["results"]
    assert data["acceptance"]["batch_size"] == 4096
    assert "8dev" in data["acceptance"]["settings"]
    text = results.read_text()
    assert "--batch-size 4096" in text
    assert "Per measured task (measured cost of the slowest device):" in text
    assert "### Acceptance (batch 4096)" in text
    assert "Not covered by this run: batch 1024; 10-60 tables on 4 " \
        "devices." in text


def _four_table_task():
    """A 2-device task of four 8-wide tables t0-t3, pool ids 0-3."""
    tables = [{"name": "t%d" % k, "pool_id": k, "dim": 8} for k in range(4)]
    return {"name": "2dev-0", "devices": 2, "tables": tables}


def _whole_table_plan(*devices):
    """A valid plan result placing whole tables: device d holds the tables
    numbered in devices[d]."""
    return {"valid": True, "plan": {"shards": [
        {"table": "t%d" % k, "col_begin": 0, "col_end": 8, "device": d}
        for d, ks in enumerate(devices) for k in ks]}}


def test_measurement_deals_the_plans_sets_out(monkeypatch):
    """A run times the plans' sets device by device, one algorithm after
    another, then the tables alone."""
    task = _four_table_task()
    plan = _whole_table_plan
    results = {"a": [plan((0, 1), (2, 3))], "b": [plan((0, 2), (1, 3))],
               "c": [{"valid": False}]}
    orders = []

    def fake(tool, pool_path, ordered, args, draw):
        orders.append(list(ordered.values()))
        return {k: 1.0 + len(ids) for k, ids in ordered.items()}

    monkeypatch.setattr(ev.st, "measure_sets", fake)
    args = __import__("argparse").Namespace(measure_repeats=2, draws=1)
    err = __import__("io").StringIO()
    (measured,) = ev._measure([task], results, ["a", "b", "c"], "tool",
                              "pool.json", [8], args, err)
    first, second = orders
    assert first == [[0, 1], [0, 2], [2, 3], [1, 3], [0], [1], [2], [3]]
    assert second == first[::-1]
    assert results["a"][0]["measured_ms"] == 3.0
    assert measured["table_costs_ms"] == [2.0] * 4


def test_judging_runs_time_only_the_compared_plans(monkeypatch):
    """With --judge-repeats, after the task's runs the sets of NeuroShard's
    default plan, the ablation and the best baseline are timed alone, and
    the paired ratios come from those runs."""
    task = _four_table_task()
    plan = _whole_table_plan
    algorithms = [ev.VERIFIED, ev.ABLATION, "lookup-greedy", "size-greedy"]
    results = {ev.VERIFIED: [plan((0, 1), (2, 3))],
               ev.ABLATION: [plan((0, 2), (1, 3))],
               "lookup-greedy": [plan((0, 3), (1, 2))],
               "size-greedy": [plan((0, 1, 2), (3,))]}
    orders = []

    def fake(tool, pool_path, ordered, args, draw):
        orders.append(list(ordered.values()))
        judging = len(orders) > 2
        # The task's runs find the verified plan twice as slow as the
        # ablation, the judging runs at 0.75 of it.
        if judging:
            return {k: len(ids) - (0.5 if ids in ([0, 1], [2, 3]) else 0.0)
                    for k, ids in ordered.items()}
        return {k: len(ids) + (2.0 if ids == [0, 1] else 0.0)
                for k, ids in ordered.items()}

    monkeypatch.setattr(ev.st, "measure_sets", fake)
    args = __import__("argparse").Namespace(measure_repeats=2, draws=1,
                                            judge_repeats=3)
    err = __import__("io").StringIO()
    ev._measure([task], results, algorithms, "tool", "pool.json", [8],
                args, err)
    assert len(orders) == 5
    # Best baseline: lookup-greedy (2.0) before size-greedy (3.0).
    judged_sets = [[0, 1], [0, 2], [0, 3], [2, 3], [1, 3], [1, 2]]
    assert orders[2] == judged_sets and orders[3] == judged_sets[::-1]
    assert "judged_runs_ms" not in results["size-greedy"][0]
    assert results[ev.VERIFIED][0]["judged_runs_ms"] == [1.5] * 3
    assert results[ev.VERIFIED][0]["measured_runs_ms"] == [4.0] * 2
    pairs = ev.task_pairs([task], results, algorithms)
    assert pairs[0]["best_baseline"] == "lookup-greedy"
    assert pairs[0]["ratio_ablation"] == pytest.approx(0.75)
    assert pairs[0]["ratio_best_baseline"] == pytest.approx(0.75)
    assert pairs[0]["judged_repeats"] == 3
    table = ev.pairs_table(pairs, algorithms)
    assert "3 more runs that timed only the sets of these three" in table
    # Without it the ratios pair the task's runs.
    for r in results.values():
        r[0].pop("judged_runs_ms", None)
    pairs = ev.task_pairs([task], results, algorithms)
    assert pairs[0]["ratio_ablation"] == pytest.approx(2.0)
    assert pairs[0]["judged_repeats"] is None


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

    from neuroshard_bench import evaluate_distributed as evd
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
                    "--tasks", "2", "--cost-model", "analytical",
                    "--algorithms", "neuroshard,size-greedy",
                    "--measure-tasks", "1", "--measure-repeats", "2",
                    "--warmup", "1", "--iters", "3",
                    "--verify-top", "3", "--verify-seconds", "0.2",
                    "--results", str(results), "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "measured task 1 of 1 (2dev-0: " in err and "ETA 0 s" in err
    everything = json.loads(out.read_text())
    data = everything["2dev"]
    summary = data["summary"]
    assert summary["measured_common"] == 1
    assert summary["lower_bound_ms"] > 0
    assert summary["measurement"]["repeats"] == 2
    # The 2 repeats on 2 of the default 3 draws of the index streams.
    assert summary["measurement"]["draws"] == ev.DEFAULT_DRAWS
    # The verified variant joined neuroshard, for the measured task only.
    assert list(data["results"]) == ["neuroshard", ev.VERIFIED,
                                     "size-greedy"]
    verified, skipped = data["results"][ev.VERIFIED]
    assert skipped == {"valid": False, "planned": False,
                       "error": "%s is planned only for the measured tasks"
                       % ev.VERIFIED}
    report = verified["verification"]
    # 3 of the search's, and the other baselines' priced near its best.
    searched = [c for c in report["candidates"]
                if c["origin"] in ("neuroshard", "table-greedy-grid")]
    assert 1 <= len(searched) <= 3
    assert 0 <= report["chosen"] < len(report["candidates"])
    assert verified["plan_s"] > 0
    assert summary["verify"] == {"top": 3, "seconds": 0.2, "min_gain": 0.02,
                                 "spread_factor": 2.0}
    assert "unless another measured at least 2% faster and faster by more " \
        "than its rounds' spread" in results.read_text()
    (pair,) = summary["measured_tasks"]
    assert pair["default"] == ev.VERIFIED
    assert pair["verified_choice"]["chosen"] == report["chosen"]
    assert pair["verified_ms"] == verified["measured_ms"]
    assert pair["best_baseline"] == "size-greedy"
    # Paired: the median over the 2 repeats of the per-repeat ratios of
    # the two plans' slowest devices.
    baseline = data["results"]["size-greedy"][0]
    assert len(verified["measured_runs_ms"]) == 2
    assert pair["ratio_best_baseline"] == pytest.approx(np.median(
        [a / b for a, b in zip(verified["measured_runs_ms"],
                               baseline["measured_runs_ms"])]))
    # The analytical model is no bundle: no reference sets, no level.
    assert pair["level"] is None
    assert everything["acceptance"]["settings"]["2dev"][
        "ratio_best_baseline_tasks"] == 1
    for a in ("neuroshard", ev.VERIFIED, "size-greedy"):
        row = summary["rows"][a]
        assert row["measured_ms"] > 0 and row["mape_percent"] > 0
        assert row["gap_percent"] is not None
        assert row["signed_error_percent"] is not None
        r = data["results"][a][0]
        assert r["measured_ms"] > 0 and r["predicted_compute_ms"] > 0
        assert r["lower_bound_ms"] == pytest.approx(summary["lower_bound_ms"])
    (m,) = data["measurements"]
    assert m["task"] == "2dev-0" and m["lower_bound_ms"] > 0
    assert len(m["table_costs_ms"]) == m["tables"]
    assert all(c > 0 for c in m["table_costs_ms"])
    text = results.read_text()
    assert "gap to lower bound | prediction MAPE |" in text
    assert "--measure-repeats 2" in text and "2 runs per task" in text
    assert "| neuroshard-verified | 1 / 1 | – |" in text
    assert "| 2dev-0 | " in text and "### Acceptance (batch 1024)" in text


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


def test_only_the_verified_variant_asks_for_measured_selection(
        monkeypatch):
    calls = []

    def plan(task, **options):
        calls.append(options)
        raise ev._core.NeuroShardError("no plan")

    monkeypatch.setattr(ev._core, "plan", plan)
    task = {"batch_size": 1024, "tables": [], "devices": 4, "memory_gb": 1}
    for a in ("neuroshard", "size-greedy", ev.VERIFIED):
        assert ev.run_plan(task, a, "m", verify_top="auto",
                           verify_seconds=0.5, verify_spread_factor=0.5) == \
            {"valid": False, "error": "no plan"}
    plain, baseline, verified = calls
    assert plain["algorithm"] == "neuroshard" and plain["verify_top"] == 0
    assert "experience" not in plain and "verify_seconds" not in plain
    assert baseline["algorithm"] == "size-greedy" and \
        baseline["verify_top"] == 0
    assert "verify_spread_factor" not in plain
    assert {k: verified[k] for k in ("algorithm", "verify_top",
                                     "verify_seconds", "verify_spread_factor",
                                     "experience", "device_kind")} == \
        {"algorithm": "neuroshard", "verify_top": "auto",
         "verify_seconds": 0.5, "verify_spread_factor": 0.5,
         "experience": "none", "device_kind": "cpu"}


def test_measured_selection_reaches_the_planner(pool):
    # Small tables only: the candidates' device sets are allocated and
    # timed here.
    small = dict(pool, tables=[t for t in pool["tables"]
                               if t["rows"] <= 100000])
    task = ev.make_tasks(small, "2dev", 1, 0)[0]
    plain = ev.run_plan(task, "neuroshard", "analytical")
    assert plain["valid"], plain
    assert "verification" not in plain["plan"] and \
        "verification" not in plain
    verified = ev.run_plan(task, ev.VERIFIED, "analytical", verify_top=2,
                           verify_seconds=0.1)
    assert verified["valid"], verified
    assert verified["plan"]["algorithm"] == "neuroshard"
    report = verified["verification"]
    assert report is verified["plan"]["verification"]
    searched = [c for c in report["candidates"]
                if c["origin"] in ("neuroshard", "table-greedy-grid")]
    assert 1 <= len(searched) <= 2 and report["rounds"] >= 1
    assert "experience" not in report
    chosen = report["candidates"][report["chosen"]]
    assert len(chosen["measured_compute_ms"]) == 2
    # What the evaluation compares with its measurement is the model's
    # prediction of the chosen plan, not the planner's own timing.
    assert verified["predicted_compute_ms"] == pytest.approx(max(
        d["compute_ms"] for d in verified["plan"]["per_device"]))
    assert verified["predicted_compute_ms"] != pytest.approx(
        max(chosen["measured_compute_ms"]))


def test_a_task_without_a_plan_is_invalid_with_the_reason(pool):
    task = dict(ev.make_tasks(pool, "4dev", 1, 0)[0], memory_gb=1e-6)
    result = ev.run_plan(task, "size-greedy", "analytical")
    assert not result["valid"]
    assert "size-greedy" in result["error"] or "GB" in result["error"], \
        result["error"]
