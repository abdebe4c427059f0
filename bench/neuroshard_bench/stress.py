#===- stress.py - Cost-model predictions far from the training data -------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#
"""Measures a fixed set of tables unlike any the cost models are trained on
and compares a bundle's compute predictions with the measurements
(docs/cost-model.md, "Physics prior and tables unlike the training data").

The stress set (stress_tables()) holds tiny hot tables, tables of up to 1e8
rows, pooling factors up to 300 and widths from 4 to 256, each generated
from its own seed (the table pool's Zipf-like index stream,
zipf_index_stream, at the bundle's batch size, so its access histogram is
one a batch can make). Every table is timed alone
with neuroshard-collect, as the training samples are, and so are a few sets
that mix them with ordinary tables. The result is a table of measured and
predicted ms and their ratio, and the share of predictions within
--within (default 2x) of the measurement.

  PYTHONPATH=python:bench:build/lib/python3/dist-packages \\
      /usr/bin/python3 -m neuroshard_bench.stress \\
      --bundle build/cpu-here [--bundle models/cpu-zen5-b1024] \\
      [--json bench/results/stress.json]
"""

import argparse
import json
import math
import os
import sys
import tempfile
from typing import Dict, List, Optional, Sequence


from neuroshard import _core
from neuroshard import bundle_meta as bm
from neuroshard import collect
from neuroshard import cost_model as cm
from neuroshard import jsonio
from neuroshard import table_pool as tp

STRESS_SEED = 0x57E55
# name, rows, dim, pooling factor, Zipf skew of the index stream.
STRESS_TABLES = (
    ("tiny_hot_r10_d128", 10, 128, 40.0, 2.5),
    ("tiny_hot_r64_d32", 64, 32, 120.0, 2.0),
    ("hot_r6713_d32", 6713, 32, 28.5, 2.2),
    ("tiny_r200_d256", 200, 256, 10.0, 1.2),
    ("rows_3e7_d16", 30000000, 16, 8.0, 1.05),
    ("rows_1e8_d4", 100000000, 4, 4.0, 1.05),
    ("rows_1e8_d8_pool50", 100000000, 8, 50.0, 1.1),
    ("pool300_r1e5_d64", 100000, 64, 300.0, 1.3),
    ("pool200_r2e6_d16", 2000000, 16, 200.0, 1.1),
    ("pool300_r500_d8", 500, 8, 300.0, 1.8),
    ("d256_r1e6_pool20", 1000000, 256, 20.0, 1.2),
    ("d256_r2e4_pool60", 20000, 256, 60.0, 1.6),
    ("d4_r1e4_pool1", 10000, 4, 1.0, 1.0),
    ("d4_r3e6_pool100", 3000000, 4, 100.0, 1.4),
)
# Sets of stress tables (by index in STRESS_TABLES), timed as one kernel.
STRESS_SETS = ((0, 7, 12), (2, 3, 9, 11), (4, 8, 13), (1, 10), (5, 6))
DEFAULT_WITHIN = 2.0


class StressError(Exception):
    """A problem that stops the stress run; the message names the file or
    the tool."""


def stress_tables(batch_size: int) -> List[Dict]:
    """The stress tables as pool tables, their access histograms measured
    on one batch of `batch_size` bags of a seeded index stream."""
    tables = []
    for k, (name, rows, dim, pooling, skew) in enumerate(STRESS_TABLES):
        length = max(1, int(round(batch_size * pooling)))
        stream = _core.zipf_index_stream(rows, skew, length,
                                         _core.mix_seed(STRESS_SEED, k))
        hist = _core.access_histogram(stream)
        problem = _core.check_access_histogram_for_batch(
            hist, rows, pooling, batch_size)
        if problem is not None:
            raise StressError("stress table '%s': %s" % (name, problem))
        tables.append({"id": k, "base": k, "split": "train", "name": name,
                       "rows": rows, "dim": dim, "pooling_factor": pooling,
                       "skew": skew, "access_hist": hist})
    return tables


def stress_pool(batch_size: int) -> Dict:
    """A pool file holding the stress tables, for neuroshard-collect."""
    tables = stress_tables(batch_size)
    return {"seed": STRESS_SEED, "base_tables": len(tables),
            "sample_bags": batch_size, "test_fraction": 0.0,
            "dims": sorted({t["dim"] for t in tables}), "tables": tables}


def stress_sets() -> List[List[int]]:
    """Every table alone, then the mixed sets."""
    return [[k] for k in range(len(STRESS_TABLES))] + \
        [list(s) for s in STRESS_SETS]


def measure(pool: Dict, sets: Sequence[Sequence[int]], args,
            log) -> List[float]:
    """Mean ms of each set, timed with neuroshard-collect."""
    with tempfile.TemporaryDirectory(prefix="neuroshard-stress-") as scratch:
        pool_path = os.path.join(scratch, "pool.json")
        with open(pool_path, "w") as f:
            json.dump(pool, f)
        options = argparse.Namespace(
            pool=pool_path, device="cpu", batch_size=args.batch_size,
            warmup=args.warmup, iters=args.iters, seed=STRESS_SEED,
            max_rows=None, hardware=None,
            fingerprint=tp.pool_fingerprint(pool))
        results = os.path.join(scratch, "results.jsonl")
        with open(results, "w") as out:
            for k, tables in enumerate(sets):
                collect.run_batch(args.tool, {k: list(tables)}, options,
                                  os.path.join(scratch, "sets.jsonl"), out)
                print("stress: timed set %d/%d" % (k + 1, len(sets)),
                      file=log, flush=True)
        samples = collect.load_samples(results)
    by_id = {s["id"]: s["cost_ms"] for s in samples}
    return [by_id[k] for k in range(len(sets))]


