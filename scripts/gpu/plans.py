#!/usr/bin/env python3
"""Plans made by each algorithm and cost model, timed on a GPU.

    scripts/gpu/plans.py prepare DIR --model M.mlir... --cost-model BUNDLE
    scripts/gpu/calibrate.sh run DIR      # on the GPU machine
    scripts/gpu/plans.py report DIR

`prepare` plans every model with each configuration of CONFIGS (BUNDLE is
the GPU bundle the neural ones use; --configs keeps some of them, and each
--compare-cost-model OTHER adds NeuroShard with that bundle, labelled
`neuroshard-` and its directory's name, after `neuroshard-gpu-model`, so
that two bundles' plans are timed side by side on one GPU), records each
plan's JSON (--neuroshard-export-plan) and writes the CUDA launch manifest
of its device sets (--neuroshard-export-cuda: one launch per device, then
one per device and replicated table for the device's share of the replica's
bags), each launch numbered as a set of its own, the runner and
DIR/runs.txt. With --verify-top K (K > 0) it also writes, per model, the
device sets of NeuroShard's K best candidates with the GPU model, without
data-parallel replicas (the pass option verify-export) to DIR/verify/MODEL and lists their manifest twice in
runs.txt: first (run a, which chooses) and last (run b, which measures the
choice on other draws of the inputs: its lookups read other index streams).
On the GPU, `calibrate.sh run` times every launch's fused forward + backward
+ SGD with the runner's collection mode (CUDA events, L2 flushed, median of
the timed runs). `report` prints, per model, each plan's predicted and
measured slowest device (a device's step: the sum of its launches) and the
measured one against the best plan's; with verification it plans again with
run a's times (verify-timings), which chooses among the candidates
(`neuroshard-verified-gpu-model`, measured by run b), lists every
candidate's measured slowest device in both runs, and ends with the chosen
plan against the model's choice and the table-wise plan, all in run b. The
exchange between devices is not timed: one GPU cannot run it.

`prepare --draws N` times each plan on N draws of its inputs (draw k reads
every lookup's index stream k after its own; the later draws are listed
after the first, each in the reverse order of the one before), and `report`
prices a device by the mean of its draws. `report --experience FILE` appends
the sets run a timed to a new experience file of the GPU, which
`python3 -m neuroshard.calibrate --refine BUNDLE --experience FILE` refines
the bundle with.
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


def configurations(args) -> list:
    """The (label, algorithm, cost model) of each plan `prepare` makes for a
    model: CONFIGS, or those --configs names, and NeuroShard with each
    --compare-cost-model bundle after NeuroShard with the given one."""
    labels = [c[0] for c in CONFIGS]
    keep = labels if args.configs is None else \
        [c for c in args.configs.split(",") if c]
    unknown = [c for c in keep if c not in labels]
    if unknown or not keep:
        raise ValueError("--configs: %s; expected a comma list of %s" % (
            "unknown %s" % ", ".join(repr(c) for c in unknown) if unknown
            else "no configuration", ", ".join(labels)))
    configs = []
    for label, algorithm, model_name in CONFIGS:
        if label in keep:
            configs.append((label, algorithm, model_name))
        if label == "neuroshard-gpu-model":
            for bundle in args.compare_cost_model or []:
                name = os.path.basename(os.path.normpath(bundle))
                configs.append(("neuroshard-" + name, "neuroshard", bundle))
    compared = [c[0] for c in configs]
    twice = sorted({c for c in compared if compared.count(c) > 1})
    if twice:
        raise ValueError("--compare-cost-model: %s would be planned twice"
                         % ", ".join(twice))
    return configs


def prepare(args) -> int:
    try:
        configs = configurations(args)
    except ValueError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
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
        for label, algorithm, model_name in configs:
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
            # Draw k of the plan's inputs reads the index streams k after
            # its own manifest's.
            with open(manifest) as f:
                text = f.read()
            for k in range(1, args.draws):
                with open(os.path.join(args.dir, "manifests", "%s--draw%d.txt"
                                       % (name, k)), "w") as f:
                    f.write(shifted_streams(text, k))
            index.append({"name": name, "model": stem, "config": label,
                          "launch_devices": number_launches(manifest),
                          "draws": args.draws})
            print("planned %s" % name, file=sys.stderr)
    verify = []
    if args.verify_top > 0:
        kernels = os.path.join(args.dir, "manifests", "kernels.cubin")
        for model in args.model:
            stem = os.path.splitext(os.path.basename(model))[0]
            sets_dir = os.path.join(args.dir, "verify", stem)
            options = verify_options(args.cost_model, args.verify_top)
            done = subprocess.run(
                [opt, model, "--neuroshard-plan=%s verify-export=%s" %
                 (options, sets_dir), "-o", os.devnull],
                stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                print("error: writing the candidates' sets of %s failed:\n%s"
                      % (model, done.stderr), file=sys.stderr)
                return 1
            # The sets' manifest names its kernels next to it: the ones
            # the plans' manifests use. Run b times other draws of the
            # inputs than run a: its lookups read the streams after a's.
            with open(os.path.join(sets_dir, "sets.txt")) as f:
                text = f.read()
            draws = json.load(open(os.path.join(sets_dir, "sets.json")))["draws"]
            for run, shift in (("a", 0), ("b", draws)):
                with open(os.path.join(args.dir, "manifests", "%s--verify-%s.txt"
                                       % (stem, run)), "w") as f:
                    f.write(shifted_streams(text, shift))
            verify.append({"model": model, "stem": stem, "dir": sets_dir,
                           "options": options})
            print("wrote the candidates' sets of %s" % stem, file=sys.stderr)
        if not os.path.exists(kernels):
            print("error: %s is missing" % kernels, file=sys.stderr)
            return 1
    # The later draws of the plans follow the first, each in the reverse
    # order of the one before, so that no plan is always timed first.
    plan_runs = list(runs)
    for k in range(1, args.draws):
        order = runs if k % 2 == 0 else runs[::-1]
        plan_runs += [line.replace(" ", "--draw%d " % k, 1) for line in order]
    # Run a chooses before the plans are timed, run b measures after.
    runs = ["%s--verify-a %d %d\n" % (v["stem"], WARMUP, ITERS)
            for v in verify] + plan_runs + \
        ["%s--verify-b %d %d\n" % (v["stem"], WARMUP, ITERS) for v in verify]
    with open(os.path.join(args.dir, "runs.txt"), "w") as f:
        f.writelines(runs)
    with open(os.path.join(args.dir, "index.json"), "w") as f:
        json.dump({"plans": index, "verify": verify}, f)
    print("prepared %s: %d plans%s; next: scripts/gpu/calibrate.sh run %s "
          "on the GPU machine" %
          (args.dir, len(index),
           ", the candidates' sets of %d model(s)" % len(verify)
           if verify else "", args.dir))
    return 0


def shifted_streams(manifest: str, shift: int) -> str:
    """`manifest` with every lookup reading the index stream `shift` after
    its own: other draws of the same tables' inputs."""
    lines = []
    for line in manifest.splitlines():
        fields = line.split()
        if fields and fields[0] == "lookup":
            fields[2] = str(int(fields[2]) + shift)
            line = " ".join(fields)
        lines.append(line)
    return "\n".join(lines) + "\n"


