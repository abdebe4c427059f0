#===- evaluate.py - NeuroShard against the baselines ----------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Evaluates the sharding algorithms on held-out synthetic tasks, as the
paper does (MLSys 2023, §5): tasks drawn from the TEST split of the table
pool (the cost model never saw those base tables), every algorithm planned
by the C++ planner (neuroshard.plan, as `neuroshard-plan` plans) and priced
by the same cost model.

Settings (docs/design.md §10, issue 7):
  4dev   10..60 tables on 4 devices
  8dev   20..120 tables on 8 devices
  scale  1000 tables on 64 devices (drawn with replacement: the test split
         has fewer tables)
Every task has one memory capacity for all its devices, a seeded multiple
(MIN_SLACK..MAX_SLACK) of the task's bytes per device, so memory binds on
the tightest tasks: table-wise algorithms may find no plan there. Tasks are
at a global batch of --batch-size bags (default 1024), with a pool whose
histograms describe batches of that many bags (a generated pool is; a
given --pool must be).

For every algorithm: tasks with a valid plan, the mean predicted plan cost
(over the tasks every algorithm solved, so means compare like with like),
the mean search time, and NeuroShard's improvement over the best of DESIGN
§4's baselines and over table-greedy-grid (its search without splits).
"neuroshard" plans without measured selection (verify_top=0).
With --measure-tasks K, the plans of the first K tasks of the 4-device,
8-device (and 2-device) settings are also *measured* on the CPU with
`neuroshard-collect` (fused forward + backward + SGD; compute only: one
process, no all-to-all):
  * those tasks are also planned by "neuroshard-verified": the NeuroShard
    search with measured selection (verify_top=--verify-top, default 4,
    verify_seconds=--verify-seconds, default 2,
    verify_min_gain=--verify-min-gain, default 0.02,
    verify_spread_factor=--verify-spread-factor, default the planner's;
    experience="none", so
    the evaluation writes nothing into the model's bundle), which times the
    device sets of its best distinct candidates on this CPU and returns the
    table-wise plan unless another measures that much faster. Its
    plan is then measured like every other, in
    the same interleaved runs: the timings that chose it are not the ones
    it is judged by;
  * every device's shards become pool tables (a column shard of width w of
    a test table is the pool table of the same base at dim w; a width no
    pool table has, as merged pieces have, a column piece of the table); a
    plan's measured cost is its slowest device's time;
  * every table of the task is also timed alone (the whole table at its
    dim), and the task's measured lower bound is the sum of those costs /
    devices: perfect balance of the measured per-table costs. It bounds the
    plans only as far as a set costs the sum of its tables (the fused
    kernels share a launch and their caches, so a plan can beat it
    slightly); per algorithm the mean gap to it is reported;
  * the prediction error of the chosen plans: per algorithm, the mean
    absolute and the mean signed percentage error (predicted - measured) /
    measured, where predicted is what the planner expects the plan's
    slowest device to measure (its `expected_slowest` compute: the devices'
    predictions spread by the bundle's held-out error; the largest device
    `compute_ms` for a bundle without one) and measured is the slowest
    device's time (the measurement has no all-to-all); negative = the model
    underestimates the plans it chose. The error table also gives the
    error of the largest device `compute_ms`. Over the measured tasks every
    algorithm solved (the main table) and over all of each algorithm's
    measured plans (the error table);
  * per measured task, the measured cost of neuroshard, neuroshard-verified,
    table-greedy-grid and the task's best baseline (the baseline whose plan
    measured lowest on that task), and the ratios of NeuroShard's default
    plan (neuroshard-verified where measured) to the ablation and to that
    baseline, paired: per repeat, the two plans' slowest devices timed in
    the same tool run, then the median over repeats, so that a run the
    machine slowed down as a whole cancels (the table also gives the lowest
    and highest per-repeat ratio);
  * the machine's level: REFERENCE_SETS of the cost model's held-out
    calibration sets are timed in every task's runs, and the median of
    their measured / predicted cost says how much slower (above 1) the
    machine runs than the model expects; the acceptance table adds it and
    the prediction errors with each prediction scaled by its task's level
    (no target: they separate the model's error from the machine's
    drift);
  * all the sets of one task (every algorithm's device sets and the single
    tables) are timed in one `neuroshard-collect` run, so they are
    interleaved in time (the algorithms' device sets dealt out device by
    device, one algorithm after another, so that a slow spell of the host
    falls on every plan's sets), and that run is repeated --measure-repeats
    times (default 3) in alternating order (reversed on odd repeats),
    repeat r on draw r mod --draws (default 3) of the index streams (the
    tool's --seed
    is --seed + the draw): a training step sees a new batch every time, and
    a set's time moves with the batch by more than the tool's noise, so
    that a plan judged on one draw is judged on one batch. A set's cost is
    the median over repeats of the tool's median over --iters runs. With
    --judge-repeats N, the sets of NeuroShard's default plan, its ablation
    and the task's best baseline are then timed alone in N more runs
    (dealt out and alternating in the same way), and the per-task ratios
    are paired in those runs: a run of three plans' sets is over before
    the host's speed moves much, where a run of a task's every set lets a
    slow spell fall on one plan's slowest device and not another's. Before
    planning the measured tasks, a 1-minute load average above half the
    cores is warned about on stderr (the figures would be noisy), and each
    measured task prints a progress line (elapsed, ETA) on stderr.
Means over measurements are over the measured tasks every algorithm solved.
A closing acceptance table states the measured targets (TARGETS: NeuroShard's
mean ratio to its ablation and to the best baseline, its largest ratio to
the ablation, the chosen plans' mean absolute and signed prediction error,
the planning time with measured selection on 4 devices) per measured setting,
each with pass or fail.

Tasks and pools are regenerated from the seeds on every run, never stored
in the repository.

Outputs are regenerated, not kept: --results, --plot and --json write
where they are told, bench/results/ in the commands below (bench/README.md).

    export PYTHONPATH=python:bench:build/lib/python3/dist-packages
    /usr/bin/python3 -m neuroshard_bench.evaluate --tools-dir build/bin \\
        --work build/eval --results bench/results/results.md \\
        --plot bench/results/results.png
    /usr/bin/python3 -m neuroshard_bench.evaluate --settings 4dev,8dev \\
        --tasks 10 --measure-tasks 6 --measure-repeats 3 \\
        --json bench/results/m.json
    /usr/bin/python3 -m neuroshard_bench.evaluate --settings 4dev,8dev \\
        --tasks 10 --measure-tasks 6 --batch-size 4096 \\
        --json bench/results/m4096.json
"""

import argparse
import json
import math
import os
import shlex
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from neuroshard import _core
from neuroshard import bundle_meta as bm
from neuroshard import set_timing as st
from neuroshard import table_pool as tp

ALGORITHMS = ("neuroshard", "table-greedy-grid", "random", "size-greedy",
              "dim-greedy", "lookup-greedy", "size-lookup-greedy")
# The baselines of docs/design.md §4. table-greedy-grid is NeuroShard's own
# search without column splits (an ablation), reported against separately.
BASELINES = ("random", "size-greedy", "dim-greedy", "lookup-greedy",
             "size-lookup-greedy")
ABLATION = "table-greedy-grid"
# NeuroShard with measured selection: planned for the measured tasks only
# (it times candidates on this machine), right after "neuroshard".
VERIFIED = "neuroshard-verified"
# The planner's defaults and bound (PlanVerification.h).
DEFAULT_VERIFY_TOP = _core.DEFAULT_VERIFY_TOP
DEFAULT_VERIFY_SECONDS = _core.DEFAULT_VERIFY_SECONDS
DEFAULT_VERIFY_MIN_GAIN = _core.DEFAULT_VERIFY_MIN_GAIN
MAX_VERIFY_SECONDS = _core.MAX_VERIFY_SECONDS
MAX_VERIFY_MIN_GAIN = _core.MAX_VERIFY_MIN_GAIN
DEFAULT_VERIFY_SPREAD_FACTOR = _core.DEFAULT_VERIFY_SPREAD_FACTOR
MAX_VERIFY_SPREAD_FACTOR = _core.MAX_VERIFY_SPREAD_FACTOR
# Draws of the index streams a task's repeats go through (--draws), as many
# as measured selection times candidates on.
DEFAULT_DRAWS = _core.DEFAULT_INPUT_DRAWS
MAX_VERIFY_TOP = _core.MAX_VERIFY_TOP
# name: (devices, fewest tables, most tables)
SETTINGS = {"4dev": (4, 10, 60), "8dev": (8, 20, 120),
            "scale": (64, 1000, 1000), "2dev": (2, 5, 20)}
SETTING_TITLES = {"4dev": "10-60 tables on 4 devices",
                  "8dev": "20-120 tables on 8 devices",
                  "scale": "1000 tables on 64 devices",
                  "2dev": "5-20 tables on 2 devices"}
# A device's capacity is slack x (the task's bytes / devices).
MIN_SLACK, MAX_SLACK = 1.1, 2.5
BATCH_SIZE = 1024
GB = float(2**30)
# Settings whose first --measure-tasks tasks are measured (2dev: small
# enough for tests; scale: 64 devices of 1000 tables would take hours).
MEASURED_SETTINGS = ("4dev", "8dev", "2dev")
# The measured targets of the acceptance table: (key, figure, target text,
# test of a value). The planning-time target is for 4 devices
# (PLANNING_TARGET_DEVICES); elsewhere the time is reported without one.
TARGETS = (
    ("ratio_ablation_mean", "mean ratio to %s" % ABLATION, "<= 1.00",
     lambda v: v <= 1.00),
    ("ratio_best_baseline_mean", "mean ratio to the best baseline",
     "<= 0.95", lambda v: v <= 0.95),
    ("ratio_ablation_max", "largest ratio to %s" % ABLATION, "<= 1.02",
     lambda v: v <= 1.02),
    ("mape_percent", "mean absolute prediction error", "<= 15%",
     lambda v: v <= 15.0),
    ("signed_error_percent", "mean signed prediction error",
     "within ±10%", lambda v: abs(v) <= 10.0),
    ("plan_seconds_max", "planning time (largest task)", "< 10 s",
     lambda v: v < 10.0),
)
PLANNING_TARGET_DEVICES = 4
# The batches and device counts the acceptance asks for.
ACCEPTANCE_BATCHES = (1024, 4096)
ACCEPTANCE_SETTINGS = ("4dev", "8dev")
# How the commands that regenerate the results start: the package and the
# bench from the sources, the package's C++ module from the build tree.
PYTHON_COMMAND = ("PYTHONPATH=python:bench:build/lib/python3/dist-packages "
                  "/usr/bin/python3 -m ")
# The machine's level is measured, in every measured task's runs, on
# REFERENCE_SETS of the cost model's held-out calibration sets of at least
# REFERENCE_MIN_TABLES tables (found among the first REFERENCE_SEARCH
# sample ids).
REFERENCE_SETS = 4
REFERENCE_MIN_TABLES = 4
REFERENCE_SEARCH = 400
# A level further than this from 1 says the machine no longer runs as when
# its bundle was calibrated: the raw prediction errors then measure the
# drift as much as the model.
LEVEL_DRIFT = 0.10
RESULTS_BEGIN = "<!-- evaluate.py results: begin -->"
RESULTS_END = "<!-- evaluate.py results: end -->"


class EvaluationError(Exception):
    """Input or a tool result the evaluation cannot use."""


def make_tasks(pool: Dict, setting: str, count: int, seed: int,
               batch_size: int = BATCH_SIZE) -> List[Dict]:
    """`count` seeded tasks of `setting` from the pool's test split, at a
    global batch of `batch_size` bags (the pool's histograms must describe
    batches of that many bags). A task holds the task JSON's fields
    (task_json) plus `devices`, `memory_gb` and each table's `pool_id`."""
    if setting not in SETTINGS:
        raise EvaluationError("unknown setting '%s' (expected one of %s)" %
                              (setting, ", ".join(SETTINGS)))
    if count < 1:
        raise EvaluationError("a setting needs at least 1 task, got %d" %
                              count)
    bags = pool.get("sample_bags", BATCH_SIZE)
    if bags != batch_size:
        raise EvaluationError(
            "the pool's histograms describe batches of %s bags, the tasks' "
            "batch is %d bags (generate the pool with --sample-bags %d)" %
            (bags, batch_size, batch_size))
    devices, low, high = SETTINGS[setting]
    test = [t for t in pool["tables"] if t["split"] == "test"]
    if not test:
        raise EvaluationError("the pool has no test tables")
    tasks = []
    for k in range(count):
        rng = np.random.default_rng([seed, list(SETTINGS).index(setting), k])
        size = int(rng.integers(low, high + 1))
        picks = rng.choice(len(test), size=size, replace=size > len(test))
        tables = []
        for i, p in enumerate(picks):
            t = test[int(p)]
            tables.append({"name": "t%d_p%d" % (i, t["id"]),
                           "pool_id": t["id"], "rows": t["rows"],
                           "dim": t["dim"],
                           "pooling_factor": t["pooling_factor"],
                           "access_hist": t["access_hist"]})
        total = sum(tp.table_bytes(t) for t in tables)
        slack = float(rng.uniform(MIN_SLACK, MAX_SLACK))
        # Rounded up to the MB so the JSON value reproduces the capacity.
        memory_gb = math.ceil(total * slack / devices / 2**20) / 1024.0
        tasks.append({"name": "%s-%d" % (setting, k), "setting": setting,
                      "devices": devices, "memory_gb": memory_gb,
                      "batch_size": batch_size, "tables": tables})
    return tasks


def task_json(task: Dict) -> Dict:
    """The planner's task (the task JSON of docs/planner.md) of a task."""
    return {"batch_size": task["batch_size"],
            "tables": [{k: t[k] for k in ("name", "rows", "dim",
                                          "pooling_factor", "access_hist")}
                       for t in task["tables"]]}


def run_plan(task: Dict, algorithm: str, cost_model: str,
             cost_risk: Optional[float] = None,
             verify_top: Union[int, str] = DEFAULT_VERIFY_TOP,
             verify_seconds: float = DEFAULT_VERIFY_SECONDS,
             verify_min_gain: float = DEFAULT_VERIFY_MIN_GAIN,
             verify_spread_factor: float = DEFAULT_VERIFY_SPREAD_FACTOR
             ) -> Dict:
    """Plans one task with one algorithm. Returns {"valid": True, "cost_ms",
    "predicted_compute_ms" (predicted_compute), "largest_compute_ms",
    "predicted_devices_ms" (every device's `compute_ms`),
    "expected_slowest" (the plan's, None without one), "search_ms",
    "plan_s" (the planner call's wall time), "plan"}, or {"valid": False,
    "error"} with the planner's message when it found no plan. VERIFIED
    plans with the neuroshard search and measured selection of `verify_top`
    candidates timed for `verify_seconds`, another than the table-wise plan
    returned only if it measured `verify_min_gain` faster, and the more so
    as its rounds spread (`verify_spread_factor` standard errors; its result
    then has "verification", the planner's report, None where "auto" chose
    not to verify); every other algorithm plans with verify_top=0."""
    options = {} if cost_risk is None else {"cost_risk": cost_risk}
    if algorithm == VERIFIED:
        # Nothing the evaluation times goes into the model's bundle.
        options.update(algorithm="neuroshard", verify_top=verify_top,
                       verify_seconds=verify_seconds,
                       verify_min_gain=verify_min_gain,
                       verify_spread_factor=verify_spread_factor,
                       experience="none")
    else:
        options.update(algorithm=algorithm, verify_top=0)
    started = time.perf_counter()
    try:
        # The plans are measured on this CPU: plans for CPU execution, whose
        # default model is the CPU bundle.
        plan = _core.plan(task_json(task), devices=task["devices"],
                          memory_gb=task["memory_gb"], cost_model=cost_model,
                          device_kind="cpu", **options)
    except _core.NeuroShardError as e:
        return {"valid": False, "error": str(e)}
    result = {"valid": True, "cost_ms": float(plan["cost_ms"]),
              "predicted_compute_ms": predicted_compute(plan),
              "largest_compute_ms": largest_compute(plan),
              "predicted_devices_ms": [float(d["compute_ms"])
                                       for d in plan["per_device"]],
              "expected_slowest": plan.get("expected_slowest"),
              "search_ms": float(plan["search"]["time_ms"]),
              "plan_s": time.perf_counter() - started, "plan": plan}
    if algorithm == VERIFIED:
        result["verification"] = plan.get("verification")
    return result


def not_planned(reason: str) -> Dict:
    """The result of a task an algorithm was not asked to plan (VERIFIED
    on a task that is not measured): neither valid nor counted."""
    return {"valid": False, "planned": False, "error": reason}


def predicted_compute(plan: Dict) -> float:
    """What the planner predicts the plan's slowest device measures (its
    compute: what a measurement without all-to-all can be compared with):
    the plan's "expected_slowest" compute where the cost model records its
    held-out error, else the largest device `compute_ms`."""
    expected = plan.get("expected_slowest")
    if expected:
        return float(expected["compute_ms"])
    return largest_compute(plan)


def largest_compute(plan: Dict) -> float:
    """The largest device `compute_ms` of the plan: the maximum of the
    predictions rather than the prediction of the maximum."""
    return max(float(d["compute_ms"]) for d in plan["per_device"])


def paired_ratio(mine: Dict, other: Dict) -> Optional[float]:
    """The measured cost of plan result `mine` over that of `other`: the
    median over the measurement's repeats of the ratio of their slowest
    devices in the same repeat ("measured_runs_ms"), so that whatever
    slows a whole tool run down cancels; the ratio of their medians where
    the repeats are not both known. None without both costs."""
    a, b = mine.get("measured_ms"), other.get("measured_ms")
    if a is None or b is None or b <= 0:
        return None
    ratios = repeat_ratios(mine, other)
    return float(np.median(ratios)) if ratios else a / b


def repeat_ratios(mine: Dict, other: Dict) -> Optional[List[float]]:
    """Per repeat, the slowest device of plan result `mine` over that of
    `other` in the same tool run: of the judging runs that timed the two
    plans' sets alone ("judged_runs_ms", --judge-repeats) where both have
    them, else of the task's runs ("measured_runs_ms"); None where the
    repeats are not both known."""
    key = ("judged_runs_ms" if mine.get("judged_runs_ms") and
           other.get("judged_runs_ms") else "measured_runs_ms")
    ra, rb = mine.get(key), other.get(key)
    if not ra or not rb or len(ra) != len(rb) or not all(y > 0 for y in rb):
        return None
    return [x / y for x, y in zip(ra, rb)]


def paired_ratio_range(mine: Dict, other: Dict
                       ) -> Optional[Tuple[float, float]]:
    """The lowest and highest of the per-repeat ratios paired_ratio takes
    the median of: how far one repeat's verdict moved from another's. None
    where the repeats are not both known or there is only one."""
    ratios = repeat_ratios(mine, other)
    if not ratios or len(ratios) < 2:
        return None
    return (min(ratios), max(ratios))


def machine_level(predicted_ms: Sequence[float],
                  measured_ms: Sequence[float]) -> Optional[float]:
    """The machine's level against the cost model: the median of measured
    / predicted over the reference sets (1 where the machine runs as it
    did when the model was calibrated and the model is right on them);
    None without a reference set."""
    ratios = [m / p for p, m in zip(predicted_ms, measured_ms) if p > 0]
    return float(np.median(ratios)) if ratios else None


def reference_sets(pool: Dict, cost_model: str) -> List[List[int]]:
    """REFERENCE_SETS sets that measure the machine's level: the first
    samples of the cost model's calibration that it held out from
    training (collect.sample_set with the bundle's seed and default memory
    cap; held out as train.held_out splits them) with at least
    REFERENCE_MIN_TABLES tables. Where the pool is the bundle's, these are
    sets the model was validated on and never trained on. [] where the
    cost model is not a trained bundle."""
    meta = _bundle_meta(cost_model)
    if meta is None:
        return []
    seed = meta.get("seed")
    fraction = meta.get("training", {}).get("validation_fraction")
    if not isinstance(seed, int) or not isinstance(fraction, (int, float)):
        return []
    # The split is train.held_out's (train imports torch, evaluate not).
    from neuroshard import collect, train
    cap = int(collect.DEFAULT_MEMORY_CAP_GB * 2**30)
    chosen = []
    for sample_id in range(REFERENCE_SEARCH):
        if not train.held_out(sample_id, seed, float(fraction)):
            continue
        ids = collect.sample_set(pool, seed, sample_id, cap)
        if len(ids) >= REFERENCE_MIN_TABLES:
            chosen.append(ids)
            if len(chosen) == REFERENCE_SETS:
                break
    return chosen


def predict_set(pool: Dict, ids: Sequence[int], batch_size: int,
                cost_model: str) -> float:
    """The cost model's compute cost (ms) of the pool tables `ids` on one
    device, as the planner prices a device set."""
    by_id = {t["id"]: t for t in pool["tables"]}
    tables = [by_id[i] for i in ids]
    total = sum(tp.table_bytes(t) for t in tables)
    plan = _core.plan(task_json({"batch_size": batch_size,
                                 "tables": tables}),
                      devices=1, memory_gb=2.0 * total / GB + 1.0,
                      cost_model=cost_model, device_kind="cpu",
                      algorithm=ABLATION, verify_top=0)
    return predicted_compute(plan)


def lower_bound(table_costs_ms: Sequence[float], devices: int) -> float:
    """A task's measured lower bound: the sum of its tables' costs, each
    timed alone, spread perfectly over the devices."""
    if devices < 1:
        raise EvaluationError("a lower bound needs at least 1 device")
    return float(sum(table_costs_ms)) / devices


def prediction_errors(predicted_ms: Sequence[float],
                      measured_ms: Sequence[float]) -> Tuple[float, float]:
    """(mean absolute, mean signed) percentage error of the predictions,
    each (predicted - measured) / measured: a negative signed mean means
    the model underestimates."""
    if len(predicted_ms) != len(measured_ms) or not measured_ms:
        raise EvaluationError("prediction errors need as many predictions "
                              "as measurements, and at least one")
    errors = [100.0 * (p - m) / m for p, m in zip(predicted_ms, measured_ms)]
    return (float(np.mean(np.abs(errors))), float(np.mean(errors)))


def check_quiet(err=None, loadavg_path: str = "/proc/loadavg",
                cores: Optional[int] = None) -> Optional[float]:
    """Returns the 1-minute load average and warns on `err` (stderr) when it
    exceeds half the cores (timings on a busy machine are noisy); None when
    it cannot be read."""
    err = err or sys.stderr
    cores = cores or os.cpu_count() or 1
    try:
        with open(loadavg_path) as f:
            load = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if load > 0.5 * cores:
        print("warning: the 1-minute load average is %.2f on %d cores (more "
              "than %.1f): the measurements will be noisy" %
              (load, cores, 0.5 * cores), file=err, flush=True)
    return load


def level_drift(levels: Sequence[Optional[float]]) -> Optional[str]:
    """What to say when the machine's level strays more than LEVEL_DRIFT
    from 1 in any of `levels` (None: not measured), else None."""
    measured = [float(v) for v in levels if v is not None]
    if not measured or all(abs(v - 1.0) <= LEVEL_DRIFT + 1e-12
                           for v in measured):
        return None
    low, high = min(measured), max(measured)
    at = "%.3f" % low if "%.3f" % low == "%.3f" % high else \
        "%.3f to %.3f" % (low, high)
    return ("the machine measured the cost model's reference sets at %s "
            "of their prediction, more than %d%% from 1: it no longer runs "
            "as when the bundle was calibrated, and the raw prediction "
            "errors measure that drift as much as the model (the "
            "level-adjusted errors do not); recalibrate the bundle on this "
            "machine (python -m neuroshard.calibrate) right before judging "
            "them" % (at, round(100 * LEVEL_DRIFT)))


def _planned(result: Dict) -> bool:
    return result.get("planned", True)


def summarise(tasks: Sequence[Dict], results: Dict[str, List[Dict]],
              algorithms: Sequence[str]) -> Dict:
    """Per algorithm: plans asked for and valid ones, mean predicted cost
    over the tasks every algorithm solved (None for an algorithm planned
    on only some tasks, VERIFIED), mean search and planning time; over the
    measured ones among them the mean measured cost, the mean gap to the
    tasks' measured lower bounds (%) and the mean absolute and signed
    prediction error of the plans' compute (%); the prediction error over
    all of its measured plans; NeuroShard's improvement over the best
    baseline and over the ablation; and per measured task the pairs of
    task_pairs."""
    everywhere = [a for a in algorithms if all(map(_planned, results[a]))]
    common = [i for i in range(len(tasks))
              if all(results[a][i]["valid"] for a in everywhere)]
    measured_common = [i for i in common
                       if all("measured_ms" in results[a][i]
                              for a in algorithms)]
    bounds = [next((results[a][i]["lower_bound_ms"] for a in algorithms
                    if "lower_bound_ms" in results[a][i]), None)
              for i in measured_common]
    bounded = [(i, b) for i, b in zip(measured_common, bounds)
               if b is not None and b > 0]
    rows = {}
    for a in algorithms:
        valid = [r for r in results[a] if r["valid"]]
        predicted = [i for i in measured_common
                     if "predicted_compute_ms" in results[a][i] and
                     results[a][i]["measured_ms"] > 0]
        errors = prediction_errors(
            [results[a][i]["predicted_compute_ms"] for i in predicted],
            [results[a][i]["measured_ms"] for i in predicted]) \
            if predicted else (None, None)
        own = [r for r in valid if "predicted_compute_ms" in r and
               r.get("measured_ms", 0) > 0]
        own_errors = prediction_errors(
            [r["predicted_compute_ms"] for r in own],
            [r["measured_ms"] for r in own]) if own else (None, None)
        own_largest = [r for r in own if "largest_compute_ms" in r]
        largest_errors = prediction_errors(
            [r["largest_compute_ms"] for r in own_largest],
            [r["measured_ms"] for r in own_largest]) \
            if own_largest else (None, None)
        plan_s = [r["plan_s"] for r in valid if "plan_s" in r]
        rows[a] = {
            "planned": sum(map(_planned, results[a])),
            "valid": len(valid),
            "cost_ms": (float(np.mean([results[a][i]["cost_ms"]
                                       for i in common]))
                        if common and a in everywhere else None),
            "measured_ms": (float(np.mean([results[a][i]["measured_ms"]
                                           for i in measured_common]))
                            if measured_common else None),
            "search_ms": (float(np.mean([r["search_ms"] for r in valid]))
                          if valid else None),
            "plan_s": float(np.mean(plan_s)) if plan_s else None,
            "gap_percent": (float(np.mean(
                [100.0 * (results[a][i]["measured_ms"] - b) / b
                 for i, b in bounded])) if bounded else None),
            "mape_percent": errors[0],
            "signed_error_percent": errors[1],
            "measured_plans": len(own),
            "plans_mape_percent": own_errors[0],
            "plans_signed_error_percent": own_errors[1],
            "plans_largest_mape_percent": largest_errors[0],
            "plans_largest_signed_error_percent": largest_errors[1],
        }
    summary = {"tasks": len(tasks), "common": len(common),
               "measured_common": len(measured_common), "rows": rows,
               "lower_bound_ms": (float(np.mean([b for _, b in bounded]))
                                  if bounded else None),
               "measured_tasks": task_pairs(tasks, results, algorithms),
               "default": default_algorithm(algorithms)}
    for key in ("cost_ms", "measured_ms"):
        if "neuroshard" not in algorithms or \
                rows["neuroshard"][key] is None:
            continue
        baselines = [a for a in algorithms
                     if a in BASELINES and rows[a][key] is not None]
        if baselines:
            best = min(baselines, key=lambda a: rows[a][key])
            summary["best_baseline_" + key] = best
            summary["improvement_" + key] = 100.0 * (
                1.0 - rows["neuroshard"][key] / rows[best][key])
        if ABLATION in algorithms and rows[ABLATION][key] is not None:
            summary["ablation_improvement_" + key] = 100.0 * (
                1.0 - rows["neuroshard"][key] / rows[ABLATION][key])
    return summary


def default_algorithm(algorithms: Sequence[str]) -> Optional[str]:
    """NeuroShard with its default options where tasks are measured:
    VERIFIED when it was planned, else the plain search; None without
    either."""
    for a in (VERIFIED, "neuroshard"):
        if a in algorithms:
            return a
    return None


def best_baseline(results: Dict[str, List[Dict]], algorithms: Sequence[str],
                  i: int) -> Optional[str]:
    """The baseline (docs/design.md §4) whose plan for task `i` measured
    lowest (ties: the first name in order), None where no baseline's plan
    was measured."""
    measured = [(results[a][i].get("measured_ms"), a) for a in algorithms
                if a in BASELINES and
                results[a][i].get("measured_ms") is not None]
    return min(measured)[1] if measured else None


def task_pairs(tasks: Sequence[Dict], results: Dict[str, List[Dict]],
               algorithms: Sequence[str]) -> List[Dict]:
    """Per measured task (one where some plan was measured): its name and
    tables; the measured cost (ms, None without a measured plan) of
    "neuroshard", VERIFIED and the ablation; the baseline whose plan
    measured lowest on the task and its cost; and for NeuroShard's default
    plan (default_algorithm) the ratios of its measured cost to the
    ablation's and to that baseline's (paired_ratio: per repeat, then the
    median), its predicted compute and its planning time (s); the
    machine's level during the task's measurement (None where not
    measured); and which candidate measured selection chose (its index,
    the number of candidates and the candidate's origin; index None where
    the planner did not verify; "cut": (rounds timed, rounds a choice
    needs) where the budget ran out before a candidate could replace the
    incumbent)."""
    default = default_algorithm(algorithms)

    def measured(a, i):
        if a not in algorithms:
            return None
        return results[a][i].get("measured_ms")

    pairs = []
    for i, task in enumerate(tasks):
        if not any(measured(a, i) is not None for a in algorithms):
            continue
        costs = {a: measured(a, i) for a in ("neuroshard", VERIFIED,
                                             ABLATION)}
        best = best_baseline(results, algorithms, i)
        best_ms = measured(best, i) if best else None
        mine = results[default][i] if default else {}
        mine_ms = mine.get("measured_ms")
        best_result = results[best][i] if best else {}
        choice = None
        if VERIFIED in algorithms and results[VERIFIED][i]["valid"]:
            report = results[VERIFIED][i].get("verification")
            choice = {"chosen": None, "candidates": 0, "origin": None} \
                if not report else {
                    "chosen": int(report["chosen"]),
                    "candidates": len(report["candidates"]),
                    "origin": report["candidates"][int(report["chosen"])]
                    .get("origin")}
            if report and report.get("budget_cut"):
                choice["cut"] = (int(report["rounds"]),
                                 int(report["rounds_needed"]))

        def ratio(other: Dict) -> Optional[float]:
            return paired_ratio(mine, other) if mine else None

        def spread(other: Dict) -> Optional[Tuple[float, float]]:
            return paired_ratio_range(mine, other) if mine else None

        pairs.append({
            "task": task.get("name", "task %d" % i),
            "tables": len(task.get("tables", ())),
            "devices": task.get("devices"),
            "neuroshard_ms": costs["neuroshard"],
            "verified_ms": costs[VERIFIED],
            "ablation_ms": costs[ABLATION],
            "best_baseline": best, "best_baseline_ms": best_ms,
            "default": default, "default_ms": mine_ms,
            "default_predicted_ms": (mine.get("predicted_compute_ms")
                                     if mine_ms is not None else None),
            "default_plan_s": (mine.get("plan_s") if mine.get("valid")
                               else None),
            "ratio_ablation": (ratio(results[ABLATION][i])
                               if ABLATION in algorithms else None),
            "ratio_best_baseline": ratio(best_result),
            "ratio_ablation_range": (spread(results[ABLATION][i])
                                     if ABLATION in algorithms else None),
            "ratio_best_baseline_range": spread(best_result),
            "level": task.get("level"),
            "verified_choice": choice,
            "judged_repeats": len(mine.get("judged_runs_ms") or ()) or None})
    return pairs


# Resamplings of the tasks behind a mean ratio's interval, and their seed.
INTERVAL_RESAMPLES = 10000
INTERVAL_SEED = 0


def mean_interval(values: Sequence[float],
                  resamples: int = INTERVAL_RESAMPLES,
                  seed: int = INTERVAL_SEED
                  ) -> Optional[Tuple[float, float]]:
    """The 2.5th and 97.5th percentiles of the mean of `values` over
    `resamples` resamplings of them with replacement (a seeded bootstrap:
    the same values give the same interval): how far a mean over tasks
    could move on other tasks of the same kind. None for fewer than two
    values."""
    if len(values) < 2:
        return None
    data = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, len(data),
                              size=(resamples, len(data)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def acceptance_figures(pairs: Sequence[Dict]) -> Dict:
    """The figures of TARGETS over the measured tasks `pairs` (task_pairs):
    the mean and largest ratio of NeuroShard's default plan to the
    ablation and its mean ratio to the best baseline, each with the
    number of tasks it is over and the mean's interval over those tasks
    (mean_interval); the mean absolute and signed prediction
    error of its measured plans; its largest planning time and that task's
    tables; the machine's level over the tasks (mean, lowest, highest)
    and the prediction errors with each prediction scaled by its task's
    level ("adjusted_"). None where no task has the figure."""
    def over(key):
        return [p[key] for p in pairs if p[key] is not None]

    ablation, best = over("ratio_ablation"), over("ratio_best_baseline")
    judged = [p for p in pairs if p["default_ms"] is not None and
              p["default_predicted_ms"] is not None and p["default_ms"] > 0]
    errors = prediction_errors(
        [p["default_predicted_ms"] for p in judged],
        [p["default_ms"] for p in judged]) if judged else (None, None)
    levelled = [p for p in judged if p.get("level")]
    adjusted = prediction_errors(
        [p["default_predicted_ms"] * p["level"] for p in levelled],
        [p["default_ms"] for p in levelled]) if levelled else (None, None)
    timed = [p for p in pairs if p["default_plan_s"] is not None]
    slowest = max(timed, key=lambda p: p["default_plan_s"]) if timed \
        else None
    return {
        "ratio_ablation_mean": float(np.mean(ablation)) if ablation else None,
        "ratio_ablation_max": float(max(ablation)) if ablation else None,
        "ratio_ablation_tasks": len(ablation),
        "ratio_ablation_interval": mean_interval(ablation),
        "ratio_best_baseline_mean": (float(np.mean(best)) if best
                                     else None),
        "ratio_best_baseline_tasks": len(best),
        "ratio_best_baseline_interval": mean_interval(best),
        "mape_percent": errors[0], "signed_error_percent": errors[1],
        "error_tasks": len(judged),
        "level_mean": (float(np.mean([p["level"] for p in levelled]))
                       if levelled else None),
        "level_min": (float(min(p["level"] for p in levelled))
                      if levelled else None),
        "level_max": (float(max(p["level"] for p in levelled))
                      if levelled else None),
        "adjusted_mape_percent": adjusted[0],
        "adjusted_signed_error_percent": adjusted[1],
        "adjusted_tasks": len(levelled),
        "plan_seconds_max": slowest["default_plan_s"] if slowest else None,
        "plan_seconds_tables": slowest["tables"] if slowest else None,
        "plan_seconds_tasks": len(timed),
        "devices": next((p["devices"] for p in pairs
                         if p.get("devices") is not None), None),
    }


def acceptance(settings: Dict[str, Dict], batch_size: int) -> Dict:
    """The acceptance table's content: per measured setting its figures
    (acceptance_figures) and per target each setting's verdict (True,
    False, or None without a figure or target there) and the overall
    verdict: met when every setting with a verdict passes, None when none
    has one. Also names NeuroShard's default algorithm and which of the
    batches and settings the acceptance asks for this run lacks."""
    figures = {s: acceptance_figures(d["summary"]["measured_tasks"])
               for s, d in settings.items()
               if d["summary"].get("measured_tasks")}
    targets = []
    for key, figure, target, test in TARGETS:
        verdicts = {}
        for s, f in figures.items():
            value = f[key]
            applies = key != "plan_seconds_max" or \
                f["devices"] == PLANNING_TARGET_DEVICES
            verdicts[s] = (bool(test(value)) if value is not None and
                           applies else None)
        judged = [v for v in verdicts.values() if v is not None]
        targets.append({"key": key, "figure": figure, "target": target,
                        "verdicts": verdicts,
                        "met": all(judged) if judged else None})
    defaults = {d["summary"].get("default") for d in settings.values()
                if d["summary"].get("measured_tasks")}
    missing = []
    if batch_size not in ACCEPTANCE_BATCHES:
        missing.append("batch %d is not one the acceptance asks for (%s)" %
                       (batch_size, ", ".join(map(str, ACCEPTANCE_BATCHES))))
    missing += ["batch %d" % b for b in ACCEPTANCE_BATCHES
                if b != batch_size]
    missing += [SETTING_TITLES[s] for s in ACCEPTANCE_SETTINGS
                if s not in figures]
    return {"batch_size": batch_size, "settings": figures,
            "targets": targets, "default": sorted(d for d in defaults if d),
            "not_covered": missing}


def _fmt(value, digits=4):
    return "–" if value is None else "%.*f" % (digits, value)


def markdown_table(setting: str, summary: Dict,
                   algorithms: Sequence[str]) -> str:
    measured = summary["measured_common"] > 0
    lines = ["### %s (%d tasks)" % (SETTING_TITLES[setting],
                                     summary["tasks"]), ""]
    header = "| algorithm | valid plans | mean predicted cost (ms) |"
    rule = "|---|---|---|"
    if measured:
        header += (" mean measured cost (ms) | gap to lower bound |"
                   " prediction MAPE | signed prediction error |")
        rule += "---|---|---|---|"
    header += " mean search time (ms) |"
    rule += "---|"
    lines += [header, rule]
    for a in algorithms:
        row = summary["rows"][a]
        line = "| %s | %d / %d | %s |" % (a, row["valid"],
                                          row.get("planned",
                                                  summary["tasks"]),
                                          _fmt(row["cost_ms"]))
        if measured:
            line += " %s | %s | %s | %s |" % (
                _fmt(row["measured_ms"]),
                _percent(row.get("gap_percent"), signed=True),
                _percent(row.get("mape_percent")),
                _percent(row.get("signed_error_percent"), signed=True))
        line += " %s |" % _fmt(row["search_ms"], 1)
        lines.append(line)
    lines.append("")
    lines.append("Mean costs are over the %d tasks every algorithm found a "
                 "plan for%s." % (summary["common"], (
                     "; measured costs over the first %d of them" %
                     summary["measured_common"]) if measured else ""))
    if VERIFIED in algorithms:
        lines.append(_verified_sentence(summary))
    if measured:
        lines.append(_measurement_sentence(summary))
    for key, what in (("cost_ms", "predicted"), ("measured_ms", "measured")):
        if "improvement_" + key in summary:
            lines.append(
                "NeuroShard's mean %s cost is **%s** the best baseline's "
                "(%s)." % (what, _relative(summary["improvement_" + key]),
                           summary["best_baseline_" + key]))
        if "ablation_improvement_" + key in summary:
            lines.append(
                "Against %s (the same cost model and greedy, without "
                "column splits) it is %s." %
                (ABLATION,
                 _relative(summary["ablation_improvement_" + key])))
    if summary.get("measured_tasks"):
        lines += ["", pairs_table(summary["measured_tasks"], algorithms),
                  error_table(summary, algorithms)]
    return "\n".join(lines) + "\n"


def _verified_sentence(summary: Dict) -> str:
    """What VERIFIED is and which tasks it was planned for."""
    v = summary.get("verify", {})
    planned = summary["rows"][VERIFIED]["planned"]
    gain = float(v.get("min_gain", DEFAULT_VERIFY_MIN_GAIN))
    how = ""
    if v:
        how = "verify_top=%s, verify_seconds=%g%s%s: " % (
            v["top"], v["seconds"],
            "" if "min_gain" not in v else
            ", verify_min_gain=%g" % v["min_gain"],
            "" if v.get("spread_factor") in (
                None, DEFAULT_VERIFY_SPREAD_FACTOR) else
            ", verify_spread_factor=%g" % v["spread_factor"])
    noise = v.get("selection_noise")
    beyond = "its rounds' spread allows" if noise is None else (
        "its rounds' spread and the host's selection noise (%.1f%%, "
        "recorded in the bundle) allow" % (100.0 * noise))
    return ("%s is the NeuroShard search with measured selection (%sits best "
            "distinct candidate plans timed on this CPU, the table-wise "
            "plan returned unless another measured at least %g%% faster and "
            "faster by more than %s); "
            "it is planned only for the %d measured "
            "task%s, so it has no mean over the common tasks, and its plans "
            "are measured again with the others. neuroshard plans with "
            "verify_top=0." % (VERIFIED, how, 100.0 * gain, beyond, planned,
                               "" if planned == 1 else "s"))


def pairs_table(pairs: Sequence[Dict], algorithms: Sequence[str]) -> str:
    """The per-task table: measured cost of neuroshard, VERIFIED, the
    ablation and the task's best baseline, and the ratios of NeuroShard's
    default plan to the ablation and to that baseline."""
    default = (pairs[0]["default"] if pairs else None) or "neuroshard"
    columns = [("neuroshard", "neuroshard_ms"), (VERIFIED, "verified_ms"),
               (ABLATION, "ablation_ms")]
    columns = [(a, k) for a, k in columns if a in algorithms]
    header = "| task | tables |" + "".join(" %s (ms) |" % a
                                           for a, _ in columns)
    header += " best baseline (ms) | %s / %s | %s / best baseline |" % (
        default, ABLATION, default)
    header += " planning time, %s (s) |" % default
    verified = VERIFIED in algorithms
    if verified:
        header += " measured selection chose |"
    lines = ["Per measured task (measured cost of the slowest device):", "",
             header, "|---|---|" + "---|" * (len(columns) + 4 + verified)]
    for p in pairs:
        best = "–" if p["best_baseline"] is None else "%.4f (%s)" % (
            p["best_baseline_ms"], p["best_baseline"])
        line = "| %s | %d |" % (p["task"], p["tables"]) + \
            "".join(" %s |" % _fmt(p[k]) for _, k in columns) + \
            " %s | %s | %s | %s |" % (
                best,
                _ratio(p["ratio_ablation"], p.get("ratio_ablation_range")),
                _ratio(p["ratio_best_baseline"],
                       p.get("ratio_best_baseline_range")),
                _fmt(p["default_plan_s"], 2))
        if verified:
            line += " %s |" % _choice(p.get("verified_choice"))
        lines.append(line)
    lines.append("")
    judged = max((p.get("judged_repeats") or 0 for p in pairs), default=0)
    runs = ("the measurement's runs" if not judged else
            "%d more runs that timed only the sets of these three plans "
            "(--judge-repeats)" % judged)
    lines.append("Best baseline = the baseline (docs/design.md §4) whose "
                 "plan measured lowest on that task; a ratio below 1 is "
                 "NeuroShard's default plan (%s) measuring faster. A ratio "
                 "is the median over %s of the two plans' ratio in the "
                 "same run; in brackets, the lowest and highest of those "
                 "per-run ratios. A task where one of "
                 "the two has no plan has no ratio. Planning time = the "
                 "planner call's wall time (loading the model, the search "
                 "and, with measured selection, timing the candidates)%s."
                 % (default, runs, "; measured selection's candidates are "
                    "numbered as the planner lists them" if verified
                    else ""))
    return "\n".join(lines) + "\n"


def _ratio(ratio: Optional[float],
           spread: Optional[Tuple[float, float]]) -> str:
    """'1.044 (0.67-1.08)' for the pairs table: the paired ratio and the
    range of its per-run ratios, where known."""
    if ratio is None or spread is None:
        return _fmt(ratio, 3)
    return "%.3f (%.2f-%.2f)" % (ratio, spread[0], spread[1])


def _choice(choice: Optional[Dict]) -> str:
    """'candidate 2 of 4 (size-greedy)' for the pairs table, with 'budget:
    1 of 3 rounds' where the budget ran out before a choice could be
    made."""
    if choice is None:
        return "–"
    if choice["chosen"] is None:
        return "not verified"
    text = "candidate %d of %d (%s)" % (choice["chosen"] + 1,
                                        choice["candidates"],
                                        choice["origin"])
    if choice.get("cut"):
        text += "; budget: %d of %d rounds" % choice["cut"]
    return text


def error_table(summary: Dict, algorithms: Sequence[str]) -> str:
    """Per algorithm, the prediction error of all its measured plans."""
    lines = ["Prediction error of the chosen plans, over each algorithm's "
             "measured plans. Predicted: the plan's expected slowest device "
             "(`expected_slowest`, where the bundle records its held-out "
             "error), and, for comparison, the largest device "
             "`compute_ms`:", "",
             "| algorithm | measured plans | mean absolute error | "
             "mean signed error | largest `compute_ms`: absolute | "
             "signed |", "|---|---|---|---|---|---|"]
    for a in algorithms:
        row = summary["rows"][a]
        lines.append("| %s | %d | %s | %s | %s | %s |" % (
            a, row.get("measured_plans", 0),
            _percent(row.get("plans_mape_percent")),
            _percent(row.get("plans_signed_error_percent"), signed=True),
            _percent(row.get("plans_largest_mape_percent")),
            _percent(row.get("plans_largest_signed_error_percent"),
                     signed=True)))
    return "\n".join(lines) + "\n"


def acceptance_markdown(acc: Dict) -> str:
    """The closing acceptance table: per target each measured setting's
    figure with pass or fail, and whether it is met everywhere."""
    settings = list(acc["settings"])
    lines = ["### Acceptance (batch %d)" % acc["batch_size"], ""]
    if not settings:
        lines.append("No task was measured (--measure-tasks 0): the "
                     "acceptance targets are measured figures and are not "
                     "judged.")
        return "\n".join(lines) + "\n"
    default = ", ".join(acc["default"]) or "–"
    lines.append("NeuroShard with its default options where tasks are "
                 "measured (%s) against the targets, from the measured "
                 "tasks above:" % default)
    lines.append("")
    lines.append("| figure | target | %s | met |" %
                 " | ".join(SETTING_TITLES[s] for s in settings))
    lines.append("|---|---|" + "---|" * (len(settings) + 1))
    for t in acc["targets"]:
        cells = [_acceptance_cell(t["key"], acc["settings"][s],
                                  t["verdicts"][s]) for s in settings]
        met = {True: "**yes**", False: "**no**", None: "–"}[t["met"]]
        lines.append("| %s | %s | %s | %s |" % (
            t["figure"], t["target"], " | ".join(cells), met))
    lines += _level_rows(acc["settings"], settings)
    drift = level_drift([acc["settings"][s].get(k) for s in settings
                         for k in ("level_min", "level_max")])
    if drift:
        lines.append("")
        lines.append("Warning: %s%s." % (drift[0].upper(), drift[1:]))
    judged = [t for t in acc["targets"] if t["met"] is not None]
    lines.append("")
    lines.append("%d of the %d targets judged here are met%s." % (
        sum(t["met"] for t in judged), len(judged),
        "" if len(judged) == len(acc["targets"]) else
        " (%d not judged: no figure, or no target in these settings)" %
        (len(acc["targets"]) - len(judged))))
    lines.append("Ratios are per task (measured cost of NeuroShard's default "
                 "plan / the other plan's: the median over the repeats of "
                 "the ratio of the two plans' slowest devices in the same "
                 "run), averaged over the tasks both have a measured plan "
                 "for; prediction errors are (predicted - measured) / "
                 "measured of its slowest device; the planning time target "
                 "is for %d devices." % PLANNING_TARGET_DEVICES)
    if any(acc["settings"][s].get(k) for s in settings
           for k in ("ratio_ablation_interval",
                     "ratio_best_baseline_interval")):
        lines.append(
            "After a mean ratio's task count, the 2.5th and 97.5th "
            "percentiles of that mean over %d resamplings of its tasks "
            "with replacement: how far the mean could move on other tasks "
            "of the same kind. A target judged by a mean whose interval "
            "holds it is met or missed within that spread."
            % INTERVAL_RESAMPLES)
    if any(acc["settings"][s].get("level_mean") for s in settings):
        lines.append(
            "The machine's level is the median of measured / predicted "
            "over %d of the cost model's held-out calibration sets, timed "
            "in every task's runs: above 1, this machine ran slower than "
            "the model expects. The level-adjusted errors scale each "
            "prediction by its task's level; they show the model's error "
            "on the plans it chose apart from the machine's drift, and "
            "have no target of their own." % REFERENCE_SETS)
    if acc["not_covered"]:
        lines.append("Not covered by this run: %s." %
                     "; ".join(acc["not_covered"]))
    return "\n".join(lines) + "\n"


def _level_rows(figures: Dict[str, Dict], settings: Sequence[str]
                ) -> List[str]:
    """The acceptance table's rows without a target: the machine's level
    and the level-adjusted prediction errors; none where no level was
    measured."""
    if not any(figures[s].get("level_mean") for s in settings):
        return []

    def level(f):
        if f.get("level_mean") is None:
            return "–"
        return "%.3f (%.3f to %.3f)" % (f["level_mean"], f["level_min"],
                                        f["level_max"])

    def error(key, signed):
        def cell(f):
            if f.get(key) is None:
                return "–"
            plans = f["adjusted_tasks"]
            return "%s (%d plan%s)" % (_percent(f[key], signed=signed),
                                       plans, "" if plans == 1 else "s")
        return cell

    rows = []
    for figure, cell in (
            ("machine's level (measured / predicted, reference sets)",
             level),
            ("mean absolute prediction error, level-adjusted",
             error("adjusted_mape_percent", False)),
            ("mean signed prediction error, level-adjusted",
             error("adjusted_signed_error_percent", True))):
        rows.append("| %s | – | %s | – |" % (
            figure, " | ".join(cell(figures[s]) for s in settings)))
    return rows


def _acceptance_cell(key: str, figures: Dict, verdict: Optional[bool]
                     ) -> str:
    value = figures[key]
    if value is None:
        return "–"
    if key.startswith("ratio_"):
        which = "ratio_ablation" if "ablation" in key else \
            "ratio_best_baseline"
        tasks = figures[which + "_tasks"]
        interval = figures.get(which + "_interval") \
            if key.endswith("_mean") else None
        text = "%.3f (%d task%s%s)" % (
            value, tasks, "" if tasks == 1 else "s",
            "; %.3f-%.3f" % tuple(interval) if interval else "")
    elif key == "plan_seconds_max":
        text = "%.1f s (%d tables)" % (value, figures["plan_seconds_tables"])
    else:
        plans = figures["error_tasks"]
        text = "%s (%d plan%s)" % (
            _percent(value, signed=key.startswith("signed")), plans,
            "" if plans == 1 else "s")
    return text + {True: " pass", False: " **fail**",
                   None: ", no target"}[verdict]


def _percent(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "–"
    return ("%+.1f%%" if signed else "%.1f%%") % value


def _measurement_sentence(summary: Dict) -> str:
    """How the measured columns were obtained and what they mean."""
    m = summary.get("measurement", {})
    how = ""
    if m:
        draws = int(m.get("draws", 1))
        how = ("Measured on the CPU with `%s`, all of a task's sets (every "
               "algorithm's devices, dealt out device by device, and every "
               "table alone) in one run, %d "
               "run%s per task in alternating order%s; a set's cost is the "
               "median over runs of its median over %d iterations%s. " %
               (m["command"], m["repeats"], "" if m["repeats"] == 1 else "s",
                "" if draws == 1 else
                ", run r on draw r mod %d of the index streams (seed + the "
                "draw)" % draws,
                m["iters"], "" if m.get("loadavg") is None else
                " (1-minute load average %.2f before measuring)" %
                m["loadavg"]))
        if m.get("judge_repeats"):
            how += ("Then %d more runs per task timed only the sets of "
                    "NeuroShard's default plan, its ablation and the best "
                    "baseline, and the per-task ratios pair those runs "
                    "(--judge-repeats). " % m["judge_repeats"])
    return (how + "A plan's measured cost is its slowest device's (compute "
            "only). Lower bound = the sum of the task's tables timed alone / "
            "devices (mean %s ms); gap = (measured - bound) / bound; "
            "prediction error = (predicted - measured) / measured, where "
            "predicted is the plan's expected slowest device "
            "(`expected_slowest`: its devices' predicted compute spread by "
            "the bundle's held-out error; the largest `compute_ms` without "
            "one) (negative: the model underestimates the plans it "
            "chose)." %
            _fmt(summary.get("lower_bound_ms")))


def _relative(improvement_percent: float) -> str:
    """'12.3% below' for a positive improvement, '4.5% above' otherwise."""
    if improvement_percent >= 0:
        return "%.1f%% below" % improvement_percent
    return "%.1f%% above" % -improvement_percent


def plot_tasks(path: str, settings: Dict[str, Dict]) -> None:
    """Per-task predicted cost of NeuroShard, of the best baseline and of
    table-greedy-grid, one
    panel per setting, tasks sorted by the baseline's cost."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(s, d) for s, d in settings.items()
              if "best_baseline_cost_ms" in d["summary"]]
    if not panels:
        raise EvaluationError("nothing to plot: no setting has a NeuroShard "
                              "plan and a baseline plan on common tasks")
    figure, axes = plt.subplots(1, len(panels),
                                figsize=(5.5 * len(panels), 4.2),
                                squeeze=False)
    for ax, (setting, data) in zip(axes[0], panels):
        best = data["summary"]["best_baseline_cost_ms"]
        results = data["results"]
        common = [i for i in range(len(data["tasks"]))
                  if results["neuroshard"][i]["valid"] and
                  results[best][i]["valid"]]
        common.sort(key=lambda i: results[best][i]["cost_ms"])
        x = np.arange(len(common))
        ax.plot(x, [results[best][i]["cost_ms"] for i in common], "o-",
                label=best, color="tab:gray")
        if ABLATION in results:
            ax.plot(x, [results[ABLATION][i]["cost_ms"]
                        if results[ABLATION][i]["valid"] else np.nan
                        for i in common], "^-", label=ABLATION,
                    color="tab:blue", alpha=0.7)
        ax.plot(x, [results["neuroshard"][i]["cost_ms"] for i in common],
                "s-", label="neuroshard", color="tab:red")
        ax.set_title(SETTING_TITLES[setting])
        ax.set_xlabel("task (sorted by %s cost)" % best)
        ax.set_ylabel("predicted plan cost (ms)")
        ax.legend()
        ax.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


DOCTEST_PREFIX = "<!-- doctest:"


def keep_doctest_annotations(old_block: str, new_block: str) -> str:
    """`new_block` with the doc-test annotations (scripts/doctest.py) that
    stood before the command's fence in `old_block` put back before its
    own: a regenerated results block keeps how the doc test shrinks its
    command, and an annotation that no longer matches the command fails
    the doc test instead of vanishing."""
    notes = [line for line in old_block.splitlines()
             if line.startswith(DOCTEST_PREFIX)]
    if not notes or "```sh" not in new_block:
        return new_block
    head, tail = new_block.split("```sh", 1)
    return head + "\n".join(notes) + "\n```sh" + tail


def write_results(path: str, text: str) -> None:
    """Replaces the generated part of `path` (between the RESULTS markers),
    keeping the hand-written text around it; creates the file if needed."""
    block = "%s\n%s%s\n" % (RESULTS_BEGIN, text, RESULTS_END)
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
        if (RESULTS_BEGIN in old) != (RESULTS_END in old):
            raise EvaluationError("'%s' has only one of the markers %s and %s"
                                  % (path, RESULTS_BEGIN, RESULTS_END))
        if RESULTS_BEGIN in old:
            head = old[:old.index(RESULTS_BEGIN)]
            tail = old[old.index(RESULTS_END) + len(RESULTS_END):]
            block = keep_doctest_annotations(
                old[old.index(RESULTS_BEGIN):old.index(RESULTS_END)], block)
            new = head + block.rstrip("\n") + tail
        else:
            new = old.rstrip("\n") + "\n\n" + block
    else:
        new = "# Evaluation results\n\n" + block
    with open(path, "w") as f:
        f.write(new)


def _tool(tools_dir: str, name: str) -> str:
    path = os.path.join(tools_dir, name)
    if not os.access(path, os.X_OK):
        raise EvaluationError("%s not found in --tools-dir '%s' (build it "
                              "with ninja -C build %s)" % (name, tools_dir,
                                                           name))
    return path


def _load_or_make_pool(args, log) -> str:
    if args.pool:
        return args.pool
    os.makedirs(args.work, exist_ok=True)
    # Callers without a --batch-size plan at the default batch, whose pool
    # keeps the name earlier runs used.
    batch_size = getattr(args, "batch_size", BATCH_SIZE)
    suffix = "" if batch_size == BATCH_SIZE else "-bag%d" % batch_size
    path = os.path.join(args.work, "pool-s%d-b%d%s.json" %
                        (args.pool_seed, args.base_tables, suffix))
    if not os.path.exists(path):
        print("generating the table pool (seed %d, %d base tables, "
              "histograms of %d bags) in %s" %
              (args.pool_seed, args.base_tables, batch_size, path),
              file=log)
        with open(path, "w") as f:
            json.dump(tp.generate_pool(args.pool_seed, args.base_tables,
                                       sample_bags=batch_size), f)
    return path


def _bundle_meta(cost_model: str) -> Optional[Dict]:
    """The meta.json of the bundle --cost-model names (the default CPU
    bundle for "default"); None where it names no bundle on disk."""
    bundle = cost_model
    if cost_model == _core.DEFAULT_COST_MODEL:
        bundle = _core.find_default_model("cpu")
    if not bundle or not os.path.exists(bm.path(bundle)):
        return None
    return bm.read(bundle, EvaluationError, "cost-model bundle metadata")


def _check_held_out(pool: Dict, pool_path: str, cost_model: str,
                    log) -> None:
    """Warns when the pool is not the one the cost model was trained on:
    its test split would then not be held out from the model. A pool of
    another batch (histograms of batches of another number of bags) counts
    as the training pool when it is that pool regenerated at its batch:
    the same seed, base tables, split and statistics."""
    meta = _bundle_meta(cost_model)
    if meta is None:
        return
    trained_on = meta.get("training", {}).get("pool")
    if not trained_on or trained_on == tp.pool_fingerprint(pool):
        return
    if _same_pool_at_batch(pool, meta.get("batch_size"), trained_on):
        return
    print("warning: pool '%s' (fingerprint %s) is not the pool the cost "
          "model was trained on (%s); its test tables may not be held "
          "out" % (pool_path, tp.pool_fingerprint(pool), trained_on),
          file=log)


def _same_pool_at_batch(pool: Dict, bags, fingerprint: str) -> bool:
    """Whether `pool`, regenerated from its seed with histograms of `bags`
    bags, has `fingerprint` and the same tables apart from the
    histograms."""
    if not isinstance(bags, int) or bags < 1 or \
            bags == pool.get("sample_bags") or \
            not all(isinstance(pool.get(k), int)
                    for k in ("seed", "base_tables")):
        return False
    try:
        other = tp.generate_pool(
            pool["seed"], pool["base_tables"], sample_bags=bags,
            test_fraction=pool.get("test_fraction",
                                   tp.DEFAULT_TEST_FRACTION),
            dims=pool.get("dims", tp.POOL_DIMS))
    except (ValueError, TypeError):
        return False

    def without_histograms(tables):
        return [{k: v for k, v in t.items() if k != "access_hist"}
                for t in tables]

    return tp.pool_fingerprint(other) == fingerprint and \
        without_histograms(other["tables"]) == \
        without_histograms(pool["tables"])


def evaluate(args, log=sys.stdout, err=None) -> Dict:
    err = err or sys.stderr
    collect_tool = _tool(args.tools_dir, "neuroshard-collect") \
        if args.measure_tasks else None
    pool_path = _load_or_make_pool(args, log)
    pool = tp.load_pool(pool_path)
    _check_held_out(pool, pool_path, args.cost_model, log)
    pool_dims = pool.get("dims", list(tp.POOL_DIMS))
    # Callers that did not resolve_algorithms verify with the defaults.
    verify_top, verify_seconds, verify_min_gain, verify_spread_factor = \
        verify_options(args)
    # The host's noise of measured selection, where the bundle records it.
    noise = (_bundle_meta(args.cost_model) or {}).get("selection_noise")
    settings = {}
    for setting in args.settings:
        count = args.scale_tasks if setting == "scale" else args.tasks
        tasks = make_tasks(pool, setting, count, args.seed,
                           args.batch_size)
        measured = (min(args.measure_tasks, len(tasks))
                    if setting in MEASURED_SETTINGS else 0)
        measurement = None
        if measured:
            # Measured selection times candidates while planning: the load
            # is checked before it.
            measurement = {
                "command": shlex.join(["neuroshard-collect"] +
                                      st.collect_options(args)),
                "repeats": args.measure_repeats, "draws": args.draws,
                "judge_repeats": getattr(args, "judge_repeats", 0),
                "warmup": args.warmup,
                "iters": args.iters, "loadavg": check_quiet(err)}
        # VERIFIED only where tasks are measured.
        algorithms = [a for a in args.algorithms if a != VERIFIED or measured]
        results = {a: [] for a in algorithms}
        started = time.time()
        for k, task in enumerate(tasks):
            for a in algorithms:
                if a == VERIFIED and k >= measured:
                    results[a].append(not_planned(
                        "%s is planned only for the measured tasks" % a))
                    continue
                results[a].append(run_plan(task, a, args.cost_model,
                                           args.cost_risk, verify_top,
                                           verify_seconds, verify_min_gain,
                                           verify_spread_factor))
                if a == VERIFIED and not results[a][-1]["valid"]:
                    # Measured selection can fail where the search does not
                    # (the candidates' sets must fit this machine's memory).
                    print("%s: no plan for task %s: %s" %
                          (a, task["name"], results[a][-1]["error"]),
                          file=err, flush=True)
        measurements = []
        if measured:
            references = [(ids, predict_set(pool, ids, args.batch_size,
                                            args.cost_model))
                          for ids in reference_sets(pool, args.cost_model)]
            measurements = _measure(tasks[:measured], results, algorithms,
                                    collect_tool, pool_path, pool_dims, args,
                                    err, references)
        summary = summarise(tasks, results, algorithms)
        if measurement:
            summary["measurement"] = measurement
        if VERIFIED in algorithms:
            summary["verify"] = {"top": verify_top, "seconds": verify_seconds,
                                 "min_gain": verify_min_gain,
                                 "spread_factor": verify_spread_factor}
            if noise:
                summary["verify"]["selection_noise"] = float(noise["log_sd"])
        table = markdown_table(setting, summary, algorithms)
        print(table, file=log)
        print("(%s: %.0f s)\n" % (setting, time.time() - started), file=log,
              flush=True)
        settings[setting] = {"tasks": tasks, "results": results,
                             "summary": summary, "table": table,
                             "measurements": measurements}
    if args.measure_tasks:
        print(acceptance_markdown(acceptance(settings, args.batch_size)),
              file=log, flush=True)
    return settings


def _measure(tasks, results, algorithms, tool, pool_path, pool_dims, args,
             err, references: Sequence[Tuple[List[int], float]] = ()
             ) -> List[Dict]:
    """Measures task by task: adds "measured_ms" (slowest device's measured
    time), "measured_devices_ms" (every device's), "measured_runs_ms" (its slowest device's time in each repeat)
    and the task's "lower_bound_ms" to the valid plans of `tasks`; returns
    per task its lower bound, its tables' costs, the machine's level on
    the `references` ((pool ids, predicted ms) pairs, timed with the task's
    sets; also the task's "level") and the time it took. Each task's
    distinct sets are timed together, repeated, the plans' sets dealt out
    device by device, one algorithm after another."""
    measurements = []
    drift_warned = False
    started = time.time()
    for i, task in enumerate(tasks):
        task_started = time.time()
        keys, sets = {}, {}
        planned = [a for a in algorithms if results[a][i]["valid"]]
        for a in planned:
            r = results[a][i]
            r["device_sets"] = st.device_sets(task, r["plan"], pool_dims)
        _deal_out([results[a][i] for a in planned], task["devices"], keys,
                  sets)
        singles = [st.add_set(keys, sets, [t["pool_id"]])
                   for t in task["tables"]]
        reference_keys = [st.add_set(keys, sets, ids)
                          for ids, _ in references]
        runs = {}
        costs = st.measure_repeated(
            sets, args.measure_repeats,
            lambda ordered, draw: st.measure_sets(tool, pool_path, ordered,
                                                  args, draw),
            runs, draws=args.draws)
        table_costs = [costs[k] for k in singles]
        bound = lower_bound(table_costs, task["devices"])
        level = machine_level([p for _, p in references],
                              [costs[k] for k in reference_keys])
        task["level"] = level
        drift = level_drift([level])
        if drift and not drift_warned:
            print("warning: task %s: %s" % (task["name"], drift), file=err,
                  flush=True)
            drift_warned = True
        for a in algorithms:
            r = results[a][i]
            if r["valid"]:
                own = _set_numbers(r, keys)
                r["measured_devices_ms"] = [costs[k] for k in own]
                r["measured_ms"] = max(r["measured_devices_ms"])
                r["measured_runs_ms"] = _slowest_runs(own, runs,
                                                      args.measure_repeats)
                r["lower_bound_ms"] = bound
        if getattr(args, "judge_repeats", 0):
            _judge(task, i, results, algorithms, tool, pool_path, args)
        now = time.time()
        measurements.append({"task": task["name"],
                             "tables": len(task["tables"]),
                             "sets": len(sets),
                             "lower_bound_ms": bound,
                             "table_costs_ms": table_costs,
                             "level": level,
                             "reference_ms": [costs[k]
                                              for k in reference_keys],
                             "seconds": now - task_started})
        eta = (now - started) / (i + 1) * (len(tasks) - i - 1)
        print("measured task %d of %d (%s: %d sets x %d runs) in %.0f s; "
              "elapsed %.0f s, ETA %.0f s" %
              (i + 1, len(tasks), task["name"], len(sets),
               args.measure_repeats, now - task_started, now - started, eta),
              file=err, flush=True)
    return measurements


def _judge(task, i, results, algorithms, tool, pool_path, args) -> None:
    """Times the device sets of NeuroShard's default plan, the ablation and
    the task's best baseline (the baseline whose plan the task's runs
    measured lowest) alone, dealt out device by device, in
    --judge-repeats runs (alternating order, run r on draw r mod --draws),
    and adds to each of those plans "judged_runs_ms", its slowest device
    in each run, which the paired ratios then use: a run of a few plans'
    sets is shorter than a run of every algorithm's sets and every table,
    so a slow spell of the host falls more evenly on the plans compared."""
    default = default_algorithm(algorithms)
    if default is None or not results[default][i]["valid"]:
        return
    best = best_baseline(results, algorithms, i)
    judged = [results[a][i] for a in dict.fromkeys((default, ABLATION, best))
              if a in algorithms and results[a][i]["valid"]]
    if len(judged) < 2:
        return
    keys, sets = {}, {}
    _deal_out(judged, task["devices"], keys, sets)
    runs = {}
    st.measure_repeated(sets, args.judge_repeats,
                        lambda ordered, draw: st.measure_sets(
                            tool, pool_path, ordered, args, draw),
                        runs, draws=args.draws)
    for r in judged:
        r["judged_runs_ms"] = _slowest_runs(_set_numbers(r, keys), runs,
                                            args.judge_repeats)


def _deal_out(plans: Sequence[Dict], devices: int, keys: Dict,
              sets: Dict[int, List]) -> None:
    """Adds the device sets of plan results `plans` (set_timing.add_set)
    device by device, one plan after another, so that a slow spell of the
    host during a run lengthens sets of every plan rather than all of one
    plan's."""
    for d in range(devices):
        for r in plans:
            st.add_set(keys, sets, r["device_sets"][d])


def _set_numbers(plan: Dict, keys: Dict) -> List[int]:
    """The numbers in `keys` (set_timing.add_set) of plan result `plan`'s
    device sets."""
    return [keys[st.set_key(ids)] for ids in plan["device_sets"]]


def _slowest_runs(own: List[int], runs: Dict[int, List[float]],
                  repeats: int) -> List[float]:
    """The slowest of the sets numbered `own` (a plan's devices) in each of
    `repeats` runs, from each set's time per run (`runs`)."""
    return [max(runs[k][rep] for k in own) for rep in range(repeats)]


def _verify_top(text: str) -> Union[int, str]:
    """--verify-top: 'auto' or a count from 0 to MAX_VERIFY_TOP, read as the
    planner reads verify_top."""
    try:
        return _core.parse_verify_top(text)
    except _core.NeuroShardError as e:
        raise argparse.ArgumentTypeError(
            str(e).replace("verify_top: ", "", 1))


def verify_options(args) -> Tuple[Union[int, str], float, float, float]:
    """args' verify_top, verify_seconds, verify_min_gain and
    verify_spread_factor, each its default where it is None or absent."""
    given = [getattr(args, name, None) for name in
             ("verify_top", "verify_seconds", "verify_min_gain",
              "verify_spread_factor")]
    defaults = (DEFAULT_VERIFY_TOP, DEFAULT_VERIFY_SECONDS,
                DEFAULT_VERIFY_MIN_GAIN, DEFAULT_VERIFY_SPREAD_FACTOR)
    return tuple(d if g is None else g for g, d in zip(given, defaults))


def resolve_algorithms(args) -> Optional[str]:
    """Turns args.algorithms (a comma list or None), args.verify_top and
    args.verify_seconds (None when not given) into the algorithms to plan
    and the options of VERIFIED, which joins right after "neuroshard"
    whenever tasks are measured and --verify-top is not 0. Returns what is
    wrong with the request, or None."""
    given = args.algorithms
    algorithms = list(ALGORITHMS) if given is None else \
        [a for a in given.split(",") if a]
    for a in algorithms:
        if a not in ALGORITHMS + (VERIFIED,):
            return "unknown algorithm '%s' (expected %s or %s)" % (
                a, ", ".join(ALGORITHMS), VERIFIED)
    if not algorithms:
        return "--algorithms names no algorithm"
    top, seconds, gain, factor = verify_options(args)
    if not 0.0 <= seconds <= MAX_VERIFY_SECONDS:
        return "--verify-seconds must be from 0 to %g, got %g" % (
            MAX_VERIFY_SECONDS, seconds)
    if not 0.0 <= gain <= MAX_VERIFY_MIN_GAIN:
        return ("--verify-min-gain must be a fraction from 0 to %g, got %g"
                % (MAX_VERIFY_MIN_GAIN, gain))
    if not 0.0 <= factor <= MAX_VERIFY_SPREAD_FACTOR:
        return ("--verify-spread-factor must be from 0 to %g standard "
                "errors, got %g" % (MAX_VERIFY_SPREAD_FACTOR, factor))
    asked = [o for o, v in (("--verify-top", args.verify_top),
                            ("--verify-seconds", args.verify_seconds),
                            ("--verify-min-gain",
                             getattr(args, "verify_min_gain", None)),
                            ("--verify-spread-factor",
                             getattr(args, "verify_spread_factor", None)))
             if v is not None and top != 0]
    if VERIFIED in algorithms:
        if not args.measure_tasks:
            return ("%s times its candidates on this machine and is planned "
                    "only for measured tasks: give --measure-tasks K" %
                    VERIFIED)
        if top == 0:
            return ("--algorithms lists %s, but --verify-top 0 turns "
                    "measured selection off" % VERIFIED)
    elif "neuroshard" in algorithms and args.measure_tasks and top != 0:
        algorithms.insert(algorithms.index("neuroshard") + 1, VERIFIED)
    elif asked:
        if "neuroshard" not in algorithms:
            return ("%s: measured selection is the neuroshard search's, and "
                    "--algorithms %s has neither neuroshard nor %s" %
                    (" and ".join(asked), ",".join(algorithms), VERIFIED))
        return ("%s: measured selection applies to the measured tasks only; "
                "give --measure-tasks K" % " and ".join(asked))
    args.algorithms, args.verify_top, args.verify_seconds = \
        algorithms, top, seconds
    args.verify_min_gain, args.verify_spread_factor = gain, factor
    return None


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard_bench.evaluate",
        description="Plans held-out synthetic tasks with every algorithm "
        "and compares their predicted (and measured) plan costs.")
    parser.add_argument("--tools-dir", default=os.environ.get(
        "NEUROSHARD_TOOLS_DIR", "build/bin"),
        help="directory of neuroshard-collect (for --measure-tasks)")
    parser.add_argument("--work", default="build/eval",
                        help="directory for the generated pool")
    parser.add_argument("--pool", help="pool JSON (default: generate it "
                        "from --pool-seed and --base-tables in --work)")
    parser.add_argument("--pool-seed", type=int, default=0)
    parser.add_argument("--base-tables", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the tasks and of the index streams")
    parser.add_argument("--settings", default="4dev,8dev,scale",
                        help="comma list of %s" % ", ".join(SETTINGS))
    parser.add_argument("--algorithms", default=None,
                        help="comma list of %s and %s (default: all; %s "
                        "when tasks are measured)" %
                        (", ".join(ALGORITHMS), VERIFIED, VERIFIED))
    parser.add_argument("--tasks", type=int, default=20,
                        help="tasks per setting (default %(default)s)")
    parser.add_argument("--scale-tasks", type=int, default=2)
    parser.add_argument("--cost-model", default="default")
    parser.add_argument("--cost-risk", type=float, default=None,
                        help="the planner's cost_risk (default: the "
                        "planner's)")
    parser.add_argument("--batch-size", type=int, default=BATCH_SIZE,
                        help="global batch of the tasks and of the "
                        "measurements; the generated pool's histograms "
                        "describe batches of this many bags (default "
                        "%(default)s)")
    parser.add_argument("--measure-tasks", type=int, default=0,
                        help="measure the plans of this many tasks of each "
                        "of the settings %s with neuroshard-collect (default "
                        "0: none)" % ", ".join(MEASURED_SETTINGS))
    parser.add_argument("--verify-top", type=_verify_top, default=None,
                        help="candidates %s times on this CPU for the "
                        "measured tasks: a count from 0 (no %s) to %d, or "
                        "'auto' (the planner's choice; default %d)" %
                        (VERIFIED, VERIFIED, MAX_VERIFY_TOP,
                         DEFAULT_VERIFY_TOP))
    parser.add_argument("--verify-seconds", type=float, default=None,
                        help="seconds %s may spend timing its candidates "
                        "per task (default %g)" %
                        (VERIFIED, DEFAULT_VERIFY_SECONDS))
    parser.add_argument("--verify-min-gain", type=float, default=None,
                        help="how much faster than the table-wise plan, as "
                        "a fraction, another candidate of %s must measure "
                        "to replace it (default %g)" %
                        (VERIFIED, DEFAULT_VERIFY_MIN_GAIN))
    parser.add_argument("--verify-spread-factor", type=float, default=None,
                        help="standard errors of its rounds' spread that "
                        "%s adds to the gain another candidate must show "
                        "(0: the spread asks for nothing; default %g)" %
                        (VERIFIED, DEFAULT_VERIFY_SPREAD_FACTOR))
    parser.add_argument("--measure-repeats", type=int, default=3,
                        help="neuroshard-collect runs per measured task, in "
                        "alternating order; a set's cost is the median over "
                        "runs (default %(default)s)")
    parser.add_argument("--judge-repeats", type=int, default=0,
                        help="after a task's runs, time only the sets of "
                        "NeuroShard's default plan, the ablation and the "
                        "best baseline in this many more runs, and take "
                        "the paired ratios from them (default 0: from the "
                        "task's runs)")
    parser.add_argument("--draws", type=int, default=DEFAULT_DRAWS,
                        help="draws of the index streams the repeats go "
                        "through in turn, seeds --seed to --seed + draws - "
                        "1 (default %(default)s; 1: every repeat on the "
                        "same batch)")
    parser.add_argument("--warmup", type=int, default=3,
                        help="untimed runs per set and run")
    parser.add_argument("--iters", type=int, default=10,
                        help="timed runs per set and run")
    parser.add_argument("--results", help="markdown file whose generated "
                        "section receives the tables")
    parser.add_argument("--plot", help="PNG of per-task costs")
    parser.add_argument("--json", help="write every task's results here")
    args = parser.parse_args(argv)
    args.settings = [s for s in args.settings.split(",") if s]
    for s in args.settings:
        if s not in SETTINGS:
            parser.error("unknown setting '%s' (expected %s)" %
                         (s, ", ".join(SETTINGS)))
    if args.tasks < 1 or args.scale_tasks < 1 or args.measure_tasks < 0:
        parser.error("--tasks and --scale-tasks must be positive and "
                     "--measure-tasks >= 0")
    if args.measure_tasks and not any(s in MEASURED_SETTINGS
                                      for s in args.settings):
        parser.error("--measure-tasks %d: no setting of --settings %s is "
                     "measured (the measured settings are %s)" %
                     (args.measure_tasks, ",".join(args.settings),
                      ", ".join(MEASURED_SETTINGS)))
    problem = resolve_algorithms(args)
    if problem:
        parser.error(problem)
    if args.batch_size < 1:
        parser.error("--batch-size must be positive, got %d" %
                     args.batch_size)
    if args.measure_repeats < 1 or args.iters < 1 or args.warmup < 0:
        parser.error("--measure-repeats and --iters must be positive and "
                     "--warmup >= 0")
    if args.draws < 1:
        parser.error("--draws must be at least 1, got %d" % args.draws)
    if args.judge_repeats < 0:
        parser.error("--judge-repeats must be 0 or more, got %d" %
                     args.judge_repeats)
    try:
        settings = evaluate(args)
        accepted = acceptance(settings, args.batch_size) \
            if args.measure_tasks else None
        command = PYTHON_COMMAND + "neuroshard_bench.evaluate " + \
            shlex.join(argv if argv is not None else sys.argv[1:])
        if args.results:
            text = "Generated by:\n\n```sh\n%s\n```\n\n" % command
            text += "\n".join(d["table"] for d in settings.values())
            if accepted:
                text += "\n" + acceptance_markdown(accepted)
            write_results(args.results, text)
        if args.plot:
            plot_tasks(args.plot, settings)
        if args.json:
            data = {s: {"summary": d["summary"],
                        "measurements": d["measurements"],
                        "results": {a: [{k: v for k, v in r.items()
                                         if k != "plan"} for r in rs]
                                    for a, rs in d["results"].items()}}
                    for s, d in settings.items()}
            if accepted:
                data["acceptance"] = accepted
            with open(args.json, "w") as f:
                json.dump(data, f, indent=1)
    except (EvaluationError, st.SetTimingError, tp.PoolError) as e:
        print("evaluate: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
