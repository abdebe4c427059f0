#===- evaluate_distributed.py - Plans run end to end over MPI -------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Measure plans end to end: held-out tasks, each plan run on one MPI rank
per device, the measured step against the plan's prediction.

For every task (drawn from the table pool's held-out test split, as
neuroshard_bench.evaluate does) and every algorithm, the task becomes a
NeuroShard module, `--neuroshard-shard` plans it, and `mpirun -np DEVICES
neuroshard-run --distributed --backward --iters K` runs the sharded module:
every rank allocates its shards at their full size, runs its fused lookup,
the exchange over MPI, the reverse exchange and its fused SGD update. The
measured cost of a plan is the slowest rank's median step (every step starts
at a barrier, so waiting for stragglers is in it); the predicted cost is the
plan's cost_ms (the slowest device's compute plus its forward and backward
communication).

    PYTHONPATH=python:bench:build/lib/python3/dist-packages \\
        /usr/bin/python3 -m neuroshard_bench.evaluate_distributed \\
        --tools-dir build/bin --work build/eval-dist --tasks 6 \\
        --results bench/results/distributed.md

`--results FILE` rewrites only the block between this script's markers in
FILE (docs/results.md holds the figures the documentation quotes).
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from typing import Dict, List, Optional

from neuroshard import _core
from neuroshard import table_pool as tp
from neuroshard_bench import evaluate as ev

RESULTS_BEGIN = "<!-- evaluate_distributed.py results: begin -->"
RESULTS_END = "<!-- evaluate_distributed.py results: end -->"
DEFAULT_ALGORITHMS = ("neuroshard", "table-greedy-grid", "size-lookup-greedy",
                      "lookup-greedy")


def module_text(task: Dict) -> str:
    """The NeuroShard module of a task: one sum-pooled lookup per table,
    i64 indices, the task's batch and topology."""
    from neuroshard import frontend  # imports torch; only needed here
    tables = [frontend.TableInfo(
        path=t["name"], symbol=t["name"], rows=t["rows"], dim=t["dim"],
        mode="sum", batch_size=task["batch_size"],
        pooling_factor=t["pooling_factor"], access_hist=t["access_hist"],
        num_indices=0) for t in task["tables"]]
    return frontend.emit_module(tables, devices=task["devices"],
                                memory_gb=task["memory_gb"],
                                source="task %s" % task["name"])


def _run(command: List[str], what: str) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise ev.EvaluationError("%s failed (exit %d): %s\n%s" % (
            what, result.returncode, shlex.join(command),
            result.stderr.strip()[-2000:]))
    return result


def shard(opt: str, module: str, algorithm: str, cost_model: str,
          workdir: str, name: str) -> Optional[Dict]:
    """Plans `module` with `algorithm`; None when no valid plan exists."""
    sharded = os.path.join(workdir, "%s.%s.mlir" % (name, algorithm))
    plan_path = os.path.join(workdir, "%s.%s.plan.json" % (name, algorithm))
    # The plans run on this machine's CPUs (MPI ranks).
    command = [opt, module, "--neuroshard-shard=algorithm=%s cost-model=%s "
               "device-kind=cpu plan-out=%s" % (algorithm, cost_model,
                                                plan_path),
               "-o", sharded]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        if "error" in result.stderr:
            return None
        raise ev.EvaluationError("%s crashed: %s" % (shlex.join(command),
                                                     result.stderr[-2000:]))
    with open(plan_path) as f:
        plan = json.load(f)
    return {"module": sharded, "plan": plan}


def measure(mpirun: List[str], run: str, sharded: str, devices: int,
            warmup: int, iters: int) -> Dict:
    """Runs a sharded module on `devices` ranks; per-rank medians (ms)."""
    command = mpirun + ["-np", str(devices), run, sharded, "--distributed",
                        "--backward", "--json", "--warmup", str(warmup),
                        "--iters", str(iters)]
    report = json.loads(_run(command, "the distributed run").stdout)
    ranks = report["per_rank"]
    if not all(r.get("matches_plan", True) for r in ranks):
        raise ev.EvaluationError("%s: a rank's weights differ from the plan"
                                 % sharded)
    steps = [r["timing_ms"]["step"] for r in ranks]
    slowest = max(range(len(ranks)), key=lambda d: steps[d])
    return {"step_ms": steps[slowest],
            "compute_ms": ranks[slowest]["timing_ms"]["compute"],
            "exchange_ms": ranks[slowest]["timing_ms"]["exchange"],
            "max_compute_ms": max(r["timing_ms"]["compute"] for r in ranks),
            "per_rank": ranks}


def summarise(rows: List[Dict], algorithms) -> Dict:
    """Means over the tasks every algorithm has a plan for."""
    tasks = sorted({r["task"] for r in rows})
    common = [t for t in tasks
              if all(any(r["task"] == t and r["algorithm"] == a
                         for r in rows) for a in algorithms)]
    summary = {"common_tasks": len(common), "tasks": len(tasks),
               "algorithms": {}}
    for a in algorithms:
        mine = [r for r in rows if r["algorithm"] == a and r["task"] in common]
        if not mine:
            continue

        def mean(key):
            return sum(r[key] for r in mine) / len(mine)
        summary["algorithms"][a] = {
            "plans": sum(1 for r in rows if r["algorithm"] == a),
            "predicted_ms": mean("predicted_ms"),
            "measured_ms": mean("step_ms"),
            "compute_ms": mean("max_compute_ms"),
            "exchange_ms": mean("exchange_ms"),
            "error_percent": 100.0 * sum(
                (r["step_ms"] - r["predicted_ms"]) / r["step_ms"]
                for r in mine) / len(mine)}
    return summary


