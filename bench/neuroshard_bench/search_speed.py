#===- search_speed.py - Planning time against the search's targets --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Times neuroshard-plan on tasks drawn from a mix of real tables and
prints a table of planning times against the search's targets.

Each task of T tables is drawn, with a seed, from the tables of the task
files in --workloads (for instance HugeCTR's published benchmark
configurations: hot multi-hot tables with one-batch histograms), each
table renamed; so a setting plans tables of the kind production models
have, not only the generator's. A setting is TABLESxDEVICES:MODEL[:TARGET]
(the target in seconds). Devices have 80 GB unless the drawn tables need
more than half of that on average, then the least multiple of 80 GB that
leaves half free; the table says which.

Each setting is planned --repeats times (the median is reported) and, with
--baseline, as often by a baseline build, interleaved, so that both see
the same machine; the table then gives both builds' times and costs.

    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.search_speed \\
        --workloads DIR
    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.search_speed \\
        --workloads DIR --settings 60x4:default:1 --repeats 5 \\
        --baseline /tmp/build-base/bin
"""

import argparse
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEVICE_GB = 80
# The search's targets: 60 tables on 4 devices with the default model
# under 1 s, 1,000 on 256 and 10,000 on 1,024 with the analytical one
# under 5 s and 60 s.
DEFAULT_SETTINGS = ["60x4:default:1", "1000x256:analytical:5",
                    "10000x1024:analytical:60"]


def parse_setting(text):
    """(tables, devices, model, target seconds or None) of TxD:MODEL[:S]."""
    parts = text.split(":")
    if len(parts) not in (2, 3) or "x" not in parts[0]:
        raise ValueError("a setting is TABLESxDEVICES:MODEL[:SECONDS], got "
                         "'%s'" % text)
    tables, devices = (int(v) for v in parts[0].split("x"))
    if tables < 1 or devices < 1:
        raise ValueError("setting '%s': tables and devices must be positive"
                         % text)
    target = float(parts[2]) if len(parts) == 3 else None
    return tables, devices, parts[1], target


def table_mix(workloads):
    """Every table of every task file in the directory `workloads`."""
    paths = sorted(glob.glob(os.path.join(workloads, "*.json")))
    mix = []
    for path in paths:
        with open(path) as f:
            task = json.load(f)
        if isinstance(task, dict):
            mix.extend(task.get("tables", []))
    if not mix:
        raise ValueError("no tables in the task files of '%s'" % workloads)
    return mix


def table_gb(table):
    """The table's weights in GB of 2^30 bytes."""
    element = {"f32": 4, "f16": 2, "bf16": 2}.get(table.get("dtype", "f32"), 4)
    return table["rows"] * table["dim"] * element / 2.0 ** 30


def draw_task(mix, tables, seed):
    """A task of `tables` tables drawn from `mix` (with replacement)."""
    rng = random.Random(seed)
    drawn = []
    for i in range(tables):
        table = dict(rng.choice(mix))
        table["name"] = "t%d" % i
        drawn.append(table)
    return {"batch_size": 65536, "tables": drawn}


def device_gb(task, devices):
    """80 GB, or the least multiple of it that keeps half of every device
    free on average."""
    total = sum(table_gb(t) for t in task["tables"])
    need = 2.0 * total / devices
    return DEVICE_GB * max(1, math.ceil(need / DEVICE_GB))


def plan_once(tools, task_path, devices, memory_gb, model):
    """(seconds, plan JSON) of one neuroshard-plan run."""
    out = task_path + ".plan.json"
    cmd = [os.path.join(tools, "neuroshard-plan"), task_path,
           "--devices", str(devices), "--memory-gb", str(memory_gb),
           "--cost-model", model, "--model-warnings=false", "-o", out]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    with open(out) as f:
        return seconds, json.load(f)


def run_setting(setting, mix, args, workdir):
    tables, devices, model, target = parse_setting(setting)
    task = draw_task(mix, tables, args.seed + tables)
    memory_gb = device_gb(task, devices)
    path = os.path.join(workdir, "task-%dx%d.json" % (tables, devices))
    with open(path, "w") as f:
        json.dump(task, f)
    builds = [("new", args.tools_dir)]
    if args.baseline:
        builds.append(("old", args.baseline))
    times = {name: [] for name, _ in builds}
    plans = {}
    for _ in range(args.repeats):
        for name, tools in builds:
            seconds, plan = plan_once(tools, path, devices, memory_gb, model)
            times[name].append(seconds)
            plans[name] = plan
    row = {"setting": "%dx%d" % (tables, devices), "model": model,
           "memory_gb": memory_gb, "runs": args.repeats, "target_s": target}
    for name in times:
        plan = plans[name]
        row[name] = {"median_s": statistics.median(times[name]),
                     "cost_ms": plan["cost_ms"],
                     "search_ms": plan["search"]["time_ms"],
                     "gap": plan.get("lower_bound", {}).get("gap")}
    return row


def print_table(rows, out):
    with_old = any("old" in row for row in rows)
    header = "%-12s %-11s %7s %4s %9s %8s %5s %10s %8s" % (
        "setting", "model", "GB/dev", "runs", "median s", "target", "met",
        "cost ms", "gap")
    if with_old:
        header += " %9s %10s %8s" % ("old s", "old ms", "new/old")
    print(header, file=out)
    print("-" * len(header), file=out)
    for row in rows:
        new = row["new"]
        target = row["target_s"]
        met = "-" if target is None else (
            "yes" if new["median_s"] <= target else "no")
        gap = "-" if new["gap"] is None else "%.1f%%" % (100.0 * new["gap"])
        line = "%-12s %-11s %7d %4d %9.2f %8s %5s %10.4f %8s" % (
            row["setting"], row["model"], row["memory_gb"], row["runs"],
            new["median_s"], "-" if target is None else "%g" % target, met,
            new["cost_ms"], gap)
        if "old" in row:
            old = row["old"]
            line += " %9.2f %10.4f %8.4f" % (
                old["median_s"], old["cost_ms"],
                new["cost_ms"] / old["cost_ms"] if old["cost_ms"] else 1.0)
        print(line, file=out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workloads", required=True,
                        help="a directory of task files whose tables make "
                             "the mix")
    parser.add_argument("--settings", nargs="+", default=DEFAULT_SETTINGS,
                        help="TABLESxDEVICES:MODEL[:TARGET_SECONDS]")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tools-dir",
                        default=os.path.join(REPO, "build", "bin"))
    parser.add_argument("--baseline", help="bin/ of a baseline build")
    parser.add_argument("--json", help="write every row to this file")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1, got %d" % args.repeats)
    try:
        for setting in args.settings:
            parse_setting(setting)
        mix = table_mix(args.workloads)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for setting in args.settings:
            print("planning %s ..." % setting, file=sys.stderr)
            rows.append(run_setting(setting, mix, args, workdir))
    print_table(rows, sys.stdout)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
