#===- gpu_calibrate.py - A cost model of a GPU, timed by the runner ------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Makes a complete cost-model bundle of a GPU in three steps, so that the
GPU machine needs neither LLVM, MLIR nor this package, only the standalone
neuroshard-cuda-runner (scripts/gpu/calibrate.sh drives the three):

  prepare  the table pool with histograms of one batch of --batch-size bags;
           the training sets (collect.sample_set, a --row-pieces share of
           their tables row pieces, which a launch holds as its rows of
           the table's lookup), the batch-scaling
           curve's train-split sets and its validation's test-split sets
           (batch_scaling.draw_curve_sets); each group at each batch written
           as a launch manifest of the runner: one launch per set, its
           device number the set id, every table whole, the histograms
           carried to the manifest's batch. `runs.txt` lists the manifests
           with the runner's warm-up and timed runs;
  (run)    on the GPU: neuroshard-cuda-runner --manifest M --collect S for
           each manifest (scripts/gpu/calibrate.sh run), which resumes;
  finish   the training manifest's samples become a dataset (the format of
           neuroshard.collect); the bundle is trained on it with the GPU's
           physics prior (train.train_bundle); its batch-scaling curve and
           the curve's validation come from the timed curve sets
           (batch_scaling.curve_from_costs); the held-out MAPE and Kendall's
           tau are reported (report.evaluate_bundle); the bundle is copied
           to --out.

The work directory keeps everything; `finish` can be rerun.
"""

import argparse
import json
import os
import shutil
import sys
from typing import Dict, List, Optional, TextIO


from neuroshard import _core
from neuroshard import batch_scaling as bs
from neuroshard import calibrate
from neuroshard import collect
from neuroshard import jsonio
from neuroshard import report
from neuroshard import table_pool as tp
from neuroshard import train as tr

DEFAULT_BATCH_SIZE = 65536
DEFAULT_SAMPLES = 3000
DEFAULT_MEMORY_CAP_GB = 16.0
# The large tier (table_pool.LARGE_TIER): its sets, their ids (after any
# training set's) and the memory their row pieces share: a large table's
# row block on a device of a real cluster is tens of GB.
DEFAULT_LARGE_SAMPLES = 600
LARGE_SET_IDS = 1000000
DEFAULT_LARGE_MEMORY_CAP_GB = 64.0
DEFAULT_CURVE_BATCH_SIZES = (4096, 16384, 65536, 262144)
DEFAULT_VALIDATE_BATCH_SIZES = (32768, 131072)
DEFAULT_SCALING_SETS = 32
DEFAULT_VALIDATE_SETS = 16
DEFAULT_WARMUP = 3
DEFAULT_ITERS = 12
DEFAULT_EPOCHS = 120
# The fewest timed training sets `finish` trains on when a collection was
# cut short.
MIN_TRAIN_SAMPLES = 200
PLAN_FILE = "plan.json"
RUNS_FILE = "runs.txt"
# The manifest records of the runner (include/neuroshard/Runtime/
# KernelABI.h) that a collection manifest copies from the template.
_TEMPLATE_RECORDS = ("module", "kernels", "run")


class GPUCalibrateError(Exception):
    """A problem that stops the calibration; the message names the file."""


def read_template(path: str) -> Dict[str, List[str]]:
    """The module, kernels and run records of a manifest that
    --neuroshard-export-cuda wrote (its kernels object is the one timed)."""
    records = {}
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as e:
        raise GPUCalibrateError("cannot read the template manifest '%s': %s"
                                % (path, e.strerror))
    if not lines or not lines[0].startswith("neuroshard-cuda-manifest "):
        raise GPUCalibrateError("'%s' is not a launch manifest of "
                                "--neuroshard-export-cuda" % path)
    for line in lines[1:]:
        words = line.split()
        if words and words[0] in _TEMPLATE_RECORDS:
            records[words[0]] = words
    missing = [r for r in _TEMPLATE_RECORDS if r not in records]
    if missing:
        raise GPUCalibrateError("template manifest '%s' has no %s record" %
                                (path, " or ".join(missing)))
    return records


def _number(value: float) -> str:
    return repr(float(value))


def manifest_text(template: Dict[str, List[str]], pool: Dict,
                  sets: Dict[int, List], batch: int, seed: int) -> str:
    """A launch manifest with one launch per set (device number = set id),
    each entry a table whole or a row piece of it (its rows of the table's
    lookup), with sum pooling and i32 indices, the tables' histograms
    carried from the pool's batch to `batch`."""
    by_id = {t["id"]: t for t in pool["tables"]}
    used = sorted({collect.entry_table(e) for entries in sets.values()
                   for e in entries})
    threads, lr = template["run"][1], template["run"][4]
    # The manifests lie one directory below the template and its kernels.
    module = list(template["module"])
    if not os.path.isabs(module[1]):
        module[1] = "../" + module[1]
    lines = ["neuroshard-cuda-manifest 3", " ".join(module),
             " ".join(template["kernels"]),
             "run %s %d %d %s" % (threads, batch, seed, lr)]
    lookup = {}
    for k, table_id in enumerate(used):
        t = by_id[table_id]
        hist = t["access_hist"]
        if batch != pool["sample_bags"]:
            hist = _core.rescale_access_histogram(
                hist, t["rows"], t["pooling_factor"], pool["sample_bags"],
                batch)
        lines.append("table p%d %d %d %s %s" % (
            table_id, t["rows"], t["dim"], _number(t["pooling_factor"]),
            " ".join(_number(b) for b in hist)))
        lookup[table_id] = k
    lines += ["lookup %d 0" % k for k in range(len(used))]
    for set_id in sorted(sets):
        lines.append("device %d i32" % set_id)
        for entry in sets[set_id]:
            t = by_id[collect.entry_table(entry)]
            first, end = entry["rows"] if collect.is_row_piece(entry) \
                else (0, t["rows"])
            lines.append("shard %d 0 %d %d %d sum" %
                         (lookup[t["id"]], t["dim"], first, end))
    return "\n".join(lines) + "\n"


