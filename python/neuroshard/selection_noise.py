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
measured gain can be trusted. Calibration (neuroshard.calibrate) plans its
experience tasks with measured selection and, once every task is planned,
times each plan's candidates' device sets with neuroshard-collect
(compare_plans, time_apart), in --views processes on as many draws of the
inputs, and compares the ratio to the incumbent of each candidate that
raced on after its first round, as the planning measured it (its rounds'
geometric mean), with the ratio the views measure (the geometric mean over
the views of the slowest devices' ratio).

With d the log of the first over the second, n the candidate's rounds, s
the planning's round spread and v the variance of the views' mean log
ratio, the noise is sqrt(max(0, mean(d^2 - s^2 / n - v))): what the two
measurements disagree by beyond what the rounds' own spread and the views'
own spread account for, the part that more rounds of the same planning do
not shrink (noise_figures). The planner adds it to the rounds' own
spread in the gain a candidate needs (VerifyOptions::spreadFactor).

Measuring it for an existing bundle, and comparing the plans an evaluation
verified with the evaluation's own runs of them, are experiments of the
bench (bench/README.md)."""
import argparse
import math
import time
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from neuroshard import bundle_meta as bm
from neuroshard import set_timing as st

# Processes (each on its own draw of the inputs) that time the candidates'
# sets apart from the planning, and their timing options (those the
# evaluation harness times plans with).
DEFAULT_VIEWS = 3
DEFAULT_WARMUP = 3
DEFAULT_ITERS = 10
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
    neuroshard-collect's entries (set_timing.device_sets); None where the
    plan was not verified or records no candidate's shards. `task` has
    "devices" and "tables", each with its "pool_id"."""
    verification = plan.get("verification")
    if not verification:
        return None
    candidates = verification.get("candidates") or []
    if not candidates or any("shards" not in c for c in candidates):
        return None
    return [st.device_sets(task, {"shards": c["shards"]}, pool_dims)
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
    set_timing.set_key."""
    verification = plan["verification"]
    incumbent = int(verification["incumbent"])
    spread = float(verification.get("round_spread", 0.0))

    def slowest(c: int, view: Dict[int, float]) -> float:
        return max(view[keys[st.set_key(ids)]] for ids in sets[c] if ids)

    return [comparison(candidate, spread,
                       [math.log(slowest(c, view) / slowest(incumbent, view))
                        for view in views])
            for c, candidate in raced(verification)]


def comparison(candidate: Dict, spread: float, logs: List[float]) -> Dict:
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
                st.add_set(keys, numbered, candidate[d])
    timing = argparse.Namespace(batch_size=options.batch_size,
                                warmup=options.warmup, iters=options.iters,
                                seed=options.seed)
    runs: Dict[int, List[float]] = {}
    try:
        st.measure_repeated(
            numbered, options.views,
            lambda s, draw: st.measure_sets(tool, pool_path, s, timing, draw),
            runs=runs, draws=options.views)
    except st.SetTimingError as e:
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
    as "selection_noise" (in place, bundle_meta.set_field); returns the
    record."""
    entry = dict(figures)
    entry.update(extra)
    bm.set_field(bundle, "selection_noise", entry, SelectionNoiseError)
    return entry


def with_pool_ids(task: Dict) -> Dict:
    """`task` (calibrate.experience_tasks) with each table's "pool_id" from
    the task's "pool_ids", as set_timing.device_sets reads them."""
    tables = [dict(t, pool_id=int(p))
              for t, p in zip(task["tables"], task["pool_ids"])]
    return dict(task, tables=tables)


def summary_line(figures: Dict, tasks: int, views: int) -> str:
    """One line for the user: the noise and what it rests on."""
    return ("selection noise %.1f%% (log sd; %.1f%% before the rounds' and "
            "the views' own spread, mean difference %+.1f%%) over %d "
            "candidates of %d plans, each timed apart in %d views" %
            (100 * figures["log_sd"], 100 * figures["raw_log_sd"],
             100 * figures["mean_log_difference"], figures["comparisons"],
             tasks, views))
