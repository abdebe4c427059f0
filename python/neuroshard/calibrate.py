#===- calibrate.py - A cost model for this machine in one command --------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Makes a complete cost-model bundle for the machine it runs on, within a
time budget (docs/cost-model.md, "Calibrating for this machine"):

  1. the table pool (table_pool.generate_pool, --seed, 400 base tables);
  2. compute-cost samples at batch 1024 (collect.collect), in rounds, until
     --samples are measured or COLLECT_SHARE of the budget is spent; a
     --row-pieces share of their tables (DEFAULT_ROW_PIECES) are row pieces,
     so that the bundle has seen what row-wise plans are made of and says
     so ("row_pieces" in meta.json);
  3. training (train.train_bundle), with as many epochs (at most
     MAX_EPOCHS) as fit in TRAIN_SHARE of the budget, measured on a probe
     epoch, unless --epochs says;
  4. the batch-scaling curve and its validation (batch_scaling.run, on
     fewer sets than its own default, in proportion to the budget);
  4. experience (gather_experience, refine_experience): plans a few tasks
     of the pool's train tables with the fresh bundle and measured
     selection (neuroshard.plan with verify_top), which times the device
     sets of the best candidate plans and appends them to the work
     directory's experience.jsonl, then fine-tunes the bundle on those sets
     (experience.refine_bundle, replaying the samples of step 2), keeping
     the refined model only if it predicts the held-out sets better;
     EXPERIENCE_SHARE of the budget; then times those plans' candidates
     apart from their plannings in neuroshard-collect processes
     (measure_selection_noise), for the host's noise of measured selection,
     "selection_noise" in meta.json (NOISE_SHARE of the budget);
  5. the batch-scaling curve and its validation (batch_scaling.run, on
     fewer sets than its own default, in proportion to the budget);
  6. the held-out MAPE and Kendall's tau (report.evaluate_bundle);

then copies the bundle (compute.pt and meta.json with "host",
"trained_ranges", "batch_scaling" and, when refined, "refined") into --out.
Intermediate files (pool, samples, experience, the bundle before it is
complete) stay in the work directory, so a run that was stopped resumes its
collection. --out is never overwritten without --force, nor anything under
the source tree's models/.

