#!/usr/bin/env python3
"""Our plans against TorchRec's on public workloads, timed on a GPU.

    scripts/gpu/judge.py prepare DIR --workload W.json... --devices 8 [64]
    scripts/gpu/calibrate.sh run DIR      # on the GPU machine
    scripts/gpu/judge.py report DIR

or, on a machine with both a build and a GPU, the three at once:

    scripts/gpu/judge.py all DIR --workload W.json... --devices 8

For every workload (a task JSON) and device count D, `prepare` makes
NeuroShard's plan with the cost model given (--cost-model, default the
shipped model of a GPU) on D devices of --memory-gb (TorchRec's plans were
made for 80 GB) in nodes of 8, and takes TorchRec's plan of the workload
from --plans (`<workload>-<D>.torchrec.json`, with its own rating in
`<workload>-<D>.rating.json`). It prices both plans with the GPU model and
with the analytical model (`neuroshard-plan --price`), writes the workload
as a module, imports each plan into it, materializes it and exports the
CUDA launch manifest of its device sets (one launch per device, one per
device holding replicas for its share of their bags), as plans.py does for
models. A launch whose buffers would not fit one GPU (--gpu-memory-gb,
default 139: an H200) is named and left out. On the GPU,
`calibrate.sh run` times every launch's forward, backward and SGD update
(the runner's collection: CUDA events, L2 flushed, median of the timed
runs) on --draws draws of the inputs, which the runner generates from each
table's histogram. `report` prints, per pair, each plan's measured slowest
device (a device's step: the sum of its launches, the mean of its draws),
the exchange the GPU model prices for it, what each model predicted, and
TorchRec's own rating of its plan; it ends with how many pairs NeuroShard's
plan measured at or below TorchRec's.

`scale` writes a scaled-down copy of a workload and of its TorchRec plans
(rows divided, row blocks cut at the same fractions, the batch given), so
that the whole flow runs in seconds under the CUDA emulation.
"""

import argparse
import glob
import json
import math
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plans  # noqa: E402  (the launch numbering and the input draws)

ROOT = plans.ROOT
PLANNERS = ("neuroshard", "torchrec")
MODELS = ("gpu", "analytical")
DEVICES_PER_NODE = 8
MIN_SCALED_ROWS = 1024


class JudgeError(Exception):
    pass


