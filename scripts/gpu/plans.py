#!/usr/bin/env python3
"""Plans made by each algorithm and cost model, timed on a GPU.

    scripts/gpu/plans.py prepare DIR --model M.mlir... --cost-model BUNDLE
    scripts/gpu/calibrate.sh run DIR      # on the GPU machine
    scripts/gpu/plans.py report DIR

`prepare` plans every model with each configuration of CONFIGS (BUNDLE is
the GPU bundle the neural ones use), records each plan's JSON
(--neuroshard-export-plan) and writes the CUDA launch manifest of its device
sets (--neuroshard-export-cuda: one launch per device, then one per device
and replicated table for the device's share of the replica's bags), each
launch numbered as a set of its own, the runner and DIR/runs.txt. On the
GPU, `calibrate.sh run` times every launch's fused forward + backward + SGD
with the runner's collection mode (CUDA events, L2 flushed, median of the
timed runs). `report` prints, per model, each plan's predicted and measured
slowest device (a device's step: the sum of its launches) and the measured
one against the best plan's. The exchange between devices is not
timed: one GPU cannot run it.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
# (label, algorithm, cost model: "gpu" for the bundle given, or a name).
CONFIGS = (
    ("neuroshard-gpu-model", "neuroshard", "gpu"),
    ("table-greedy-grid-gpu-model", "table-greedy-grid", "gpu"),
    ("neuroshard-analytical", "neuroshard", "analytical"),
    ("size-lookup-greedy", "size-lookup-greedy", "analytical"),
    ("lookup-greedy", "lookup-greedy", "analytical"),
    ("size-greedy", "size-greedy", "analytical"),
    ("dim-greedy", "dim-greedy", "analytical"),
)
WARMUP, ITERS = 3, 12


def number_launches(manifest: str) -> list:
    """Gives each launch of `manifest` a set id of its own (its index), as
    the runner's collection times one launch per set id while a device that
    holds replicas runs several; returns each launch's device."""
    with open(manifest) as f:
        lines = f.read().splitlines()
    devices = []
    for i, line in enumerate(lines):
        fields = line.split()
        if fields and fields[0] == "device":
            devices.append(int(fields[1]))
            fields[1] = str(len(devices) - 1)
            lines[i] = " ".join(fields)
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    return devices


def prepare(args) -> int:
    build = args.build
    opt = os.path.join(build, "bin", "neuroshard-opt")
    runner = os.path.join(build, "bin", "neuroshard-cuda-runner")
    for path in (opt, runner):
        if not os.path.exists(path):
            print("error: %s is missing; build with the CUDA toolkit first"
                  % path, file=sys.stderr)
            return 1
    for sub in ("bin", "manifests", "plans", "samples"):
        os.makedirs(os.path.join(args.dir, sub), exist_ok=True)
    shutil.copy(runner, os.path.join(args.dir, "bin"))
    runs, index = [], []
    for model in args.model:
        stem = os.path.splitext(os.path.basename(model))[0]
        for label, algorithm, model_name in CONFIGS:
            cost_model = args.cost_model if model_name == "gpu" \
                else model_name
            name = "%s--%s" % (stem, label)
            plan = os.path.join(args.dir, "plans", name + ".json")
            manifest = os.path.join(args.dir, "manifests", name + ".txt")
            kernels = os.path.join(args.dir, "manifests", "kernels.cubin")
            command = [
                opt, model,
                "--neuroshard-plan=algorithm=%s cost-model=%s "
                "model-warnings=false" % (algorithm, cost_model),
                "--neuroshard-export-plan=format=json output=%s" % plan,
                "--neuroshard-materialize",
                "--neuroshard-cuda-pipeline=chip=%s host=false" % args.chip,
                "--neuroshard-export-cuda=manifest=%s binary=%s" %
                (manifest, kernels), "-o", os.devnull]
            done = subprocess.run(command, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                print("error: planning %s with %s failed:\n%s" %
                      (model, label, done.stderr), file=sys.stderr)
                return 1
            runs.append("%s %d %d\n" % (name, WARMUP, ITERS))
            index.append({"name": name, "model": stem, "config": label,
                          "launch_devices": number_launches(manifest)})
            print("planned %s" % name, file=sys.stderr)
    with open(os.path.join(args.dir, "runs.txt"), "w") as f:
        f.writelines(runs)
    with open(os.path.join(args.dir, "index.json"), "w") as f:
        json.dump(index, f)
    print("prepared %s: %d plans; next: scripts/gpu/calibrate.sh run %s on "
          "the GPU machine" % (args.dir, len(runs), args.dir))
    return 0


def report(args) -> int:
    index = json.load(open(os.path.join(args.dir, "index.json")))
    rows = {}
    for entry in index:
        plan = json.load(open(os.path.join(args.dir, "plans",
                                           entry["name"] + ".json")))
        predicted = max(d["compute_ms"] for d in plan["per_device"])
        samples = os.path.join(args.dir, "samples", entry["name"] + ".jsonl")
        if not os.path.exists(samples):
            print("error: '%s' is missing: run calibrate.sh run first" %
                  samples, file=sys.stderr)
            return 1
        # A device's step is the sum of its launches' (its shard set's, and
        # its share of each replica's).
        launch_ms = {}
        for line in open(samples):
            sample = json.loads(line)
            launch_ms[int(sample["id"])] = sample["cost_ms"]
        devices = entry["launch_devices"]
        if sorted(launch_ms) != list(range(len(devices))):
            print("error: '%s' holds launches %s, the manifest %d" %
                  (samples, sorted(launch_ms), len(devices)),
                  file=sys.stderr)
            return 1
        device_ms = {}
        for k, device in enumerate(devices):
            device_ms[device] = device_ms.get(device, 0.0) + launch_ms[k]
        rows.setdefault(entry["model"], []).append(
            (entry["config"], predicted, max(device_ms.values()),
             len(device_ms), plan["devices"]))
    for model, entries in rows.items():
        best = min(e[2] for e in entries)
        print("%s: slowest device, forward + backward + SGD (ms)" % model)
        print("%-30s %10s %10s %9s %8s" % ("plan", "predicted", "measured",
                                          "vs best", "devices"))
        for config, predicted, measured, used, devices in entries:
            print("%-30s %10.3f %10.3f %8.3fx %5d/%-2d" %
                  (config, predicted, measured, measured / best, used,
                   devices))
        print()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    p.add_argument("--model", action="append", required=True)
    p.add_argument("--cost-model", required=True)
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    r = sub.add_parser("report")
    r.add_argument("dir")
    args = parser.parse_args()
    return prepare(args) if args.step == "prepare" else report(args)


if __name__ == "__main__":
    sys.exit(main())