With --refine BUNDLE it calibrates nothing: it fine-tunes BUNDLE's compute
model on the sets measured selection timed with it (refine()).
"""

import argparse
import io
import json
import math
import os
import shutil
import sys
import tempfile
import time
from typing import Dict, List, Optional, TextIO

import numpy as np

from neuroshard import _core
from neuroshard import batch_scaling as bs
from neuroshard import bundle_meta as bm
from neuroshard import collect
from neuroshard import experience as ex
from neuroshard import report
from neuroshard import selection_noise as sn
from neuroshard import table_pool as tp
from neuroshard import train as tr

REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
DEFAULT_MINUTES = 18.0
DEFAULT_BASE_TABLES = 400
# The batch the samples are timed at (--batch-size), and so the bundle's
# reference batch: plan at it to price sets without the batch-scaling curve.
BATCH_SIZE = 1024
# neuroshard-collect's largest batch.
MAX_BATCH_SIZE = 1 << 24
# Shares of the budget: collection stops when its share is spent; the
# default epochs keep training within its share; the batch-scaling curve and
# the report take the rest (its set counts grow with the budget).
COLLECT_SHARE = 0.54
TRAIN_SHARE = 0.10
# The experience stage: planning with measured selection, then refining
# (REFINE_SHARE of the stage's time).
EXPERIENCE_SHARE = 0.08
REFINE_SHARE = 0.2
# Timing the experience plans' candidates apart from their plannings, for
# the host's noise of measured selection ("selection_noise" in meta.json).
NOISE_SHARE = 0.06
# Its tasks: EXPERIENCE_DEVICES devices, a table count uniform in
# EXPERIENCE_TABLES, each device's memory the tables' total over the
# devices times a slack uniform in EXPERIENCE_SLACK (tight, so that the
# search splits tables at times), at most MAX_EXPERIENCE_TASKS of them;
# EXPERIENCE_VERIFY_TOP candidates verified, each for DEFAULT_VERIFY_SECONDS.
EXPERIENCE_DEVICES = 4
EXPERIENCE_TABLES = (10, 60)
EXPERIENCE_SLACK = (1.05, 1.6)
MAX_EXPERIENCE_TASKS = 24
EXPERIENCE_VERIFY_TOP = _core.DEFAULT_VERIFY_TOP
DEFAULT_VERIFY_SECONDS = _core.DEFAULT_VERIFY_SECONDS
# Keys the experience tasks' draws apart from the other uses of the seed.
_EXPERIENCE_KEY = 0xE4
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
# The probability that a sampled table is replaced by one of its row pieces.
DEFAULT_ROW_PIECES = 0.2
# Seconds between two progress lines of the collection.
PROGRESS_EVERY_S = 15.0


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
        batch_size=args.batch_size, warmup=3, iters=10, seed=args.seed,
        memory_cap_gb=args.memory_cap_gb, max_rows=args.max_rows,
        sets_per_run=COLLECT_ROUND, row_pieces=args.row_pieces)
    clock.say("collect", "measuring up to %d samples at batch %d (%d "
              "already in %s) within %s" %
              (limit, args.batch_size, min(have, limit), data_path,
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
    MIN_EPOCHS and MAX_EPOCHS), timed on one probe epoch: its training and
    held-out evaluation, not fitting the prior or evaluating the untrained
    start, which a training run does once."""
    pool = tp.load_pool(pool_path)
    samples = collect.load_samples(data_path)
    training, valid = tr.build_sample_sets(
        pool, pool_path, samples, data_path, seed,
        tr.DEFAULT_VALIDATION_FRACTION)
    _, run = tr.train_compute_model(training, valid, epochs=1, seed=seed)
    epoch_s = run["epoch_s"]
    epochs = int(budget_s / max(epoch_s, 1e-6))
    return {"epochs": max(MIN_EPOCHS, min(MAX_EPOCHS, epochs)),
            "epoch_s": epoch_s}


def scaled_sets(default: int, minimum: int, minutes: float) -> int:
    """A set count of the batch-scaling phase for a budget of `minutes`:
    `default` at DEFAULT_MINUTES, in proportion otherwise, at least
    `minimum` and at most the batch_scaling command's own default."""
    count = int(round(default * minutes / DEFAULT_MINUTES))
    return max(minimum, min(count, bs.DEFAULT_SETS))


def experience_tasks(pool: Dict, seed: int, count: int,
                     memory_cap_gb: float,
                     max_rows: Optional[int] = None) -> List[Dict]:
    """`count` seeded planning tasks of the pool's train tables for the
    experience stage: EXPERIENCE_DEVICES devices, a table count uniform in
    EXPERIENCE_TABLES (tables drawn with repeats when the split has fewer),
    each table under half of memory_cap_gb and, with max_rows, of at most
    that many rows; each device's memory the tables' total times a slack
    (EXPERIENCE_SLACK) over the devices, which must stay under the cap:
    a drawn table that would pass it is left out. The cap bounds what
    timing a device set allocates. A task is {"name", "devices",
    "memory_gb", "batch_size", "tables", "pool_ids"} (the tables as task
    JSON, and each one's id in the pool)."""
    cap = memory_cap_gb * 2**30
    train = [t for t in pool["tables"] if t["split"] == "train"
             and tp.table_bytes(t) <= cap / 2
             and (max_rows is None or t["rows"] <= max_rows)]
    if not train:
        raise CalibrateError(
            "no train table of the pool is under half the memory cap of "
            "%.3g GB%s" % (memory_cap_gb, "" if max_rows is None else
                           " with at most %d rows" % max_rows))
    low, high = EXPERIENCE_TABLES
    devices = EXPERIENCE_DEVICES
    tasks = []
    for k in range(count):
        rng = np.random.default_rng([seed, _EXPERIENCE_KEY, k])
        size = int(rng.integers(low, high + 1))
        picks = rng.choice(len(train), size=size, replace=size > len(train))
        slack = float(rng.uniform(*EXPERIENCE_SLACK))
        tables, pool_ids, total = [], [], 0
        for i, p in enumerate(picks):
            t = train[int(p)]
            size_bytes = tp.table_bytes(t)
            if (total + size_bytes) * slack > devices * cap:
                continue
            total += size_bytes
            tables.append({"name": "t%d_p%d" % (i, t["id"]),
                           "rows": t["rows"], "dim": t["dim"],
                           "pooling_factor": t["pooling_factor"],
                           "access_hist": t["access_hist"]})
            pool_ids.append(t["id"])
        # Rounded up to the MB so the JSON value reproduces the capacity.
        memory_gb = math.ceil(total * slack / devices / 2**20) / 1024.0
        tasks.append({"name": "experience-%d" % k, "devices": devices,
                      "memory_gb": memory_gb,
                      "batch_size": pool.get("sample_bags", BATCH_SIZE),
                      "tables": tables, "pool_ids": pool_ids})
    return tasks