def predict(bundle: str, pool: Dict, sets: Sequence[Sequence[int]]) -> Dict:
    """{"compute": [ms per set], "spread": [ms] or None} of a bundle."""
    query = {"tables": pool["tables"],
             "sets": [[[t, pool["tables"][t]["dim"]] for t in s]
                      for s in sets]}
    try:
        return cm.predict_query(bundle, query)
    except (RuntimeError, ValueError, OSError) as e:
        raise StressError("cannot evaluate bundle '%s': %s" %
                          (bundle, str(e).splitlines()[0]))


def compare(pool: Dict, sets, measured: Sequence[float],
            predictions: Dict[str, Dict], within: float) -> Dict:
    """Rows of the result table and each bundle's summary."""
    names = [t["name"] for t in pool["tables"]]
    rows = []
    for k, tables in enumerate(sets):
        row = {"set": "+".join(names[t] for t in tables),
               "measured_ms": measured[k], "predicted_ms": {}, "ratio": {}}
        for bundle, result in predictions.items():
            predicted = result["compute"][k]
            row["predicted_ms"][bundle] = predicted
            row["ratio"][bundle] = predicted / measured[k]
        rows.append(row)
    summary = {}
    for bundle in predictions:
        ratios = [r["ratio"][bundle] for r in rows]
        off = [max(q, 1.0 / q) if q > 0 else math.inf for q in ratios]
        summary[bundle] = {
            "within": sum(1 for o in off if o <= within),
            "sets": len(rows),
            "worst_factor": max(off),
            "geomean_ratio": math.exp(sum(math.log(max(q, 1e-12))
                                          for q in ratios) / len(ratios)),
        }
    return {"within": within, "rows": rows, "summary": summary}


def format_table(result: Dict) -> str:
    bundles = list(result["summary"])
    width = max(len(r["set"]) for r in result["rows"])
    header = "%-*s  %11s" % (width, "set", "measured ms") + "".join(
        "  %14s %6s" % ("pred ms " + str(i + 1), "ratio")
        for i in range(len(bundles)))
    lines = [header]
    for row in result["rows"]:
        line = "%-*s  %11.4f" % (width, row["set"], row["measured_ms"])
        for bundle in bundles:
            line += "  %14.4f %6.2f" % (row["predicted_ms"][bundle],
                                        row["ratio"][bundle])
        lines.append(line)
    for i, bundle in enumerate(bundles):
        s = result["summary"][bundle]
        lines.append("%d: %s: %d/%d within %gx, worst %.2fx off, geometric "
                     "mean ratio %.2f" % (i + 1, bundle, s["within"],
                                          s["sets"], result["within"],
                                          s["worst_factor"],
                                          s["geomean_ratio"]))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python3 -m neuroshard_bench.stress",
        description="Times tables unlike the training data (tiny hot "
        "tables, 1e8 rows, pooling 300, widths 4-256) and compares cost "
        "model bundles' compute predictions with the measurements.")
    parser.add_argument("--bundle", action="append", required=True,
                        help="bundle directory (repeat to compare several)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--within", type=float, default=DEFAULT_WITHIN,
                        help="count predictions within this factor of the "
                        "measurement (default %(default)s)")
    parser.add_argument("--tool", default=None,
                        help="neuroshard-collect to time with (default: "
                        "PATH, then build/bin/)")
    parser.add_argument("--measured", default=None,
                        help="JSON file of measured ms per set to reuse "
                        "(written by --json) instead of timing again")
    parser.add_argument("--json", default=None,
                        help="also write the result as JSON here")
    args = parser.parse_args(argv)
    if args.batch_size < 1 or args.iters < 1 or args.warmup < 0 or \
            not 1.0 < args.within < math.inf:
        parser.error("--batch-size and --iters must be positive, --warmup "
                     "not negative and --within a finite factor above 1")
    try:
        pool = stress_pool(args.batch_size)
        sets = stress_sets()
        for bundle in args.bundle:
            meta = bm.read(bundle, StressError)
            if meta.get("batch_size") != args.batch_size:
                raise StressError(
                    "bundle '%s' was measured at batch size %s, but the "
                    "stress set is timed at %d: pass --batch-size %s" %
                    (bundle, meta.get("batch_size"), args.batch_size,
                     meta.get("batch_size")))
        if args.measured:
            previous = jsonio.read_json(args.measured, "", StressError)
            measured = [r["measured_ms"] for r in previous["rows"]]
            if len(measured) != len(sets):
                raise StressError("'%s' holds %d measured sets, the stress "
                                  "set has %d" % (args.measured,
                                                  len(measured), len(sets)))
        else:
            args.tool = collect.find_tool(args.tool)
            measured = measure(pool, sets, args, sys.stderr)
        predictions = {b: predict(b, pool, sets) for b in args.bundle}
    except (StressError, collect.CollectError) as e:
        print("stress: error: %s" % e, file=sys.stderr)
        return 1
    result = compare(pool, sets, measured, predictions, args.within)
    print(format_table(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
