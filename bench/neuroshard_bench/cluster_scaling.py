#===- cluster_scaling.py - Planning for clusters of many devices ---------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Plans large tasks for clusters of nodes and prints a table.

For each setting (tables x devices, nodes of --devices-per-node), the task
is generated as neuroshard_bench.plan_scaling generates it (deterministic in
the table count and --seed) and planned with neuroshard-plan by NeuroShard
and by every baseline under the same cost model. The table gives NeuroShard's
planning time (wall and CPU), its peak memory (the planner's maximum
resident set), its plan's cost, and the cheapest baseline plan on the same
task with its cost. --task adds a task file of your own (the public MLPerf
DCNv2 task is examples/mlperf-dcnv2.json) at the --task-devices counts.

    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.cluster_scaling
    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.cluster_scaling \\
        --settings 1000x64 \\
        --task examples/mlperf-dcnv2.json --task-devices 8 64 256
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from neuroshard_bench import plan_scaling

BASELINES = ("table-greedy-grid", "random", "size-greedy", "dim-greedy",
             "lookup-greedy", "size-lookup-greedy", "uniform-split-greedy")


def run_planner(command):
    """Runs `command`; returns (plan, wall s, CPU s, peak resident MB)."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, \
            tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        if process.returncode != 0:
            sys.stderr.write(err.read())
            raise SystemExit("%s failed" % " ".join(command))
        plan = json.load(out)
    # ru_maxrss is in kilobytes on Linux.
    return (plan, seconds, usage.ru_utime + usage.ru_stime,
            usage.ru_maxrss / 1024.0)


def plan_all(plan_tool, task, devices, args, label):
    command = [plan_tool, task, "--devices", str(devices),
               "--memory-gb", "%g" % args.memory_gb,
               "--cost-model", args.cost_model]
    if devices > args.devices_per_node:
        command += ["--devices-per-node", str(args.devices_per_node)]
    plan, seconds, cpu, peak = run_planner(command)
    print("%s on %d devices: neuroshard %.1f s, %.4g ms" %
          (label, devices, seconds, plan["cost_ms"]), file=sys.stderr,
          flush=True)
    baselines = {}
    for algorithm in BASELINES:
        try:
            baseline = run_planner(command + ["--algorithm", algorithm])[0]
        except SystemExit:
            # A baseline that cannot place the tables has no plan.
            continue
        baselines[algorithm] = baseline["cost_ms"]
    best = min(baselines, key=baselines.get)
    return {"label": label, "devices": devices, "nodes": plan["nodes"],
            "seconds": seconds, "cpu": cpu, "peak_mb": peak,
            "cost": plan["cost_ms"], "shards": len(plan["shards"]),
            "best_baseline": best, "baseline_cost": baselines[best]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settings", nargs="*",
                        default=["1000x64", "1000x256", "10000x1024"],
                        help="TABLESxDEVICES of generated tasks")
    parser.add_argument("--devices-per-node", type=int, default=8)
    parser.add_argument("--memory-gb", type=float, default=80.0)
    parser.add_argument("--cost-model", default="analytical")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--task", help="a task file to plan as well")
    parser.add_argument("--task-devices", type=int, nargs="*",
                        default=[8, 64, 256])
    parser.add_argument("--plan", default=os.path.join(
        os.environ.get("NEUROSHARD_TOOLS_DIR",
                       os.path.join(plan_scaling.REPO, "build", "bin")),
        "neuroshard-plan"))
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="cluster-scaling-") as scratch:
        for setting in args.settings:
            tables, devices = (int(x) for x in setting.split("x"))
            task = os.path.join(scratch, "task-%s.json" % setting)
            with open(task, "w") as f:
                json.dump(plan_scaling.make_task(tables, devices, args.seed),
                          f)
            rows.append(plan_all(args.plan, task, devices, args,
                                 "%d tables" % tables))
        if args.task:
            for devices in args.task_devices:
                rows.append(plan_all(args.plan, args.task, devices, args,
                                     os.path.basename(args.task)))

    print("| task | devices | nodes | wall (s) | CPU (s) | peak memory (MB) "
          "| NeuroShard (ms) | shards | best baseline | its cost (ms) | "
          "NeuroShard / baseline |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    for row in rows:
        print("| %s | %d | %d | %.1f | %.1f | %.0f | %.4g | %d | %s | %.4g "
              "| %.3f |" %
              (row["label"], row["devices"], row["nodes"], row["seconds"],
               row["cpu"], row["peak_mb"], row["cost"], row["shards"],
               row["best_baseline"], row["baseline_cost"],
               row["cost"] / row["baseline_cost"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