def gather_experience(args, bundle: str, pool: Dict, experience_path: str,
                      clock: Clock, budget_s: float) -> Dict:
    """Plans experience_tasks() with the bundle and measured selection,
    appending the timed sets to experience_path, until --experience-tasks
    are planned (else MAX_EXPERIENCE_TASKS) or, after the first, until
    budget_s would be spent. Returns {"planned", "changed", "sets",
    "skipped", "plans"}: plans made, plans measured selection changed, sets
    timed, why the stage could not plan (None when it could), and each
    (task, plan) made."""
    summary = {"planned": 0, "changed": 0, "sets": 0, "skipped": None,
               "plans": []}
    if not _core.neural_cost_models_built():
        summary["skipped"] = "this build cannot load neural cost models"
        return summary
    limit = MAX_EXPERIENCE_TASKS if args.experience_tasks is None \
        else args.experience_tasks
    tasks = experience_tasks(pool, args.seed, limit, args.memory_cap_gb,
                             args.max_rows)
    start = time.monotonic()
    for k, task in enumerate(tasks):
        spent = time.monotonic() - start
        if k and spent + spent / k > budget_s:
            clock.say("experience", "planning budget spent after %d of %d "
                      "tasks" % (k, len(tasks)))
            break
        try:
            plan = _core.plan({"batch_size": task["batch_size"],
                               "tables": task["tables"]},
                              devices=task["devices"],
                              memory_gb=task["memory_gb"],
                              cost_model=bundle, device_kind="cpu",
                              verify_top=EXPERIENCE_VERIFY_TOP,
                              verify_seconds=args.verify_seconds,
                              experience=experience_path)
        except TypeError as e:
            # A neuroshard._core older than measured selection.
            summary["skipped"] = "neuroshard.plan cannot time plans (%s)" % e
            return summary
        except _core.NeuroShardError as e:
            clock.say("experience", "%s (%d tables on %d devices of %.3f "
                      "GB): no plan: %s" %
                      (task["name"], len(task["tables"]), task["devices"],
                       task["memory_gb"], str(e).splitlines()[0]))
            continue
        verification = plan.get("verification") or {}
        summary["plans"].append((task, plan))
        summary["planned"] += 1
        summary["sets"] += int(verification.get("sets", 0))
        summary["changed"] += int(verification.get("chosen", 0) != 0)
        left = (time.monotonic() - start) / (k + 1) * (len(tasks) - k - 1)
        clock.say("experience", "%s: %d tables on %d devices of %.3f GB, "
                  "%d sets timed%s" %
                  (task["name"], len(task["tables"]), task["devices"],
                   task["memory_gb"], int(verification.get("sets", 0)),
                   ", measured selection chose candidate %d" %
                   (verification["chosen"] + 1)
                   if verification.get("chosen") else ""),
                  min(left, budget_s - (time.monotonic() - start)))
    return summary


