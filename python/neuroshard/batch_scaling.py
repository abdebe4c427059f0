#===- batch_scaling.py - How compute costs scale with the batch size -----===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Measures a bundle's batch-scaling curve on this machine (docs/cost-model.md,
"Batch size").

The compute network predicts a shard set's cost at the bundle's reference
batch (meta.json "batch_size"). At another global batch B the cost is that
prediction times a ratio r(B): r(ref) = 1, and r at the measured batch sizes
is the median over N sets of cost(B) / cost(ref), each cost timed by the
C++ tool

  neuroshard-collect --pool POOL --sets SETS --device cpu --batch-size B
                     --warmup W --iters I --seed S

on sets of 1..15 train-split pool tables drawn like neuroshard.collect draws
them (collect.sample_set, under a seed of their own). Between the measured
batch sizes r is piecewise linear in (log B, log r); outside them the end
segment's slope goes on (scale_ratio(); the C++ side computes the same).

Validation: on sets of the pool's TEST split, timed at the reference and at
batch sizes that are not in the curve, the scaling law's prediction
(measured cost at the reference times r(B)) against the measured cost, and,
for a trained bundle, the full prediction (the network at the reference
times r(B)) against it; both as MAPE per batch size.

The result goes into the bundle's meta.json (in place, every other field
kept):

  "batch_scaling": {"reference_batch": 1024,
                    "batch_sizes": [256, 1024, 4096, 16384, 65536],
                    "ratios": [0.27, 1.0, 4.4, 19.5, 88.0],
                    "sets": 48, "iters": 10,
                    "validation": {"batch_sizes": [2048, 32768], "sets": 24,
                                   "scaling_mape": [...],
                                   "prediction_mape": [...]}}
