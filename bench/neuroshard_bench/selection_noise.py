#===- selection_noise.py - The host's selection noise, measured apart ----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""The selection-noise experiments (docs/planner.md, "Gains beyond the
host's noise"); the measurement itself is calibration's
(neuroshard.selection_noise).

python3 -m neuroshard_bench.selection_noise BUNDLE measures the noise for
an existing bundle calibrated on this machine (the pool it was trained on
is regenerated, or --pool): it plans --tasks of calibration's experience
tasks with measured selection and, once every task is planned, times each
plan's candidates apart from the planning (selection_noise.compare_plans);
with --write it records the figures in BUNDLE/meta.json. With --campaign
JSON it measures nothing and compares the plans an evaluation verified
with the evaluation's own runs of the same plans (campaign_comparisons),
which time them minutes later among the other plans' sets.

    PYTHONPATH=python:bench:build/lib/python3/dist-packages \\
        /usr/bin/python3 -m neuroshard_bench.selection_noise BUNDLE --write
"""
import argparse
import json
import math
import os
import sys
import tempfile
from typing import Dict, List, Optional, Sequence, TextIO, Tuple

from neuroshard import _core
from neuroshard import bundle_meta as bm
from neuroshard import calibrate
from neuroshard import collect
from neuroshard import jsonio
from neuroshard import selection_noise as sn
from neuroshard import table_pool as tp

# Tasks planned by the command line (calibration uses its experience tasks).
DEFAULT_TASKS = 8


def campaign_comparisons(results: Dict[str, List[Dict]]) -> List[Dict]:
    """The comparisons (selection_noise.comparisons()) of an evaluation's
    setting (its "results": plan results per algorithm and task,
    neuroshard_bench.evaluate's JSON): each candidate of the verified plans
    whose plan the evaluation measured too (a baseline's or the table-wise
    plan, whose origin names the algorithm), against the incumbent's plan,
    with the evaluation's runs as the views."""
    out = []
    for task, verified in enumerate(results.get("neuroshard-verified", [])):
        verification = verified.get("verification")
        if not verification:
            continue
        candidates = verification["candidates"]
        runs = [results.get(c["origin"], [{}] * (task + 1))[task]
                .get("measured_runs_ms") for c in candidates]
        incumbent = int(verification["incumbent"])
        if not runs[incumbent]:
            continue
        spread = float(verification.get("round_spread", 0.0))
        for c, candidate in sn.raced(verification):
            if not runs[c] or len(runs[c]) != len(runs[incumbent]):
                continue
            out.append(sn.comparison(
                candidate, spread,
                [math.log(a / b) for a, b in zip(runs[c], runs[incumbent])]))
    return out


def plan_task(task: Dict, bundle: str, verify_seconds: float) -> Dict:
    """`task` planned with `bundle` and measured selection (no experience
    appended)."""
    return _core.plan({"batch_size": task["batch_size"],
                       "tables": task["tables"]},
                      devices=task["devices"], memory_gb=task["memory_gb"],
                      cost_model=bundle, device_kind="cpu",
                      verify_top=_core.DEFAULT_VERIFY_TOP,
                      verify_seconds=verify_seconds, experience="none")


def _pool_of(bundle: str, meta: Dict, pool_path: Optional[str],
             work: str) -> Tuple[Dict, str]:
    """The pool the bundle was trained on and its file: --pool, else
    regenerated from its seed at its batch, checked against its recorded
    fingerprint and written to `work`."""
    if pool_path:
        try:
            return tp.load_pool(pool_path), pool_path
        except (OSError, tp.PoolError) as e:
            raise sn.SelectionNoiseError("cannot read the pool '%s': %s" %
                                      (pool_path, e))
    seed = meta.get("seed", 0)
    batch = meta.get("batch_size")
    pool = tp.generate_pool(seed, calibrate.DEFAULT_BASE_TABLES,
                            sample_bags=batch)
    trained_on = meta.get("training", {}).get("pool")
    if trained_on and trained_on != tp.pool_fingerprint(pool):
        raise sn.SelectionNoiseError(
            "bundle '%s' was trained on pool %s, not on the pool of seed %s "
            "with %d base tables (%s); pass it with --pool" %
            (bundle, trained_on, seed, calibrate.DEFAULT_BASE_TABLES,
             tp.pool_fingerprint(pool)))
    path = os.path.join(work, "pool.json")
    with open(path, "w") as f:
        json.dump(pool, f)
    return pool, path


def measure_bundle(args, log: TextIO) -> Dict:
    """The command line's measurement: plans args.tasks experience tasks
    of the bundle's pool and compares their candidates
    (selection_noise.time_apart)."""
    meta = bm.read(args.bundle, sn.SelectionNoiseError)
    host = _core.host_description()["cpu_model"]
    if meta.get("hardware") != host:
        raise sn.SelectionNoiseError(
            "bundle '%s' was measured on '%s', not on this machine ('%s'): "
            "measured selection does not apply to it here" %
            (args.bundle, meta.get("hardware"), host))
    tool = collect.find_tool(args.tool)

    def report(task: Dict, these: List[Dict]) -> None:
        print("%s: %d tables, %d candidates compared%s" %
              (task["name"], len(task["tables"]), len(these),
               "".join(", %.3f in the planning and %.3f apart" %
                       (c["planning"],
                        math.exp(math.log(c["planning"]) - c["d"]))
                       for c in these)), file=log)

    with tempfile.TemporaryDirectory() as work:
        pool, pool_path = _pool_of(args.bundle, meta, args.pool, work)
        args.batch_size = int(pool.get("sample_bags", meta.get("batch_size")))
        pool_dims = pool.get("dims", list(tp.POOL_DIMS))
        # Every task planned first, then every plan's candidates timed: as
        # in calibration and in an evaluation, the views come minutes after
        # most plannings, not seconds.
        plans = []
        for task in calibrate.experience_tasks(
                pool, args.seed, args.tasks, args.memory_cap_gb):
            try:
                plans.append((task, plan_task(task, args.bundle,
                                              args.verify_seconds)))
            except _core.NeuroShardError as e:
                print("%s: no plan: %s" % (task["name"],
                                           str(e).splitlines()[0]), file=log)
        found, _ = sn.compare_plans(plans, pool_dims, pool_path, tool,
                                    args, report=report)
    figures = sn.noise_figures(found)
    figures["tasks"] = len(plans)
    return figures


def _campaigns(paths: Sequence[str], bundle: Optional[str],
               write: bool) -> int:
    """--campaign: one line of figures per file and setting, then the
    figures of all of them together, recorded in `bundle` with --write."""
    pooled: List[Dict] = []
    for path in paths:
        try:
            data = jsonio.read_json(path, "campaign", sn.SelectionNoiseError)
        except sn.SelectionNoiseError as e:
            print("selection_noise: error: %s" % e, file=sys.stderr)
            return 1
        for setting, entry in data.items():
            if not isinstance(entry, dict) or "results" not in entry:
                continue
            found = campaign_comparisons(entry["results"])
            plans = len(entry["results"].get("neuroshard-verified", []))
            if not found:
                print("%s %s: no candidate raced that the evaluation "
                      "measured" % (os.path.basename(path), setting))
                continue
            pooled += found
            print("%s %s: %s" % (os.path.basename(path), setting,
                                 campaign_line(sn.noise_figures(found),
                                               plans)))
    if len(pooled) < sn.MIN_COMPARISONS:
        print("selection_noise: error: %d candidates could be compared (at "
              "least %d are needed)" % (len(pooled), sn.MIN_COMPARISONS),
              file=sys.stderr)
        return 1
    figures = sn.noise_figures(pooled)
    print("all: %s" % campaign_line(figures, None))
    if write:
        try:
            sn.record(bundle, figures, {"campaigns": [os.path.basename(p)
                                                      for p in paths]})
        except sn.SelectionNoiseError as e:
            print("selection_noise: error: %s" % e, file=sys.stderr)
            return 1
        print("recorded in %s" % bm.path(bundle))
    return 0


def campaign_line(figures: Dict, plans: Optional[int]) -> str:
    """selection_noise.summary_line() for comparisons against an
    evaluation's runs."""
    return ("selection noise %.1f%% (log sd; %.1f%% before the rounds' and "
            "the evaluation's own spread, mean difference %+.1f%%) over %d "
            "candidates%s, against the evaluation's runs of the same plans" %
            (100 * figures["log_sd"], 100 * figures["raw_log_sd"],
             100 * figures["mean_log_difference"], figures["comparisons"],
             "" if plans is None else " of %d plans" % plans))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard_bench.selection_noise",
        description="Measures how far measured selection's ratios stray on "
        "this machine from the same plans timed apart from the planning, "
        "for a bundle calibrated here, and with --write records it in the "
        "bundle's meta.json as \"selection_noise\", which the planner then "
        "asks every candidate's gain to exceed.")
    parser.add_argument("bundle", nargs="?", default=None,
                        help="cost-model bundle calibrated on this machine")
    parser.add_argument("--campaign", action="append", default=None,
                        metavar="JSON", help="measure nothing: the same "
                        "figures for the plans an evaluation verified "
                        "(neuroshard_bench.evaluate --json), against the "
                        "evaluation's runs of the same plans, per setting "
                        "and for all together (repeatable); with --write, "
                        "the latter are recorded in BUNDLE")
    parser.add_argument("--pool", default=None, help="the pool the bundle "
                        "was trained on (default: regenerated from its seed "
                        "and checked against its fingerprint)")
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS,
                        help="tasks to plan (default %(default)s)")
    parser.add_argument("--views", type=int, default=sn.DEFAULT_VIEWS,
                        help="processes that time the candidates' sets "
                        "apart, each on its own draw (default %(default)s)")
    parser.add_argument("--verify-seconds", type=float,
                        default=_core.DEFAULT_VERIFY_SECONDS,
                        help="measured selection's budget per plan (default "
                        "%(default)s)")
    parser.add_argument("--warmup", type=int, default=sn.DEFAULT_WARMUP)
    parser.add_argument("--iters", type=int, default=sn.DEFAULT_ITERS)
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the tasks and the views' draws")
    parser.add_argument("--memory-cap-gb", type=float, default=4.0,
                        help="most GB of tables in a task's device")
    parser.add_argument("--tool", default=None,
                        help="timing tool (default: %s on PATH, else "
                        "build/bin/%s)" % (collect.TOOL_NAME,
                                           collect.TOOL_NAME))
    parser.add_argument("--write", action="store_true",
                        help="record the noise in BUNDLE/meta.json")
    args = parser.parse_args(argv)
    if args.campaign:
        if args.write and not args.bundle:
            parser.error("--campaign --write records the figures in a "
                         "bundle: name it")
        return _campaigns(args.campaign, args.bundle, args.write)
    if not args.bundle:
        parser.error("a bundle (or --campaign) is required")
    if args.tasks < 1 or args.views < 2 or args.iters < 1 or \
            args.warmup < 0:
        parser.error("--tasks must be at least 1, --views at least 2, "
                     "--iters at least 1 and --warmup not negative; got %d, "
                     "%d, %d and %d" % (args.tasks, args.views, args.iters,
                                        args.warmup))
    if not 0 <= args.verify_seconds < math.inf or \
            not args.memory_cap_gb > 0:
        parser.error("--verify-seconds must be a finite number >= 0 and "
                     "--memory-cap-gb positive; got %g and %g" %
                     (args.verify_seconds, args.memory_cap_gb))
    try:
        figures = measure_bundle(args, sys.stderr)
        if figures["comparisons"] < sn.MIN_COMPARISONS:
            raise sn.SelectionNoiseError(
                "only %d candidates could be compared (at least %d are "
                "needed); plan more --tasks" % (figures["comparisons"],
                                                sn.MIN_COMPARISONS))
        print(sn.summary_line(figures, figures["tasks"], args.views))
        if args.write:
            sn.record(args.bundle, figures, {"views": args.views,
                                          "verify_seconds":
                                          args.verify_seconds})
            print("recorded in %s" % bm.path(args.bundle))
    except (sn.SelectionNoiseError, collect.CollectError, tp.PoolError) as e:
        print("selection_noise: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