def measure_selection_noise(args, plans, pool: Dict, pool_path: str,
                            clock: Clock, budget_s: float) -> Optional[Dict]:
    """Times the candidates of the experience stage's `plans` apart from
    their plannings (selection_noise.compare_plans), plan after plan while
    the next fits in budget_s; returns the noise's figures
    (selection_noise.noise_figures, with "tasks" and "views"), or None where
    fewer than selection_noise.MIN_COMPARISONS candidates were compared."""
    options = argparse.Namespace(batch_size=args.batch_size,
                                 warmup=sn.DEFAULT_WARMUP,
                                 iters=sn.DEFAULT_ITERS, seed=args.seed,
                                 views=sn.DEFAULT_VIEWS)
    found, tasks = sn.compare_plans(plans, pool.get("dims",
                                                    list(tp.POOL_DIMS)),
                                    pool_path, args.tool, options, budget_s)
    if len(found) < sn.MIN_COMPARISONS:
        clock.say("selection noise", "not recorded: %d candidates compared, "
                  "%d needed" % (len(found), sn.MIN_COMPARISONS))
        return None
    figures = sn.noise_figures(found)
    figures.update(tasks=tasks, views=sn.DEFAULT_VIEWS,
                   verify_seconds=args.verify_seconds)
    clock.say("selection noise", sn.summary_line(figures, tasks,
                                                 sn.DEFAULT_VIEWS))
    return figures


def refine_experience(args, staged: str, pool_path: str, data_path: str,
                      experience_path: str, work: str, clock: Clock,
                      budget_s: float, log: TextIO) -> Optional[Dict]:
    """Refines the staged bundle on the experience file, replaying the
    calibration samples, within budget_s; replaces the staged compute.pt
    and meta.json when the refined model predicts the held-out sets better.
    Returns the refinement (experience.refine_bundle's result), or None
    when there was nothing to refine on."""
    refined = os.path.join(work, "refined")
    shutil.rmtree(refined, ignore_errors=True)
    try:
        result = ex.refine_bundle(
            staged, [experience_path], refined, seed=args.seed,
            data_path=data_path, pool_path=pool_path,
            deadline=time.monotonic() + budget_s, log=log)
    except ex.ExperienceError as e:
        clock.say("experience", "not refined: %s" % e)
        return None
    record = result["refined"]
    if result["written"]:
        for name in ("compute.pt", bm.FILE_NAME):
            os.replace(os.path.join(refined, name),
                       os.path.join(staged, name))
        shutil.rmtree(refined, ignore_errors=True)
    before, after = record["held_out_before"], record["held_out_after"]
    clock.say("experience", "%s: held-out MAPE %.2f%% -> %.2f%%, signed "
              "error %+.2f%% -> %+.2f%% on %d sets" %
              ("refined the bundle" if result["written"] else
               "kept the trained bundle (refining did not help)",
               100 * before["mape"], 100 * after["mape"],
               100 * before["signed_error"], 100 * after["signed_error"],
               record["held_out_samples"]))
    return result


