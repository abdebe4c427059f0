#===- race_agreement.py - Measured selection against neuroshard-collect --===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""How far a device set's time, as measured selection times it in process,
agrees with neuroshard-collect's, which the evaluation judges by; and how
far neuroshard-collect agrees with itself. Prints a table.

Four modes, on the evaluation's tasks (neuroshard_bench.evaluate.make_tasks)
and its pool:

race   Each task is planned --runs times with measured selection
       (neuroshard-verified); every candidate's device sets, and the plans
       of the baselines among the candidates, are timed with
       neuroshard-collect (--repeats runs on 3 draws, alternating order).
       Per timed set: log(in-process median / neuroshard-collect median),
       less its run's mean (so that only what moves one set against the
       others of its task counts). Also how the sets' deviations in one
       run correlate with those of the next, their robust spread, and
       how they correlate with what the sets are (bytes, tables, time,
       lookups, largest table).
order  The sets of the task's plans (table-wise and baselines), timed with
       neuroshard-collect as listed, as listed again, with their tables
       reversed and shuffled: per set, log(time / time as listed), less
       the task's mean.
alignment
       The same sets, timed with each table's base in the weight arena on
       a cache line (neuroshard-collect's default, as a run lays its arena
       out) and packed one after the other (--table-alignment 1), in
       --repeats pairs of runs, alternating which comes first: per set, the
       median of log(on the line / packed), grouped by the share of its
       tables at least 16 floats wide whose packed base is off the line.
process
       The same sets, each listed twice, timed by --repeats processes of
       neuroshard-collect on one draw: how far one timing (a median of 10
       runs) spreads within a process, where a set reads the same pages
       both times, and how far a set's time moves from process to process
       beyond that (each process maps its own arena), less the processes'
       levels.

    PYTHONPATH=python:bench:build/lib/python3/dist-packages \\
        /usr/bin/python3 -m neuroshard_bench.race_agreement --mode race \\
        --cost-model build/cal/BUNDLE
"""

import argparse
import json
import math
import os
import random
import statistics
import sys
import types

from neuroshard import collect as nc
from neuroshard import set_timing as st
from neuroshard import table_pool as tp
from neuroshard_bench import evaluate as ev

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

BASELINE_PLANS = ("table-greedy-grid", "lookup-greedy", "size-lookup-greedy",
                  "uniform-split-greedy", "dim-greedy")


def pooled_sd(groups):
    """Root mean square of the deviations from each group's mean, with a
    degree of freedom taken per group; None without two values in a
    group."""
    squares, freedom = 0.0, 0
    for values in groups:
        if len(values) < 2:
            continue
        mean = statistics.fmean(values)
        squares += sum((v - mean) ** 2 for v in values)
        freedom += len(values) - 1
    return math.sqrt(squares / freedom) if freedom else None


def correlation(xs, ys):
    if len(xs) < 3:
        return None
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else None


def collect_options(args):
    """neuroshard-collect's timing as the evaluation's: 3 untimed runs, the
    median of 10."""
    return types.SimpleNamespace(batch_size=args.batch_size, warmup=3,
                                 iters=10, seed=0)


def collect(sets, args):
    """neuroshard-collect's median per set over args.repeats runs, as the
    evaluation times them (collect_options)."""
    options = collect_options(args)
    return st.measure_repeated(
        sets, args.repeats,
        lambda ordered, draw: st.measure_sets(args.tool, args.pool, ordered,
                                              options, draw),
        draws=ev.DEFAULT_DRAWS)


def plan_sets(task, algorithms, args, keys, sets, dims):
    """Adds the device sets of each algorithm's plan; returns per algorithm
    its devices' set numbers."""
    own = {}
    for algorithm in algorithms:
        result = ev.run_plan(task, algorithm, args.cost_model)
        if result["valid"]:
            own[algorithm] = [st.add_set(keys, sets, s) for s in
                              st.device_sets(task, result["plan"], dims)]
    return own