"""

import argparse
import bisect
import json
import math
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Sequence, TextIO

import numpy as np
import torch

from neuroshard import _core
from neuroshard import bundle_meta as bm
from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import metrics
from neuroshard import table_pool as tp

DEFAULT_BATCH_SIZES = (256, 1024, 4096, 16384, 65536)
DEFAULT_VALIDATE_BATCH_SIZES = (2048, 32768)
DEFAULT_SETS = 48
DEFAULT_VALIDATE_SETS = 24
DEFAULT_MEMORY_CAP_GB = 4.0
# Keys the seeds of the curve's and the validation's sets apart from the
# collection's (which uses the seed itself), so that neither repeats the
# training sets.
_CURVE_KEY = 0xBA7C5CA1
_VALIDATION_KEY = 0xBA7C5FA1
# Seconds between two progress lines within one batch size.
_PROGRESS_EVERY_S = 15.0


class ScalingError(Exception):
    """A problem that stops the measurement; the message names the file, the
    batch sizes or the values."""


def scale_ratio(curve: Dict, batch: float) -> float:
    """r(batch) of a curve {"reference_batch", "batch_sizes", "ratios"}:
    piecewise linear in (log B, log r) between the measured batch sizes,
    extrapolated outside them with the slope of the nearest end segment.
    A curve of one point (the reference alone) means r = B / reference."""
    sizes, ratios = curve["batch_sizes"], curve["ratios"]
    if len(sizes) != len(ratios) or not sizes:
        raise ValueError("a curve needs as many ratios as batch sizes (and "
                         "at least one), got %d and %d" %
                         (len(sizes), len(ratios)))
    if not batch > 0:
        raise ValueError("batch size must be positive, got %r" % (batch,))
    if len(sizes) == 1:
        return float(batch) / float(curve["reference_batch"])
    index = bisect.bisect_left(sizes, batch)
    if index < len(sizes) and sizes[index] == batch:
        return float(ratios[index])
    # The segment [k, k + 1] that holds batch, or the nearest end one.
    k = min(max(index - 1, 0), len(sizes) - 2)
    x0, x1 = math.log(sizes[k]), math.log(sizes[k + 1])
    y0, y1 = math.log(ratios[k]), math.log(ratios[k + 1])
    slope = (y1 - y0) / (x1 - x0)
    return math.exp(y0 + slope * (math.log(batch) - x0))


def check_curve(batch_sizes: Sequence[int], ratios: Sequence[float],
                reference_batch: int, sets: Optional[int] = None) -> None:
    """Raises ScalingError unless the batch sizes increase, the reference
    batch is one of them with ratio exactly 1, and the ratios are positive
    and increase with the batch size (a measured curve that does not was
    measured on a noisy machine)."""
    if len(batch_sizes) != len(ratios) or not batch_sizes:
        raise ScalingError("a batch-scaling curve needs as many ratios as "
                           "batch sizes, got %d and %d" %
                           (len(batch_sizes), len(ratios)))
    for a, b in zip(batch_sizes, batch_sizes[1:]):
        if not 0 < a < b:
            raise ScalingError("the curve's batch sizes must be positive and "
                               "increasing, got %s" %
                               ", ".join(str(s) for s in batch_sizes))
    if reference_batch not in batch_sizes:
        raise ScalingError("the curve's batch sizes (%s) do not include the "
                           "reference batch %d" %
                           (", ".join(str(s) for s in batch_sizes),
                            reference_batch))
    if ratios[list(batch_sizes).index(reference_batch)] != 1.0:
        raise ScalingError("the ratio at the reference batch %d must be "
                           "exactly 1" % reference_batch)
    for b, r in zip(batch_sizes, ratios):
        if not (isinstance(r, (int, float)) and math.isfinite(r) and r > 0):
            raise ScalingError("r(%d) = %r: ratios must be finite and "
                               "positive" % (b, r))
    for (a, ra), (b, rb) in zip(zip(batch_sizes, ratios),
                                zip(batch_sizes[1:], ratios[1:])):
        if not rb > ra:
            raise ScalingError(
                "the batch-scaling curve does not increase: r(%d) = %.4g but "
                "r(%d) = %.4g%s; the timings are too noisy: measure again on "
                "an idle machine, with more --iters" %
                (a, ra, b, rb, " (medians over %d sets)" % sets
                 if sets is not None else ""))


def draw_sets(pool: Dict, seed: int, key: int, count: int,
              memory_cap_bytes: int, split: str) -> Dict[int, List[int]]:
    """`count` sets (id -> pool table ids) of 1..15 tables of `split`, drawn
    by collect.sample_set under mix_seed(seed, key)."""
    set_seed = _core.mix_seed(seed, key)
    return {k: collect.sample_set(pool, set_seed, k, memory_cap_bytes,
                                  split=split) for k in range(count)}


def _format_duration(seconds: float) -> str:
    return collect._format_duration(seconds)


class Progress:
    """Progress and time left over a plan of timing jobs, each (label, batch,
    number of sets, kind); the first job is the curve's reference. A set at
    batch B is estimated to take c0 + c1 r(B) seconds, r being the curve
    measured so far (B / reference before any): c1 is twice the kernel time
    of a set at the reference (its warmup + iters runs; the tool's input
    generation grows with the batch too), c0 the mean of what the sets timed
    so far took beyond c1 r(B) (start-up, allocation, cache flushes)."""

    def __init__(self, jobs, reference_batch: int, runs_per_set: int,
                 log: TextIO):
        self.jobs = jobs
        self.runs_per_set = runs_per_set
        self.log = log
        self.start = time.monotonic()
        self.walls: List[List[float]] = [[] for _ in jobs]
        self.reference_costs: List[float] = []
        self.curve = {"reference_batch": reference_batch,
                      "batch_sizes": [reference_batch], "ratios": [1.0]}
        self.current = 0
        self.set_start = self.last_line = self.start

    def begin(self, job: int) -> None:
        self.current = job
        self.set_start = time.monotonic()

    def set_done(self, cost_ms: float) -> None:
        now = time.monotonic()
        self.walls[self.current].append(now - self.set_start)
        if self.current == 0:
            self.reference_costs.append(cost_ms)
        self.set_start = now
        done = len(self.walls[self.current])
        label, batch, count, _ = self.jobs[self.current]
        if done == count or now - self.last_line >= _PROGRESS_EVERY_S:
            self.last_line = now
            print("batch_scaling: %s batch %d (%d of %d): %d/%d sets, %s "
                  "elapsed, about %s left" %
                  (label, batch, self.current + 1, len(self.jobs), done,
                   count, _format_duration(now - self.start),
                   _format_duration(self.seconds_left())),
                  file=self.log, flush=True)

    def seconds_left(self) -> float:
        c1 = 2.0 * self.runs_per_set * statistics.mean(
            self.reference_costs) / 1000.0 if self.reference_costs else 0.05
        beyond = [wall - c1 * scale_ratio(self.curve, job[1])
                  for job, walls in zip(self.jobs, self.walls)
                  for wall in walls]
        c0 = max(0.0, statistics.mean(beyond)) if beyond else 0.5
        return sum((count - len(walls)) *
                   (c0 + c1 * scale_ratio(self.curve, batch))
                   for (_, batch, count, _), walls in zip(self.jobs,
                                                          self.walls))


class _Results:
    """The `out` of collect.run_batch: keeps each set's cost and reports
    progress as the tool prints them."""

    def __init__(self, on_set: Callable[[float], None]):
        self.costs: Dict[int, float] = {}
        self.on_set = on_set

    def write(self, text: str) -> None:
        for line in text.splitlines():
            if line.strip():
                sample = json.loads(line)
                self.costs[sample["id"]] = float(sample["cost_ms"])
                self.on_set(float(sample["cost_ms"]))

    def flush(self) -> None:
        pass


def time_sets(tool: str, pool_path: str, fingerprint: str,
              sets: Dict[int, List[int]], batch: int, options,
              hardware: str, sets_path: str,
              on_set: Callable[[float], None]) -> Dict[int, float]:
    """cost_ms of every set at `batch`, timed by one run of the tool."""
    args = argparse.Namespace(
        pool=pool_path, device="cpu", batch_size=batch,
        warmup=options.warmup, iters=options.iters, seed=options.seed,
        max_rows=options.max_rows, hardware=hardware,
        fingerprint=fingerprint)
    results = _Results(on_set)
    collect.run_batch(tool, sets, args, sets_path, results)
    return results.costs


def ratio_medians(costs: Dict[int, Dict[int, float]], reference_batch: int,
                  batch_sizes: Sequence[int]) -> List[float]:
    """Median over sets of cost(B) / cost(reference) for each B."""
    reference = costs[reference_batch]
    return [1.0 if batch == reference_batch else
            float(np.median([costs[batch][k] / reference[k]
                             for k in reference])) for batch in batch_sizes]


def network_predictions(bundle_dir: str, pool: Dict,
                        sets: Dict[int, List[int]]) -> Dict[int, float]:
    """The bundle's compute.pt cost (at its reference batch) of each set."""
    path = os.path.join(bundle_dir, "compute.pt")
    try:
        model = torch.jit.load(path)
    except (RuntimeError, ValueError) as e:
        raise ScalingError("cannot load '%s': %s" %
                           (path, str(e).splitlines()[0]))
    by_id = {t["id"]: t for t in pool["tables"]}
    ids = sorted(sets)
    features, owners = [], []
    for row, k in enumerate(ids):
        for table_id in sets[k]:
            t = by_id[table_id]
            features.append(cm.table_features(t["rows"], t["dim"],
                                              t["pooling_factor"],
                                              t["access_hist"]))
            owners.append(row)
    with torch.no_grad():
        predicted = model(torch.tensor(features, dtype=torch.float32),
                          torch.tensor(owners, dtype=torch.long), len(ids))
    return dict(zip(ids, predicted.tolist()))