def install_bundle(staged: str, out: str) -> None:
    """Copies the staged bundle's files into out (replacing a bundle there,
    which check_out_dir allowed)."""
    os.makedirs(out, exist_ok=True)
    for name in bm.BUNDLE_FILES:
        target = os.path.join(out, name)
        if os.path.exists(target):
            os.remove(target)
    for name in bm.BUNDLE_FILES:
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
    clock.say("start", "plan: collection up to %s, training up to %s, "
              "experience up to %s, then the batch-scaling curve (%d + %d "
              "sets) and the report" %
              (_duration(COLLECT_SHARE * budget_s),
               _duration(TRAIN_SHARE * budget_s),
               _duration(EXPERIENCE_SHARE * budget_s), args.scaling_sets,
               args.validate_sets))
    tool = collect.find_tool(args.tool)
    args.tool = tool

    pool_path = os.path.join(work, "pool.json")
    # The pool's histograms are drawn from as many bags as a sample looks
    # up, so that each is a batch's own (and the experience tasks' batch).
    pool = tp.generate_pool(args.seed, args.base_tables,
                            sample_bags=args.batch_size)
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

    experience_path = os.path.join(work, ex.EXPERIENCE_FILE)
    gathered, refined, noise = None, None, None
    if args.experience_tasks == 0:
        clock.say("experience", "skipped (--experience-tasks 0)")
    else:
        stage_s = EXPERIENCE_SHARE * budget_s
        clock.say("experience", "planning tasks of %d..%d train tables on %d "
                  "devices with measured selection (%d candidates, timed "
                  "for %g s a plan), the sets timed appended to %s" %
                  (EXPERIENCE_TABLES[0], EXPERIENCE_TABLES[1],
                   EXPERIENCE_DEVICES, EXPERIENCE_VERIFY_TOP,
                   args.verify_seconds, experience_path),
                  stage_s)
        stage_start = time.monotonic()
        gathered = gather_experience(args, staged, pool, experience_path,
                                     clock, (1.0 - REFINE_SHARE) * stage_s)
        if gathered["skipped"]:
            clock.say("experience", "skipped: %s" % gathered["skipped"])
        else:
            clock.say("experience", "%d plans, %d sets timed; measured "
                      "selection changed %d of the plans" %
                      (gathered["planned"], gathered["sets"],
                       gathered["changed"]))
            noise = measure_selection_noise(
                args, gathered["plans"], pool, pool_path, clock,
                NOISE_SHARE * budget_s)
            refined = refine_experience(
                args, staged, pool_path, data_path, experience_path, work,
                clock, max(0.0, stage_s - (time.monotonic() - stage_start)),
                log)

    scaling_options = argparse.Namespace(
        sets=args.scaling_sets, batch_sizes=args.batch_sizes,
        validate_batch_sizes=args.validate_batch_sizes,
        validate_sets=args.validate_sets, iters=args.scaling_iters,
        warmup=args.scaling_warmup, seed=args.seed, tool=tool,
        max_rows=args.max_rows, memory_cap_gb=args.memory_cap_gb)
    clock.say("batch scaling", "%d sets at %s, validated on %d held-out sets"
              % (args.scaling_sets,
                 ",".join(str(b) for b in args.batch_sizes or
                          bs.default_batch_sizes(args.batch_size)),
                 args.validate_sets))
    scaling = bs.run(staged, pool_path, scaling_options, log=log, out=out)

    clock.say("report", "held-out MAPE and Kendall's tau")
    result = report.evaluate_bundle(staged, pool_path, data_path)
    print(report.format_table(result), file=out)

    if noise is not None:
        sn.record(staged, noise, {})
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
           args.batch_size, 100.0 * held["mape"], held["kendall_tau"],
           scaling["batch_sizes"][0], scaling["batch_sizes"][-1], checks),
          file=out)
    if noise is not None:
        print("measured selection: %s" % sn.summary_line(
            noise, noise["tasks"], noise["views"]), file=out)
    if refined is not None:
        record = refined["refined"]
        print("experience: %d sets timed in %d plans; %s on %d held-out "
              "sets: MAPE %.2f%% -> %.2f%%, signed error %+.2f%% -> %+.2f%%"
              % (gathered["sets"], gathered["planned"],
                 "refined" if refined["written"] else
                 "not refined (no better)", record["held_out_samples"],
                 100 * record["held_out_before"]["mape"],
                 100 * record["held_out_after"]["mape"],
                 100 * record["held_out_before"]["signed_error"],
                 100 * record["held_out_after"]["signed_error"]), file=out)
    print("use it:  build/bin/neuroshard-plan TASK.json --cost-model %s "
          "--device-kind cpu\n"
          "    or:  build/bin/neuroshard-opt MODEL.mlir "
          "--neuroshard-shard=\"cost-model=%s device-kind=cpu\"" %
          (args.out, args.out), file=out)
    return meta