def verify_options(cost_model: str, top: int) -> str:
    """The --neuroshard-plan options of NeuroShard with the GPU model whose
    candidates are verified: those of the neuroshard-gpu-model plan, less
    data-parallel replicas, whose sets the runner would time with the whole
    batch (verify-export refuses a best plan with replicas)."""
    return ("algorithm=neuroshard cost-model=%s model-warnings=false "
            "sharding-types=table_wise,column_wise,row_wise,table_row_wise "
            "verify-top=%d" % (cost_model, top))


def verified_plans(args, entry: dict) -> dict:
    """Plans `entry`'s model again with the times of run a (which chooses)
    and of run b (which measures): the chosen plan's JSON and every
    candidate's measured slowest device in both runs."""
    opt = os.path.join(args.build, "bin", "neuroshard-opt")
    found = {}
    for run in ("a", "b"):
        timed = entry["dir"] + "-" + run
        os.makedirs(timed, exist_ok=True)
        shutil.copy(os.path.join(entry["dir"], "sets.json"), timed)
        shutil.copy(os.path.join(args.dir, "samples", "%s--verify-%s.jsonl"
                                 % (entry["stem"], run)),
                    os.path.join(timed, "samples.jsonl"))
        plan = os.path.join(args.dir, "plans", "%s--verified-%s.json" %
                            (entry["stem"], run))
        # Run a's sets are what measured selection chose on: they become
        # experience where --experience asks (run b holds the same sets on
        # other draws, which would leak between a refinement's splits).
        experience = (" experience=%s" % os.path.abspath(args.experience)
                      if args.experience and run == "a" else "")
        subprocess.run(
            [opt, entry["model"], "--neuroshard-plan=%s verify-timings=%s%s" %
             (entry["options"], timed, experience),
             "--neuroshard-export-plan=format=json output=%s" % plan,
             "-o", os.devnull], check=True)
        found[run] = json.load(open(plan))
    return found