def _rounded(value: float) -> float:
    return float("%.6g" % value)


def load_bundle_meta(bundle_dir: str) -> Dict:
    """The bundle's meta.json, checked for what the measurement needs."""
    return bm.read_checked(bundle_dir, ScalingError)


def measure(bundle_dir: str, meta: Dict, pool_path: str, options,
            log: TextIO) -> Dict:
    """Measures the curve and its validation; returns meta's
    "batch_scaling" object."""
    here = _core.host_cpu_model()
    if meta["hardware"] != here:
        raise ScalingError(
            "bundle '%s' was measured on '%s', but this machine is '%s': its "
            "batch-scaling curve must be measured on the machine it prices"
            % (bundle_dir, meta["hardware"], here))
    other = _core.other_chip(meta.get("host"))
    if other:
        raise ScalingError(
            "bundle '%s' was measured on another '%s' chip (%s): its "
            "batch-scaling curve must be measured on the machine it prices"
            % (bundle_dir, here, other))
    reference = meta["batch_size"]
    batch_sizes = sorted(set(options.batch_sizes))
    if reference not in batch_sizes:
        raise ScalingError("--batch-sizes %s must include the bundle's "
                           "reference batch %d (meta.json \"batch_size\")" %
                           (",".join(str(b) for b in batch_sizes), reference))
    validate_sizes = sorted(set(options.validate_batch_sizes))
    overlap = sorted(set(validate_sizes) & set(batch_sizes))
    if overlap:
        raise ScalingError("--validate-batch-sizes %s are also curve batch "
                           "sizes: validation needs batch sizes the curve "
                           "was not measured at" %
                           ",".join(str(b) for b in overlap))
    pool = tp.load_pool(pool_path)
    fingerprint = tp.pool_fingerprint(pool)
    trained_pool = (meta.get("training") or {}).get("pool") \
        if isinstance(meta.get("training"), dict) else None
    if trained_pool is not None and trained_pool != fingerprint:
        print("batch_scaling: note: pool '%s' (%s) is not the pool the "
              "bundle was trained on (%s), so its test split may hold "
              "tables the network saw" % (pool_path, fingerprint,
                                          trained_pool), file=log)
    curve_sets, test_sets = draw_curve_sets(pool, options,
                                            bool(validate_sizes))
    tool = collect.find_tool(options.tool)

    # The reference first: it anchors the ratios and the time estimates.
    jobs = [("curve", reference, len(curve_sets), "curve")] + [
        ("curve", b, len(curve_sets), "curve") for b in batch_sizes
        if b != reference]
    if validate_sizes:
        jobs += [("validation", reference, len(test_sets), "validation")] + [
            ("validation", b, len(test_sets), "validation")
            for b in validate_sizes]
    progress = Progress(jobs, reference, options.warmup + options.iters,
                        log)
    print("batch_scaling: timing %d train-split sets at batch %s and %d "
          "test-split sets at %s (reference %d) with %s, %d warm-up and %d "
          "timed runs each" %
          (len(curve_sets), ",".join(str(b) for b in batch_sizes),
           len(test_sets), ",".join(str(b) for b in validate_sizes) or "-",
           reference, tool, options.warmup, options.iters), file=log,
          flush=True)
    costs = {"curve": {}, "validation": {}}
    with tempfile.TemporaryDirectory(prefix="batch-scaling-") as scratch:
        sets_path = os.path.join(scratch, "sets.jsonl")
        for job, (_, batch, _, kind) in enumerate(jobs):
            progress.begin(job)
            sets = curve_sets if kind == "curve" else test_sets
            costs[kind][batch] = time_sets(
                tool, pool_path, fingerprint, sets, batch, options, here,
                sets_path, progress.set_done)
            if kind == "curve" and batch != reference:
                measured = sorted(costs["curve"])
                progress.curve = {
                    "reference_batch": reference, "batch_sizes": measured,
                    "ratios": ratio_medians(costs["curve"], reference,
                                            measured)}

    curve = curve_from_costs(bundle_dir, meta, pool, costs, curve_sets,
                             test_sets, batch_sizes, validate_sizes,
                             options.iters)
    curve["_seconds"] = time.monotonic() - progress.start
    return curve


