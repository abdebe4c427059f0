#===- plan_quality.py - Plans of two builds, side by side ------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Plans the same tasks with two builds of neuroshard-plan, a baseline and
the current one, and prints each plan's cost and planning time side by
side, so that a change to the search shows where its plans got better or
worse under the same cost model.

A plan may hold two pieces of one table on one device (a model can price
several small row blocks of a table below the one block they make on the
device, which no kernel bears out); the current planner joins them. Where
the baseline's plan has such pieces, the table also gives it joined
(join_pieces, the same rule) and priced by the current build (`--price`),
and the new plan is judged against that clean plan.

The tasks: every task of test/neuroshard-plan/Inputs, and generated tasks
of 20 and 60 tables (plan_scaling's generator), each on 2, 4 and 8 devices
of 80 GB, priced by the analytical model and by the default model. A task
one build cannot plan is reported with that build's error.

    git worktree add /tmp/base <ref> && cmake ... -B /tmp/build-base \\
        && ninja -C /tmp/build-base neuroshard-plan
    PYTHONPATH=bench /usr/bin/python3 -m neuroshard_bench.plan_quality \\
        --baseline /tmp/build-base/bin --current build/bin
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time

from neuroshard_bench import plan_scaling

REPO = plan_scaling.REPO
MEMORY_GB = 80


def tasks(workdir, generated, fewest_devices):
    """(name, path) of every task to plan; generated tasks pin tables to
    the first `fewest_devices` devices."""
    found = []
    for path in sorted(glob.glob(os.path.join(
            REPO, "test", "neuroshard-plan", "Inputs", "*.json"))):
        with open(path) as f:
            try:
                if "tables" in json.load(f):
                    found.append((os.path.basename(path)[:-5], path))
            except ValueError:
                continue
    for count in generated:
        path = os.path.join(workdir, "generated-%d.json" % count)
        with open(path, "w") as f:
            json.dump(plan_scaling.make_task(count, fewest_devices, seed=1), f)
        found.append(("generated-%d" % count, path))
    return found


def run_plan(tools, task, devices, model, price=None):
    """neuroshard-plan's plan JSON and wall seconds, or None and the error."""
    command = [os.path.join(tools, "neuroshard-plan"), task,
               "--devices", str(devices), "--memory-gb", str(MEMORY_GB),
               "--cost-model", model, "--model-warnings=false"]
    if price:
        command += ["--price", price]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return None, seconds, lines[-1] if lines else "failed"
    return json.loads(done.stdout), seconds, None


def join_pieces(plan):
    """`plan`'s shards with the pieces of one table that share a device
    joined, each device's range made contiguous (the planner's
    joinPiecesPerDevice); None when no device holds two pieces of a table."""
    shards = plan["shards"]
    by_table = {}
    for shard in shards:
        if not shard.get("replica"):
            by_table.setdefault(shard["table"], []).append(shard)
    joined, changed = [s for s in shards if s.get("replica")], False
    for pieces in by_table.values():
        devices = [p["device"] for p in pieces]
        rows = all("row_begin" in p for p in pieces)
        columns = not any("row_begin" in p for p in pieces)
        if len(set(devices)) == len(devices) or not (rows or columns):
            joined += pieces
            continue
        changed = True
        key = "row" if rows else "col"
        pieces = sorted(pieces, key=lambda p: p[key + "_begin"])
        order, extent = [], {}
        for piece in pieces:
            if piece["device"] not in extent:
                order.append(piece["device"])
                extent[piece["device"]] = 0
            extent[piece["device"]] += piece[key + "_end"] - \
                piece[key + "_begin"]
        start = pieces[0][key + "_begin"]
        for device in order:
            piece = dict(pieces[0], device=device)
            piece[key + "_begin"] = start
            piece[key + "_end"] = start + extent[device]
            start += extent[device]
            joined.append(piece)
    if not changed:
        return None
    return {"devices": plan["devices"], "shards": joined}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True,
                        help="the bin directory of the baseline build")
    parser.add_argument("--current", default=os.path.join(REPO, "build",
                                                          "bin"),
                        help="the bin directory of the build to judge")
    parser.add_argument("--devices", type=int, nargs="+", default=[2, 4, 8])
    parser.add_argument("--cost-models", nargs="+",
                        default=["analytical", "default"])
    parser.add_argument("--generated", type=int, nargs="*", default=[20, 60],
                        help="table counts of generated tasks")
    args = parser.parse_args()

    better = worse = same = failed = 0
    header = "%-22s %3s %-10s %10s %10s %10s %8s %8s %8s" % (
        "task", "dev", "model", "old ms", "old clean", "new ms", "new/ref",
        "old s", "new s")
    print(header)
    print("-" * len(header))
    with tempfile.TemporaryDirectory() as workdir:
        for name, path in tasks(workdir, args.generated, min(args.devices)):
            for model in args.cost_models:
                for devices in args.devices:
                    old, old_s, old_error = run_plan(args.baseline, path,
                                                     devices, model)
                    new, new_s, new_error = run_plan(args.current, path,
                                                     devices, model)
                    if old is None or new is None:
                        if (old is None) != (new is None):
                            failed += 1
                        print("%-22s %3d %-10s  old: %s; new: %s" % (
                            name, devices, model, old_error or "planned",
                            new_error or "planned"))
                        continue
                    reference, clean = old["cost_ms"], "-"
                    joined = join_pieces(old)
                    if joined:
                        with open(os.path.join(workdir, "joined.json"),
                                  "w") as f:
                            json.dump(joined, f)
                        priced, _, error = run_plan(
                            args.current, path, devices, model,
                            price=os.path.join(workdir, "joined.json"))
                        if priced:
                            reference = priced["cost_ms"]
                            clean = "%.4f" % reference
                        else:
                            clean = "invalid"
                    ratio = new["cost_ms"] / reference
                    if ratio < 1 - 1e-9:
                        better += 1
                    elif ratio > 1 + 1e-9:
                        worse += 1
                    else:
                        same += 1
                    print("%-22s %3d %-10s %10.4f %10s %10.4f %8.4f %8.2f "
                          "%8.2f" % (name, devices, model, old["cost_ms"],
                                     clean, new["cost_ms"], ratio, old_s,
                                     new_s))
    print("-" * len(header))
    print("%d better, %d the same, %d worse, %d planned by one build only" %
          (better, same, worse, failed))
    return 1 if worse or failed else 0


if __name__ == "__main__":
    sys.exit(main())