def _write(path: str, text: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise GPUCalibrateError("cannot write '%s': %s" % (path, e.strerror))


def prepare(args, log: TextIO) -> Dict:
    """Writes the pool, the manifests, runs.txt and plan.json to args.work;
    returns the plan."""
    batch_sizes = sorted(set(args.batch_sizes) | {args.batch_size})
    validate_sizes = sorted(set(args.validate_batch_sizes))
    overlap = sorted(set(validate_sizes) & set(batch_sizes))
    if overlap:
        raise GPUCalibrateError(
            "--validate-batch-sizes %s are also curve batch sizes: "
            "validation needs batch sizes the curve was not measured at" %
            ",".join(str(b) for b in overlap))
    template = read_template(args.template)
    os.makedirs(os.path.join(args.work, "manifests"), exist_ok=True)
    os.makedirs(os.path.join(args.work, "samples"), exist_ok=True)
    if args.samples >= LARGE_SET_IDS:
        raise GPUCalibrateError("--samples must be below %d" % LARGE_SET_IDS)
    pool = tp.generate_pool(args.seed, args.base_tables,
                            sample_bags=args.batch_size,
                            large_tables=args.large_tables)
    pool_path = os.path.join(args.work, "pool.json")
    _write(pool_path, json.dumps(pool) + "\n")
    cap = int(args.memory_cap_gb * 2**30)
    groups = {"train": {k: collect.sample_set(pool, args.seed, k, cap,
                                              row_pieces=args.row_pieces)
                        for k in range(args.samples)}}
    scaling = argparse.Namespace(sets=args.scaling_sets,
                                 validate_sets=args.validate_sets,
                                 memory_cap_gb=args.memory_cap_gb,
                                 seed=args.seed)
    groups["curve"], groups["validation"] = bs.draw_curve_sets(
        pool, scaling, bool(validate_sizes))
    if args.large_tables:
        large_cap = int(args.large_memory_cap_gb * 2**30)
        groups["large"] = {
            LARGE_SET_IDS + k: collect.sample_large_set(pool, args.seed, k,
                                                        large_cap)
            for k in range(args.large_samples)}
    # The small groups first, so that a run cut short has a whole curve.
    runs = [("curve", b) for b in batch_sizes]
    runs += [("validation", b) for b in [args.batch_size] + validate_sizes]
    runs += [("train", args.batch_size)]
    if args.large_tables:
        runs += [("large", args.batch_size)]
    names = []
    for group, batch in runs:
        name = "%s-b%d" % (group, batch)
        _write(os.path.join(args.work, "manifests", name + ".txt"),
               manifest_text(template, pool, groups[group], batch,
                             args.seed))
        names.append(name)
    _write(os.path.join(args.work, RUNS_FILE), "".join(
        "%s %d %d\n" % (name, args.warmup, args.iters) for name in names))
    plan = {"batch_size": args.batch_size, "seed": args.seed,
            "pool": tp.pool_fingerprint(pool), "warmup": args.warmup,
            "iters": args.iters, "curve_batch_sizes": batch_sizes,
            "validate_batch_sizes": validate_sizes,
            "sets": {g: {str(k): v for k, v in s.items()}
                     for g, s in groups.items()}}
    _write(os.path.join(args.work, PLAN_FILE), json.dumps(plan) + "\n")
    summary = tp.pool_summary(pool)
    large = ""
    if args.large_tables:
        tables = [t for t in pool["tables"] if tp.is_large(t)]
        large = " and %d of the large tier (rows %d..%d, dims %s; %d sets)" \
            % (len(tables), min(t["rows"] for t in tables),
               max(t["rows"] for t in tables),
               ",".join(str(d) for d in pool["large_dims"]),
               len(groups["large"]))
    print("gpu_calibrate: %d pool tables%s with histograms of batch %d; %d "
          "training sets, %d curve sets at %s, %d validation sets at %s: "
          "%d manifests in %s" %
          (summary["tables"] - (len(tables) if large else 0), large,
           args.batch_size, len(groups["train"]),
           len(groups["curve"]), ",".join(str(b) for b in batch_sizes),
           len(groups["validation"]),
           ",".join(str(b) for b in [args.batch_size] + validate_sizes),
           len(names), os.path.join(args.work, "manifests")), file=log)
    return plan


def read_runner_samples(path: str, sets: Dict[int, List],
                        batch: int) -> Dict[int, Dict]:
    """The runner's lines of `path` by set id, checked against the sets and
    the batch they were asked at."""
    results = {}
    for _, where, line in jsonio.json_lines(path, "samples",
                                            GPUCalibrateError):
        if not isinstance(line, dict) or not isinstance(line.get("id"), int):
            raise GPUCalibrateError("%s: not a result of the runner" % where)
        k = line["id"]
        if k not in sets:
            raise GPUCalibrateError("%s: set %d was not asked for" %
                                    (where, k))
        for field in collect.TOOL_FIELDS + ("tables", "l2_bytes"):
            if field not in line:
                raise GPUCalibrateError("%s has no \"%s\"" % (where, field))
        if line["batch_size"] != batch or line["tables"] != len(sets[k]):
            raise GPUCalibrateError(
                "%s: set %d was timed with %d table(s) at batch %s, but it "
                "holds %d table(s) and was asked at batch %d" %
                (where, k, line["tables"], line["batch_size"], len(sets[k]),
                 batch))
        results[k] = line
    return results


def _load_run(work: str, name: str, sets: Dict[int, List],
              batch: int, least: Optional[int] = None) -> Dict[int, Dict]:
    """The timed sets of manifest `name`: all of them, or with `least` at
    least that many (a training collection cut short still trains)."""
    path = os.path.join(work, "samples", name + ".jsonl")
    if not os.path.exists(path):
        raise GPUCalibrateError("'%s' is missing: run scripts/gpu/"
                                "calibrate.sh run on the GPU machine first"
                                % path)
    results = read_runner_samples(path, sets, batch)
    missing = sorted(set(sets) - set(results))
    if missing and (least is None or len(results) < least):
        raise GPUCalibrateError(
            "'%s' holds %d of %d sets (the first missing is %d): the run was "
            "cut short; run it again, it resumes" %
            (path, len(results), len(sets), missing[0]))
    return results


def finish(args, log: TextIO, out: TextIO) -> Dict:
    """Trains, measures the curve, reports and installs the bundle; returns
    its meta.json."""
    calibrate.check_out_dir(args.out, args.force)
    plan = jsonio.read_json(os.path.join(args.work, PLAN_FILE), "plan",
                            GPUCalibrateError)
    sets = {g: {int(k): v for k, v in s.items()}
            for g, s in plan["sets"].items()}
    pool_path = os.path.join(args.work, "pool.json")
    pool = tp.load_pool(pool_path)
    if tp.pool_fingerprint(pool) != plan["pool"]:
        raise GPUCalibrateError("'%s' is not the pool the manifests were "
                                "written for" % pool_path)
    batch = plan["batch_size"]
    timed = _load_run(args.work, "train-b%d" % batch, sets["train"], batch,
                      least=min(MIN_TRAIN_SAMPLES, len(sets["train"])))
    if len(timed) < len(sets["train"]):
        print("gpu_calibrate: note: %d of the %d training sets were timed; "
              "training on those" % (len(timed), len(sets["train"])),
              file=log)
    # The large tier's sets train beside the others: as many as were timed
    # (a lease may end before they all are).
    large = {}
    if sets.get("large"):
        name = "large-b%d" % batch
        if os.path.exists(os.path.join(args.work, "samples",
                                       name + ".jsonl")):
            large = _load_run(args.work, name, sets["large"], batch, least=0)
        print("gpu_calibrate: %d of the %d large-tier sets were timed" %
              (len(large), len(sets["large"])), file=log)
    data_path = os.path.join(args.work, "samples.jsonl")
    lines = []
    group_of = dict([(k, "train") for k in timed] +
                    [(k, "large") for k in large])
    timed = dict(timed)
    timed.update(large)
    for k in sorted(timed):
        sample = {"id": k, "tables": sets[group_of[k]][k]}
        sample.update({f: timed[k][f] for f in collect.TOOL_FIELDS})
        sample.update(warmup=plan["warmup"], seed=plan["seed"],
                      pool=plan["pool"], l2_bytes=timed[k]["l2_bytes"])
        collect.check_sample(sample, "set %d" % k)
        lines.append(json.dumps(sample))
    _write(data_path, "\n".join(lines) + "\n")
    staged = os.path.join(args.work, "bundle")
    shutil.rmtree(staged, ignore_errors=True)
    meta = tr.train_bundle(pool_path, data_path, staged, epochs=args.epochs,
                           seed=plan["seed"], log=log)
    print("gpu_calibrate: trained on %d samples of %s, best epoch %d, "
          "physics prior alone %.2f%% training MAPE" %
          (len(timed), meta["hardware"], meta["training"]["best_epoch"],
           100.0 * meta["training"]["prior_train_mape"]), file=log)

    costs = {"curve": {}, "validation": {}}
    for b in plan["curve_batch_sizes"]:
        costs["curve"][b] = {k: r["cost_ms"] for k, r in _load_run(
            args.work, "curve-b%d" % b, sets["curve"], b).items()}
    if sets["validation"]:
        for b in [batch] + plan["validate_batch_sizes"]:
            costs["validation"][b] = {k: r["cost_ms"] for k, r in _load_run(
                args.work, "validation-b%d" % b, sets["validation"],
                b).items()}
    scaling = bs.curve_from_costs(
        staged, meta, pool, costs, sets["curve"], sets["validation"],
        plan["curve_batch_sizes"],
        plan["validate_batch_sizes"] if sets["validation"] else [],
        plan["iters"])
    bs.write_scaling(staged, {k: v for k, v in scaling.items()
                              if not k.startswith("_")})
    print(bs.format_curve(os.path.basename(os.path.normpath(args.out)),
                          meta["hardware"], scaling), file=out)
    result = report.evaluate_bundle(staged, pool_path, data_path)
    print(report.format_table(result), file=out)
    print("physics prior alone (the bundle without its network): held-out "
          "MAPE %.2f%%" % (100.0 * meta["training"]["prior_held_out_mape"]),
          file=out)
    calibrate.install_bundle(staged, args.out)
    held = result["held-out"]
    print("calibrated '%s' for %s: %d samples at batch %d, held-out MAPE "
          "%.2f%%, Kendall's tau %.3f" %
          (args.out, meta["hardware"], len(timed), batch,
           100.0 * held["mape"], held["kendall_tau"]), file=out)
    return bs.load_bundle_meta(args.out)


def _positive(kind):
    def parse(text: str):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError("must be positive, got %s" %
                                             text)
        return value
    return parse


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.gpu_calibrate",
        description="Calibrate a cost-model bundle of a GPU: prepare the "
        "runner's manifests here, time them on the GPU "
        "(scripts/gpu/calibrate.sh run), finish here.")
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("prepare", help="write the pool and the manifests")
    p.add_argument("--work", required=True, help="work directory")
    p.add_argument("--template", required=True,
                   help="a manifest of --neuroshard-export-cuda (its "
                   "kernels object is the one timed)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--base-tables", type=_positive(int),
                   default=calibrate.DEFAULT_BASE_TABLES)
    p.add_argument("--batch-size", type=_positive(int),
                   default=DEFAULT_BATCH_SIZE,
                   help="the bundle's reference batch (default %(default)s)")
    p.add_argument("--samples", type=_positive(int), default=DEFAULT_SAMPLES,
                   help="training sets (default %(default)s)")
    p.add_argument("--memory-cap-gb", type=_positive(float),
                   default=DEFAULT_MEMORY_CAP_GB,
                   help="most GB of tables in one set (default %(default)s)")
    p.add_argument("--batch-sizes", type=bs.parse_batch_sizes,
                   default=list(DEFAULT_CURVE_BATCH_SIZES),
                   help="batch sizes of the scaling curve")
    p.add_argument("--validate-batch-sizes", type=bs.parse_batch_sizes,
                   default=list(DEFAULT_VALIDATE_BATCH_SIZES))
    p.add_argument("--scaling-sets", type=_positive(int),
                   default=DEFAULT_SCALING_SETS)
    p.add_argument("--validate-sets", type=_positive(int),
                   default=DEFAULT_VALIDATE_SETS)
    p.add_argument("--row-pieces", type=float,
                   default=calibrate.DEFAULT_ROW_PIECES, metavar="P",
                   help="probability that a training set's table is one of "
                   "its row pieces instead (default %(default)s)")
    p.add_argument("--large-tables", type=int, default=0,
                   help="base tables of the pool's large tier (rows "
                   "%.0e..%.0e, dims %s), timed as row pieces in sets of "
                   "their own (default 0: none)" %
                   (tp.LARGE_MIN_ROWS, tp.LARGE_MAX_ROWS,
                    ",".join(str(d) for d in tp.LARGE_DIMS)))
    p.add_argument("--large-samples", type=_positive(int),
                   default=DEFAULT_LARGE_SAMPLES,
                   help="sets of the large tier (default %(default)s)")
    p.add_argument("--large-memory-cap-gb", type=_positive(float),
                   default=DEFAULT_LARGE_MEMORY_CAP_GB,
                   help="memory a large-tier set's tables share (default "
                   "%(default)s)")
    p.add_argument("--warmup", type=int, default=DEFAULT_WARMUP)
    p.add_argument("--iters", type=_positive(int), default=DEFAULT_ITERS)
    f = sub.add_parser("finish", help="train, scale, report, install")
    f.add_argument("--work", required=True)
    f.add_argument("--out", required=True, help="the bundle directory")
    f.add_argument("--epochs", type=_positive(int), default=DEFAULT_EPOCHS)
    f.add_argument("--force", action="store_true",
                   help="replace the bundle files in --out")
    args = parser.parse_args(argv)
    try:
        if args.step == "prepare":
            if args.warmup < 0:
                parser.error("--warmup must be >= 0")
            if not 0.0 <= args.row_pieces <= 1.0:
                parser.error("--row-pieces must be a probability in [0, 1], "
                             "got %g" % args.row_pieces)
            prepare(args, sys.stderr)
        else:
            finish(args, sys.stderr, sys.stdout)
    except (GPUCalibrateError, calibrate.CalibrateError,
            collect.CollectError, tp.PoolError, tr.TrainError,
            bs.ScalingError, report.ReportError) as e:
        print("gpu_calibrate: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