def draw_curve_sets(pool: Dict, options, validate: bool):
    """The curve's train-split sets and the validation's test-split sets
    (none without `validate`) of options.sets and options.validate_sets
    tables under options.memory_cap_gb, drawn under options.seed."""
    cap = int(options.memory_cap_gb * 2**30)
    curve_sets = draw_sets(pool, options.seed, _CURVE_KEY, options.sets, cap,
                           "train")
    test_sets = draw_sets(pool, options.seed, _VALIDATION_KEY,
                          options.validate_sets, cap, "test") \
        if validate else {}
    return curve_sets, test_sets


def curve_from_costs(bundle_dir: str, meta: Dict, pool: Dict,
                     costs: Dict[str, Dict[int, Dict[int, float]]],
                     curve_sets: Dict[int, List[int]],
                     test_sets: Dict[int, List[int]],
                     batch_sizes: Sequence[int],
                     validate_sizes: Sequence[int], iters: int) -> Dict:
    """meta's "batch_scaling" from measured costs: costs["curve"][B][set]
    of the curve's sets and costs["validation"][B][set] of the validation's
    at each batch B (the reference among both)."""
    reference = meta["batch_size"]
    ratios = [_rounded(r) for r in ratio_medians(costs["curve"], reference,
                                                 batch_sizes)]
    check_curve(batch_sizes, ratios, reference, len(curve_sets))
    curve = {"reference_batch": reference, "batch_sizes": list(batch_sizes),
             "ratios": ratios, "sets": len(curve_sets), "iters": iters}
    if validate_sizes:
        measured_ref = costs["validation"][reference]
        ids = sorted(test_sets)
        validation = {"batch_sizes": list(validate_sizes), "sets": len(ids),
                      "scaling_mape": []}
        network = network_predictions(bundle_dir, pool, test_sets) \
            if meta.get("trained") is True else None
        if network is not None:
            validation["prediction_mape"] = []
        for batch in validate_sizes:
            ratio = scale_ratio(curve, batch)
            measured = [costs["validation"][batch][k] for k in ids]
            validation["scaling_mape"].append(_rounded(metrics.mape(
                [measured_ref[k] * ratio for k in ids], measured)))
            if network is not None:
                validation["prediction_mape"].append(_rounded(metrics.mape(
                    [network[k] * ratio for k in ids], measured)))
        if network is not None:
            # Not stored: the network's own error on these sets, for scale.
            curve["_network_reference_mape"] = metrics.mape(
                [network[k] for k in ids], [measured_ref[k] for k in ids])
        curve["validation"] = validation
    return curve


