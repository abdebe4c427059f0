#===- calibrate.py - A cost model for this machine in one command --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Makes a complete cost-model bundle for the machine it runs on, within a
time budget (docs/cost-model.md, "Calibrating for this machine"):

  1. the table pool (table_pool.generate_pool, --seed, 400 base tables);
  2. compute-cost samples at batch 1024 (collect.collect), in rounds, until
     --samples are measured or COLLECT_SHARE of the budget is spent;
  3. training (train.train_bundle), with as many epochs (at most
     MAX_EPOCHS) as fit in TRAIN_SHARE of the budget, measured on a probe
     epoch, unless --epochs says;
  4. the batch-scaling curve and its validation (batch_scaling.run, on
     fewer sets than its own default, in proportion to the budget);
  5. the held-out MAPE and Kendall's tau (report.evaluate_bundle);

then copies the bundle (compute.pt and meta.json with "host",
"trained_ranges" and "batch_scaling") into --out. Intermediate files (pool,
samples, the bundle before it is complete) stay in the work directory, so a
run that was stopped resumes its collection. --out is never overwritten
without --force, nor anything under the source tree's models/.
"""

import argparse
import io
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List, Optional, TextIO

from neuroshard import _core
from neuroshard import batch_scaling as bs
from neuroshard import collect
from neuroshard import report
from neuroshard import table_pool as tp
from neuroshard import train as tr

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEFAULT_MINUTES = 18.0
DEFAULT_BASE_TABLES = 400
BATCH_SIZE = 1024
# Shares of the budget: collection stops when its share is spent; the
# default epochs keep training within its share; the batch-scaling curve and
# the report take the rest (its set counts grow with the budget).
COLLECT_SHARE = 0.50
TRAIN_SHARE = 0.15
# The most samples collected when --samples is not given (the shipped
# model's dataset), and the most epochs (the shipped model's training).
MAX_SAMPLES = 8000
MAX_EPOCHS = 200
MIN_EPOCHS = 5
# Sets of the batch-scaling curve and of its validation at the default
# budget; other budgets scale them (scaled_sets()).
DEFAULT_SCALING_SETS = 16
DEFAULT_VALIDATE_SETS = 8
MIN_SCALING_SETS = 4
MIN_VALIDATE_SETS = 3
# Samples per round of collection (one run of the timing tool).
COLLECT_ROUND = 50
# Seconds between two progress lines of the collection.
PROGRESS_EVERY_S = 15.0
# Files of a bundle: the ones --force replaces in --out.
BUNDLE_FILES = ("compute.pt", "comm_fw.pt", "comm_bw.pt", "meta.json")


class CalibrateError(Exception):
    """A problem that stops calibration; the message names the path."""


def _duration(seconds: float) -> str:
    return collect._format_duration(max(0.0, seconds))


class Clock:
    """Elapsed time and the budget, for the progress lines."""

    def __init__(self, budget_s: float, log: TextIO):
        self.start = time.monotonic()
        self.budget_s = budget_s
        self.log = log

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def say(self, phase: str, message: str,
            phase_left_s: Optional[float] = None) -> None:
        left = "" if phase_left_s is None else ", about %s left in this " \
            "phase" % _duration(phase_left_s)
        print("calibrate: [%s] %s (%s of %s elapsed%s)" %
              (phase, message, _duration(self.elapsed()),
               _duration(self.budget_s), left), file=self.log, flush=True)


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory + os.sep)


def check_out_dir(out: str, force: bool) -> None:
    """Refuses an --out that would overwrite something, unless force."""
    if force:
        return
    models = os.path.join(REPO, "models")
    if _inside(out, models):
        raise CalibrateError(
            "'%s' is under the source tree's models/ (%s), which holds the "
            "shipped bundles: write elsewhere, or pass --force" %
            (out, models))
    if os.path.exists(out) and (not os.path.isdir(out) or os.listdir(out)):
        raise CalibrateError("'%s' exists and is not an empty directory: "
                             "choose another --out, or pass --force to "
                             "replace its bundle" % out)


def work_dir(out: str, work: Optional[str]) -> str:
    """--work, else <name>-work beside --out, else (beside --out is under
    models/) a new temporary directory."""
    if work:
        return work
    parent = os.path.dirname(os.path.abspath(out))
    if _inside(parent, os.path.join(REPO, "models")):
        return tempfile.mkdtemp(prefix="neuroshard-calibrate-")
    return os.path.join(parent,
                        os.path.basename(os.path.normpath(out)) + "-work")


def collect_samples(args, pool_path: str, data_path: str, clock: Clock,
                    budget_s: float) -> int:
    """Collects samples 0..limit-1 in rounds of COLLECT_ROUND until the
    limit (--samples, else MAX_SAMPLES) or until budget_s is spent; the
    first round always runs, later ones are shrunk to what the measured
    rate says still fits. Returns the dataset's sample count."""
    limit = args.samples or MAX_SAMPLES
    have = len(collect.load_samples(data_path, allow_missing=True))
    start = time.monotonic()
    added, said = 0, 0.0
    quiet = io.StringIO()
    options = argparse.Namespace(
        pool=pool_path, out=data_path, tool=args.tool, device="cpu",
        batch_size=BATCH_SIZE, warmup=3, iters=10, seed=args.seed,
        memory_cap_gb=args.memory_cap_gb, max_rows=args.max_rows,
        sets_per_run=COLLECT_ROUND)
    clock.say("collect", "measuring up to %d samples at batch %d (%d "
              "already in %s) within %s" %
              (limit, BATCH_SIZE, min(have, limit), data_path,
               _duration(budget_s)))
    while have < limit:
        spent = time.monotonic() - start
        size = min(COLLECT_ROUND, limit - have)
        # The first round always runs: it measures the rate.
        if added:
            rate = added / spent
            size = min(size, int(rate * (budget_s - spent)))
            if size < 1:
                break
        options.samples = have + size
        quiet.seek(0)
        quiet.truncate()
        added += collect.collect(options, log=quiet)
        have = options.samples
        spent = time.monotonic() - start
        rate = added / spent if spent > 0 else 0.0
        todo = limit - have
        if spent - said >= PROGRESS_EVERY_S or todo <= 0:
            said = spent
            clock.say("collect", "%d/%d samples, %.1f samples/s" %
                      (have, limit, rate),
                      min(budget_s - spent, todo / rate if rate else 0.0))
    if have < limit:
        clock.say("collect", "collection budget spent: stopping at %d of %d "
                  "samples" % (have, limit))
    return have