def markdown(summary: Dict, command: str, machine: str) -> str:
    lines = [RESULTS_BEGIN, "Generated by:", "", "```sh", command, "```", "",
             "Machine: %s." % machine, "",
             "| algorithm | plans | mean predicted (ms) | mean measured step "
             "(ms) | slowest rank's compute (ms) | its exchange (ms) | "
             "prediction error |",
             "|---|---|---|---|---|---|---|"]
    for a, s in summary["algorithms"].items():
        lines.append("| %s | %d / %d | %.4f | %.4f | %.4f | %.4f | %+.1f%% |"
                     % (a, s["plans"], summary["tasks"], s["predicted_ms"],
                        s["measured_ms"], s["compute_ms"], s["exchange_ms"],
                        s["error_percent"]))
    lines += ["", "Means over the %d tasks every algorithm has a plan for. "
              "Prediction error = (measured - predicted) / measured, "
              "averaged over tasks." % summary["common_tasks"], RESULTS_END]
    return "\n".join(lines)


def write_block(path: str, block: str) -> None:
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if RESULTS_BEGIN in text and RESULTS_END in text:
        head, rest = text.split(RESULTS_BEGIN, 1)
        old_block, tail = rest.split(RESULTS_END, 1)
        text = head + ev.keep_doctest_annotations(old_block, block) + tail
    else:
        text = text + ("\n" if text else "") + block + "\n"
    with open(path, "w") as f:
        f.write(text)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard_bench.evaluate_distributed",
        description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools-dir", default="build/bin")
    parser.add_argument("--work", default="build/eval-dist")
    parser.add_argument("--pool", help="pool JSON (default: generate it)")
    parser.add_argument("--pool-seed", type=int, default=0)
    parser.add_argument("--base-tables", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", type=int, default=6)
    parser.add_argument("--algorithms", default=",".join(DEFAULT_ALGORITHMS))
    parser.add_argument("--cost-model", default="default")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--mpirun", default="mpirun",
                        help="the MPI launcher (as root, add "
                        "--allow-run-as-root)")
    parser.add_argument("--results", help="markdown file to write the "
                        "figures into (between this script's markers)")
    parser.add_argument("--json", help="write every run's figures here")
    args = parser.parse_args(argv)
    try:
        algorithms = [a for a in args.algorithms.split(",") if a]
        for a in algorithms:
            if a not in ev.ALGORITHMS:
                raise ev.EvaluationError("unknown algorithm '%s'" % a)
        if args.tasks < 1 or args.iters < 1 or args.warmup < 0:
            raise ev.EvaluationError("--tasks and --iters must be >= 1, "
                                     "--warmup >= 0")
        opt = ev._tool(args.tools_dir, "neuroshard-opt")
        run = ev._tool(args.tools_dir, "neuroshard-run")
        mpirun = shlex.split(args.mpirun)
        pool_path = ev._load_or_make_pool(args, sys.stderr)
        pool = tp.load_pool(pool_path)
        tasks = ev.make_tasks(pool, "2dev", args.tasks, args.seed)
        rows = []
        for k, task in enumerate(tasks):
            module = os.path.join(args.work, task["name"] + ".mlir")
            with open(module, "w") as f:
                f.write(module_text(task))
            for a in algorithms:
                started = time.time()
                planned = shard(opt, module, a, args.cost_model, args.work,
                                task["name"])
                if planned is None:
                    print("task %d/%d %s: %s found no plan" %
                          (k + 1, len(tasks), task["name"], a),
                          file=sys.stderr, flush=True)
                    continue
                measured = measure(mpirun, run, planned["module"],
                                   task["devices"], args.warmup, args.iters)
                row = {"task": task["name"], "algorithm": a,
                       "tables": len(task["tables"]),
                       "predicted_ms": planned["plan"]["cost_ms"]}
                row.update(measured)
                rows.append(row)
                print("task %d/%d %s (%d tables) %s: predicted %.3f ms, "
                      "measured %.3f ms (%.0f s)" %
                      (k + 1, len(tasks), task["name"], row["tables"], a,
                       row["predicted_ms"], row["step_ms"],
                       time.time() - started), file=sys.stderr, flush=True)
        summary = summarise(rows, algorithms)
        command = ev.PYTHON_COMMAND + \
            "neuroshard_bench.evaluate_distributed " + \
            " ".join(shlex.quote(a) for a in (argv if argv is not None
                                              else sys.argv[1:]))
        machine = "%d x %s" % (os.cpu_count() or 1, _core.host_cpu_model())
        block = markdown(summary, command, machine)
        print(block)
        if args.results:
            write_block(args.results, block)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"rows": rows, "summary": summary}, f, indent=1)
    except (ev.EvaluationError, tp.PoolError, OSError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