def race(task, args, dims, records=None):
    """Per run, {(origin, device): log ratio less the run's mean}. Appends
    to `records`, where given, each paired set's entries and both
    times."""
    runs = [ev.run_plan(task, ev.VERIFIED, args.cost_model)
            for _ in range(args.runs)]
    keys, sets = {}, {}
    origins = {c["origin"] for r in runs if r["valid"] and r["verification"]
               for c in r["verification"]["candidates"]}
    own = plan_sets(task, sorted(origins & set(BASELINE_PLANS)), args, keys,
                    sets, dims)
    for k, r in enumerate(runs):
        if r["valid"]:
            own["chosen %d" % k] = [st.add_set(keys, sets, s) for s in
                                    st.device_sets(task, r["plan"], dims)]
    costs = collect(sets, args)
    out = []
    for k, r in enumerate(runs):
        v = r.get("verification") if r["valid"] else None
        if not v:
            continue
        logs = {}
        for c, candidate in enumerate(v["candidates"]):
            # A candidate is paired with the plan it is: the chosen one
            # with the plan returned, a baseline with that baseline's plan.
            name = ("chosen %d" % k if c == v["chosen"] else
                    candidate["origin"])
            if name not in own or not candidate["rounds"]:
                continue
            for device, (ms, s) in enumerate(
                    zip(candidate["measured_compute_ms"], own[name])):
                if ms and costs[s] > 0:
                    logs[(candidate["origin"], device)] = \
                        math.log(ms / costs[s])
                    if records is not None:
                        records.append({
                            "task": task["name"], "run": k,
                            "origin": candidate["origin"], "device": device,
                            "entries": sets[s], "race_ms": ms,
                            "collect_ms": costs[s]})
        if logs:
            mean = statistics.fmean(logs.values())
            out.append({key: x - mean for key, x in logs.items()})
    return out


def order(task, args, dims):
    """Per variant, the sets' log ratios to the sets as listed."""
    keys, sets = {}, {}
    plan_sets(task, BASELINE_PLANS, args, keys, sets, dims)
    shuffle = random.Random(args.seed)
    variants = {"as listed again": sets,
                "reversed": {k: v[::-1] for k, v in sets.items()},
                "shuffled": {k: shuffle.sample(v, len(v))
                             for k, v in sets.items()}}
    listed = collect(sets, args)
    out = {}
    for name, variant in variants.items():
        costs = collect(variant, args)
        logs = [math.log(costs[k] / listed[k]) for k in sets if listed[k]]
        mean = statistics.fmean(logs)
        out[name] = [x - mean for x in logs]
    return out


def off_the_line(entries, tables):
    """The share of a set's entries at least 16 floats wide whose base is
    not on a 64-byte line where the entries are packed one after the other
    in order (None without such an entry)."""
    offset, wide, off = 0, 0, 0
    for entry in entries:
        table = tables[nc.entry_table(entry)]
        piece = entry if isinstance(entry, dict) else {}
        first, end = piece.get("rows", (0, int(table["rows"])))
        cols = piece.get("cols")
        width = cols[1] - cols[0] if cols else int(table["dim"])
        if width % 16 == 0:
            wide += 1
            off += offset % 16 != 0
        offset += (end - first) * width
    return off / wide if wide else None


def alignment(task, args, dims, tables):
    """Per set of the task's plans, (the median over args.repeats pairs of
    runs of log(time with table bases on the line / packed), its share of
    wide entries off the line when packed)."""
    keys, sets = {}, {}
    plan_sets(task, BASELINE_PLANS, args, keys, sets, dims)
    options = collect_options(args)
    layouts = {"line": [], "packed": ["--table-alignment", "1"]}
    logs = {k: [] for k in sets}
    for r in range(args.repeats):
        draw = r % ev.DEFAULT_DRAWS
        order = ("line", "packed") if r % 2 == 0 else ("packed", "line")
        costs = {name: st.measure_sets(args.tool, args.pool, sets, options,
                                       draw, layouts[name])
                 for name in order}
        for k in sets:
            if costs["packed"][k] > 0:
                logs[k].append(math.log(costs["line"][k] /
                                        costs["packed"][k]))
    return [(statistics.median(logs[k]), off_the_line(sets[k], tables))
            for k in sets if logs[k]]