def choose_epochs(pool_path: str, data_path: str, seed: int,
                  budget_s: float) -> Dict:
    """{"epochs", "epoch_s"}: as many epochs as fit in budget_s (between
    MIN_EPOCHS and MAX_EPOCHS), timed on one probe epoch."""
    pool = tp.load_pool(pool_path)
    samples = collect.load_samples(data_path)
    training, valid = tr.build_sample_sets(
        pool, pool_path, samples, data_path, seed,
        tr.DEFAULT_VALIDATION_FRACTION)
    start = time.monotonic()
    tr.train_compute_model(training, valid, epochs=1, seed=seed)
    # The probe also evaluated the untrained start: about one epoch's worth.
    epoch_s = (time.monotonic() - start) / 1.5
    epochs = int(budget_s / max(epoch_s, 1e-6))
    return {"epochs": max(MIN_EPOCHS, min(MAX_EPOCHS, epochs)),
            "epoch_s": epoch_s}


def scaled_sets(default: int, minimum: int, minutes: float) -> int:
    """A set count of the batch-scaling phase for a budget of `minutes`:
    `default` at DEFAULT_MINUTES, in proportion otherwise, at least
    `minimum` and at most the batch_scaling command's own default."""
    count = int(round(default * minutes / DEFAULT_MINUTES))
    return max(minimum, min(count, bs.DEFAULT_SETS))