def format_curve(name: str, hardware: str, scaling: Dict) -> str:
    reference = scaling["reference_batch"]
    lines = ["batch scaling of '%s' on %s: reference batch %d, median over "
             "%d train-split sets of %d timed runs each" %
             (name, hardware, reference, scaling["sets"], scaling["iters"]),
             "%8s %10s %14s" % ("batch", "r(B)", "per bag vs ref")]
    for batch, ratio in zip(scaling["batch_sizes"], scaling["ratios"]):
        lines.append("%8d %10.4f %14.3f" % (batch, ratio,
                                            ratio * reference / batch))
    validation = scaling.get("validation")
    if validation:
        lines.append("validation on %d test-split sets at batch sizes not "
                     "in the curve:" % validation["sets"])
        has_prediction = "prediction_mape" in validation
        lines.append("%8s %10s %14s" % ("batch", "r(B)", "scaling MAPE") +
                     (" %16s" % "prediction MAPE" if has_prediction else ""))
        for i, batch in enumerate(validation["batch_sizes"]):
            line = "%8d %10.4f %13.2f%%" % (
                batch, scale_ratio(scaling, batch),
                100.0 * validation["scaling_mape"][i])
            if has_prediction:
                line += " %15.2f%%" % (
                    100.0 * validation["prediction_mape"][i])
            lines.append(line)
        if "_network_reference_mape" in scaling:
            lines.append("(the network alone at the reference batch on these "
                         "sets: MAPE %.2f%%)" %
                         (100.0 * scaling["_network_reference_mape"]))
    return "\n".join(lines)


def write_scaling(bundle_dir: str, scaling: Dict) -> str:
    """Sets meta.json's "batch_scaling" (in place: the other fields and
    their order are kept, the file's indentation too); returns the path."""
    return bm.set_field(bundle_dir, "batch_scaling",
                        {k: v for k, v in scaling.items()
                         if not k.startswith("_")}, ScalingError)


def parse_batch_sizes(text: str) -> List[int]:
    """"256,1024" -> [256, 1024]; "" -> []."""
    sizes = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            size = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError("not a batch size: %r" % part)
        if size < 1:
            raise argparse.ArgumentTypeError("batch sizes must be positive, "
                                             "got %d" % size)
        sizes.append(size)
    return sizes


