#===- selection_noise.py - How far measured selection strays on a host ----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Measures the noise of measured selection on this machine and records it
in a cost-model bundle as "selection_noise" (docs/planner.md, "Gains beyond
the host's noise").

Measured selection times the candidates' device sets for a few seconds
inside one planning. On a host whose state drifts over minutes, the rounds
of one planning can agree with each other and still not with the same
plans timed minutes later, so their spread alone understates how far a
measured gain can be trusted. This module plans tasks with measured
selection and, once every task is planned, times each plan's candidates'
device sets with neuroshard-collect, in --views processes on as many
draws of the inputs, and compares the ratio to the incumbent of each
candidate that
raced on after its first round, as the planning measured it (its rounds'
geometric mean), with the ratio the views measure (the geometric mean over
the views of the slowest devices' ratio).

With d the log of the first over the second, n the candidate's rounds, s
the planning's round spread and v the variance of the views' mean log
ratio, the noise is sqrt(max(0, mean(d^2 - s^2 / n - v))): what the two
measurements disagree by beyond what the rounds' own spread and the views'
own spread account for, the part that more rounds of the same planning do
not shrink. The planner adds it to the rounds' own
spread in the gain a candidate needs (VerifyOptions::spreadFactor).

python3 -m neuroshard.selection_noise BUNDLE measures it for an existing
bundle (the pool it was trained on is regenerated, or --pool) and writes it
into BUNDLE/meta.json with --write; calibration measures it on the plans of
its experience stage (neuroshard.calibrate). With --campaign JSON it
measures nothing and compares the plans an evaluation verified with the
evaluation's own runs of the same plans (campaign_comparisons), which time
them minutes later among the other plans' sets."""
import argparse
import json
import math
import os
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, TextIO, Tuple

import numpy as np

from neuroshard import _core
from neuroshard import collect
from neuroshard import evaluate as ev
from neuroshard import jsonio
from neuroshard import table_pool as tp

# Processes (each on its own draw of the inputs) that time the candidates'
# sets apart from the planning, and their timing options (those of the
# evaluation).
DEFAULT_VIEWS = 3
DEFAULT_WARMUP = 3
DEFAULT_ITERS = 10
# Tasks planned by the command line (calibration uses its experience tasks).
DEFAULT_TASKS = 8
# The fewest comparisons a recorded noise rests on.
MIN_COMPARISONS = 4
# The fewest rounds of a candidate compared: one dropped after its first
# round (VerifyOptions::dropMargin) was dropped because that round was
# slow, so its ratio is biased by the drop, and only candidates that race
# on can be chosen.
MIN_ROUNDS = 2


class SelectionNoiseError(Exception):
    """A problem that stops the measurement; the message names it."""


def candidate_sets(task: Dict, plan: Dict, pool_dims: Sequence[int]
                   ) -> Optional[List[List[List]]]:
    """Per candidate of `plan`'s measured selection, its device sets as
    neuroshard-collect's entries (evaluate.device_sets); None where the plan
    was not verified or records no candidate's shards. `task` has
    "devices" and "tables", each with its "pool_id"."""
    verification = plan.get("verification")
    if not verification:
        return None
    candidates = verification.get("candidates") or []
    if not candidates or any("shards" not in c for c in candidates):
        return None
    return [ev.device_sets(task, {"shards": c["shards"]}, pool_dims)
            for c in candidates]


def raced(verification: Dict) -> List[Tuple[int, Dict]]:
    """(index, candidate) of the verification's candidates other than the
    incumbent timed in at least MIN_ROUNDS rounds: the ones compared."""
    incumbent = int(verification["incumbent"])
    return [(c, candidate)
            for c, candidate in enumerate(verification["candidates"])
            if c != incumbent and
            int(candidate.get("rounds", 0)) >= MIN_ROUNDS]


def comparisons(plan: Dict, sets: List[List[List]],
                views: List[Dict[int, float]], keys: Dict) -> List[Dict]:
    """One comparison per candidate of `plan` that raced(): {"origin",
    "rounds", "planning" (its geometric mean ratio to the incumbent),
    "views" (its ratio in each view), "d" (the log
    of the planning's ratio over the views' geometric mean), "round_var"
    (the round spread squared over its rounds), "view_var" (the variance of
    the views' mean log ratio)}. `sets` are the candidates' device sets,
    `views` each view's time per set number, `keys` the set numbers by
    evaluate.set_key."""
    verification = plan["verification"]
    incumbent = int(verification["incumbent"])
    spread = float(verification.get("round_spread", 0.0))

    def slowest(c: int, view: Dict[int, float]) -> float:
        return max(view[keys[ev.set_key(ids)]] for ids in sets[c] if ids)

    return [_comparison(candidate, spread,
                        [math.log(slowest(c, view) / slowest(incumbent, view))
                         for view in views])
            for c, candidate in raced(verification)]


def _comparison(candidate: Dict, spread: float, logs: List[float]) -> Dict:
    """The comparison of a verification's `candidate` (its rounds, its mean
    ratio) with the log ratios `logs` the other measurement found, in a
    planning of round spread `spread` (comparisons())."""
    rounds = int(candidate["rounds"])
    planning = float(candidate["mean_ratio"])
    return {"origin": candidate["origin"], "rounds": rounds,
            "planning": planning, "views": [math.exp(x) for x in logs],
            "d": math.log(planning) - float(np.mean(logs)),
            "round_var": spread * spread / rounds,
            "view_var": float(np.var(logs, ddof=1)) / len(logs)
            if len(logs) > 1 else 0.0}


def noise_figures(found: Sequence[Dict]) -> Dict:
    """The noise of comparisons `found` (comparisons()): {"log_sd" (beyond
    the rounds' and the views' own spread), "raw_log_sd" (the root mean
    square of d), "mean_log_difference" (the mean of d), "comparisons"}."""
    if not found:
        raise SelectionNoiseError("no candidate was timed in a planning, so "
                                  "there is nothing to compare")
    d = np.array([c["d"] for c in found])
    own = np.array([c["round_var"] + c["view_var"] for c in found])
    return {"log_sd": float(math.sqrt(max(0.0, float(np.mean(d * d - own))))),
            "raw_log_sd": float(math.sqrt(float(np.mean(d * d)))),
            "mean_log_difference": float(np.mean(d)),
            "comparisons": len(found)}


def campaign_comparisons(results: Dict[str, List[Dict]]) -> List[Dict]:
    """The comparisons() of an evaluation's setting (its "results": plan
    results per algorithm and task, neuroshard.evaluate's JSON): each
    candidate of the verified plans whose plan the evaluation measured too
    (a baseline's or the table-wise plan, whose origin names the algorithm),
    against the incumbent's plan, with the evaluation's runs as the views."""
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
        for c, candidate in raced(verification):
            if not runs[c] or len(runs[c]) != len(runs[incumbent]):
                continue
            out.append(_comparison(
                candidate, spread,
                [math.log(a / b) for a, b in zip(runs[c], runs[incumbent])]))
    return out


def time_apart(task: Dict, plan: Dict, pool_dims: Sequence[int],
               pool_path: str, tool: str, options) -> List[Dict]:
    """Times the device sets of `plan`'s candidates in options.views
    neuroshard-collect processes (view v on draw v, every other one in
    reverse order) and returns comparisons() ([] without timing anything
    where the plan has no candidate to compare)."""
    sets = candidate_sets(task, plan, pool_dims)
    if not sets or not raced(plan["verification"]):
        return []
    keys: Dict = {}
    numbered: Dict[int, List] = {}
    for d in range(task["devices"]):
        for candidate in sets:
            if candidate[d]:
                ev._add_set(keys, numbered, candidate[d])
    timing = argparse.Namespace(batch_size=options.batch_size,
                                warmup=options.warmup, iters=options.iters,
                                seed=options.seed)
    runs: Dict[int, List[float]] = {}
    try:
        ev.measure_repeated(
            numbered, options.views,
            lambda s, draw: ev.measure_sets(tool, pool_path, s, timing, draw),
            runs=runs, draws=options.views)
    except ev.EvaluationError as e:
        raise SelectionNoiseError(str(e))
    views = [{k: runs[k][v] for k in runs} for v in range(options.views)]
    return comparisons(plan, sets, views, keys)


def compare_plans(plans: Sequence[Tuple[Dict, Dict]], pool_dims: Sequence[int],
                  pool_path: str, tool: str, options,
                  budget_s: float = math.inf,
                  report: Optional[Callable[[Dict, List[Dict]], None]] = None
                  ) -> Tuple[List[Dict], int]:
    """time_apart of each (task, plan) of `plans` (tasks as
    calibrate.experience_tasks makes them), plan after plan while the next
    fits in budget_s at the rate of the plans timed so far; `report(task,
    its comparisons)` after each. Returns the comparisons and the number of
    plans that gave some."""
    found: List[Dict] = []
    timed = 0
    start = time.monotonic()
    for task, plan in plans:
        spent = time.monotonic() - start
        if timed and spent + spent / timed > budget_s:
            break
        these = time_apart(with_pool_ids(task), plan, pool_dims, pool_path,
                           tool, options)
        timed += bool(these)
        found += these
        if report:
            report(task, these)
    return found, timed


def record(bundle: str, figures: Dict, extra: Dict) -> Dict:
    """Writes figures (noise_figures()) and `extra` into bundle/meta.json
    as "selection_noise" (in place, as jsonio.set_field writes); returns the
    record."""
    entry = dict(figures)
    entry.update(extra)
    jsonio.set_field(os.path.join(bundle, "meta.json"), "selection_noise",
                     entry, SelectionNoiseError)
    return entry


def with_pool_ids(task: Dict) -> Dict:
    """`task` (calibrate.experience_tasks) with each table's "pool_id" from
    the task's "pool_ids", as evaluate.device_sets reads them."""
    tables = [dict(t, pool_id=int(p))
              for t, p in zip(task["tables"], task["pool_ids"])]
    return dict(task, tables=tables)


def plan_task(task: Dict, bundle: str, verify_seconds: float) -> Dict:
    """`task` planned with `bundle` and measured selection (no experience
    appended)."""
    return _core.plan({"batch_size": task["batch_size"],
                       "tables": task["tables"]},
                      devices=task["devices"], memory_gb=task["memory_gb"],
                      cost_model=bundle, device_kind="cpu",
                      verify_top=_core.DEFAULT_VERIFY_TOP,
                      verify_seconds=verify_seconds, experience="none")


def summary_line(figures: Dict, tasks: int, views: int) -> str:
    """One line for the user: the noise and what it rests on."""
    return ("selection noise %.1f%% (log sd; %.1f%% before the rounds' and "
            "the views' own spread, mean difference %+.1f%%) over %d "
            "candidates of %d plans, each timed apart in %d views" %
            (100 * figures["log_sd"], 100 * figures["raw_log_sd"],
             100 * figures["mean_log_difference"], figures["comparisons"],
             tasks, views))


def _pool_of(bundle: str, meta: Dict, pool_path: Optional[str],
             work: str) -> Tuple[Dict, str]:
    """The pool the bundle was trained on and its file: --pool, else
    regenerated from its seed at its batch, checked against its recorded
    fingerprint and written to `work`."""
    if pool_path:
        try:
            return tp.load_pool(pool_path), pool_path
        except (OSError, tp.PoolError) as e:
            raise SelectionNoiseError("cannot read the pool '%s': %s" %
                                      (pool_path, e))
    seed = meta.get("seed", 0)
    batch = meta.get("batch_size")
    from neuroshard import calibrate
    pool = tp.generate_pool(seed, calibrate.DEFAULT_BASE_TABLES,
                            sample_bags=batch)
    trained_on = meta.get("training", {}).get("pool")
    if trained_on and trained_on != tp.pool_fingerprint(pool):
        raise SelectionNoiseError(
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
    of the bundle's pool and compares their candidates (time_apart)."""
    from neuroshard import calibrate
    meta = jsonio.read_json(os.path.join(args.bundle, "meta.json"), "",
                            SelectionNoiseError)
    host = _core.host_description()["cpu_model"]
    if meta.get("hardware") != host:
        raise SelectionNoiseError(
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
        found, _ = compare_plans(plans, pool_dims, pool_path, tool, args,
                                 report=report)
    figures = noise_figures(found)
    figures["tasks"] = len(plans)
    return figures


def _campaigns(paths: Sequence[str], bundle: Optional[str],
               write: bool) -> int:
    """--campaign: one line of figures per file and setting, then the
    figures of all of them together, recorded in `bundle` with --write."""
    pooled: List[Dict] = []
    for path in paths:
        try:
            data = jsonio.read_json(path, "campaign", SelectionNoiseError)
        except SelectionNoiseError as e:
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
                                 campaign_line(noise_figures(found), plans)))
    if len(pooled) < MIN_COMPARISONS:
        print("selection_noise: error: %d candidates could be compared (at "
              "least %d are needed)" % (len(pooled), MIN_COMPARISONS),
              file=sys.stderr)
        return 1
    figures = noise_figures(pooled)
    print("all: %s" % campaign_line(figures, None))
    if write:
        try:
            record(bundle, figures, {"campaigns": [os.path.basename(p)
                                                   for p in paths]})
        except SelectionNoiseError as e:
            print("selection_noise: error: %s" % e, file=sys.stderr)
            return 1
        print("recorded in %s" % os.path.join(bundle, "meta.json"))
    return 0


def campaign_line(figures: Dict, plans: Optional[int]) -> str:
    """summary_line() for comparisons against an evaluation's runs."""
    return ("selection noise %.1f%% (log sd; %.1f%% before the rounds' and "
            "the evaluation's own spread, mean difference %+.1f%%) over %d "
            "candidates%s, against the evaluation's runs of the same plans" %
            (100 * figures["log_sd"], 100 * figures["raw_log_sd"],
             100 * figures["mean_log_difference"], figures["comparisons"],
             "" if plans is None else " of %d plans" % plans))


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.selection_noise",
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
                        "(neuroshard.evaluate --json), against the "
                        "evaluation's runs of the same plans, per setting "
                        "and for all together (repeatable); with --write, "
                        "the latter are recorded in BUNDLE")
    parser.add_argument("--pool", default=None, help="the pool the bundle "
                        "was trained on (default: regenerated from its seed "
                        "and checked against its fingerprint)")
    parser.add_argument("--tasks", type=int, default=DEFAULT_TASKS,
                        help="tasks to plan (default %(default)s)")
    parser.add_argument("--views", type=int, default=DEFAULT_VIEWS,
                        help="processes that time the candidates' sets "
                        "apart, each on its own draw (default %(default)s)")
    parser.add_argument("--verify-seconds", type=float,
                        default=_core.DEFAULT_VERIFY_SECONDS,
                        help="measured selection's budget per plan (default "
                        "%(default)s)")
    parser.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    parser.add_argument("--iters", type=int, default=DEFAULT_ITERS)
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
        if figures["comparisons"] < MIN_COMPARISONS:
            raise SelectionNoiseError(
                "only %d candidates could be compared (at least %d are "
                "needed); plan more --tasks" % (figures["comparisons"],
                                                MIN_COMPARISONS))
        print(summary_line(figures, figures["tasks"], args.views))
        if args.write:
            record(args.bundle, figures, {"views": args.views,
                                          "verify_seconds":
                                          args.verify_seconds})
            print("recorded in %s" % os.path.join(args.bundle, "meta.json"))
    except (SelectionNoiseError, collect.CollectError, tp.PoolError) as e:
        print("selection_noise: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