def install_bundle(staged: str, out: str) -> None:
    """Copies the staged bundle's files into out (replacing a bundle there,
    which check_out_dir allowed)."""
    os.makedirs(out, exist_ok=True)
    for name in BUNDLE_FILES:
        target = os.path.join(out, name)
        if os.path.exists(target):
            os.remove(target)
    for name in BUNDLE_FILES:
        source = os.path.join(staged, name)
        if os.path.exists(source):
            shutil.copy2(source, os.path.join(out, name))


def calibrate(args, log: Optional[TextIO] = None,
              out: Optional[TextIO] = None) -> Dict:
    """Runs every phase; returns the bundle's meta.json."""
    log = log or sys.stderr
    out = out or sys.stdout
    check_out_dir(args.out, args.force)
    budget_s = 60.0 * args.minutes
    clock = Clock(budget_s, log)
    work = work_dir(args.out, args.work)
    try:
        os.makedirs(work, exist_ok=True)
    except OSError as e:
        raise CalibrateError("cannot create the work directory '%s': %s" %
                             (work, e.strerror))
    host = _core.host_description()
    clock.say("start", "calibrating for %s (%d logical CPUs); intermediate "
              "files in %s" % (host["cpu_model"], host["logical_cpus"], work))
    clock.say("start", "plan: collection up to %s, training up to %s, then "
              "the batch-scaling curve (%d + %d sets) and the report" %
              (_duration(COLLECT_SHARE * budget_s),
               _duration(TRAIN_SHARE * budget_s), args.scaling_sets,
               args.validate_sets))
    tool = collect.find_tool(args.tool)
    args.tool = tool

    pool_path = os.path.join(work, "pool.json")
    pool = tp.generate_pool(args.seed, args.base_tables)
    try:
        with open(pool_path, "w") as f:
            json.dump(pool, f)
            f.write("\n")
    except OSError as e:
        raise CalibrateError("cannot write '%s': %s" % (pool_path,
                                                         e.strerror))
    summary = tp.pool_summary(pool)
    clock.say("pool", "%d tables (%d base tables, %d of them held out)" %
              (summary["tables"], summary["base_tables"],
               summary["test_base_tables"]))

    data_path = os.path.join(work, "samples.jsonl")
    count = collect_samples(args, pool_path, data_path, clock,
                            COLLECT_SHARE * budget_s)

    if args.epochs:
        epochs, estimate = args.epochs, None
    else:
        choice = choose_epochs(pool_path, data_path, args.seed,
                               TRAIN_SHARE * budget_s)
        epochs, estimate = choice["epochs"], choice["epochs"] * \
            choice["epoch_s"]
    clock.say("train", "%d epochs on %d samples" % (epochs, count),
              estimate)
    staged = os.path.join(work, os.path.basename(os.path.normpath(args.out)))
    shutil.rmtree(staged, ignore_errors=True)
    train_start = time.monotonic()
    meta = tr.train_bundle(pool_path, data_path, staged, epochs=epochs,
                           seed=args.seed, log=log)
    clock.say("train", "done in %s: best epoch %d" %
              (_duration(time.monotonic() - train_start),
               meta["training"]["best_epoch"]))

    scaling_options = argparse.Namespace(
        sets=args.scaling_sets, batch_sizes=args.batch_sizes,
        validate_batch_sizes=args.validate_batch_sizes,
        validate_sets=args.validate_sets, iters=args.scaling_iters,
        warmup=args.scaling_warmup, seed=args.seed, tool=tool,
        max_rows=args.max_rows, memory_cap_gb=args.memory_cap_gb)
    clock.say("batch scaling", "%d sets at %s, validated on %d held-out sets"
              % (args.scaling_sets,
                 ",".join(str(b) for b in args.batch_sizes or
                          bs.default_batch_sizes(BATCH_SIZE)),
                 args.validate_sets))
    scaling = bs.run(staged, pool_path, scaling_options, log=log, out=out)

    clock.say("report", "held-out MAPE and Kendall's tau")
    result = report.evaluate_bundle(staged, pool_path, data_path)
    print(report.format_table(result), file=out)

    install_bundle(staged, args.out)
    meta = bs.load_bundle_meta(args.out)
    held = result["held-out"]
    validation = scaling.get("validation")
    checks = ""
    if validation:
        checks = "; scaling validated at %s: MAPE %s" % (
            ", ".join(str(b) for b in validation["batch_sizes"]),
            ", ".join("%.1f%%" % (100 * m)
                      for m in validation["scaling_mape"]))
    print("calibrated '%s' for %s in %s: %d samples at batch %d, held-out "
          "MAPE %.2f%%, Kendall's tau %.3f; batch scaling %d..%d%s" %
          (args.out, meta["hardware"], _duration(clock.elapsed()), count,
           BATCH_SIZE, 100.0 * held["mape"], held["kendall_tau"],
           scaling["batch_sizes"][0], scaling["batch_sizes"][-1], checks),
          file=out)
    print("use it:  build/bin/neuroshard-plan TASK.json --cost-model %s "
          "--device-kind cpu\n"
          "    or:  build/bin/neuroshard-opt MODEL.mlir "
          "--neuroshard-shard=\"cost-model=%s device-kind=cpu\"" %
          (args.out, args.out), file=out)
    return meta


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.calibrate",
        description="Makes a cost-model bundle for this machine in one "
        "command: table pool, compute-cost samples, training, the "
        "batch-scaling curve and the report, within --minutes.")
    parser.add_argument("--out", required=True, help="bundle directory to "
                        "write (must not exist or be empty, unless --force)")
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help="time budget of the whole command (default "
                        "%%(default)s); collection stops at %d%%%% of it" %
                        round(100 * COLLECT_SHARE))
    parser.add_argument("--samples", type=int, default=None,
                        help="most compute samples to collect (default: as "
                        "many as fit in the budget, at most %d)" %
                        MAX_SAMPLES)
    parser.add_argument("--epochs", type=int, default=None,
                        help="training epochs (default: as many as fit in "
                        "%d%%%% of the budget, %d to %d)" %
                        (round(100 * TRAIN_SHARE), MIN_EPOCHS, MAX_EPOCHS))
    parser.add_argument("--work", default=None,
                        help="directory of the intermediate files (default: "
                        "OUT-work beside --out)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--force", action="store_true",
                        help="replace the bundle in a non-empty --out, and "
                        "allow --out under the source tree's models/")
    parser.add_argument("--base-tables", type=int,
                        default=DEFAULT_BASE_TABLES,
                        help="base tables of the pool (default %(default)s)")
    parser.add_argument("--tool", default=None,
                        help="timing tool (default: %s on PATH, else "
                        "build/bin/%s)" % (collect.TOOL_NAME,
                                           collect.TOOL_NAME))
    bs.add_measurement_options(
        parser, sets=None, validate_sets=None, prefix="scaling-",
        sets_default="%d at %g minutes, in proportion to --minutes, at least "
        "%d" % (DEFAULT_SCALING_SETS, DEFAULT_MINUTES, MIN_SCALING_SETS),
        validate_sets_default="%d at %g minutes, in proportion, at least %d"
        % (DEFAULT_VALIDATE_SETS, DEFAULT_MINUTES, MIN_VALIDATE_SETS))
    args = parser.parse_args(argv)
    if not args.minutes > 0 or args.base_tables < 1:
        parser.error("--minutes and --base-tables must be positive")
    if args.sets is None:
        args.sets = scaled_sets(DEFAULT_SCALING_SETS, MIN_SCALING_SETS,
                                args.minutes)
    if args.validate_sets is None:
        args.validate_sets = scaled_sets(DEFAULT_VALIDATE_SETS,
                                         MIN_VALIDATE_SETS, args.minutes)
    bs.check_measurement_options(parser, args, prefix="scaling-")
    args.scaling_sets, args.scaling_iters, args.scaling_warmup = \
        args.sets, args.iters, args.warmup
    if args.samples is not None and args.samples < 10:
        parser.error("--samples must be at least 10, got %d" % args.samples)
    if args.epochs is not None and args.epochs < 1:
        parser.error("--epochs must be positive, got %d" % args.epochs)
    try:
        calibrate(args)
    except (CalibrateError, bs.ScalingError, tr.TrainError,
            collect.CollectError, tp.PoolError, report.ReportError) as e:
        print("calibrate: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
