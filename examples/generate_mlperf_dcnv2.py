#!/usr/bin/env python3
"""Writes the embedding tables of MLPerf's DLRM-DCNv2 benchmark as a task.

MLPerf Training's recommendation benchmark trains DLRM-DCNv2 on the
multi-hot Criteo 1TB dataset: 26 tables of dim 128 with the published
cardinalities (the largest capped at 40,000,000 rows) and the published
multi-hot sizes (the indices each sample looks up per table), at a global
batch of 65,536. The access histogram of each table is measured, as
docs/design.md §3 defines it, on one batch of a Zipf-like index stream over the
table's rows (NeuroShard's own input generator, exponent --skew), so the
task is the same on every machine.

    PYTHONPATH=python:build/lib/python3/dist-packages /usr/bin/python3 \\
        examples/generate_mlperf_dcnv2.py -o examples/mlperf-dcnv2.json
"""

import argparse
import json
import sys

from neuroshard import _core

# The published configuration (MLPerf Training reference, dlrm_v2).
CARDINALITIES = [
    40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000,
    3067956, 405282, 10, 2209, 11938, 155, 4, 976, 14, 40000000, 40000000,
    40000000, 590152, 12973, 108, 36]
MULTI_HOT_SIZES = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1,
                   12, 100, 27, 10, 3, 1, 1]
DIM = 128
BATCH_SIZE = 65536


def make_task(skew, seed, batch_size=BATCH_SIZE):
    tables = []
    for t, (rows, hot) in enumerate(zip(CARDINALITIES, MULTI_HOT_SIZES)):
        stream = _core.zipf_index_stream(rows, skew, batch_size * hot,
                                         _core.mix_seed(seed, t))
        hist = [round(f, 6) for f in _core.access_histogram(stream)]
        # Rounding may leave the bins a little off 1; the largest absorbs it.
        largest = max(range(len(hist)), key=lambda j: hist[j])
        hist[largest] = round(hist[largest] + 1.0 - sum(hist), 6)
        tables.append({"name": "cat_%d" % t, "rows": rows, "dim": DIM,
                       "pooling_factor": hot, "access_hist": hist})
    return {"batch_size": batch_size, "tables": tables}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skew", type=float, default=1.05,
                        help="Zipf exponent of the index streams")
    parser.add_argument("--seed", type=int, default=2023)
    parser.add_argument("-o", "--output", default="-")
    args = parser.parse_args()
    task = make_task(args.skew, args.seed)
    text = json.dumps(task, indent=1) + "\n"
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