def refine(args, log: Optional[TextIO] = None,
           out: Optional[TextIO] = None) -> Dict:
    """--refine BUNDLE: fine-tunes the bundle on its experience (--experience,
    default BUNDLE/experience.jsonl) and writes the refined bundle to --out,
    by default BUNDLE itself, which needs --force (the replaced files are
    kept in BUNDLE/before-refine/). Prints the held-out figures before and
    after; returns experience.refine_bundle's result."""
    log = log or sys.stderr
    out = out or sys.stdout
    bundle = args.refine
    paths = args.experience or [os.path.join(bundle, ex.EXPERIENCE_FILE)]
    target = args.out or bundle
    result = ex.refine_bundle(
        bundle, paths, target,
        epochs=args.epochs or ex.DEFAULT_EPOCHS, seed=args.seed,
        data_path=args.data, pool_path=args.pool, force=args.force, log=log)
    record = result["refined"]
    before, after = record["held_out_before"], record["held_out_after"]
    print("held-out experience (%d of %d sets): MAPE %.2f%% -> %.2f%%, "
          "signed error %+.2f%% -> %+.2f%% (the plans predicted %+.2f%%); "
          "best epoch %d of %d" %
          (record["held_out_samples"], record["experience_samples"],
           100 * before["mape"], 100 * after["mape"],
           100 * before["signed_error"], 100 * after["signed_error"],
           100 * record["held_out_as_planned_signed_error"],
           record["best_epoch"], record["epochs_run"]), file=out)
    if "calibration_held_out_mape_after" in record:
        print("held-out calibration samples: MAPE %.2f%% -> %.2f%%" %
              (100 * record["calibration_held_out_mape_before"],
               100 * record["calibration_held_out_mape_after"]), file=out)
    if not result["written"]:
        print("not written: the refined model predicts the held-out sets no "
              "better than '%s' does" % bundle, file=out)
    elif os.path.realpath(target) == os.path.realpath(bundle):
        print("refined '%s' in place (the replaced compute.pt and meta.json "
              "are in %s)" % (bundle, os.path.join(bundle, ex.BACKUP_DIR)),
              file=out)
    else:
        print("wrote the refined bundle to '%s'" % target, file=out)
    return result


