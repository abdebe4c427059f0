#!/usr/bin/env python3
"""Writes launch manifests that sweep the shapes the CUDA kernels must handle.

Each manifest is a random but reproducible model for neuroshard-cuda-runner:
widths 1..300, tables split in column shards (aligned and unaligned column
ranges), sum and mean pooling, pooling factors that give empty bags and long
multi-chunk bags, hot and uniform access, i32 and i64 indices, blocks of
32..256 threads and batches from 1 to 5000 bags. The runner checks forward
and backward + SGD of every launch against its CPU reference, so a run of
all of them on a GPU is the hardware counterpart of neuroshard-cuda-emulate.

    gpu_sweep.py --out DIR --module kernels.cubin --count 48 --seed 1

The kernels file is referenced by its path relative to DIR.
"""

import argparse
import os
import random
import sys

WIDTHS = [1, 2, 3, 4, 5, 7, 8, 12, 15, 16, 17, 31, 32, 33, 36, 63, 64, 65,
          100, 127, 128, 129, 200, 255, 256, 257, 300]
THREADS = [32, 64, 96, 128, 160, 192, 224, 256]
BINS = 17


def histogram(rng):
    """An access histogram: uniform (all mass in bin 0) or a hot one."""
    if rng.random() < 0.4:
        return [1.0] + [0.0] * (BINS - 1)
    weights = [rng.random() ** (1 + i) for i in range(rng.randint(2, 10))]
    total = sum(weights)
    bins = [w / total for w in weights]
    return bins + [0.0] * (BINS - len(bins))


def column_cuts(rng, dim):
    """Column ranges that cover [0, dim): one piece, or a random split."""
    if dim == 1 or rng.random() < 0.5:
        return [(0, dim)]
    pieces = rng.randint(2, min(4, dim))
    cuts = sorted(rng.sample(range(1, dim), pieces - 1))
    bounds = [0] + cuts + [dim]
    return list(zip(bounds[:-1], bounds[1:]))


def manifest(rng, module, fmt, chip, name):
    threads = rng.choice(THREADS)
    batch = rng.choice([1, 7, 32, 100, 257, 1024, 3000, 5000])
    lines = [
        "neuroshard-cuda-manifest 2",
        "# " + name,
        f"module {module} {fmt} {chip}",
        "kernels neuroshard_bag_forward_i32 neuroshard_bag_forward_i64 "
        "neuroshard_bag_backward_sgd_i32 neuroshard_bag_backward_sgd_i64",
        f"run {threads} {batch} {rng.randint(0, 1 << 20)} 0.05",
    ]
    num_tables = rng.randint(1, 6)
    tables = []
    for t in range(num_tables):
        dim = rng.choice(WIDTHS)
        rows = rng.choice([1, 3, 100, 5000, 100000, 2000000])
        pooling = rng.choice([0.3, 1, 2.5, 8, 40, 120])
        hist = " ".join(f"{b:.6g}" for b in histogram(rng))
        lines.append(f"table t{t} {rows} {dim} {pooling} {hist}")
        tables.append(dim)
    # One lookup per table; a second stream on a table now and then.
    lookups = []
    for t in range(num_tables):
        lookups.append(t)
        if rng.random() < 0.2:
            lookups.append(t)
    streams = {}
    for lookup, table in enumerate(lookups):
        stream = streams.get(table, 0)
        streams[table] = stream + 1
        lines.append(f"lookup {table} {stream}")
    devices = rng.randint(1, 3)
    shards = {d: [] for d in range(devices)}
    for lookup, table in enumerate(lookups):
        mode = rng.choice(["sum", "mean"])
        for begin, end in column_cuts(rng, tables[table]):
            shards[rng.randrange(devices)].append(
                f"shard {lookup} {begin} {end} {mode}")
    for device in range(devices):
        if not shards[device]:
            continue
        lines.append(f"device {device} {rng.choice(['i32', 'i64'])}")
        lines.extend(shards[device])
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="directory to write to")
    parser.add_argument("--module", required=True,
                        help="kernels file, relative to --out")
    parser.add_argument("--format", default="cubin",
                        choices=["cubin", "ptx", "fatbin"])
    parser.add_argument("--chip", default="sm_90")
    parser.add_argument("--count", type=int, default=48)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    if args.count < 1:
        sys.exit(f"error: --count is {args.count}; expected at least 1")
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(args.seed)
    for i in range(args.count):
        name = f"sweep-{args.seed}-{i:03d}"
        with open(os.path.join(args.out, name + ".txt"), "w") as f:
            f.write(manifest(rng, args.module, args.format, args.chip, name))
    print(f"wrote {args.count} manifests to {args.out}")


if __name__ == "__main__":
    main()