def run_tool(command: list, what: str) -> None:
    done = subprocess.run(command, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise JudgeError("%s failed:\n%s" % (what, done.stderr.strip()))


def load_json(path: str, what: str):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise JudgeError("cannot read %s '%s': %s" % (what, path, e.strerror))
    except ValueError as e:
        raise JudgeError("%s '%s' is not JSON: %s" % (what, path, e))


def workload_name(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def topology(devices: int, memory_gb: float) -> dict:
    per_node = min(devices, DEVICES_PER_NODE)
    if devices % per_node:
        raise JudgeError("%d devices do not make whole nodes of %d" %
                         (devices, per_node))
    return {"devices": devices, "nodes": devices // per_node,
            "memory_gb": memory_gb}


def topology_options(topo: dict) -> list:
    return ["--devices", str(topo["devices"]), "--nodes", str(topo["nodes"]),
            "--memory-gb", "%g" % topo["memory_gb"]]


def float_literal(value: float) -> str:
    """An MLIR float literal of `value`, exact: MLIR wants a dot before any
    exponent ('1.0e-05', not '1e-05')."""
    mantissa, e, exponent = repr(float(value)).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return mantissa + e + exponent


def task_to_mlir(task: dict, name: str, topo: dict) -> str:
    """The workload as a module: one table per task table, one sum-pooled
    lookup of each in one function, at the task's batch."""
    batch = int(task.get("batch_size", 65536))
    lines = ["// The tables of workload %s, one lookup each, batch %d." %
             (name, batch),
             "module attributes {neuroshard.topology = "
             "#neuroshard.topology<devices = %d, memory_gb = %s, nodes = %d>}"
             " {" % (topo["devices"], float(topo["memory_gb"]),
                     topo["nodes"])]
    args, results, body = [], [], []
    for t, table in enumerate(task["tables"]):
        if "features" in table:
            raise JudgeError("table '%s' has several features; the judge "
                             "times one lookup per table" % table["name"])
        dtype = table.get("dtype", "f32")
        if dtype != "f32":
            raise JudgeError("table '%s' is %s; the runner times f32 tables"
                             % (table["name"], dtype))
        rows, dim = int(table["rows"]), int(table["dim"])
        hist = ", ".join(float_literal(v) for v in table["access_hist"])
        lines.append("  neuroshard.table @%s : rows %d, dim %d, f32 "
                     "{pooling_factor = %s : f64," %
                     (table["name"], rows, dim,
                      float_literal(table["pooling_factor"])))
        lines.append("    access_hist = array<f64: %s>}" % hist)
        itype = "i64" if rows > 2**31 - 1 or \
            batch * float(table["pooling_factor"]) * 1.5 > 2**31 - 1 \
            else "i32"
        args.append("%%idx%d: tensor<?x%s>, %%off%d: tensor<%dx%s>" %
                    (t, itype, t, batch + 1, itype))
        results.append("tensor<%dx%dxf32>" % (batch, dim))
        body.append("    %%e%d = neuroshard.embedding_bag @%s(%%idx%d, "
                    "%%off%d) sum : (tensor<?x%s>, tensor<%dx%s>) -> %s" %
                    (t, table["name"], t, t, itype, batch + 1, itype,
                     results[-1]))
    lines.append("  func.func @embeddings(%s) -> (%s) {" %
                 (", ".join(args), ", ".join(results)))
    lines += body
    lines.append("    return %s : %s" % (
        ", ".join("%%e%d" % t for t in range(len(results))),
        ", ".join(results)))
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def parse_manifest(text: str):
    """The manifest's tables (rows, dim, pooling factor), each lookup's
    table, and each launch's device, index type, bag count and shards
    (lookup, columns, rows, the rows of its device cache: 0 for a shard in
    device memory)."""
    tables, lookups, launches = [], [], []
    for line in text.splitlines():
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "table":
            tables.append((int(fields[2]), int(fields[3]), float(fields[4])))
        elif fields[0] == "lookup":
            lookups.append(int(fields[1]))
        elif fields[0] == "device":
            launches.append({"device": int(fields[1]), "index": fields[2],
                             "bags": int(fields[4]) - int(fields[3]),
                             "shards": []})
        elif fields[0] == "shard":
            launches[-1]["shards"].append(
                (int(fields[1]), int(fields[2]), int(fields[3]),
                 int(fields[4]), int(fields[5]),
                 int(fields[6]) if len(fields) > 7 else 0))
    return tables, lookups, launches


def launch_gb(launch: dict, tables: list, lookups: list) -> float:
    """What a launch holds on the GPU, about: its weights (a cached
    shard's cache only), its output and its output's gradient, and its
    lookups' indices (every index of each lookup it reads, an upper bound)
    and offsets."""
    index_bytes = 8 if launch["index"] == "i64" else 4
    weights = sum((cache or re - rb) * (ce - cb) * 4
                  for _, cb, ce, rb, re, cache in launch["shards"])
    width = sum(ce - cb for _, cb, ce, _, _, _ in launch["shards"])
    read = {lookups[k] for k, _, _, _, _, _ in launch["shards"]}
    indices = sum(launch["bags"] * (tables[t][2] + 1) for t in read)
    return (weights + 2 * launch["bags"] * width * 4 +
            indices * index_bytes) / 2**30


def keep_fitting(path: str, gpu_gb: float) -> list:
    """Drops from the manifest at `path` the launches that need more than
    `gpu_gb`; returns each dropped launch's device and size."""
    with open(path) as f:
        text = f.read()
    tables, lookups, launches = parse_manifest(text)
    sizes = [launch_gb(launch, tables, lookups) for launch in launches]
    dropped = [(launch["device"], gb) for launch, gb in zip(launches, sizes)
               if gb > gpu_gb]
    if not dropped:
        return []
    lines, k, keep = [], -1, True
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "device":
            k += 1
            keep = sizes[k] <= gpu_gb
        if keep or not fields or fields[0] not in ("device", "shard"):
            lines.append(line)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return dropped


def prepare_pair(args, work: str, path: str, devices: int) -> dict:
    """Plans, prices and exports one workload on `devices` devices."""
    name = workload_name(path)
    pair = "%s-%d" % (name, devices)
    entry = {"pair": pair, "workload": name, "devices": devices,
             "plans": {}, "skipped": None}
    theirs = os.path.join(args.plans, pair + ".torchrec.json")
    if not os.path.exists(theirs):
        entry["skipped"] = "TorchRec made no plan for it ('%s' is missing)" \
            % theirs
        return entry
    rating_path = os.path.join(args.plans, pair + ".rating.json")
    rating = load_json(rating_path, "TorchRec's rating") \
        if os.path.exists(rating_path) else {}
    memory_gb = args.memory_gb if args.memory_gb is not None \
        else float(rating.get("memory_gb", 80))
    topo = topology(devices, memory_gb)
    task = load_json(path, "workload")
    bin_dir = os.path.join(args.build, "bin")
    planner = os.path.join(bin_dir, "neuroshard-plan")
    module = os.path.join(work, "models", pair + ".mlir")
    with open(module, "w") as f:
        f.write(task_to_mlir(task, name, topo))
    given = {"torchrec": theirs}
    ours = os.path.join(work, "plans", pair + "--neuroshard.json")
    try:
        run_tool([planner, path] + topology_options(topo) +
                 ["--cost-model", args.cost_model, "--model-warnings=false",
                  "-o", ours], "planning %s with NeuroShard" % pair)
    except JudgeError as e:
        entry["skipped"] = str(e).splitlines()[-1]
        return entry
    given["neuroshard"] = ours
    for planner_name in PLANNERS:
        prices = {}
        for model in MODELS:
            priced = os.path.join(work, "plans", "%s--%s--%s.json" %
                                  (pair, planner_name, model))
            run_tool([planner, path] + topology_options(topo) +
                     ["--cost-model",
                      args.cost_model if model == "gpu" else model,
                      "--model-warnings=false", "--price",
                      given[planner_name], "-o", priced],
                     "pricing %s's plan of %s with the %s model" %
                     (planner_name, pair, model))
            prices[model] = os.path.basename(priced)
        name_run = "%s--%s" % (pair, planner_name)
        manifest = os.path.join(work, "manifests", name_run + ".txt")
        run_tool([os.path.join(bin_dir, "neuroshard-opt"), module,
                  "--neuroshard-import-plan=file=%s" % given[planner_name],
                  "--neuroshard-materialize",
                  "--neuroshard-cuda-pipeline=chip=%s host=false" % args.chip,
                  "--neuroshard-export-cuda=manifest=%s binary=%s" % (
                      manifest,
                      os.path.join(work, "manifests", "kernels.cubin")),
                  "-o", os.devnull],
                 "exporting the device sets of %s's plan of %s" %
                 (planner_name, pair))
        dropped = keep_fitting(manifest, args.gpu_memory_gb)
        for device, gb in dropped:
            print("%s: %s's device %d needs %.3g GB, over the GPU's %g GB: "
                  "not timed" % (pair, planner_name, device, gb,
                                 args.gpu_memory_gb), file=sys.stderr)
        launch_devices = plans.number_launches(manifest)
        with open(manifest) as f:
            text = f.read()
        for k in range(1, args.draws):
            with open(os.path.join(work, "manifests", "%s--draw%d.txt" %
                                   (name_run, k)), "w") as f:
                f.write(plans.shifted_streams(text, k))
        entry["plans"][planner_name] = {
            "run": name_run, "prices": prices,
            "launch_devices": launch_devices,
            "skipped_devices": [[d, gb] for d, gb in dropped],
            "rating_ms": rating.get("rating_ms")
            if planner_name == "torchrec" else None}
    return entry


def prepare(args) -> int:
    if args.draws < 1:
        raise JudgeError("--draws must be at least 1, got %d" % args.draws)
    if args.iters < 1 or args.warmup < 0:
        raise JudgeError("--iters must be at least 1 and --warmup at least "
                         "0, got %d and %d" % (args.iters, args.warmup))
    if args.gpu_memory_gb <= 0:
        raise JudgeError("--gpu-memory-gb must be positive, got %g" %
                         args.gpu_memory_gb)
    for tool in ("neuroshard-plan", "neuroshard-opt",
                 "neuroshard-cuda-runner"):
        path = os.path.join(args.build, "bin", tool)
        if not os.path.exists(path):
            raise JudgeError("%s is missing; build with the CUDA toolkit "
                             "first" % path)
    for sub in ("bin", "manifests", "models", "plans", "samples"):
        os.makedirs(os.path.join(args.dir, sub), exist_ok=True)
    shutil.copy(os.path.join(args.build, "bin", "neuroshard-cuda-runner"),
                os.path.join(args.dir, "bin"))
    pairs = []
    # Device counts outermost: the runs of the first come first, so that a
    # lease that ends early has judged whole device counts.
    for devices in args.devices:
        for path in args.workload:
            entry = prepare_pair(args, args.dir, path, devices)
            pairs.append(entry)
            print("%s: %s" % (entry["pair"], entry["skipped"] or "prepared"),
                  file=sys.stderr)
    # Each draw lists the runs in the reverse order of the one before, so
    # that neither planner's sets are always timed first.
    names = [p["run"] for e in pairs for p in e["plans"].values()]
    runs = []
    for k in range(args.draws):
        order = names if k % 2 == 0 else names[::-1]
        runs += ["%s%s %d %d\n" % (n, "--draw%d" % k if k else "",
                                   args.warmup, args.iters) for n in order]
    with open(os.path.join(args.dir, "runs.txt"), "w") as f:
        f.writelines(runs)
    with open(os.path.join(args.dir, "judge.json"), "w") as f:
        json.dump({"cost_model": args.cost_model, "draws": args.draws,
                   "gpu_memory_gb": args.gpu_memory_gb, "pairs": pairs}, f,
                  indent=1)
    print("prepared %s: %d pairs, %d plans to time; next: "
          "scripts/gpu/calibrate.sh run %s on the GPU machine" %
          (args.dir, sum(1 for e in pairs if not e["skipped"]), len(names),
           args.dir))
    return 0


def samples_path(work: str, run: str, draw: int) -> str:
    return os.path.join(work, "samples", run + ("--draw%d" % draw if draw
                                                else "") + ".jsonl")


def timed_draws(work: str, plan: dict, draws: int) -> int:
    """How many of the plan's draws, first to last, have every launch
    timed: a run cut short leaves the later ones out."""
    for k in range(draws):
        path = samples_path(work, plan["run"], k)
        if not os.path.exists(path):
            return k
        with open(path) as f:
            if sum(1 for line in f if line.strip()) < \
                    len(plan["launch_devices"]):
                return k
    return draws


def measured_devices(work: str, run: str, draws: int,
                     launch_devices: list) -> dict:
    """Each device's step: the sum of its launches, the mean of the first
    `draws` draws."""
    device_ms = {}
    for k in range(draws):
        samples = samples_path(work, run, k)
        if not os.path.exists(samples):
            raise JudgeError("'%s' is missing: run scripts/gpu/calibrate.sh "
                             "run %s first" % (samples, work))
        launch_ms = {}
        for line in open(samples):
            sample = json.loads(line)
            launch_ms[int(sample["id"])] = sample["cost_ms"]
        if sorted(launch_ms) != list(range(len(launch_devices))):
            raise JudgeError("'%s' holds launches %s, the manifest %d" %
                             (samples, sorted(launch_ms),
                              len(launch_devices)))
        for j, device in enumerate(launch_devices):
            device_ms[device] = device_ms.get(device, 0.0) + \
                launch_ms[j] / draws
    return device_ms


def plan_row(work: str, draws: int, plan: dict, measured: bool) -> dict:
    """A plan's measured slowest device (unless not `measured`), its
    exchange and what the models predicted."""
    priced = {m: load_json(os.path.join(work, "plans", plan["prices"][m]),
                           "priced plan") for m in MODELS}
    device_ms = measured_devices(work, plan["run"], draws,
                                 plan["launch_devices"]) if measured else {}
    gpu = priced["gpu"]["per_device"]
    comm = {d["device"]: d["fw_comm_ms"] + d["bw_comm_ms"] for d in gpu}
    slowest = max(device_ms, key=device_ms.get) if device_ms else None
    return {
        "measured_ms": device_ms[slowest] if device_ms else None,
        "slowest_device": slowest,
        "skipped_devices": plan["skipped_devices"],
        "comm_ms": max(comm.values()),
        "measured_with_comm_ms": max(device_ms[d] + comm[d]
                                     for d in device_ms) if device_ms
        else None,
        "predicted_compute_ms": {
            m: max(d["compute_ms"] for d in priced[m]["per_device"])
            for m in MODELS},
        "predicted_ms": {m: priced[m]["cost_ms"] for m in MODELS},
        "rating_ms": plan["rating_ms"],
    }


def number(value, width=9, digits=3) -> str:
    return ("%*.*f" % (width, digits, value)) if value is not None \
        else "%*s" % (width, "-")


def report(args) -> int:
    judge = load_json(os.path.join(args.dir, "judge.json"), "judge file")
    draws = judge["draws"]
    measured = not args.priced
    if measured:
        print("Slowest device's forward + backward + SGD, measured (mean of "
              "%d draw%s), against the models (ms)" %
              (draws, "s" * (draws > 1)))
    else:
        print("What the models predict, nothing measured (ms)")
    print("%-28s %-10s %9s %6s %9s %9s %9s %9s %9s %9s %9s" % (
        "workload", "plan", "measured", "device", "+exch", "exchange",
        "gpu cmp", "ana cmp", "gpu step", "ana step", "torchrec"))
    judged, wins, rows_out = 0, 0, []
    # Per model, the pairs it prices NeuroShard's plan at or below
    # TorchRec's, of those priced.
    priced_wins = {m: 0 for m in MODELS}
    priced_pairs = 0
    for entry in judge["pairs"]:
        if entry["skipped"]:
            print("%-28s skipped: %s" % (entry["pair"], entry["skipped"]))
            continue
        # Both plans are judged on the draws both have complete (every
        # draw, unless the run was cut short).
        common = min(timed_draws(args.dir, entry["plans"][p], draws)
                     for p in PLANNERS) if measured else 0
        if measured and common == 0:
            print("%-28s not timed yet: '%s' is missing or incomplete" % (
                entry["pair"], samples_path(args.dir, entry["plans"][
                    "neuroshard"]["run"], 0)))
        rows = {p: plan_row(args.dir, common, entry["plans"][p], common > 0)
                for p in PLANNERS}
        for p in PLANNERS:
            row = rows[p]
            print("%-28s %-10s %s %6s %s %s %s %s %s %s %s" % (
                entry["pair"], p, number(row["measured_ms"]),
                row["slowest_device"] if row["slowest_device"] is not None
                else "-", number(row["measured_with_comm_ms"]),
                number(row["comm_ms"]),
                number(row["predicted_compute_ms"]["gpu"]),
                number(row["predicted_compute_ms"]["analytical"]),
                number(row["predicted_ms"]["gpu"]),
                number(row["predicted_ms"]["analytical"]),
                number(row["rating_ms"])))
            for device, gb in row["skipped_devices"]:
                print("%-28s %-10s device %d not timed: it needs %.3g GB, "
                      "the GPU %g" % ("", "", device, gb,
                                      judge["gpu_memory_gb"]))
            rows_out.append(dict(row, pair=entry["pair"], plan=p))
        ours, theirs = rows["neuroshard"], rows["torchrec"]
        priced_pairs += 1
        for m in MODELS:
            priced_wins[m] += \
                ours["predicted_ms"][m] <= theirs["predicted_ms"][m]
        if not measured:
            continue
        if ours["measured_ms"] is None or theirs["measured_ms"] is None:
            continue
        if ours["skipped_devices"] or theirs["skipped_devices"]:
            print("%-28s not judged: a plan has devices that were not timed"
                  % "")
            continue
        judged += 1
        ratio = ours["measured_ms"] / theirs["measured_ms"]
        wins += ratio <= 1.0
        print("%-28s neuroshard / torchrec: %.3fx measured, %.3fx with the "
              "exchange%s" % ("", ratio, ours["measured_with_comm_ms"] /
                              theirs["measured_with_comm_ms"],
                              "" if common == draws else
                              " (%d of %d draws timed)" % (common, draws)))
    for m in MODELS:
        print("Priced by the %s model (%s), NeuroShard's plan is at or below "
              "TorchRec's on %d of %d pairs" % (
                  m, judge["cost_model"] if m == "gpu" else m,
                  priced_wins[m], priced_pairs))
    if measured:
        print("NeuroShard's plan measured at or below TorchRec's on %d of %d "
              "judged pairs" % (wins, judged))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"pairs": rows_out, "judged": judged, "wins": wins}, f,
                      indent=1)
    return 0