# Options of a calibration that --refine does not take.
_CALIBRATION_ONLY = ("samples", "work", "tool", "experience_tasks",
                     "row_pieces", "batch_size")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.calibrate",
        description="Makes a cost-model bundle for this machine in one "
        "command: table pool, compute-cost samples, training, experience "
        "of measured plans, the batch-scaling curve and the report, within "
        "--minutes. With --refine BUNDLE, fine-tunes an existing bundle on "
        "the device sets measured selection timed with it instead.")
    parser.add_argument("--out", default=None, help="bundle directory to "
                        "write (must not exist or be empty, unless --force; "
                        "required unless --refine, whose default is the "
                        "bundle itself)")
    parser.add_argument("--minutes", type=float, default=DEFAULT_MINUTES,
                        help="time budget of the whole command (default "
                        "%%(default)s); collection stops at %d%%%% of it" %
                        round(100 * COLLECT_SHARE))
    parser.add_argument("--samples", type=int, default=None,
                        help="most compute samples to collect (default: as "
                        "many as fit in the budget, at most %d)" %
                        MAX_SAMPLES)
    parser.add_argument("--batch-size", type=int, default=None,
                        metavar="B", help="the batch the samples are timed "
                        "at and the bundle models (its reference batch; "
                        "other batches are priced through its batch-scaling "
                        "curve): the batch you plan for (default %d)" %
                        BATCH_SIZE)
    parser.add_argument("--epochs", type=int, default=None,
                        help="training epochs (default: as many as fit in "
                        "%d%%%% of the budget, %d to %d)" %
                        (round(100 * TRAIN_SHARE), MIN_EPOCHS, MAX_EPOCHS))
    parser.add_argument("--work", default=None,
                        help="directory of the intermediate files (default: "
                        "OUT-work beside --out)")
    parser.add_argument("--seed", type=int, default=None,
                        help="seed of the pool, the samples and the splits "
                        "(default 0; with --refine, the bundle's)")
    parser.add_argument("--force", action="store_true",
                        help="replace the bundle in a non-empty --out (with "
                        "--refine, also BUNDLE itself), and allow --out "
                        "under the source tree's models/")
    parser.add_argument("--experience-tasks", type=int, default=None,
                        metavar="N", help="tasks planned with measured "
                        "selection to gather experience (default: as many "
                        "as fit in %d%%%% of the budget, at most %d; 0 skips "
                        "the stage)" % (round(100 * EXPERIENCE_SHARE *
                                              (1 - REFINE_SHARE)),
                                        MAX_EXPERIENCE_TASKS))
    parser.add_argument("--verify-seconds", type=float,
                        default=DEFAULT_VERIFY_SECONDS,
                        help="seconds measured selection times the sets of "
                        "one plan (default %(default)s)")
    parser.add_argument("--row-pieces", type=float, default=None,
                        metavar="P", help="probability that a sampled "
                        "table is one of its row pieces instead (default "
                        "%g; 0 samples whole tables only)" %
                        DEFAULT_ROW_PIECES)
    parser.add_argument("--refine", metavar="BUNDLE", default=None,
                        help="calibrate nothing: fine-tune BUNDLE's compute "
                        "model on the sets measured selection timed with it "
                        "(--experience) and write the refined bundle to "
                        "--out (default BUNDLE itself, with --force)")
    parser.add_argument("--experience", action="append", default=None,
                        metavar="PATH", help="with --refine: an experience "
                        "file (repeatable; default BUNDLE/%s)" %
                        ex.EXPERIENCE_FILE)
    parser.add_argument("--data", default=None, metavar="SAMPLES",
                        help="with --refine: the bundle's calibration "
                        "dataset (samples.jsonl of its work directory), "
                        "replayed while refining so that the model keeps "
                        "its accuracy on random sets; needs --pool")
    parser.add_argument("--pool", default=None,
                        help="with --refine: the pool of --data (pool.json "
                        "of the work directory)")
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
    if args.epochs is not None and args.epochs < 1:
        parser.error("--epochs must be positive, got %d" % args.epochs)
    if args.refine is not None:
        given = ["--" + name.replace("_", "-") for name in _CALIBRATION_ONLY
                 if getattr(args, name) is not None]
        if given:
            parser.error("--refine takes --experience, --out, --force, "
                         "--epochs, --seed, --data and --pool, not %s" %
                         ", ".join(given))
        try:
            refine(args)
        except (ex.ExperienceError, tr.TrainError, collect.CollectError,
                tp.PoolError) as e:
            print("calibrate: error: %s" % e, file=sys.stderr)
            return 1
        return 0
    for name in ("experience", "data", "pool"):
        if getattr(args, name) is not None:
            parser.error("--%s goes with --refine" % name)
    if args.out is None:
        parser.error("--out is required (unless --refine)")
    if args.seed is None:
        args.seed = 0
    if args.row_pieces is None:
        args.row_pieces = DEFAULT_ROW_PIECES
    if args.batch_size is None:
        args.batch_size = BATCH_SIZE
    if not 1 <= args.batch_size <= MAX_BATCH_SIZE:
        parser.error("--batch-size must be in [1, %d] (the timing tool's "
                     "largest batch), got %d" % (MAX_BATCH_SIZE,
                                                 args.batch_size))
    if not 0.0 <= args.row_pieces <= 1.0:
        parser.error("--row-pieces must be a probability in [0, 1], got %g"
                     % args.row_pieces)
    if not args.minutes > 0 or args.base_tables < 1:
        parser.error("--minutes and --base-tables must be positive")
    if args.experience_tasks is not None and args.experience_tasks < 0:
        parser.error("--experience-tasks must not be negative, got %d" %
                     args.experience_tasks)
    if not 0 <= args.verify_seconds < math.inf:
        parser.error("--verify-seconds must be a finite number >= 0, got %g"
                     % args.verify_seconds)
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
    try:
        calibrate(args)
    except (CalibrateError, bs.ScalingError, tr.TrainError,
            collect.CollectError, tp.PoolError, report.ReportError,
            ex.ExperienceError) as e:
        print("calibrate: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
