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

Settings (DESIGN §10, issue 7):
  4dev   10..60 tables on 4 devices
  8dev   20..120 tables on 8 devices
  scale  1000 tables on 64 devices (drawn with replacement: the test split
         has fewer tables)
Every task has one memory capacity for all its devices, a seeded multiple
(MIN_SLACK..MAX_SLACK) of the task's bytes per device, so memory binds on
the tightest tasks: table-wise algorithms may find no plan there.

For every algorithm: tasks with a valid plan, the mean predicted plan cost
(over the tasks every algorithm solved, so means compare like with like),
the mean search time, and NeuroShard's improvement over the best of DESIGN
§4's baselines and over table-greedy-grid (its search without splits).
With --measure-tasks K, the plans of the first K 4-device (and 2-device)
tasks are also *measured* on the CPU with `neuroshard-collect` (fused
forward + backward + SGD; compute only: one process, no all-to-all):
  * every device's shards become pool tables (a column shard of width w of
    a test table is the pool table of the same base at dim w); a plan's
    measured cost is its slowest device's time;
  * every table of the task is also timed alone (the whole table at its
    dim), and the task's measured lower bound is the sum of those costs /
    devices: perfect balance of the measured per-table costs. It bounds the
    plans only as far as a set costs the sum of its tables (the fused
    kernels share a launch and their caches, so a plan can beat it
    slightly); per algorithm the mean gap to it is reported;
  * the prediction error of the chosen plans: per algorithm, the mean
    absolute and the mean signed percentage error (predicted - measured) /
    measured, where predicted is the plan's slowest device's `compute_ms`
    (the measurement has no all-to-all); negative = the model
    underestimates the plans it chose;
  * all the sets of one task (every algorithm's device sets and the single
    tables) are timed in one `neuroshard-collect` run, so they are
    interleaved in time, and that run is repeated --measure-repeats times
    (default 3) in alternating order (reversed on odd repeats); a set's
    cost is the median over repeats of the tool's median over --iters
    runs. Before measuring, a 1-minute load average above half the cores
    is warned about on stderr (the figures would be noisy), and each
    measured task prints a progress line (elapsed, ETA) on stderr.
Means over measurements are over the measured tasks every algorithm solved.

Tasks and pools are regenerated from the seeds on every run, never stored
in the repository.

    /usr/bin/python3 -m neuroshard.evaluate --tools-dir build/bin \\
        --work build/eval --results docs/results.md --plot docs/results.png
    /usr/bin/python3 -m neuroshard.evaluate --settings 4dev --tasks 10 \\
        --measure-tasks 6 --measure-repeats 3 --json build/eval/m.json
"""

import argparse
import json
import math
import os
import shlex
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from neuroshard import _core
from neuroshard import table_pool as tp

ALGORITHMS = ("neuroshard", "table-greedy-grid", "random", "size-greedy",
              "dim-greedy", "lookup-greedy", "size-lookup-greedy")
# DESIGN §4's baselines. table-greedy-grid is NeuroShard's own search
# without column splits (an ablation), reported against separately.
BASELINES = ("random", "size-greedy", "dim-greedy", "lookup-greedy",
             "size-lookup-greedy")
ABLATION = "table-greedy-grid"
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
# enough for tests).
MEASURED_SETTINGS = ("4dev", "2dev")
# How the commands that regenerate the results start: the package from the
# sources, its C++ module from the build tree.
PYTHON_COMMAND = ("PYTHONPATH=python:build/lib/python3/dist-packages "
                  "/usr/bin/python3 -m ")
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
             cost_risk: Optional[float] = None) -> Dict:
    """Plans one task with one algorithm. Returns {"valid": True, "cost_ms",
    "predicted_compute_ms", "search_ms", "plan"}, or {"valid": False,
    "error"} with the planner's message when it found no plan."""
    options = {} if cost_risk is None else {"cost_risk": cost_risk}
    try:
        # The plans are measured on this CPU: plans for CPU execution, whose
        # default model is the CPU bundle.
        plan = _core.plan(task_json(task), devices=task["devices"],
                          memory_gb=task["memory_gb"], algorithm=algorithm,
                          cost_model=cost_model, device_kind="cpu", **options)
    except _core.NeuroShardError as e:
        return {"valid": False, "error": str(e)}
    return {"valid": True, "cost_ms": float(plan["cost_ms"]),
            "predicted_compute_ms": predicted_compute(plan),
            "search_ms": float(plan["search"]["time_ms"]), "plan": plan}