def scaled_rows(rows: int, divisor: int) -> int:
    """`rows` divided, but no fewer than MIN_SCALED_ROWS (nor than it had),
    so that every row block of a plan keeps some rows."""
    return max(min(rows, MIN_SCALED_ROWS), math.ceil(rows / divisor))


def scale(args) -> int:
    """A copy of the workload with rows divided by --rows-divisor, the
    batch given and each table's histogram drawn again for them (a Zipf
    stream of --skew, the runtime's generator), and its TorchRec plans with
    every row block cut at the same fraction of the table."""
    if args.rows_divisor < 1 or args.batch < 1:
        raise JudgeError("--rows-divisor and --batch must be at least 1")
    try:
        from neuroshard import _core
    except ImportError as e:
        raise JudgeError("scale draws the histograms with the neuroshard "
                         "package (PYTHONPATH=python:build/lib/python3/"
                         "dist-packages): %s" % e)
    task = load_json(args.workload, "workload")
    name = workload_name(args.workload)
    rows = {}
    for t, table in enumerate(task["tables"]):
        rows[table["name"]] = (int(table["rows"]),
                               scaled_rows(int(table["rows"]),
                                           args.rows_divisor))
        table["rows"] = rows[table["name"]][1]
        # One batch of the copy's own, drawn as the workload's was.
        stream = _core.zipf_index_stream(
            table["rows"], args.skew,
            max(1, round(args.batch * float(table["pooling_factor"]))),
            _core.mix_seed(2023, t))
        table["access_hist"] = [round(f, 6) for f in
                                _core.access_histogram(stream)]
        table.pop("hist_batch_size", None)
    task["batch_size"] = args.batch
    os.makedirs(os.path.join(args.out, "plans"), exist_ok=True)
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(task, f, indent=1)
    for path in sorted(glob.glob(os.path.join(args.plans,
                                              name + "-*.torchrec.json"))):
        plan = load_json(path, "TorchRec plan")
        if args.devices and plan.get("world_size") not in args.devices:
            continue
        for table_name, table in plan["tables"].items():
            if table_name not in rows:
                raise JudgeError("'%s' shards table '%s', which the "
                                 "workload lacks" % (path, table_name))
            old, new = rows[table_name]
            for shard in table["shards"]:
                begin, size = shard["shard_offsets"][0], \
                    shard["shard_sizes"][0]
                b, e = (begin * new) // old, ((begin + size) * new) // old
                if e <= b:
                    raise JudgeError(
                        "table '%s' of '%s': rows [%d, %d) would be empty "
                        "with %d rows in all; use a smaller --rows-divisor" %
                        (table_name, path, begin, begin + size, new))
                shard["shard_offsets"][0], shard["shard_sizes"][0] = b, e - b
        with open(os.path.join(args.out, "plans",
                               os.path.basename(path)), "w") as f:
            json.dump(plan, f, indent=1)
        # TorchRec's rating is of the full plan: the copy keeps the rest.
        rating_path = path.replace(".torchrec.json", ".rating.json")
        if os.path.exists(rating_path):
            rating = load_json(rating_path, "TorchRec's rating")
            for key in ("rating_ms", "rank_perf_ms"):
                rating.pop(key, None)
            if "batch_size_per_rank" in rating:
                rating["batch_size_per_rank"] = \
                    args.batch // int(plan["world_size"])
            with open(os.path.join(args.out, "plans",
                                   os.path.basename(rating_path)), "w") as f:
                json.dump(rating, f, indent=1)
    print("scaled %s: rows / %d, batch %d, into %s" %
          (name, args.rows_divisor, args.batch, args.out))
    return 0


