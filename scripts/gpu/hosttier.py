#!/usr/bin/env python3
"""A plan with tables in host memory, its devices timed on a GPU.

    scripts/gpu/hosttier.py prepare DIR [--workload W.json] [--devices 8]
    scripts/gpu/hosttier.py run DIR [--max-rows R]   # on the GPU machine
    scripts/gpu/hosttier.py report DIR
    scripts/gpu/hosttier.py fit HOST_CACHE_JSON

`prepare` plans the workload (default: HugeCTR's 7-table configuration,
1,662 GB of tables) with NeuroShard on --devices devices of --memory-gb in
nodes of 8, each node with --host-memory-gb of host memory, so that the
tables the devices cannot hold go to host memory behind device caches. It
writes the workload as a module, imports the plan into it, materializes it
and exports the CUDA launch manifest, whose shards carry their caches, with
the kernels and the runner.

`run` times every launch with neuroshard-cuda-runner: each cached shard's
rows in pinned host memory mapped into the GPU, its cache in device memory,
the generated fetch kernel before the forward and the backward on draws of
its rows from the power law the planner priced the cache with. A GPU
machine holds less than a node of the plan: --max-rows keeps each table's
first rows (a cache keeps its share of its shard's), so the times are of a
scaled copy, the same batch and lookups over fewer rows. The runner checks
forward and backward against its CPU reference.

`report` prints, per device, the plan's predicted step, its compute (the
host traffic of its caches' misses included) and its exchange, beside the
measured forward and forward + backward + SGD step of its launches, the
hit rate each cache reached beside the one the planner expected of its
table, and the slowest device, predicted and measured.

`fit` reads what `neuroshard-cuda-runner --host-cache --json` measured
(check.sh's hostcache section) and fits the host link the planner prices
cache misses at: each cache's step beyond the table in device memory
against the bytes its misses read from host memory per step, by least
squares. It prints the bandwidth for `--host-gbps` and the fixed cost of a
step's fetch.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import judge  # noqa: E402  (the workload as a module, the tool runner)

ROOT = judge.ROOT
WORKLOAD = os.path.join(ROOT, "test", "neuroshard-plan", "Inputs",
                        "hugectr-7table.json")


class HostTierError(Exception):
    pass


def prepare(args) -> int:
    if args.devices < 1 or args.memory_gb <= 0 or args.host_memory_gb < 0:
        raise HostTierError(
            "--devices must be at least 1, --memory-gb positive and "
            "--host-memory-gb not negative; got %d, %g and %g" %
            (args.devices, args.memory_gb, args.host_memory_gb))
    bin_dir = os.path.join(args.build, "bin")
    for tool in ("neuroshard-plan", "neuroshard-opt",
                 "neuroshard-cuda-runner"):
        if not os.path.exists(os.path.join(bin_dir, tool)):
            raise HostTierError("%s is missing from %s; build first" %
                                (tool, bin_dir))
    topo = judge.topology(args.devices, args.memory_gb)
    if os.path.exists(args.dir):
        shutil.rmtree(args.dir)
    os.makedirs(os.path.join(args.dir, "bin"))
    plan = os.path.join(args.dir, "plan.json")
    judge.run_tool([os.path.join(bin_dir, "neuroshard-plan"), args.workload] +
                   judge.topology_options(topo) +
                   ["--host-memory-gb", "%g" % args.host_memory_gb,
                    "--cost-model", args.cost_model, "--model-warnings=false",
                    "-o", plan], "planning %s" % args.workload)
    task = judge.load_json(args.workload, "workload")
    name = judge.workload_name(args.workload)
    module = os.path.join(args.dir, name + ".mlir")
    with open(module, "w") as f:
        f.write(judge.task_to_mlir(task, name, topo))
    judge.run_tool([os.path.join(bin_dir, "neuroshard-opt"), module,
                    "--neuroshard-import-plan=file=%s" % plan,
                    "--neuroshard-materialize",
                    "--neuroshard-cuda-pipeline=chip=%s host=false" %
                    args.chip,
                    "--neuroshard-export-cuda=manifest=%s binary=%s" % (
                        os.path.join(args.dir, "manifest.txt"),
                        os.path.join(args.dir, "kernels.cubin")),
                    "-o", os.devnull], "exporting the plan's device sets")
    shutil.copy(os.path.join(bin_dir, "neuroshard-cuda-runner"),
                os.path.join(args.dir, "bin"))
    runtime = os.path.join(args.build, "lib", "libneuroshard_cuda_runtime.so")
    if os.path.exists(runtime):
        shutil.copy(runtime, os.path.join(args.dir, "bin"))
    planned = judge.load_json(plan, "plan")
    cached = [t for t in planned["per_table"] if t.get("storage") == "host"]
    print("planned %s on %d devices of %g GB: %.4f ms, slowest device %d; "
          "%d of %d tables in host memory (%s)" %
          (name, args.devices, args.memory_gb, planned["cost_ms"],
           planned["slowest_device"], len(cached), len(planned["per_table"]),
           ", ".join(t["name"] for t in cached) or "none"))
    print("prepared %s: run 'scripts/gpu/hosttier.py run %s' on the GPU" %
          (args.dir, args.dir))
    return 0


def run(args) -> int:
    manifest = os.path.join(args.dir, "manifest.txt")
    if not os.path.exists(manifest):
        raise HostTierError("%s has no manifest.txt; run prepare first" %
                            args.dir)
    runner = args.runner or os.path.join(args.dir, "bin",
                                         "neuroshard-cuda-runner")
    results = os.path.join(args.dir, "results")
    os.makedirs(results, exist_ok=True)
    command = [runner, "--manifest", manifest, "--json",
               os.path.join(results, "run.json"),
               "--cache-warmup", str(args.cache_warmup),
               "--warmup", str(args.warmup), "--iters", str(args.iters)]
    if args.max_rows:
        command += ["--max-rows", str(args.max_rows)]
    if not args.flush:
        command.append("--no-flush")
    print("$ " + " ".join(command), flush=True)
    with open(os.path.join(results, "run.log"), "w") as log:
        done = subprocess.run(command, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        log.write(done.stdout)
    sys.stdout.write(done.stdout)
    if done.returncode != 0:
        raise HostTierError("the runner failed (exit %d); see %s" %
                            (done.returncode,
                             os.path.join(results, "run.log")))
    with open(os.path.join(results, "max_rows.txt"), "w") as f:
        f.write("%d\n" % (args.max_rows or 0))
    return 0


def report(args) -> int:
    plan = judge.load_json(os.path.join(args.dir, "plan.json"), "plan")
    run_path = os.path.join(args.dir, "results", "run.json")
    measured = judge.load_json(run_path, "the runner's results")
    max_rows_path = os.path.join(args.dir, "results", "max_rows.txt")
    max_rows = int(open(max_rows_path).read()) \
        if os.path.exists(max_rows_path) else 0
    per_device = {d["device"]: d for d in plan["per_device"]}
    steps, forwards, caches = {}, {}, {}
    for launch in measured["launches"]:
        device = launch["device"]
        steps[device] = steps.get(device, 0.0) + \
            launch["forward_backward"]["median_ms"]
        forwards[device] = forwards.get(device, 0.0) + \
            launch["forward"]["median_ms"]
        caches.setdefault(device, []).extend(launch.get("caches", []))
    expected = {t["name"]: t for t in plan["per_table"]
                if t.get("storage") == "host"}
    print("%s on %d devices, timed on %s%s" %
          (plan.get("cost_model", "?"), plan["devices"], measured["device"],
           ", tables cut to their first %d rows" % max_rows
           if max_rows else ""))
    print("%-7s %-10s %-10s %-10s %-10s %-10s %s" %
          ("device", "predicted", "compute", "exchange", "forward",
           "step", "caches: hit rate measured (expected)"))
    rows = []
    for device in sorted(per_device):
        d = per_device[device]
        hits = []
        for cache in caches.get(device, []):
            table = cache["shard"].split("[")[0]
            want = expected.get(table, {}).get("expected_hit_rate")
            hits.append("%s %.1f%% (%s)" % (
                cache["shard"], 100.0 * cache["row_hit_rate"],
                "%.1f%%" % (100.0 * want) if want is not None else "-"))
        row = {"device": device, "predicted_ms": d["total_ms"],
               "compute_ms": d["compute_ms"],
               "exchange_ms": d["fw_comm_ms"] + d["bw_comm_ms"],
               "forward_ms": forwards.get(device),
               "step_ms": steps.get(device),
               "caches": caches.get(device, [])}
        rows.append(row)
        print("%-7d %-10.4f %-10.4f %-10.4f %-10s %-10s %s" % (
            device, row["predicted_ms"], row["compute_ms"],
            row["exchange_ms"],
            "%.4f" % row["forward_ms"] if row["forward_ms"] is not None
            else "not run",
            "%.4f" % row["step_ms"] if row["step_ms"] is not None
            else "not run", "; ".join(hits)))
    timed = [r for r in rows if r["step_ms"] is not None]
    if not timed:
        raise HostTierError("%s times no device of the plan" % run_path)
    slowest = max(timed, key=lambda r: r["step_ms"])
    print("slowest device: predicted %d (%.4f ms), measured %d "
          "(%.4f ms step, %.4f ms forward)" %
          (plan["slowest_device"], plan["cost_ms"], slowest["device"],
           slowest["step_ms"], slowest["forward_ms"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"plan_cost_ms": plan["cost_ms"],
                       "predicted_slowest": plan["slowest_device"],
                       "measured_slowest": slowest["device"],
                       "max_rows": max_rows, "devices": rows}, f, indent=1)
    return 0


def fit(args) -> int:
    measured = judge.load_json(args.file, "the runner's host-cache results")
    try:
        device_ms = measured["host_cache"]["device_memory"]["median_ms"]
        caches = measured["host_cache"]["caches"]
        points = [((c["fills"] + c["read_through"] + c["write_backs"]) *
                   c["row_bytes"] / max(c["steps"], 1),
                   c["step"]["median_ms"] - device_ms, c["cache_rows"])
                  for c in caches]
    except (KeyError, TypeError) as e:
        raise HostTierError("%s is not the JSON of neuroshard-cuda-runner "
                            "--host-cache (no %s)" % (args.file, e))
    if len(points) < 2:
        raise HostTierError("%s times %d cache size(s); the fit needs two or "
                            "more" % (args.file, len(points)))
    print("%-12s %-16s %-14s" % ("cache rows", "host MB/step", "extra ms"))
    for bytes_, extra, rows in points:
        print("%-12d %-16.3f %-14.4f" % (rows, bytes_ / 1e6, extra))
    n = float(len(points))
    mean_b = sum(b for b, _, _ in points) / n
    mean_t = sum(t for _, t, _ in points) / n
    spread = sum((b - mean_b) ** 2 for b, _, _ in points)
    if spread <= 0.0:
        raise HostTierError("every cache size read the same bytes from host "
                            "memory; the fit needs sizes that miss "
                            "differently")
    slope = sum((b - mean_b) * (t - mean_t) for b, t, _ in points) / spread
    if slope <= 0.0:
        raise HostTierError("the steps do not take longer as more bytes "
                            "come from host memory (slope %.3g ms/MB); no "
                            "bandwidth to fit" % (slope * 1e6))
    gbps = 1.0 / (slope * 1e6)  # bytes / (GB/s * 1e9) * 1e3 ms
    fixed = mean_t - slope * mean_b
    print("host link: %.1f GB/s for cache misses, %.4f ms of fixed cost per "
          "step (%d cache sizes)" % (gbps, fixed, len(points)))
    print("plan with: --host-gbps %.1f" % gbps)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir")
    p.add_argument("--workload", default=WORKLOAD,
                   help="task JSON (default: HugeCTR's 7-table one)")
    p.add_argument("--devices", type=int, default=8)
    p.add_argument("--memory-gb", type=float, default=80.0)
    p.add_argument("--host-memory-gb", type=float, default=2048.0,
                   help="host memory per node (default 2048: a DGX H100)")
    p.add_argument("--cost-model", default="default")
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--max-rows", type=int, default=20000000,
                   help="rows kept of each table (default 20M; 0: all)")
    r.add_argument("--cache-warmup", type=int, default=50,
                   help="steps that fill the caches before timing")
    r.add_argument("--warmup", type=int, default=3)
    r.add_argument("--iters", type=int, default=10)
    r.add_argument("--no-flush", dest="flush", action="store_false")
    r.add_argument("--runner", help="default: DIR/bin/neuroshard-cuda-runner")
    s = sub.add_parser("report")
    s.add_argument("dir")
    s.add_argument("--json", help="also write the table as JSON")
    f = sub.add_parser("fit")
    f.add_argument("file", help="the JSON of neuroshard-cuda-runner "
                   "--host-cache")
    args = parser.parse_args()
    try:
        return {"prepare": prepare, "run": run, "report": report,
                "fit": fit}[args.command](args)
    except (HostTierError, judge.JudgeError) as e:
        print("hosttier.py: error: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