def predicted_compute(plan: Dict) -> float:
    """The plan's predicted compute: its slowest device's `compute_ms` (what
    a measurement without all-to-all can be compared with)."""
    return max(float(d["compute_ms"]) for d in plan["per_device"])


def device_sets(task: Dict, plan: Dict, pool_dims: Sequence[int]
                ) -> List[List[int]]:
    """Per device, the pool table ids its shards amount to: a shard of
    width w of pool table (base, dim) is pool table (base, w)."""
    by_name = {t["name"]: t for t in task["tables"]}
    sets = [[] for _ in range(task["devices"])]
    for shard in plan["shards"]:
        table = by_name.get(shard["table"])
        if table is None:
            raise EvaluationError("plan of task '%s' names unknown table "
                                  "'%s'" % (task["name"], shard["table"]))
        width = int(shard["col_end"]) - int(shard["col_begin"])
        if width not in pool_dims:
            raise EvaluationError(
                "task '%s': shard [%d, %d) of table '%s' is %d wide; the "
                "pool has no table of that dim (%s)" %
                (task["name"], shard["col_begin"], shard["col_end"],
                 shard["table"], width, ", ".join(map(str, pool_dims))))
        base = table["pool_id"] // len(pool_dims)
        device = int(shard["device"])
        if not 0 <= device < task["devices"]:
            raise EvaluationError("task '%s': shard on device %d of %d" %
                                  (task["name"], device, task["devices"]))
        sets[device].append(base * len(pool_dims) +
                            list(pool_dims).index(width))
    return sets