def run_all(args) -> int:
    prepare(args)
    done = subprocess.run(["bash", os.path.join(ROOT, "scripts", "gpu",
                                                 "calibrate.sh"), "run",
                           args.dir])
    if done.returncode != 0:
        raise JudgeError("timing the sets failed (calibrate.sh run %s)" %
                         args.dir)
    return report(args)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    for step in ("prepare", "all"):
        p = sub.add_parser(step)
        p.add_argument("dir")
        p.add_argument("--workload", action="append", required=True,
                       help="a workload's task JSON (repeatable)")
        p.add_argument("--devices", type=int, action="append",
                       required=True, help="a device count (repeatable)")
        p.add_argument("--plans", required=True,
                       help="the directory of TorchRec's plans and ratings "
                       "(<workload>-<D>.torchrec.json, .rating.json)")
        p.add_argument("--cost-model", default="default",
                       help="NeuroShard's cost model (default: the shipped "
                       "model of a GPU)")
        p.add_argument("--memory-gb", type=float,
                       help="memory per device (default: the rating's, "
                       "else 80)")
        p.add_argument("--gpu-memory-gb", type=float, default=139.0,
                       help="memory of the GPU that times the sets; a "
                       "launch needing more is not timed (default 139)")
        p.add_argument("--draws", type=int, default=3,
                       help="draws of the inputs each plan is timed on "
                       "(default 3)")
        p.add_argument("--warmup", type=int, default=3,
                       help="untimed runs of each launch (default 3)")
        p.add_argument("--iters", type=int, default=12,
                       help="timed runs of each launch, their median kept "
                       "(default 12)")
        p.add_argument("--chip", default="sm_90")
        p.add_argument("--build", default=os.path.join(ROOT, "build"))
        if step == "all":
            p.add_argument("--json", help="also write the table as JSON")
            p.set_defaults(priced=False)
    r = sub.add_parser("report")
    r.add_argument("dir")
    r.add_argument("--json", help="also write the table as JSON")
    r.add_argument("--priced", action="store_true",
                   help="print what the models predict, before anything is "
                   "timed")
    s = sub.add_parser("scale")
    s.add_argument("workload")
    s.add_argument("out")
    s.add_argument("--plans", required=True)
    s.add_argument("--rows-divisor", type=int, required=True)
    s.add_argument("--batch", type=int, required=True)
    s.add_argument("--devices", type=int, action="append",
                   help="copy only the plans for this device count "
                   "(repeatable; default: every plan)")
    s.add_argument("--skew", type=float, default=1.1,
                   help="Zipf exponent of the copy's histograms (default "
                   "1.1, the public workloads')")
    args = parser.parse_args()
    try:
        return {"prepare": prepare, "report": report, "scale": scale,
                "all": run_all}[args.step](args)
    except JudgeError as e:
        print("error: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
