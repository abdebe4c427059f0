#===- plan_scaling.py - How planning time grows with the table count -----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Times neuroshard-plan on large generated tasks and prints a table.

Each task is generated deterministically from the table count and --seed:
DLRM-like tables (rows log-uniform over 1e2..1e6, dims 4..256, heavy-tailed
pooling factors with a mean near 16, access histograms that range from flat
to hot), every tenth table pinned to a device and every seventh not split.
The histograms are drawn from a closed form rather than sampled index
streams, so that a 10,000-table task is written in a fraction of a second,
and then made possible for one batch of the task's batch size: no bin
whose rows are hit more often than the batch makes lookups, and enough hot
rows that the table's rows can take all of them (the rule neuroshard-plan
checks, docs/dialect.md).

    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.plan_scaling
    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.plan_scaling \\
        --tables 100 1000 \\
        --cost-models analytical --write-task /tmp/task.json
"""

import argparse
import json
import math
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

NUM_BINS = 17
BATCH_SIZE = 65536
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def fewest_hits(j):
    """Hits of the rows of bin j, at fewest: 1, then 2^(j-1) + 1."""
    return 1 if j == 0 else 2 ** (j - 1) + 1


def most_hits(j):
    """Hits of the rows of bin j, at most (bin 16 has no bound)."""
    return 1 if j == 0 else (math.inf if j == NUM_BINS - 1 else 2 ** j)


def histogram(rng, rows, lookups):
    """17 bins summing to 1: a geometric decay whose rate sets how hot the
    table is (slow decay: many rows hit often), cut to the bins a batch of
    `lookups` lookups can fill, and shifted towards the hottest of them
    until `rows` rows can take all the lookups."""
    decay = rng.uniform(0.25, 0.8)
    allowed = [j for j in range(NUM_BINS) if fewest_hits(j) <= lookups]
    weights = [decay ** j if j in allowed else 0.0 for j in range(NUM_BINS)]
    total = sum(weights)
    # Bins too small to print are empty: the capacity below counts them so.
    bins = [round(w / total, 6) for w in weights]
    top = allowed[-1]
    # Lookups the rows can take, per row: sum_j f_j * most_hits(j).
    per_row = sum(f * most_hits(j) for j, f in enumerate(bins) if f)
    needed = lookups / rows
    if per_row < needed:
        # Mix in the top bin: (1 - t) * per_row + t * most_hits(top) >= needed,
        # with 2% to spare for the rounding below.
        t = 0.01 if most_hits(top) == math.inf else min(
            1.0, 1.02 * (needed - per_row) / (most_hits(top) - per_row))
        bins = [(1.0 - t) * f for f in bins]
        bins[top] += t
    bins = [round(f, 6) for f in bins]
    largest = max(range(NUM_BINS), key=lambda j: bins[j])
    bins[largest] = round(bins[largest] + 1.0 - sum(bins), 6)
    return bins


def pooling_factor(rng):
    if rng.random() < 0.12:
        return 1.0
    return round(min(rng.lognormvariate(math.log(11.0), 1.0), 160.0), 2)


def make_task(num_tables, devices, seed):
    rng = random.Random(seed * 1000003 + num_tables)
    dims = [4, 8, 16, 32, 64, 128, 256]
    dim_weights = [1, 2, 4, 6, 6, 4, 1]
    tables = []
    for t in range(num_tables):
        rows = int(10 ** rng.uniform(2.0, 6.0))
        dim = rng.choices(dims, dim_weights)[0]
        pooling = pooling_factor(rng)
        table = {"name": "t%d" % t, "rows": rows, "dim": dim,
                 "pooling_factor": pooling,
                 "access_hist": histogram(rng, rows,
                                          math.floor(BATCH_SIZE * pooling))}
        if t % 10 == 3:
            table["pinned_device"] = rng.randrange(devices)
        elif t % 7 == 5:
            table["no_split"] = True
        tables.append(table)
    return {"batch_size": BATCH_SIZE, "tables": tables}


def children_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--cost-models", nargs="+",
                        default=["analytical", "default"])
    parser.add_argument("--devices", type=int, default=8)
    parser.add_argument("--memory-gb", type=float, default=64.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--plan", default=os.path.join(
        os.environ.get("NEUROSHARD_TOOLS_DIR",
                       os.path.join(REPO, "build", "bin")), "neuroshard-plan"))
    parser.add_argument("--write-task", metavar="FILE",
                        help="only write the task of the first --tables "
                             "count to FILE")
    args = parser.parse_args()

    if args.write_task:
        with open(args.write_task, "w") as f:
            json.dump(make_task(args.tables[0], args.devices, args.seed), f)
        return 0

    rows = []
    with tempfile.TemporaryDirectory(prefix="plan-scaling-") as scratch:
        for count in args.tables:
            task = os.path.join(scratch, "task-%d.json" % count)
            with open(task, "w") as f:
                json.dump(make_task(count, args.devices, args.seed), f)
            for model in args.cost_models:
                command = [args.plan, task, "--devices", str(args.devices),
                           "--memory-gb", "%g" % args.memory_gb,
                           "--cost-model", model]
                start = time.monotonic()
                cpu_before = children_cpu_seconds()
                done = subprocess.run(command, capture_output=True, text=True)
                seconds = time.monotonic() - start
                cpu = children_cpu_seconds() - cpu_before
                if done.returncode != 0:
                    sys.stderr.write(done.stderr)
                    return 1
                plan = json.loads(done.stdout)
                rows.append((count, model, seconds, cpu, plan))
                print("%d tables, %s: %.1f s (%.1f s CPU)" %
                      (count, model, seconds, cpu), file=sys.stderr,
                      flush=True)

    print("| tables | cost model | wall (s) | CPU (s) | plan cost (ms) | "
          "shards |")
    print("|---:|---|---:|---:|---:|---:|")
    for count, model, seconds, cpu, plan in rows:
        print("| %d | %s | %.1f | %.1f | %.4g | %d |" %
              (count, model, seconds, cpu, plan["cost_ms"],
               len(plan["shards"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