def processes(task, args, dims):
    """The sets of the task's plans, each listed twice (the second copies
    in reverse order after the first), timed by args.repeats processes of
    neuroshard-collect on draw 0. Returns (the spread of one timing within
    a process, the spread of a set's two timings' mean from process to
    process less the processes' levels, number of sets)."""
    keys, sets = {}, {}
    plan_sets(task, BASELINE_PLANS, args, keys, sets, dims)
    ids = list(sets)
    copies = [(k, 0) for k in ids] + [(k, 1) for k in reversed(ids)]
    options = collect_options(args)
    logs = []
    for _ in range(args.repeats):
        costs = st.measure_sets(args.tool, args.pool,
                                {n: sets[k] for n, (k, _) in
                                 enumerate(copies)}, options)
        timed = {copy: math.log(costs[n]) for n, copy in enumerate(copies)}
        logs.append(timed)
    within = [timed[(k, 0)] - timed[(k, 1)] for timed in logs for k in ids]
    one = statistics.pstdev(within) / math.sqrt(2)
    means = [{k: (timed[(k, 0)] + timed[(k, 1)]) / 2 for k in ids}
             for timed in logs]
    levels = [statistics.fmean(m.values()) for m in means]
    between = statistics.fmean(
        statistics.variance([m[k] - level for m, level in
                             zip(means, levels)]) for k in ids)
    return one, between, len(ids)


def set_features(entries, tables):
    """Log weight bytes, tables, log lookups (pooling x width) and log rows
    of the largest table of a set's entries (pool tables or pieces)."""
    size, lookups, rows = 0.0, 0.0, 0
    for entry in entries:
        piece = entry if isinstance(entry, dict) else {"table": entry}
        table = tables[int(piece["table"])]
        cols = piece.get("cols", (0, table["dim"]))
        first, end = piece.get("rows", (0, table["rows"]))
        width = cols[1] - cols[0]
        size += 4.0 * (end - first) * width
        lookups += table["pooling_factor"] * width * (end - first) / \
            table["rows"]
        rows = max(rows, end - first)
    return (math.log(size), len(entries), math.log(lookups + 1.0),
            math.log(rows))