def measure_sets(tool: str, pool_path: str, sets: Dict[int, List[int]],
                 args) -> Dict[int, float]:
    """Median forward + backward + SGD time (ms) of each non-empty set,
    timed by one neuroshard-collect run in the order of `sets` (an empty
    set costs 0)."""
    costs = {k: 0.0 for k, ids in sets.items() if not ids}
    pending = {k: ids for k, ids in sets.items() if ids}
    if not pending:
        return costs
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl",
                                     delete=False) as f:
        for k, ids in pending.items():
            f.write(json.dumps({"id": k, "tables": ids}) + "\n")
        sets_path = f.name
    command = [tool, "--pool", pool_path, "--sets", sets_path] + \
        collect_options(args)
    try:
        result = subprocess.run(command, capture_output=True, text=True)
    finally:
        os.unlink(sets_path)
    if result.returncode != 0:
        raise EvaluationError("'%s' exited with %d: %s" %
                              (shlex.join(command), result.returncode,
                               result.stderr.strip()))
    for line in result.stdout.splitlines():
        try:
            sample = json.loads(line)
            costs[int(sample["id"])] = float(sample["cost_ms"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise EvaluationError("'%s' printed an unexpected line: %.200s"
                                  % (tool, line))
    missing = sorted(set(pending) - set(costs))
    if missing:
        raise EvaluationError("'%s' timed no set %s" % (tool, missing[:5]))
    return costs


def measure_repeated(sets: Dict[int, List[int]], repeats: int,
                     measure: Callable[[Dict[int, List[int]]],
                                       Dict[int, float]]
                     ) -> Dict[int, float]:
    """Times `sets` `repeats` times with `measure` (one tool run over a dict
    of sets, timed in the dict's order): in the given order on even repeats,
    reversed on odd ones, so that no set is always timed first or last.
    Returns per set the median over repeats."""
    if repeats < 1:
        raise EvaluationError("--measure-repeats must be at least 1, got %d"
                              % repeats)
    keys = list(sets)
    samples = {k: [] for k in keys}
    for r in range(repeats):
        order = keys if r % 2 == 0 else keys[::-1]
        costs = measure({k: sets[k] for k in order})
        for k in keys:
            samples[k].append(float(costs[k]))
    return {k: float(np.median(v)) for k, v in samples.items()}


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


def summarise(tasks: Sequence[Dict], results: Dict[str, List[Dict]],
              algorithms: Sequence[str]) -> Dict:
    """Per algorithm: valid plans, mean predicted cost over the tasks every
    algorithm solved, mean search time; over the measured ones among them
    the mean measured cost, the mean gap to the tasks' measured lower
    bounds (%) and the mean absolute and signed prediction error of the
    plans' compute (%); and NeuroShard's improvement over the best
    baseline and over the ablation."""
    common = [i for i in range(len(tasks))
              if all(results[a][i]["valid"] for a in algorithms)]
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
        rows[a] = {
            "valid": len(valid),
            "cost_ms": (float(np.mean([results[a][i]["cost_ms"]
                                       for i in common]))
                        if common else None),
            "measured_ms": (float(np.mean([results[a][i]["measured_ms"]
                                           for i in measured_common]))
                            if measured_common else None),
            "search_ms": (float(np.mean([r["search_ms"] for r in valid]))
                          if valid else None),
            "gap_percent": (float(np.mean(
                [100.0 * (results[a][i]["measured_ms"] - b) / b
                 for i, b in bounded])) if bounded else None),
            "mape_percent": errors[0],
            "signed_error_percent": errors[1],
        }
    summary = {"tasks": len(tasks), "common": len(common),
               "measured_common": len(measured_common), "rows": rows,
               "lower_bound_ms": (float(np.mean([b for _, b in bounded]))
                                  if bounded else None)}
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
        line = "| %s | %d / %d | %s |" % (a, row["valid"], summary["tasks"],
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
    return "\n".join(lines) + "\n"


def _percent(value: Optional[float], signed: bool = False) -> str:
    if value is None:
        return "–"
    return ("%+.1f%%" if signed else "%.1f%%") % value


def _measurement_sentence(summary: Dict) -> str:
    """How the measured columns were obtained and what they mean."""
    m = summary.get("measurement", {})
    how = ""
    if m:
        how = ("Measured on the CPU with `%s`, all of a task's sets (every "
               "algorithm's devices and every table alone) in one run, %d "
               "run%s per task in alternating order; a set's cost is the "
               "median over runs of its median over %d iterations%s. " %
               (m["command"], m["repeats"], "" if m["repeats"] == 1 else "s",
                m["iters"], "" if m.get("loadavg") is None else
                " (1-minute load average %.2f before measuring)" %
                m["loadavg"]))
    return (how + "A plan's measured cost is its slowest device's (compute "
            "only). Lower bound = the sum of the task's tables timed alone / "
            "devices (mean %s ms); gap = (measured - bound) / bound; "
            "prediction error = (predicted - measured) / measured, where "
            "predicted is the slowest device's `compute_ms` (negative: the "
            "model underestimates the plans it chose)." %
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


def _check_held_out(pool: Dict, pool_path: str, cost_model: str,
                    log) -> None:
    """Warns when the pool is not the one the cost model was trained on:
    its test split would then not be held out from the model."""
    bundle = cost_model
    if cost_model == _core.DEFAULT_COST_MODEL:
        bundle = _core.find_default_model("cpu")
    meta_path = os.path.join(bundle, "meta.json")
    if not bundle or not os.path.exists(meta_path):
        return
    with open(meta_path) as f:
        trained_on = json.load(f).get("training", {}).get("pool")
    if trained_on and trained_on != tp.pool_fingerprint(pool):
        print("warning: pool '%s' (fingerprint %s) is not the pool the cost "
              "model was trained on (%s); its test tables may not be held "
              "out" % (pool_path, tp.pool_fingerprint(pool), trained_on),
              file=log)


def evaluate(args, log=sys.stdout, err=None) -> Dict:
    err = err or sys.stderr
    collect_tool = _tool(args.tools_dir, "neuroshard-collect") \
        if args.measure_tasks else None
    pool_path = _load_or_make_pool(args, log)
    pool = tp.load_pool(pool_path)
    _check_held_out(pool, pool_path, args.cost_model, log)
    pool_dims = pool.get("dims", list(tp.POOL_DIMS))
    settings = {}
    for setting in args.settings:
        count = args.scale_tasks if setting == "scale" else args.tasks
        tasks = make_tasks(pool, setting, count, args.seed,
                           args.batch_size)
        results = {a: [] for a in args.algorithms}
        started = time.time()
        for task in tasks:
            for a in args.algorithms:
                results[a].append(run_plan(task, a, args.cost_model,
                                           args.cost_risk))
        measurements, measurement = [], None
        if setting in MEASURED_SETTINGS and args.measure_tasks:
            measurement = {
                "command": shlex.join(["neuroshard-collect"] +
                                      collect_options(args)),
                "repeats": args.measure_repeats, "warmup": args.warmup,
                "iters": args.iters, "loadavg": check_quiet(err)}
            measurements = _measure(tasks[:args.measure_tasks], results,
                                    args.algorithms, collect_tool, pool_path,
                                    pool_dims, args, err)
        summary = summarise(tasks, results, args.algorithms)
        if measurement:
            summary["measurement"] = measurement
        table = markdown_table(setting, summary, args.algorithms)
        print(table, file=log)
        print("(%s: %.0f s)\n" % (setting, time.time() - started), file=log,
              flush=True)
        settings[setting] = {"tasks": tasks, "results": results,
                             "summary": summary, "table": table,
                             "measurements": measurements}
    return settings


def collect_options(args) -> List[str]:
    """neuroshard-collect's timing options, after --pool and --sets."""
    return ["--device", "cpu", "--batch-size", str(args.batch_size),
            "--warmup",
            str(args.warmup), "--iters", str(args.iters), "--seed",
            str(args.seed)]


def _measure(tasks, results, algorithms, tool, pool_path, pool_dims, args,
             err) -> List[Dict]:
    """Measures task by task: adds "measured_ms" (slowest device's measured
    time) and the task's "lower_bound_ms" to the valid plans of `tasks`;
    returns per task its lower bound, its tables' costs and the time it
    took. Each task's distinct sets are timed together, repeated."""
    measurements = []
    started = time.time()
    for i, task in enumerate(tasks):
        task_started = time.time()
        keys, sets = {}, {}

        def add(ids):
            key = tuple(sorted(ids))
            if key not in keys:
                keys[key] = len(keys)
                sets[keys[key]] = list(key)
            return keys[key]

        for a in algorithms:
            r = results[a][i]
            if r["valid"]:
                r["device_sets"] = device_sets(task, r["plan"], pool_dims)
                for ids in r["device_sets"]:
                    add(ids)
        singles = [add([t["pool_id"]]) for t in task["tables"]]
        costs = measure_repeated(
            sets, args.measure_repeats,
            lambda ordered: measure_sets(tool, pool_path, ordered, args))
        table_costs = [costs[k] for k in singles]
        bound = lower_bound(table_costs, task["devices"])
        for a in algorithms:
            r = results[a][i]
            if r["valid"]:
                r["measured_ms"] = max(costs[keys[tuple(sorted(ids))]]
                                       for ids in r["device_sets"])
                r["lower_bound_ms"] = bound
        now = time.time()
        measurements.append({"task": task["name"],
                             "tables": len(task["tables"]),
                             "sets": len(sets),
                             "lower_bound_ms": bound,
                             "table_costs_ms": table_costs,
                             "seconds": now - task_started})
        eta = (now - started) / (i + 1) * (len(tasks) - i - 1)
        print("measured task %d of %d (%s: %d sets x %d runs) in %.0f s; "
              "elapsed %.0f s, ETA %.0f s" %
              (i + 1, len(tasks), task["name"], len(sets),
               args.measure_repeats, now - task_started, now - started, eta),
              file=err, flush=True)
    return measurements


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.evaluate",
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
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS))
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
                        help="measure the plans of this many 4-device (and "
                        "2-device) tasks with neuroshard-collect (default 0: "
                        "none)")
    parser.add_argument("--measure-repeats", type=int, default=3,
                        help="neuroshard-collect runs per measured task, in "
                        "alternating order; a set's cost is the median over "
                        "runs (default %(default)s)")
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
    args.algorithms = [a for a in args.algorithms.split(",") if a]
    for s in args.settings:
        if s not in SETTINGS:
            parser.error("unknown setting '%s' (expected %s)" %
                         (s, ", ".join(SETTINGS)))
    for a in args.algorithms:
        if a not in ALGORITHMS:
            parser.error("unknown algorithm '%s' (expected %s)" %
                         (a, ", ".join(ALGORITHMS)))
    if args.tasks < 1 or args.scale_tasks < 1 or args.measure_tasks < 0:
        parser.error("--tasks and --scale-tasks must be positive and "
                     "--measure-tasks >= 0")
    if args.batch_size < 1:
        parser.error("--batch-size must be positive, got %d" %
                     args.batch_size)
    if args.measure_repeats < 1 or args.iters < 1 or args.warmup < 0:
        parser.error("--measure-repeats and --iters must be positive and "
                     "--warmup >= 0")
    try:
        settings = evaluate(args)
        command = PYTHON_COMMAND + "neuroshard.evaluate " + \
            shlex.join(argv if argv is not None else sys.argv[1:])
        if args.results:
            text = "Generated by:\n\n```sh\n%s\n```\n\n" % command
            text += "\n".join(d["table"] for d in settings.values())
            write_results(args.results, text)
        if args.plot:
            plot_tasks(args.plot, settings)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({s: {"summary": d["summary"],
                               "measurements": d["measurements"],
                               "results": {a: [{k: v for k, v in r.items()
                                                if k != "plan"}
                                               for r in rs]
                                           for a, rs in
                                           d["results"].items()}}
                           for s, d in settings.items()}, f, indent=1)
    except (EvaluationError, tp.PoolError) as e:
        print("evaluate: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