def report(args) -> int:
    index = json.load(open(os.path.join(args.dir, "index.json")))
    if isinstance(index, list):
        index = {"plans": index, "verify": []}
    if args.experience and not index["verify"]:
        print("error: --experience: %s holds no candidates of measured "
              "selection to learn from: prepare it with --verify-top K" %
              args.dir, file=sys.stderr)
        return 1
    rows = {}
    candidates = {}
    summary = []
    for entry in index["verify"]:
        runs = verified_plans(args, entry)
        chosen = runs["a"]["verification"]["chosen"]
        measured = [max(c["measured_compute_ms"])
                    for c in runs["b"]["verification"]["candidates"]]
        plan = runs["a"]
        rows.setdefault(entry["stem"], []).append(
            ("neuroshard-verified-gpu-model",
             max(d["compute_ms"] for d in plan["per_device"]),
             measured[chosen],
             sum(1 for d in plan["per_device"] if d["compute_ms"] > 0),
             plan["devices"]))
        origins = [c["origin"] for c in runs["b"]["verification"]["candidates"]]
        summary.append((entry["stem"], measured[chosen], measured[0],
                        measured[origins.index("table-greedy-grid")]
                        if "table-greedy-grid" in origins else None))
        candidates[entry["stem"]] = [
            (c["origin"], c["predicted_ms"], c["measured_ms"],
             runs["b"]["verification"]["candidates"][i]["measured_ms"],
             i == chosen)
            for i, c in enumerate(runs["a"]["verification"]["candidates"])]
    for entry in index["plans"]:
        plan = json.load(open(os.path.join(args.dir, "plans",
                                           entry["name"] + ".json")))
        predicted = max(d["compute_ms"] for d in plan["per_device"])
        # A device's step is the sum of its launches' (its shard set's, and
        # its share of each replica's), the mean over the draws of its
        # inputs.
        draws = entry.get("draws", 1)
        devices = entry["launch_devices"]
        device_ms = {}
        for k in range(draws):
            name = entry["name"] + ("--draw%d" % k if k else "")
            samples = os.path.join(args.dir, "samples", name + ".jsonl")
            if not os.path.exists(samples):
                print("error: '%s' is missing: run calibrate.sh run first" %
                      samples, file=sys.stderr)
                return 1
            launch_ms = {}
            for line in open(samples):
                sample = json.loads(line)
                launch_ms[int(sample["id"])] = sample["cost_ms"]
            if sorted(launch_ms) != list(range(len(devices))):
                print("error: '%s' holds launches %s, the manifest %d" %
                      (samples, sorted(launch_ms), len(devices)),
                      file=sys.stderr)
                return 1
            for j, device in enumerate(devices):
                device_ms[device] = device_ms.get(device, 0.0) + \
                    launch_ms[j] / draws
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
        if model in candidates:
            print("candidates of measured selection (slowest device's "
                  "compute and modelled exchange; > chosen by run a)")
            print("  %-26s %10s %10s %10s" % ("origin", "predicted",
                                              "run a", "run b"))
            for origin, predicted, run_a, run_b, chosen in candidates[model]:
                print("%s %-26s %10.3f %10.3f %10.3f" %
                      (">" if chosen else " ", origin, predicted, run_a,
                       run_b))
        print()
    if summary:
        print_selection_summary(summary)
    return 0


def print_selection_summary(summary: list) -> None:
    """Per model, the slowest device's compute in run b (draws of the
    inputs run a did not choose on) of the plan measured selection chose,
    of the model's choice and of the table-wise plan, and the means of their
    ratios."""
    print("measured selection, judged on run b: slowest device (ms)")
    print("%-16s %10s %10s %10s %14s %14s" % (
        "model", "verified", "model's", "table-wise", "vs model's",
        "vs table-wise"))
    ratios_model, ratios_table = [], []
    for stem, verified, model, table in summary:
        ratios_model.append(verified / model)
        if table is not None:
            ratios_table.append(verified / table)
        print("%-16s %10.3f %10.3f %10s %13.3fx %14s" % (
            stem, verified, model,
            "%.3f" % table if table is not None else "-", verified / model,
            "%.3fx" % (verified / table) if table is not None else "-"))
    print("%-16s %10s %10s %10s %13.3fx %14s" % (
        "mean", "", "", "", sum(ratios_model) / len(ratios_model),
        "%.3fx" % (sum(ratios_table) / len(ratios_table))
        if ratios_table else "-"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    p.add_argument("--model", action="append", required=True)
    p.add_argument("--cost-model", required=True)
    p.add_argument("--compare-cost-model", action="append",
                   help="also plan with NeuroShard and this bundle "
                   "(repeatable)")
    p.add_argument("--configs",
                   help="the configurations of CONFIGS to plan, as a comma "
                   "list (default: all)")
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--verify-top", type=int, default=0,
                   help="also write the sets of NeuroShard's K best "
                   "candidates, for measured selection (0: none)")
    p.add_argument("--draws", type=int, default=1,
                   help="time each plan on N draws of its inputs (its own "
                   "manifest's index streams and the N-1 after them) and "
                   "price a device by their mean (default 1)")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    r = sub.add_parser("report")
    r.add_argument("dir")
    r.add_argument("--build", default=os.path.join(ROOT, "build"))
    r.add_argument("--experience", metavar="FILE",
                   help="append the sets run a timed for measured selection "
                   "to this experience file, to refine the GPU bundle with "
                   "(python3 -m neuroshard.calibrate --refine BUNDLE "
                   "--experience FILE)")
    args = parser.parse_args()
    if args.step == "prepare" and args.draws < 1:
        print("error: --draws must be at least 1, got %d" % args.draws,
              file=sys.stderr)
        return 1
    if args.step == "report" and args.experience and \
            os.path.exists(args.experience):
        print("error: the experience file '%s' exists: report appends each "
              "set once, so name a new file" % args.experience,
              file=sys.stderr)
        return 1
    return prepare(args) if args.step == "prepare" else report(args)


if __name__ == "__main__":
    sys.exit(main())