def describe_deviations(records, pool):
    """Prints how the sets' deviations (log ratio less the run's mean)
    spread and correlate with what the sets are."""
    runs = {}
    for r in records:
        runs.setdefault((r["task"], r["run"]), []).append(r)
    deviations, features = [], []
    tables = {t["id"]: t for t in pool["tables"]}
    for group in runs.values():
        logs = [math.log(r["race_ms"] / r["collect_ms"]) for r in group]
        mean = statistics.fmean(logs)
        for r, x in zip(group, logs):
            deviations.append(x - mean)
            size, count, lookups, rows = set_features(r["entries"], tables)
            features.append((size, count, math.log(r["collect_ms"]),
                             lookups, rows))
    if len(deviations) < 3:
        return
    middle = statistics.median(deviations)
    robust = 1.4826 * statistics.median(abs(x - middle) for x in deviations)
    names = ("weight bytes", "tables", "measured time", "lookups",
             "largest table's rows")
    print("robust sd (1.4826 x median absolute deviation) %.1f%%; %d of %d "
          "sets more than 25%% off; correlation of a set's deviation with "
          "its %s" % (100 * robust, sum(abs(x) > 0.25 for x in deviations),
                      len(deviations), ", ".join(
                          "%s %s" % (name, "%.2f" % r if r is not None
                                     else "-") for name, r in zip(
                              names, (correlation(deviations, [f[i] for f
                                                               in features])
                                      for i in range(len(names)))))))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("race", "order", "process",
                                           "alignment"),
                        default="race")
    parser.add_argument("--cost-model", required=True,
                        help="bundle calibrated on this machine")
    parser.add_argument("--pool", default=os.path.join(
        REPO, "build", "eval", "pool-s0-b400.json"),
        help="the evaluation's pool (neuroshard_bench.evaluate --work)")
    parser.add_argument("--setting", default="4dev")
    parser.add_argument("--tasks", default="0-7",
                        help="task numbers, as 0-7 or 1,4,5")
    parser.add_argument("--batch-size", type=int, default=ev.BATCH_SIZE)
    parser.add_argument("--runs", type=int, default=2,
                        help="plans per task (race)")
    parser.add_argument("--repeats", type=int, default=6,
                        help="neuroshard-collect runs per set (process: "
                        "processes)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the tasks and of the shuffle")
    parser.add_argument("--tool", default=os.path.join(
        REPO, "build", "bin", "neuroshard-collect"))
    parser.add_argument("--json", help="race: write every paired set (its "
                        "task, run, candidate, device, entries and both "
                        "times) to this file")
    args = parser.parse_args(argv)
    if "-" in args.tasks:
        first, last = (int(x) for x in args.tasks.split("-"))
        numbers = list(range(first, last + 1))
    else:
        numbers = [int(x) for x in args.tasks.split(",")]
    pool = tp.load_pool(args.pool)
    dims = pool.get("dims", list(tp.POOL_DIMS))
    tasks = ev.make_tasks(pool, args.setting, max(numbers) + 1, args.seed,
                          batch_size=args.batch_size)
    if args.mode == "order":
        groups = {}
        print("| task | sets | as listed again | reversed | shuffled |")
        print("|---|---|---|---|---|")
        for i in numbers:
            out = order(tasks[i], args, dims)
            for name, logs in out.items():
                groups.setdefault(name, []).append(logs)
            print("| %s | %d | %s |" % (tasks[i]["name"], len(
                out["reversed"]), " | ".join(
                    "%.1f%%" % (100 * pooled_sd([logs]))
                    for logs in out.values())), flush=True)
        print("| all | %d | %s |" % (sum(len(g) for g in groups["reversed"]),
                                     " | ".join("%.1f%%" % (100 * pooled_sd(g))
                                                for g in groups.values())))
        return 0
    if args.mode == "alignment":
        tables = {t["id"]: t for t in pool["tables"]}
        print("| task | sets | on the line / packed (geometric mean) |")
        print("|---|---|---|")
        every = []
        for i in numbers:
            out = alignment(tasks[i], args, dims, tables)
            every += out
            print("| %s | %d | %.3f |" % (
                tasks[i]["name"], len(out),
                math.exp(statistics.fmean(x for x, _ in out))), flush=True)
        print("\n| wide tables off the line when packed | sets | on the "
              "line / packed (geometric mean) |")
        print("|---|---|---|")
        groups = (("none", lambda s: s is None or s == 0),
                  ("under half", lambda s: s is not None and 0 < s < 0.5),
                  ("half or more", lambda s: s is not None and s >= 0.5),
                  ("all sets", lambda s: True))
        for name, member in groups:
            logs = [x for x, share in every if member(share)]
            print("| %s | %d | %s |" % (
                name, len(logs), "%.3f" % math.exp(statistics.fmean(logs))
                if logs else "-"))
        return 0
    if args.mode == "process":
        print("| task | sets | one timing, within a process | a set's mean "
              "of two, process to process | a process's own part |")
        print("|---|---|---|---|---|")
        ones, betweens, counts = [], [], []
        for i in numbers:
            one, between, count = processes(tasks[i], args, dims)
            ones.append(one)
            betweens.append(between)
            counts.append(count)
            own = math.sqrt(max(between - one ** 2 / 2, 0.0))
            print("| %s | %d | %.1f%% | %.1f%% | %.1f%% |" % (
                tasks[i]["name"], count, 100 * one, 100 * math.sqrt(between),
                100 * own), flush=True)
        total = sum(counts)
        one = math.sqrt(sum(c * x ** 2 for c, x in zip(counts, ones)) / total)
        between = sum(c * x for c, x in zip(counts, betweens)) / total
        print("| all | %d | %.1f%% | %.1f%% | %.1f%% |" % (
            total, 100 * one, 100 * math.sqrt(between),
            100 * math.sqrt(max(between - one ** 2 / 2, 0.0))))
        return 0
    print("| task | run | sets paired | sd of the log ratio |")
    print("|---|---|---|---|")
    every, repeats, records = [], [], []
    for i in numbers:
        runs = race(tasks[i], args, dims, records)
        for k, logs in enumerate(runs):
            every.append(list(logs.values()))
            print("| %s | %d | %d | %.1f%% |" % (
                tasks[i]["name"], k, len(logs),
                100 * (pooled_sd([list(logs.values())]) or 0.0)), flush=True)
        for a, b in zip(runs, runs[1:]):
            repeats += [(a[key], b[key]) for key in a if key in b]
    sd = pooled_sd(every)
    r = correlation([a for a, _ in repeats], [b for _, b in repeats])
    print("\nin process against neuroshard-collect: %d sets, sd of the log "
          "ratio %s; correlation of a set's deviation from one run to the "
          "next %s (%d pairs)" % (
              sum(len(g) for g in every),
              "%.1f%%" % (100 * sd) if sd is not None else "-",
              "%.2f" % r if r is not None else "-", len(repeats)))
    describe_deviations(records, pool)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