def add_measurement_options(parser: argparse.ArgumentParser,
                            sets: Optional[int] = DEFAULT_SETS,
                            validate_sets: Optional[int] =
                            DEFAULT_VALIDATE_SETS, prefix: str = "",
                            sets_default: Optional[str] = None,
                            validate_sets_default: Optional[str] = None
                            ) -> None:
    """The options that say how the curve is measured (shared with
    neuroshard.calibrate, whose option names take `prefix` and whose set
    counts default to None, described by the *_default texts)."""
    parser.add_argument("--" + prefix + "sets", dest="sets", type=int,
                        default=sets, metavar="N",
                        help="train-split sets the curve's medians are over "
                        "(default %s)" % (sets_default or sets))
    parser.add_argument("--batch-sizes", type=parse_batch_sizes,
                        default=None,
                        help="comma-separated batch sizes of the curve; must "
                        "include the bundle's reference batch (default %s, "
                        "plus the reference)" %
                        ",".join(str(b) for b in DEFAULT_BATCH_SIZES))
    parser.add_argument("--validate-batch-sizes", type=parse_batch_sizes,
                        default=list(DEFAULT_VALIDATE_BATCH_SIZES),
                        help="comma-separated batch sizes, none of them in "
                        "the curve, to validate it at on test-split sets "
                        "('' for none; default %s)" %
                        ",".join(str(b) for b in DEFAULT_VALIDATE_BATCH_SIZES))
    parser.add_argument("--validate-sets", type=int, default=validate_sets,
                        metavar="M", help="test-split sets of the validation "
                        "(default %s)" % (validate_sets_default or
                                          validate_sets))
    parser.add_argument("--" + prefix + "iters", dest="iters", type=int,
                        default=10, help="timed runs per set and batch; the "
                        "median is the cost (default %(default)s, at least "
                        "10)")
    parser.add_argument("--" + prefix + "warmup", dest="warmup", type=int,
                        default=3, help="untimed runs before them (default "
                        "%(default)s)")
    parser.add_argument("--memory-cap-gb", type=float,
                        default=DEFAULT_MEMORY_CAP_GB,
                        help="most GB (2^30 bytes, f32) of tables in one set "
                        "(default %(default)s)")
    parser.add_argument("--max-rows", type=int, default=None,
                        help="passed to the tool: most rows it allocates per "
                        "table (quick checks only: it changes the costs)")


def check_measurement_options(parser: argparse.ArgumentParser, args,
                              prefix: str = "") -> None:
    if args.sets < 1 or args.validate_sets < 1:
        parser.error("--%ssets and --validate-sets must be positive" %
                     prefix)
    if args.iters < 10:
        parser.error("--%siters must be at least 10 (the cost is a median of "
                     ">= 10 timed runs), got %d" % (prefix, args.iters))
    if args.warmup < 0 or not args.memory_cap_gb > 0:
        parser.error("--%swarmup must not be negative and --memory-cap-gb "
                     "must be positive" % prefix)


def default_batch_sizes(reference: int) -> List[int]:
    return sorted(set(DEFAULT_BATCH_SIZES) | {reference})


def run(bundle_dir: str, pool_path: str, options, dry_run: bool = False,
        log: Optional[TextIO] = None, out: Optional[TextIO] = None) -> Dict:
    """Measures the curve of a bundle, prints it to `out` and, unless
    dry_run, writes it into the bundle's meta.json; returns it (keys
    starting with "_" are for the printout only)."""
    log = log or sys.stderr
    out = out or sys.stdout
    meta = load_bundle_meta(bundle_dir)
    if options.batch_sizes is None:
        options.batch_sizes = default_batch_sizes(meta["batch_size"])
    scaling = measure(bundle_dir, meta, pool_path, options, log)
    print(format_curve(os.path.basename(os.path.normpath(bundle_dir)),
                       meta["hardware"], scaling), file=out)
    if dry_run:
        print("dry run: %s not changed (measured in %s)" %
              (bm.path(bundle_dir),
               _format_duration(scaling["_seconds"])), file=out)
    else:
        path = write_scaling(bundle_dir, scaling)
        print("updated %s (measured in %s)" %
              (path, _format_duration(scaling["_seconds"])), file=out)
    return scaling


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard.batch_scaling",
        description="Measures how a cost-model bundle's compute costs scale "
        "with the batch size on this machine (the ratio r(B) of the cost at "
        "batch B to the cost at the bundle's reference batch), validates "
        "the curve on held-out tables at other batch sizes, and writes it "
        "into the bundle's meta.json as \"batch_scaling\".")
    parser.add_argument("--bundle", required=True, help="bundle directory "
                        "(its meta.json is updated in place)")
    parser.add_argument("--pool", required=True, help="pool JSON file "
                        "(python3 -m neuroshard.table_pool), ideally the one "
                        "the bundle was trained on")
    add_measurement_options(parser)
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the sets and of the tool's inputs")
    parser.add_argument("--tool", default=None,
                        help="timing tool (default: %s on PATH, else "
                        "build/bin/%s)" % (collect.TOOL_NAME,
                                           collect.TOOL_NAME))
    parser.add_argument("--dry-run", action="store_true",
                        help="only print the curve; leave meta.json alone")
    args = parser.parse_args(argv)
    check_measurement_options(parser, args)
    try:
        run(args.bundle, args.pool, args, dry_run=args.dry_run)
    except (ScalingError, collect.CollectError, tp.PoolError) as e:
        print("batch_scaling: error: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
