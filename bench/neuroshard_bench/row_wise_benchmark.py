#===- row_wise_benchmark.py - Row pieces and replicas against the rest ---===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Plans tasks with and without row-wise, table-row-wise and data-parallel
tables and prints a table.

For each task and device count, neuroshard-plan plans with every sharding
type (the default for GPUs), with table-wise and column-wise pieces only
(as before row pieces existed), and with every baseline, all under the
analytical model and the same topology (devices of --memory-gb with
--reserved-memory kept free, nodes of --devices-per-node). The table says
whether each found a plan, its cost, which sharding types NeuroShard chose
(how many tables of each) and its planning time.

The tasks: the public MLPerf DLRM-DCNv2 task (examples/mlperf-dcnv2.json)
at 8 and 64 devices; a task of one 5,000,000,000 x 32 table (596 GB) beside
small ones on 64 devices; and tasks generated as
neuroshard_bench.plan_scaling generates them (deterministic in --seed) with
--huge tables scaled to 1.5-4 times a device's usable memory and made hot.

    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.row_wise_benchmark
"""

import argparse
import collections
import json
import os
import random
import subprocess
import sys
import tempfile
import time

from neuroshard_bench import plan_scaling

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BASELINES = ("table-greedy-grid", "random", "size-greedy", "dim-greedy",
             "lookup-greedy", "size-lookup-greedy", "uniform-split-greedy")
SHORT = {"table_wise": "TW", "column_wise": "CW", "row_wise": "RW",
         "table_row_wise": "TWRW", "data_parallel": "DP"}


def plan(tool, task_path, devices, args, extra):
    """(plan dict or None, seconds, error line)."""
    command = [tool, task_path, "--devices", str(devices),
               "--memory-gb", "%g" % args.memory_gb,
               "--reserved-memory", "%g" % args.reserved_memory,
               "--cost-model", "analytical"] + extra
    if devices > args.devices_per_node:
        command += ["--devices-per-node", str(args.devices_per_node)]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        return None, seconds, done.stderr.strip().splitlines()[-1]
    return json.loads(done.stdout), seconds, ""


def huge_task(seed, tables, huge, usable_gb):
    """plan_scaling's task with `huge` tables grown past one device."""
    task = plan_scaling.make_task(tables, 16, seed)
    rng = random.Random(seed)
    for i, table in enumerate(task["tables"][:huge]):
        table.pop("pinned_device", None)
        table.pop("no_split", None)
        table.pop("access_hist", None)
        gb = usable_gb * rng.uniform(1.5, 4.0)
        table["dim"] = 128
        table["rows"] = int(gb * 2**30 / (4 * table["dim"]))
        table["pooling_factor"] = round(rng.uniform(20, 80), 1)
    return task


def giant_task():
    return {"batch_size": 65536, "tables": [
        {"name": "giant", "rows": 5000000000, "dim": 32,
         "pooling_factor": 20},
        {"name": "user", "rows": 2000000, "dim": 64, "pooling_factor": 4},
        {"name": "item", "rows": 500000, "dim": 64, "pooling_factor": 8}]}


def kinds_text(plan_json):
    counts = collections.Counter(plan_json["sharding_types"].values())
    order = ("table_wise", "column_wise", "row_wise", "table_row_wise",
             "data_parallel")
    return " ".join("%d %s" % (counts[k], SHORT[k]) for k in order
                    if counts[k])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools-dir", default=os.path.join(REPO, "build",
                                                            "bin"))
    parser.add_argument("--memory-gb", type=float, default=80.0)
    parser.add_argument("--reserved-memory", type=float, default=0.15)
    parser.add_argument("--devices-per-node", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--generated", type=int, default=3,
                        help="generated tasks (60 tables, 16 devices)")
    parser.add_argument("--huge", type=int, default=3,
                        help="tables larger than a device per generated task")
    args = parser.parse_args()
    tool = os.path.join(args.tools_dir, "neuroshard-plan")
    usable = args.memory_gb * (1 - args.reserved_memory)

    with tempfile.TemporaryDirectory() as scratch:
        cases = [("mlperf-dcnv2", os.path.join(REPO, "examples",
                                               "mlperf-dcnv2.json"), d)
                 for d in (8, 64)]
        path = os.path.join(scratch, "giant.json")
        with open(path, "w") as f:
            json.dump(giant_task(), f)
        cases.append(("596 GB table", path, 64))
        for g in range(args.generated):
            path = os.path.join(scratch, "huge-%d.json" % g)
            with open(path, "w") as f:
                json.dump(huge_task(args.seed + g, 60, args.huge, usable), f)
            cases.append(("generated %d (%d > device)" % (g, args.huge),
                          path, 16))

        print("| task | devices | NeuroShard, all types (ms) | types chosen "
              "| planning (s) | NeuroShard, table/column (ms) "
              "| best baseline (ms) | all / table-column | all / baseline |")
        print("|---|---|---|---|---|---|---|---|---|")
        for label, path, devices in cases:
            full, seconds, error = plan(tool, path, devices, args, [])
            narrow, _, narrow_error = plan(
                tool, path, devices, args,
                ["--sharding-types", "table_wise,column_wise"])
            best = None
            for algorithm in BASELINES:
                baseline, _, _ = plan(tool, path, devices, args,
                                      ["--algorithm", algorithm])
                if baseline and (best is None or
                                 baseline["cost_ms"] < best[1]):
                    best = (algorithm, baseline["cost_ms"])

            def cost(p):
                return "%.4f" % p["cost_ms"] if p else "infeasible"

            def ratio(p, other):
                if not p or other is None:
                    return "-"
                return "%.3f" % (p["cost_ms"] / other)

            print("| %s | %d | %s | %s | %.2f | %s | %s | %s | %s |" % (
                label, devices, cost(full) if full else error,
                kinds_text(full) if full else "-", seconds, cost(narrow),
                "%.4f (%s)" % (best[1], best[0]) if best else "infeasible",
                ratio(full, narrow["cost_ms"] if narrow else None),
                ratio(full, best[1] if best else None)), flush=True)
            if full and narrow and full["cost_ms"] > narrow["cost_ms"] * (
                    1 + 1e-9):
                print("error: %s on %d devices: the full space plans above "
                      "the table/column space" % (label, devices),
                      file=sys.stderr)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
